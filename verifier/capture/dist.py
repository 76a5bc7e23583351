"""Collectives under capture: a fake process group per rank and traceable collectives.

``fake_world(rank, world)`` initializes ``torch.distributed`` with the ``fake`` backend
(no communication; every rank is traced in this one process, one after another).

``traceable_collectives()`` replaces, for the duration of a trace, the in-place and
asynchronous ``torch.distributed`` API (``all_reduce(t)``, ``all_gather_into_tensor``,
``reduce_scatter_tensor``, ``all_to_all_single``, ``broadcast``, list variants,
``send``/``recv``/``isend``/``irecv``/``batch_isend_irecv``, ``async_op=True`` handles)
by functional collectives (``_c10d_functional.*`` + ``wait_tensor``) whose result is
copied into the destination tensor. The converter turns the copy back into a rebinding,
so every call becomes one proper collective node. The replacement is applied to every
module attribute that holds the original function (Megatron binds
``torch.distributed.all_gather_into_tensor`` to a module global at import time).
Point-to-point calls become the ops ``pvcert::send`` / ``pvcert::recv`` (no-ops with
fake kernels), which the stitcher pairs into ``c10d.send_recv`` nodes.
"""

from __future__ import annotations

import contextlib
import sys

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

from .convert import CaptureError

_lib = torch.library.Library("pvcert", "DEF")  # noqa: F841 (keeps the namespace alive)
_lib.define("send(Tensor self, int peer, int tag) -> Tensor")
_lib.define("recv(Tensor self, int peer, int tag) -> Tensor")
for _name in ("send", "recv"):
    _lib.impl(_name, lambda self, peer, tag: self.clone(), "CompositeExplicitAutograd")
    _lib.impl(_name, lambda self, peer, tag: torch.empty_like(self), "Meta")


@contextlib.contextmanager
def fake_world(rank: int, world: int):
    """``torch.distributed`` initialized for ``rank`` of ``world`` with the fake backend."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", rank=rank, world_size=world, store=FakeStore())
    try:
        yield
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def group_ranks(name) -> list[int]:
    """Global ranks of a process group given by its name (resolve while it is alive)."""
    pg = c10d._resolve_process_group(name) if isinstance(name, str) else name
    return list(dist.get_process_group_ranks(pg))


def _pg(group):
    return group if group is not None else c10d._get_default_group()


_OPS = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.AVG: "avg", dist.ReduceOp.MAX: "max",
        dist.ReduceOp.MIN: "min"}


def _red(op) -> str:
    for k, v in _OPS.items():
        if op == k:
            return v
    raise CaptureError(f"torch.distributed: reduce op {op} is not supported")


class _Done:
    """The handle of an ``async_op=True`` call: the result is already in place."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def get_future(self):
        fut = torch.futures.Future()
        fut.set_result(None)
        return fut


def _ret(async_op):
    return _Done() if async_op else None


_F = torch.ops._c10d_functional


