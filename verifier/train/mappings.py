"""Megatron-style communication regions as custom autograd Functions.

Forward/backward pairs (as in Megatron-LM's tensor_parallel/mappings.py, written anew):

- ``copy_to_tp``:        forward identity,       backward all_reduce
- ``reduce_from_tp``:    forward all_reduce,     backward identity
- ``gather_from_sp``:    forward all_gather,     backward reduce_scatter   (dim 0)
- ``scatter_to_sp``:     forward split (local),  backward all_gather       (dim 0)
- ``reduce_scatter_to_sp``: forward reduce_scatter, backward all_gather    (dim 0)
- ``all_to_all_ep``:     forward all_to_all,     backward all_to_all       (dim 0)

All of them use the ordinary ``torch.distributed`` API with in-place outputs, as
Megatron does; ``group`` defaults to the whole world.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def _world(group):
    return dist.get_world_size(group)


def _all_reduce(x, group):
    if _world(group) == 1:
        return x
    x = x.clone()
    dist.all_reduce(x, group=group)
    return x


def _all_gather(x, group):
    w = _world(group)
    if w == 1:
        return x
    out = torch.empty((w * x.shape[0],) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, x.contiguous(), group=group)
    return out


def _reduce_scatter(x, group):
    w = _world(group)
    if w == 1:
        return x
    out = torch.empty((x.shape[0] // w,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.reduce_scatter_tensor(out, x.contiguous(), group=group)
    return out


def _split(x, group):
    w = _world(group)
    if w == 1:
        return x
    n = x.shape[0] // w
    r = dist.get_rank(group)
    return x[r * n:(r + 1) * n].contiguous()


def _all_to_all(x, group):
    out = torch.empty_like(x)
    h = dist.all_to_all_single(out, x.contiguous(), group=group, async_op=True)
    h.wait()
    return out


class _Copy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        return _all_reduce(g, ctx.group), None


class _Reduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return _all_reduce(x, group)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _all_gather(x, group)

    @staticmethod
    def backward(ctx, g):
        return _reduce_scatter(g, ctx.group), None


class _Scatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _split(x, group)

    @staticmethod
    def backward(ctx, g):
        return _all_gather(g, ctx.group), None


class _ReduceScatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _reduce_scatter(x, group)

    @staticmethod
    def backward(ctx, g):
        return _all_gather(g, ctx.group), None


class _AllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _all_to_all(x, group)

    @staticmethod
    def backward(ctx, g):
        return _all_to_all(g, ctx.group), None


def copy_to_tp(x, group=None):
    return _Copy.apply(x, group)


def reduce_from_tp(x, group=None):
    return _Reduce.apply(x, group)


def gather_from_sp(x, group=None):
    return _Gather.apply(x, group)


def scatter_to_sp(x, group=None):
    return _Scatter.apply(x, group)


def reduce_scatter_to_sp(x, group=None):
    return _ReduceScatter.apply(x, group)


def all_to_all_ep(x, group=None):
    return _AllToAll.apply(x, group)
