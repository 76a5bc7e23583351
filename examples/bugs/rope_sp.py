"""Bug class 1 (ENTANGLE appendix A, bug 1): RoPE under sequence parallelism whose
hand-written backward forgets the rank's position offset.

Model: a query projection followed by rotary position embedding, applied by a custom
``torch.autograd.Function`` to a ``[S, D]`` sequence with precomputed ``cos``/``sin``
tables ``[S, D]`` (``D`` even: the two halves of the head dimension rotate together).

Sequential model: ``q = x @ wq^T``, ``out = q * cos + rotate_half(q) * sin`` over the
whole sequence (position offset 0).

Sequence parallel (world W): every rank holds ``S/W`` consecutive tokens and the whole
(replicated) tables; the forward takes rows ``[r*S/W, (r+1)*S/W)`` of the tables. The
backward ``grad = g * cos + rotate_half^T(g * sin)`` must slice the same rows; the buggy
backward slices from offset 0 on every rank, so rank 1 rotates its gradient by the
angles of rank 0's positions. The forward is right, so the outputs agree; the input
gradient does not. pvcert stops at the first backward ``mul`` with the tables.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn

from verifier.capture.case import CaptureCase
from verifier.capture.relations import partial, replicate, shard

S, D, W = 4, 2, 2     # tokens, head dim (even), ranks


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def rotate_half_t(y):
    """The transpose of ``rotate_half`` (its backward)."""
    h = y.shape[-1] // 2
    return torch.cat([y[..., h:], -y[..., :h]], dim=-1)


class ApplyRotary(torch.autograd.Function):
    """Rotary embedding of ``x [n, D]`` at positions ``offset .. offset+n`` of the tables."""

    @staticmethod
    def forward(ctx, x, cos, sin, offset: int, backward_offset: int):
        n = x.shape[0]
        ctx.save_for_backward(cos, sin)
        ctx.n, ctx.offset = n, backward_offset
        c, s = cos[offset:offset + n], sin[offset:offset + n]
        return x * c + rotate_half(x) * s

    @staticmethod
    def backward(ctx, g):
        cos, sin = ctx.saved_tensors
        c, s = cos[ctx.offset:ctx.offset + ctx.n], sin[ctx.offset:ctx.offset + ctx.n]
        return g * c + rotate_half_t(g * s), None, None, None, None


class RotaryQuery(nn.Module):
    """``rope(x @ wq^T)``; ``offset`` is the position of this module's first token."""

    def __init__(self, d: int, seq: int, offset: int = 0, backward_offset: int | None = None):
        super().__init__()
        self.wq = nn.Parameter(torch.randn(d, d) * 0.1)
        self.register_buffer("cos", torch.randn(seq, d))
        self.register_buffer("sin", torch.randn(seq, d))
        self.offset = offset
        self.backward_offset = offset if backward_offset is None else backward_offset

    def forward(self, x):
        q = x @ self.wq.t()
        return ApplyRotary.apply(q, self.cos, self.sin, self.offset, self.backward_offset)


class SPRotaryQuery(RotaryQuery):
    """Sequence-parallel: this rank's token shard; ``buggy``: the backward uses offset 0."""

    def __init__(self, d: int, seq: int, world: int, buggy: bool = False):
        offset = dist.get_rank() * (seq // world)
        super().__init__(d, seq, offset, 0 if buggy else offset)


def make_case(buggy: bool = False) -> CaptureCase:
    return CaptureCase(
        name="rope_sp" + ("_buggy" if buggy else ""),
        spec=lambda: RotaryQuery(D, S),
        impl=lambda rank, world: SPRotaryQuery(D, S, world, buggy),
        world_size=W,
        inputs={"x": (S, D)},
        impl_inputs={"x": (S // W, D)},
        backward=True,
        input_relation={
            "x": shard("x", dim=0), "d_out": shard("d_out", dim=0),
            "wq": replicate("wq"), "cos": replicate("cos"), "sin": replicate("sin"),
        },
        expect={
            "out": shard("out", dim=0),
            "grad.x": shard("grad.x", dim=0),
            "grad.wq": partial("grad.wq"),   # summed over the sequence shards by the SP grad all-reduce
        },
    )