def _wait(t):
    return _F.wait_tensor(t)


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
    tensor.copy_(_wait(_F.all_reduce(tensor, _red(op), _pg(group).group_name)))
    return _ret(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    pg = _pg(group)
    out = _wait(_F.all_gather_into_tensor(input_tensor.contiguous(), pg.size(), pg.group_name))
    output_tensor.copy_(out.view(output_tensor.shape))
    return _ret(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    pg = _pg(group)
    flat = tensor.contiguous().reshape((1,) + tuple(tensor.shape)) if tensor.dim() == 0 else tensor.contiguous()
    out = _wait(_F.all_gather_into_tensor(flat, pg.size(), pg.group_name))
    for t, part in zip(tensor_list, out.chunk(pg.size(), dim=0)):
        t.copy_(part.view(t.shape))
    return _ret(async_op)


def reduce_scatter_tensor(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
    pg = _pg(group)
    out = _wait(_F.reduce_scatter_tensor(input.contiguous(), _red(op), pg.size(), pg.group_name))
    output.copy_(out.view(output.shape))
    return _ret(async_op)


def reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, group=None, async_op=False):
    return reduce_scatter_tensor(output, torch.cat([t.reshape((-1,) + tuple(output.shape[1:]))
                                                    for t in input_list]), op, group, async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    pg = _pg(group)
    w = pg.size()
    ins = list(input_split_sizes) if input_split_sizes else [input.shape[0] // w] * w
    outs = list(output_split_sizes) if output_split_sizes else [output.shape[0] // w] * w
    out = _wait(_F.all_to_all_single(input.contiguous(), outs, ins, pg.group_name))
    output.copy_(out)
    return _ret(async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    ins = [t.shape[0] for t in input_tensor_list]
    outs = [t.shape[0] for t in output_tensor_list]
    pg = _pg(group)
    out = _wait(_F.all_to_all_single(torch.cat([t.contiguous() for t in input_tensor_list]), outs, ins,
                                     pg.group_name))
    for t, part in zip(output_tensor_list, out.split(outs)):
        t.copy_(part)
    return _ret(async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    pg = _pg(group)
    local = group_src if group_src is not None else dist.get_group_rank(pg, src)
    tensor.copy_(_wait(_F.broadcast(tensor, local, pg.group_name)))
    return _ret(async_op)


def _peer(group, peer, group_peer):
    if peer is None and group_peer is None:
        raise CaptureError("torch.distributed: recv from any source is not supported (name the source)")
    return peer if peer is not None else dist.get_global_rank(_pg(group), group_peer)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    torch.ops.pvcert.send(tensor, _peer(group, dst, group_dst), tag)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    peer = _peer(group, src, group_src)
    tensor.copy_(torch.ops.pvcert.recv(tensor, peer, tag))
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    send(tensor, dst, group, tag, group_dst)
    return _Done()


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    recv(tensor, src, group, tag, group_src)
    return _Done()


def batch_isend_irecv(p2p_op_list):
    for p in p2p_op_list:
        fn = p.op.__name__ if hasattr(p.op, "__name__") else str(p.op)
        peer = p.peer if getattr(p, "peer", None) is not None else None
        if "send" in fn:
            send(p.tensor, peer, p.group, p.tag)
        else:
            recv(p.tensor, peer, p.group, p.tag)
    return [_Done() for _ in p2p_op_list]


def barrier(group=None, async_op=False, device_ids=None):
    return _ret(async_op)


REPLACEMENTS = {
    "all_reduce": all_reduce, "all_gather_into_tensor": all_gather_into_tensor,
    "_all_gather_base": all_gather_into_tensor, "all_gather": all_gather,
    "reduce_scatter_tensor": reduce_scatter_tensor, "_reduce_scatter_base": reduce_scatter_tensor,
    "reduce_scatter": reduce_scatter, "all_to_all_single": all_to_all_single, "all_to_all": all_to_all,
    "broadcast": broadcast, "send": send, "recv": recv, "isend": isend, "irecv": irecv,
    "batch_isend_irecv": batch_isend_irecv, "barrier": barrier,
}
_UNSUPPORTED = ("reduce", "gather", "scatter", "all_gather_object", "broadcast_object_list",
                "all_reduce_coalesced", "all_gather_coalesced", "gather_object", "scatter_object_list")


def _refuse(name):
    def f(*args, **kwargs):
        raise CaptureError(f"torch.distributed.{name} is not supported by capture")
    return f


_BOUND: dict[str, list[str]] = {}   # module name -> attribute names holding an original
_ACTIVE = [0]


def _originals() -> dict[int, tuple]:
    out = {}
    for name in list(REPLACEMENTS) + list(_UNSUPPORTED):
        fn = getattr(c10d, name, None) or getattr(dist, name, None)
        if fn is not None:
            out[id(fn)] = (name, fn, REPLACEMENTS.get(name) or _refuse(name))
    return out


@contextlib.contextmanager
def traceable_collectives():
    """Swap the ``torch.distributed`` API for traceable versions everywhere it is bound.

    Modules are scanned once (new modules when they appear); nested uses are free.
    """
    if _ACTIVE[0]:
        _ACTIVE[0] += 1
        try:
            yield
        finally:
            _ACTIVE[0] -= 1
        return
    originals = _originals()
    mods = sys.modules
    for mname in list(mods):
        if mname in _BOUND or mname == __name__:
            continue
        d = getattr(mods[mname], "__dict__", None)
        keys = []
        if isinstance(d, dict):
            for k, v in list(d.items()):
                hit = originals.get(id(v))
                if hit is not None and hit[1] is v:
                    keys.append(k)
        _BOUND[mname] = keys
    undo = []
    for mname, keys in _BOUND.items():
        mod = mods.get(mname)
        d = getattr(mod, "__dict__", None) if mod is not None else None
        if not isinstance(d, dict):
            continue
        for k in keys:
            v = d.get(k)
            hit = originals.get(id(v))
            if hit is not None and hit[1] is v:
                d[k] = hit[2]
                undo.append((d, k, v))
    _ACTIVE[0] = 1
    try:
        yield
    finally:
        _ACTIVE[0] = 0
        for d, k, v in undo:
            d[k] = v
