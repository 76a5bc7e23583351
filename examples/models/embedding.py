"""Vocab-parallel embedding (Megatron style): rank r holds rows [r*V/W, (r+1)*V/W) of the
table, looks up the ids that fall in its range (others read row 0 and are zeroed) and the
partial results are summed with an all_reduce."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from verifier.train.mappings import reduce_from_tp


class Embedding(nn.Module):
    def __init__(self, vocab: int, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab, d))

    def forward(self, ids):
        return F.embedding(ids, self.weight)


class VocabParallelEmbedding(nn.Module):
    def __init__(self, vocab: int, d: int, world: int, rank: int | None = None) -> None:
        super().__init__()
        self.rank = dist.get_rank() if rank is None else rank
        self.per = vocab // world
        self.start, self.end = self.rank * self.per, (self.rank + 1) * self.per
        self.weight = nn.Parameter(torch.randn(self.per, d))

    def forward(self, ids):
        outside = (ids < self.start) | (ids >= self.end)
        local = (ids - self.start).masked_fill(outside, 0)
        out = F.embedding(local, self.weight)
        out = out.masked_fill(outside.unsqueeze(-1), 0.0)
        return reduce_from_tp(out)
