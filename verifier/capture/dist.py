"""Collectives under capture: a fake process group per rank and traceable collectives.

``fake_world(rank, world)`` initializes ``torch.distributed`` with the ``fake`` backend
(no communication; every rank is traced in this one process, one after another).

``traceable_collectives()`` replaces, for the duration of a trace, the in-place and
asynchronous ``torch.distributed`` API (``all_reduce(t)``, ``all_gather_into_tensor``,
``reduce_scatter_tensor``, ``all_to_all_single``, ``broadcast``, list variants,
``send``/``recv``/``isend``/``irecv``/``batch_isend_irecv``, ``async_op=True`` handles)
by functional collectives (``_c10d_functional.*`` + ``wait_tensor``) whose result is
copied into the destination tensor. An ``async_op=True`` call (and ``isend``/``irecv``) is issued
where it is called and lands at its handle's ``wait()``; a use of its tensors in between is a
race, refused with the line that does it, and so is a handle never waited for. The converter turns the copy back into a rebinding,
so every call becomes one proper collective node. The replacement is applied to every
module attribute that holds the original function (Megatron binds
``torch.distributed.all_gather_into_tensor`` to a module global at import time).
Point-to-point calls become the ops ``pvcert::send`` / ``pvcert::recv`` (no-ops with
fake kernels), which the stitcher pairs into ``c10d.send_recv`` nodes.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import traceback
from typing import Callable

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d
from torch.overrides import TorchFunctionMode

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
    _forget_dtensor_caches()
    dist.init_process_group("fake", rank=rank, world_size=world, store=FakeStore())
    try:
        yield
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _forget_dtensor_caches() -> None:
    """Empty DTensor's sharding-propagation and redistribution caches. Device meshes of
    different ranks' worlds compare equal (same layout and rank map), so a cached spec would
    carry another rank's mesh, hence its process groups (a sub-mesh's tp group of rank 0 on
    rank 2). One process is one rank in a real job; here every rank is traced in turn."""
    from torch.distributed.tensor import DTensor, _redistribute

    torch._C._clear_DTensor_sharding_propagator_cache()
    DTensor._op_dispatcher.sharding_propagator.propagate_op_sharding.cache_clear()
    _redistribute._gen_transform_infos.cache_clear()
    _redistribute.clear_redistribute_planner_cache()


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


def _premul(tensor: torch.Tensor, op) -> tuple[torch.Tensor, object]:
    """``PREMUL_SUM(f)`` (FSDP2's custom gradient divide factor) is ``f * x`` summed."""
    if op == dist.ReduceOp.PREMUL_SUM:
        factor = getattr(op, "factor", None)
        if not isinstance(factor, (int, float)):
            raise CaptureError("torch.distributed: PREMUL_SUM with a tensor factor is not supported")
        return tensor * factor, dist.ReduceOp.SUM
    return tensor, op


class _Done:
    """The handle of a call whose result is already in place (``barrier``, ``isend``)."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def get_future(self):
        fut = torch.futures.Future()
        fut.set_result(None)
        return fut


def _user_line() -> str:
    """``file:line: code`` of the innermost frame outside torch and this module."""
    for f in reversed(traceback.extract_stack()):
        if f.filename != __file__ and f"{os.sep}torch{os.sep}" not in f.filename \
                and not f.filename.endswith("contextlib.py"):
            return f"{f.filename}:{f.lineno}: `{f.line}`"
    return "<unknown line>"


def _aliases(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a is b or a.untyped_storage()._cdata == b.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return a is b or a._base is b or b._base is a or (a._base is not None and a._base is b._base)


# Calls that read no element: shape and dtype queries, property getters (a tensor they return,
# e.g. a view, is checked where it is used), and factories that only take the shape.
_METADATA = {"__get__", "size", "dim", "numel", "stride", "is_contiguous", "new_empty", "new_zeros",
             "new_ones", "new_full", "element_size", "get_device"}


_INPLACE = re.compile(r"__i(add|sub|mul|truediv|floordiv|mod|pow|and|or|xor|lshift|rshift|matmul)__|__setitem__|"
                      r"__set__|(?!__)\w+_")   # in-place dunders, item and property (``.data =``) setters, ``op_``


class _Guard(TorchFunctionMode):
    """Active while ``async_op=True`` calls are pending: any torch call on one of their tensors
    (or a view of it) before the handle's ``wait()`` races with the collective, and is refused; the
    tensor of an ``isend`` (sent as it is at the call) may be read, not written (in place or ``out=``)."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[int, tuple[str, list[torch.Tensor], bool]] = {}

    def add(self, handle: "_Pending", what: str, tensors: list[torch.Tensor], reads_ok: bool = False) -> None:
        if not self.pending:
            self.__enter__()
        self.pending[id(handle)] = (f"{what} issued at {_user_line()}", tensors, reads_ok)

    def remove(self, handle: "_Pending") -> None:
        del self.pending[id(handle)]
        if not self.pending:
            self.__exit__(None, None, None)

    def release(self) -> list[str]:
        """Forget every pending call (at the end of a trace); returns what was pending."""
        left = [what for what, *_ in self.pending.values()]
        if self.pending:
            self.pending.clear()
            self.__exit__(None, None, None)
        return left

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in _METADATA:
            return func(*args, **kwargs)
        writes = bool(_INPLACE.fullmatch(name)) and name not in ("detach_", "requires_grad_") or \
            kwargs.get("out") is not None   # those two change autograd metadata, not values
        for a in torch.utils._pytree.tree_leaves((args, kwargs)):
            if isinstance(a, torch.Tensor):
                for what, tensors, reads_ok in self.pending.values():
                    if (writes or not reads_ok) and any(_aliases(a, t) for t in tensors):
                        raise CaptureError(f"{_user_line()}: uses a tensor of the async_op=True {what} "
                                           "before its wait() (a race: capture refuses it)")
        return func(*args, **kwargs)


_GUARD = _Guard()


class _Pending:
    """The handle of an ``async_op=True`` collective: issued at the call, its result lands in the
    destination at ``wait()``; until then its tensors may not be used (``_Guard``)."""

    def __init__(self, land: Callable[[], object], what: str, tensors: list[torch.Tensor],
                 reads_ok: bool = False) -> None:
        self.land, self.done = land, False
        _GUARD.add(self, what, tensors, reads_ok)

    def wait(self, timeout=None):
        if not self.done:
            _GUARD.remove(self)
            self.done = True
            self.land()
        return True

    def is_completed(self):   # polling would never end under capture: only wait() lands the result
        raise CaptureError(f"{_user_line()}: is_completed() of an async collective is not supported by "
                           "capture; call wait()")

    def get_future(self):
        raise CaptureError(f"{_user_line()}: get_future() of an async collective is not supported by capture")


def _finish(async_op: bool, land: Callable[[], object], what: str, *tensors, reads_ok: bool = False) -> _Pending | None:
    """Land the result now, or (``async_op``) at the handle's ``wait()``."""
    if not async_op:
        land()
        return None
    flat = [t for x in tensors for t in (x if isinstance(x, (list, tuple)) else [x])]
    return _Pending(land, what, flat, reads_ok)


_F = torch.ops._c10d_functional


def _wait(t):
    return _F.wait_tensor(t)


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
    value, op = _premul(tensor, op)
    out = _F.all_reduce(value, _red(op), _pg(group).group_name)
    return _finish(async_op, lambda: tensor.copy_(_wait(out)), "all_reduce", tensor)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    pg = _pg(group)
    out = _F.all_gather_into_tensor(input_tensor.contiguous(), pg.size(), pg.group_name)
    return _finish(async_op, lambda: output_tensor.copy_(_wait(out).view(output_tensor.shape)),
                   "all_gather_into_tensor", output_tensor, input_tensor)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    pg = _pg(group)
    flat = tensor.contiguous().reshape((1,) + tuple(tensor.shape)) if tensor.dim() == 0 else tensor.contiguous()
    out = _F.all_gather_into_tensor(flat, pg.size(), pg.group_name)

    def land():
        for t, part in zip(tensor_list, _wait(out).chunk(pg.size(), dim=0)):
            t.copy_(part.view(t.shape))
    return _finish(async_op, land, "all_gather", tensor_list, tensor)


def reduce_scatter_tensor(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
    pg = _pg(group)
    value, op = _premul(input.contiguous(), op)
    out = _F.reduce_scatter_tensor(value, _red(op), pg.size(), pg.group_name)
    return _finish(async_op, lambda: output.copy_(_wait(out).view(output.shape)), "reduce_scatter",
                   output, input)


def reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, group=None, async_op=False):
    handle = reduce_scatter_tensor(output, torch.cat([t.reshape((-1,) + tuple(output.shape[1:]))
                                                      for t in input_list]), op, group, async_op)
    if handle is not None:
        _GUARD.pending[id(handle)][1].extend(input_list)
    return handle


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    pg = _pg(group)
    w = pg.size()
    ins = list(input_split_sizes) if input_split_sizes else [input.shape[0] // w] * w
    outs = list(output_split_sizes) if output_split_sizes else [output.shape[0] // w] * w
    out = _F.all_to_all_single(input.contiguous(), outs, ins, pg.group_name)
    return _finish(async_op, lambda: output.copy_(_wait(out)), "all_to_all_single", output, input)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    ins = [t.shape[0] for t in input_tensor_list]
    outs = [t.shape[0] for t in output_tensor_list]
    pg = _pg(group)
    out = _F.all_to_all_single(torch.cat([t.contiguous() for t in input_tensor_list]), outs, ins,
                               pg.group_name)

    def land():
        for t, part in zip(output_tensor_list, _wait(out).split(outs)):
            t.copy_(part)
    return _finish(async_op, land, "all_to_all", output_tensor_list, input_tensor_list)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    pg = _pg(group)
    local = group_src if group_src is not None else dist.get_group_rank(pg, src)
    out = _F.broadcast(tensor, local, pg.group_name)
    return _finish(async_op, lambda: tensor.copy_(_wait(out)), "broadcast", tensor)


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
    return _finish(True, lambda: None, "isend", tensor, reads_ok=True)   # sent as it is now


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    out = torch.ops.pvcert.recv(tensor, _peer(group, src, group_src), tag)
    return _finish(True, lambda: tensor.copy_(out), "irecv", tensor)


def batch_isend_irecv(p2p_op_list):
    handles = []
    for p in p2p_op_list:
        fn = p.op.__name__ if hasattr(p.op, "__name__") else str(p.op)
        peer = p.peer if getattr(p, "peer", None) is not None else None
        handles.append((isend if "send" in fn else irecv)(p.tensor, peer, p.group, p.tag))
    return handles


def barrier(group=None, async_op=False, device_ids=None):
    return _Done() if async_op else None


REPLACEMENTS = {
    "all_reduce": all_reduce, "all_gather_into_tensor": all_gather_into_tensor,
    "_all_gather_base": all_gather_into_tensor, "all_gather_single": all_gather_into_tensor,
    "all_gather": all_gather, "reduce_scatter_tensor": reduce_scatter_tensor,
    "_reduce_scatter_base": reduce_scatter_tensor, "reduce_scatter_single": reduce_scatter_tensor,
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


def _unbind_new(names: set[str], originals: dict[int, tuple]) -> None:
    """A module imported during a trace may have bound a replacement (``from torch.distributed
    import scatter``): give it the original back, or it would refuse or misbehave after the trace."""
    back = {id(repl): (repl, orig) for _, orig, repl in originals.values()}
    for mname in names:
        d = getattr(sys.modules.get(mname), "__dict__", None)
        for k, v in list(d.items()) if isinstance(d, dict) else []:
            if id(v) in back and back[id(v)][0] is v:
                d[k] = back[id(v)][1]


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
    before = set(mods)
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
        _unbind_new(set(mods) - before, originals)
        left = _GUARD.release()
    if left:
        raise CaptureError(f"the async_op=True {left[0]} is never waited for (its result would race with "
                           "everything after it): call wait() on its handle")
