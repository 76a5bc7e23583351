"""MLP: the sequential model, its Megatron-style tensor-parallel version, and its
sequence-parallel variant.

Sequential: ``Y = fc2(gelu(fc1(X)))`` on tokens ``X [T, D]``.
TP (world W): fc1 column-parallel (weight rows and bias sharded), fc2 row-parallel
(weight columns sharded, bias replicated and added after the all_reduce).
SP: the tokens are sharded (``X`` is ``[T/W, D]`` per rank): all_gather before fc1,
reduce_scatter after fc2 (the bias is added to the local token shard).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from verifier.train.mappings import copy_to_tp, gather_from_sp, reduce_from_tp, reduce_scatter_to_sp


class MLP(nn.Module):
    def __init__(self, d: int, f: int, bias: bool = True) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d, f, bias=bias)
        self.fc2 = nn.Linear(f, d, bias=bias)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class ColumnParallelLinear(nn.Module):
    def __init__(self, d_in: int, d_out: int, world: int, bias: bool = True, sequence_parallel=False):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_out // world, d_in))
        self.bias = nn.Parameter(torch.empty(d_out // world)) if bias else None
        self.sp = sequence_parallel
        nn.init.normal_(self.weight, std=0.02)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x):
        x = gather_from_sp(x) if self.sp else copy_to_tp(x)
        return F.linear(x, self.weight, self.bias)


class RowParallelLinear(nn.Module):
    def __init__(self, d_in: int, d_out: int, world: int, bias: bool = True, sequence_parallel=False):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_out, d_in // world))
        self.bias = nn.Parameter(torch.zeros(d_out)) if bias else None
        self.sp = sequence_parallel
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        y = F.linear(x, self.weight)
        y = reduce_scatter_to_sp(y) if self.sp else reduce_from_tp(y)
        return y + self.bias if self.bias is not None else y


class TPMLP(nn.Module):
    def __init__(self, d: int, f: int, world: int, bias: bool = True, sequence_parallel: bool = False):
        super().__init__()
        self.fc1 = ColumnParallelLinear(d, f, world, bias, sequence_parallel)
        self.fc2 = RowParallelLinear(f, d, world, bias, sequence_parallel)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))
