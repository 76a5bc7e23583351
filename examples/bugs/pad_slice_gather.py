"""Bug class 3 (ENTANGLE appendix A, bug 3): mismatched padding and slicing around an
``all_gather`` under sequence parallelism.

Model: multi-head attention scores ``scores[h] = q[h] @ k[h]^T`` with ``q = x @ wq^T``,
``k = x @ wk^T`` split into ``HEADS`` heads, for a sequence ``x [S, D]``.

Sequence + tensor parallel (world W, Megatron style): the sequence length ``S`` is not a
multiple of ``W``, so the ranks hold uneven sequence shards (``ceil(S/W)`` tokens, the
last rank fewer). ``all_gather`` requires equal shapes, so each rank pads its shard at
the end to ``ceil(S/W)`` rows, gathers ``[W*ceil(S/W), D]`` and drops the padding with a
slice ``[0, S)``; then the column-parallel q/k projections (weights sharded by heads)
compute the scores of this rank's heads over the whole sequence.

Bug: the slice does not match the padding: it drops as many rows as were padded, but from
the front (``[pad, pad+S)``), so the first token is lost and a padding row is kept.
pvcert stops at the query projection (the first operator reading the gathered sequence):
its explored region shows the pad, the all_gather and the slice.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard

S, D, HEADS, W = 3, 4, 2, 2       # S not a multiple of W: uneven shards
CHUNK = -(-S // W)                # ceil(S / W) rows per rank after padding


def shard_len(rank: int) -> int:
    return min(CHUNK, S - rank * CHUNK)


class Scores(nn.Module):
    def __init__(self, d: int, heads: int, world: int = 1):
        super().__init__()
        self.wq = nn.Parameter(torch.randn(d // world, d) * 0.5)   # rows = heads * head_dim
        self.wk = nn.Parameter(torch.randn(d // world, d) * 0.5)
        self.heads, self.head_dim = heads // world, d // heads

    def sequences(self, x):
        """The tokens of the queries and of the keys."""
        return x, x

    def heads_of(self, x, w):
        return F.linear(x, w).view(x.shape[0], self.heads, self.head_dim).transpose(0, 1)

    def forward(self, x):
        xq, xk = self.sequences(x)
        q, k = self.heads_of(xq, self.wq), self.heads_of(xk, self.wk)
        return q @ k.transpose(1, 2)                            # [heads, S, S]


class SPScores(Scores):
    """Uneven sequence shards gathered (pad + all_gather + slice); this rank's heads.

    ``queries="local"``: no head split; this rank's own (uneven) tokens are the queries,
    so its scores are the rows of its tokens (a pvcert limitation, see the test suite).
    """

    def __init__(self, d: int, heads: int, world: int, seq: int, buggy: bool = False,
                 queries: str = "gathered"):
        super().__init__(d, heads, 1 if queries == "local" else world)
        self.seq, self.buggy, self.local = seq, buggy, queries == "local"

    def sequences(self, x):
        full = self.gather(x)
        return (x if self.local else full), full

    def gather(self, x):
        pad = CHUNK - x.shape[0]
        padded = F.pad(x, (0, 0, 0, pad))                       # [CHUNK, D], zeros at the end
        full = torch.empty((dist.get_world_size() * CHUNK, x.shape[1]), dtype=x.dtype)
        dist.all_gather_into_tensor(full, padded.contiguous())  # [W * CHUNK, D]
        total_pad = full.shape[0] - self.seq
        start = total_pad if self.buggy else 0                  # bug: drops the padding from the front
        return full[start:start + self.seq]


def make_case(buggy: bool = False, queries: str = "gathered") -> CaptureCase:
    local = queries == "local"
    weights = ({"wq": replicate("wq"), "wk": replicate("wk")} if local
               else {"wq": shard("wq", dim=0), "wk": shard("wk", dim=0)})
    return CaptureCase(
        name="pad_slice_gather" + ("_buggy" if buggy else ""),
        spec=lambda: Scores(D, HEADS),
        impl=lambda rank, world: SPScores(D, HEADS, world, S, buggy, queries),
        world_size=W,
        inputs={"x": (S, D)},
        impl_inputs=lambda rank: {"x": (shard_len(rank), D)},
        input_relation={"x": shard("x", dim=0), **weights},
        expect={"out": shard("out", dim=1 if local else 0)},
    )
