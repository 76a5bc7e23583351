"""A Llama decoder block (RMSNorm, rotary attention, SwiGLU MLP) and its Megatron-style
tensor-parallel version.

Sequential: ``h = x + o(attn(rope(q(n1(x))), rope(k(n1(x))), v(n1(x))))``,
``out = h + down(silu(gate(n2(h))) * up(n2(h)))`` on tokens ``x [S, D]``, no biases.
TP (world W): q/k/v and gate/up column-parallel (heads and the MLP width split), o and
down row-parallel followed by an all_reduce; the rotary tables (buffers ``cos``/``sin``,
``[S, head_dim]``) and the RMSNorm weights are replicated.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from verifier.train.mappings import copy_to_tp, reduce_from_tp
from verifier.train.models import rope


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def tables(s: int, hd: int) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    ang = torch.outer(torch.arange(s, dtype=torch.float32), inv)
    ang = torch.cat((ang, ang), dim=-1)
    return ang.cos(), ang.sin()


class LlamaBlock(nn.Module):
    def __init__(self, d: int, heads: int, f: int, s: int, world: int = 1) -> None:
        super().__init__()
        self.heads, self.hd, self.world = heads // world, d // heads, world
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.q, self.k, self.v = (nn.Linear(d, d // world, bias=False) for _ in range(3))
        self.o = nn.Linear(d // world, d, bias=False)
        self.gate, self.up = (nn.Linear(d, f // world, bias=False) for _ in range(2))
        self.down = nn.Linear(f // world, d, bias=False)
        cos, sin = tables(s, self.hd)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def _enter(self, x):  # column-parallel input: identity forward, all_reduce of the gradient
        return copy_to_tp(x) if self.world > 1 else x

    def _leave(self, x):  # row-parallel output: all_reduce of the partial sums
        return reduce_from_tp(x) if self.world > 1 else x

    def forward(self, x):
        s = x.shape[0]
        h = self._enter(self.n1(x))
        q, k, v = (p(h).view(s, self.heads, self.hd) for p in (self.q, self.k, self.v))
        q, k = rope(q, self.cos, self.sin), rope(k, self.cos, self.sin)
        scores = torch.einsum("shd,thd->hst", q, k) * (1.0 / math.sqrt(self.hd))
        ctx = torch.einsum("hst,thd->shd", torch.softmax(scores, dim=-1), v).reshape(s, self.heads * self.hd)
        x = x + self._leave(self.o(ctx))
        h = self._enter(self.n2(x))
        return x + self._leave(self.down(F.silu(self.gate(h)) * self.up(h)))
