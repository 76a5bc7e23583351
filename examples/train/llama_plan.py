"""A Llama-style training step (RMSNorm, RoPE attention, SwiGLU) under a DP x TP x PP plan.

``make_case(dp, tp, pp, micro_batches, layers, optimizer)``; tiny shapes (hidden 2 per head,
one head per TP rank at least). ``pvcert verify examples/train/llama_plan.py`` captures and
verifies it; ``python -m verifier.train.plan examples/train/llama_plan.py -o case.json`` writes
the JSON case. The default is the peer's configuration: dp2 tp2 pp2 with 2 micro-batches. ``sp=True`` adds Megatron-style sequence
parallelism over the TP group (x and y fed sequence-sharded: rank ``t`` holds tokens
``t*S/tp ..``); ``rope="sharded"`` applies the rotary tables to the sequence shards (each
rank its rows of cos/sin) instead of after the all_gather.
"""

from verifier.train.models import ModelConfig
from verifier.train.plan import ParallelConfig, TrainCase
from verifier.train.step import Optimizer


def make_case(dp: int = 2, tp: int = 2, pp: int = 2, micro_batches: int = 2, layers: int = 2,
              optimizer: str = "sgd", zero1: bool = False, sp: bool = False,
              rope: str = "gathered") -> TrainCase:
    heads = max(2, tp)
    model = ModelConfig("llama", layers=layers, hidden=2 * heads, heads=heads, ffn=2 * max(tp, dp if zero1 else 1), seq=max(2, tp))
    cfg = ParallelConfig(dp=dp, tp=tp, pp=pp, micro_batches=micro_batches, zero1=zero1, sp=sp, rope=rope)
    name = (f"llama_dp{dp}_tp{tp}_pp{pp}_mb{micro_batches}_{optimizer}" + ("_zero1" if zero1 else "")
            + (f"_sp_{rope}" if sp else ""))
    return TrainCase(name, model, cfg, Optimizer(optimizer))
