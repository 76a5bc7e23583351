"""A DeepSeek-style MoE training step whose routing is computed in the graph, node-limited
on the ranks, under DP x EP (experts over the DP ranks, one EP rank per "node").

The ranks route each token to its ``topk`` best experts among the experts of its
``route_limit`` best nodes (DeepSeek-V3's node-limited routing, which bounds how many nodes
a token's activations travel to); the sequential step routes over all experts. The case
declares the approximation ``node-limited-routing``: the certificate records it per routing
node and the checker re-applies it to the sequential step (certificates/approx.py).
``make_case(approximate=False)`` leaves it out: verification then fails at the first route.
"""

from verifier.train.models import ModelConfig
from verifier.train.plan import ParallelConfig, TrainCase
from verifier.train.step import Optimizer


def make_case(dp: int = 2, micro_batches: int = 2, layers: int = 2, topk: int = 2, limit: int = 1,
              optimizer: str = "sgd", approximate: bool = True) -> TrainCase:
    model = ModelConfig("moe", layers=layers, hidden=4, heads=2, ffn=2, seq=2, experts=2 * dp, capacity=2,
                        expert_ffn=2, topk=topk)
    cfg = ParallelConfig(dp=dp, micro_batches=micro_batches, ep=dp, route_nodes=dp, route_limit=limit)
    name = f"moe_routed_dp{dp}_ep{dp}_mb{micro_batches}_top{topk}_nodes{dp}_limit{limit}" + \
        ("" if approximate else "_exact")
    return TrainCase(name, model, cfg, Optimizer(optimizer),
                     approximations=("node-limited-routing",) if approximate else ())
