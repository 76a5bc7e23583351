"""Bug class 7 (ENTANGLE appendix A, bug 7): a row-parallel linear that skips its
all-reduce under a configuration flag.

Model: ``z = (gelu(x @ w1^T) @ w2^T) @ w3^T`` (an MLP followed by another projection).

Tensor parallel (world W, Megatron style): ``w1`` column-parallel, ``w2`` row-parallel
(its partial products are summed by an ``all_reduce``), ``w3`` column-parallel again
(the output stays sharded by columns). The layers read a config; with
``tp_comm_overlap`` the row-parallel layer leaves its reduction to an overlapped
communication pass, which only exists when ``overlap_enabled`` (the userbuffers
machinery) is on.

Bug: ``tp_comm_overlap=True`` with ``overlap_enabled=False``: the reduction is skipped by
the layer and done by nobody. The row-parallel output is a partial sum (a clean relation:
pvcert relates it as ``sum(y@r0, y@r1)``), but the following column-parallel matmul
multiplies each partial sum by its own weight shard and never computes
``y_2 @ w3_1`` and ``y_1 @ w3_2``: pvcert stops at that matmul.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from verifier.train.mappings import copy_to_tp, reduce_from_tp
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard

T, D, F_, W = 2, 2, 4, 2     # tokens, model dim, hidden dim, ranks


class Config:
    # a plain class: pvcert's case loader does not register the module in sys.modules,
    # which @dataclass needs
    def __init__(self, tp_comm_overlap: bool = False, overlap_enabled: bool = False):
        self.tp_comm_overlap = tp_comm_overlap    # reduce in an overlapped pass instead of in the layer
        self.overlap_enabled = overlap_enabled    # whether that pass runs


class MLPProj(nn.Module):
    def __init__(self, d: int, f: int):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(f, d) * 0.5)
        self.fc2 = nn.Linear(f, d, bias=False)
        self.w3 = nn.Parameter(torch.randn(d, d) * 0.5)

    def forward(self, x):
        return F.linear(self.fc2(F.gelu(F.linear(x, self.w1))), self.w3)


class RowParallelLinear(nn.Module):
    def __init__(self, d_in: int, d_out: int, world: int, config: Config):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_out, d_in // world) * 0.5)
        self.config = config

    def forward(self, x):
        y = F.linear(x, self.weight)
        if self.config.tp_comm_overlap:
            return y                   # reduced by the overlapped communication pass
        return reduce_from_tp(y)


class TPMLPProj(nn.Module):
    def __init__(self, d: int, f: int, world: int, config: Config):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(f // world, d) * 0.5)     # column-parallel
        self.fc2 = RowParallelLinear(f, d, world, config)
        self.w3 = nn.Parameter(torch.randn(d // world, d) * 0.5)     # column-parallel
        self.config = config

    def forward(self, x):
        h = F.gelu(F.linear(copy_to_tp(x), self.w1))
        y = self.fc2(h)
        if self.config.tp_comm_overlap and self.config.overlap_enabled:
            y = reduce_from_tp(y)      # the overlapped pass (not run in the buggy config)
        return F.linear(copy_to_tp(y), self.w3)


def make_case(buggy: bool = False) -> CaptureCase:
    config = Config(tp_comm_overlap=True, overlap_enabled=False) if buggy else Config()
    return CaptureCase(
        name="row_parallel_config" + ("_buggy" if buggy else ""),
        spec=lambda: MLPProj(D, F_),
        impl=lambda rank, world: TPMLPProj(D, F_, world, config),
        world_size=W,
        inputs={"x": (T, D)},
        backward=True,
        input_relation={
            "x": replicate("x"), "d_out": shard("d_out", dim=1),
            "w1": shard("w1", dim=0), "fc2.weight": shard("fc2.weight", dim=1), "w3": shard("w3", dim=0),
        },
        expect={
            "out": shard("out", dim=1),
            "grad.x": replicate("grad.x"),
            "grad.w1": shard("grad.w1", dim=0),
            "grad.fc2.weight": shard("grad.fc2.weight", dim=1),
            "grad.w3": shard("grad.w3", dim=0),
        },
    )
