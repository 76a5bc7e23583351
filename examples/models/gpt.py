"""A GPT block (pre-LayerNorm attention + GELU MLP) and its Megatron-style tensor- and
sequence-parallel version; stacks of them.

Sequential: ``x = x + attn(ln1(x)); x = x + mlp(ln2(x))`` on tokens ``x [S, D]``
(non-causal attention).
TP+SP (world W): tokens sharded ``[S/W, D]``; LayerNorms replicated and applied to the
local shard; q/k/v and fc1 column-parallel after an all_gather of the sequence; the
output projection and fc2 row-parallel followed by a reduce_scatter back to the shard
(their biases added to the shard). In backward, the all_gathers become reduce_scatters
and vice versa; LayerNorm and row-parallel bias gradients are partial sums over ranks
(Megatron all-reduces them after the backward pass).
"""

from __future__ import annotations

import torch.nn as nn

from .attention import _attend
from .mlp import MLP, ColumnParallelLinear, RowParallelLinear, TPMLP


class SelfAttention(nn.Module):
    def __init__(self, d: int, heads: int, world: int = 1, sequence_parallel: bool = False) -> None:
        super().__init__()
        self.heads = heads // world
        if world == 1:
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        else:
            self.q, self.k, self.v = (ColumnParallelLinear(d, d, world, sequence_parallel=sequence_parallel)
                                      for _ in range(3))
            self.o = RowParallelLinear(d, d, world, sequence_parallel=sequence_parallel)

    def forward(self, x):
        return self.o(_attend(self.q(x), self.k(x), self.v(x), self.heads))


class GPTBlock(nn.Module):
    def __init__(self, d: int, heads: int, f: int, world: int = 1) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = SelfAttention(d, heads, world, sequence_parallel=world > 1)
        self.mlp = MLP(d, f) if world == 1 else TPMLP(d, f, world, sequence_parallel=True)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """``layers`` blocks in sequence (world 1: the sequential model; else TP+SP)."""

    def __init__(self, layers: int, d: int, heads: int, f: int, world: int = 1) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(GPTBlock(d, heads, f, world) for _ in range(layers))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x
