"""MLP blocks with training-mode batch norm under a DP x TP x PP plan, with local batch norm.

Plain data parallelism without synchronized batch norm normalizes each rank's samples
with that rank's statistics: not the sequential step, whose batch norm sees the whole
micro-batch. The case declares the approximation ``local-batch-norm``; the certificate
records it per batch-norm node and the checker re-applies it to the sequential step
(certificates/approx.py), so the claim is "the plan refines the step with per-rank
statistics". ``make_case(approximate=False)`` leaves it out: verification then fails at
the first batch norm.
"""

from verifier.train.models import ModelConfig
from verifier.train.plan import ParallelConfig, TrainCase
from verifier.train.step import Optimizer


def make_case(dp: int = 2, tp: int = 2, pp: int = 1, micro_batches: int = 2, layers: int = 2,
              optimizer: str = "sgd", approximate: bool = True) -> TrainCase:
    model = ModelConfig("bn", layers=layers, hidden=4, heads=2, ffn=2 * tp, seq=2)
    cfg = ParallelConfig(dp=dp, tp=tp, pp=pp, micro_batches=micro_batches, batch=2)
    name = f"bn_dp{dp}_tp{tp}_pp{pp}_mb{micro_batches}_{optimizer}" + ("" if approximate else "_exact")
    return TrainCase(name, model, cfg, Optimizer(optimizer), approximations=("local-batch-norm",) if approximate else ())
