"""A DeepSeek-style MoE training step: attention, then router softmax gates over declared
top-k routing (``dispatch``), a shared expert (TP) and routed experts over EP (all_to_all).

``make_case(dp, ep, tp, pp, micro_batches, layers)``; EP spans the DP ranks (ep == dp).
"""

from verifier.train.models import ModelConfig
from verifier.train.plan import ParallelConfig, TrainCase
from verifier.train.step import Optimizer


def make_case(dp: int = 2, ep: int = 2, tp: int = 1, pp: int = 1, micro_batches: int = 2, layers: int = 2,
              optimizer: str = "sgd") -> TrainCase:
    heads = max(2, tp)
    model = ModelConfig("moe", layers=layers, hidden=2 * heads, heads=heads, ffn=2 * tp, seq=2, experts=2 * ep,
                        capacity=1, expert_ffn=2)
    cfg = ParallelConfig(dp=dp, tp=tp, pp=pp, micro_batches=micro_batches, ep=ep)
    return TrainCase(f"moe_dp{dp}_ep{ep}_tp{tp}_pp{pp}_mb{micro_batches}", model, cfg, Optimizer(optimizer))
