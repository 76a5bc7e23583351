"""Multi-head self-attention and its tensor-parallel version (heads split over ranks:
q/k/v column-parallel, output projection row-parallel + all_reduce)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from .mlp import ColumnParallelLinear, RowParallelLinear


def _attend(q, k, v, heads: int):
    s, hd = q.shape[0], q.shape[1] // heads
    q, k, v = (t.view(s, heads, hd).transpose(0, 1) for t in (q, k, v))   # [h, S, hd]
    scores = torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(hd))
    ctx = torch.bmm(torch.softmax(scores, dim=-1), v)                    # [h, S, hd]
    return ctx.transpose(0, 1).reshape(s, heads * hd)


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):   # x [S, D]
        return self.o(_attend(self.q(x), self.k(x), self.v(x), self.heads))


class TPAttention(nn.Module):
    def __init__(self, d: int, heads: int, world: int) -> None:
        super().__init__()
        self.heads = heads // world
        self.q, self.k, self.v = (ColumnParallelLinear(d, d, world) for _ in range(3))
        self.o = RowParallelLinear(d, d, world)

    def forward(self, x):
        return self.o(_attend(self.q(x), self.k(x), self.v(x), self.heads))
