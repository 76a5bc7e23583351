"""FSDP2 (``torch.distributed.fsdp.fully_shard``) under capture: its flat buffers made functional.

FSDP2 keeps each parameter group's all-gather output and unsharded parameters in persistent
buffers that it frees (``storage().resize_(0)``) and refills in place (``split_with_sizes_copy``
into views, ``nn.Parameter`` around an ``as_strided`` view): ``make_fx`` cannot follow that
aliasing, so the unsharded parameters would be read as tensor constants. ``functional_fsdp(model)``
keeps FSDP2's own hooks, state machine, sharded DTensor parameters, user comm objects, reduce ops
and gradient divide factors, and replaces only the packing around the collectives by functional
code with the same values (dim-0 sharding, no all-gather extensions, no HSDP; anything else is
refused with a ``CaptureError``):

- all-gather: FSDP2 packs a group's shards into one flat buffer; here each parameter's padded
  shard is all-gathered by itself (through the group's ``AllGather`` object), which is the padded
  unsharded parameter, cut to its size. The refinement engine relates a per-parameter gather (a
  concatenation of the shards), not the packed buffer: it explores what the spec operator's
  related inputs alone compute, and the buffer also packs the other parameters' shards
  ("no clean expression relates 't'", the first layer's weight);
- the unsharded parameter is a leaf tensor (FSDP2: one ``nn.Parameter`` view of its buffer),
  kept while the rank's shard holds the value it was gathered from (the same traced value; every
  rank is traced and checks its own shard, so a re-gather brings the same values), else a fresh
  one (an unreduced ``.grad`` carries over, as on FSDP2's one parameter). FSDP2 refills the
  storage that pending backwards read: a shard changed between a forward and its backward
  (post-backward) is refused;
- reduce-scatter: likewise per parameter, each gradient padded on dim 0, pre-divided,
  reduce-scattered with FSDP2's op (through the group's ``ReduceScatter`` object), the all-reduce
  hook, post-divided, cut to the sharded gradient (accumulated into an existing ``.grad``).

On entry the sharded parameters' local tensors are rebound to the module's current parameters
(the traced inputs capture substitutes) and their gradients cleared: the step starts fresh.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.nn as nn

from .convert import CaptureError


def fsdp_params(model: nn.Module) -> list:
    """FSDP2's ``FSDPParam`` objects of ``model`` (every ``fully_shard``-ed submodule's group)."""
    from torch.distributed.fsdp._fully_shard._fsdp_state import _get_module_fsdp_state

    out, seen = [], set()
    for m in model.modules():
        state = _get_module_fsdp_state(m)
        group = getattr(state, "_fsdp_param_group", None) if state is not None else None
        if group is not None and id(group) not in seen:
            seen.add(id(group))
            out += group.fsdp_params
    return out


def _check(fp) -> None:
    name = fp._module_info.param_name
    if fp.fsdp_placement.dim != 0:
        raise CaptureError(f"fully_shard: parameter '{name}' is sharded on dim {fp.fsdp_placement.dim}: "
                           "capture supports Shard(0)")
    if hasattr(fp._sharded_local_tensor, "fsdp_pre_all_gather"):
        raise CaptureError(f"fully_shard: parameter '{name}' uses all-gather extensions (not supported by capture)")
    if fp._unsharded_dtensor_spec is not None:
        raise CaptureError(f"fully_shard: parameter '{name}' is a DTensor before sharding (FSDP2 + TP is "
                           "not supported by capture)")
    if fp.offload_to_cpu:
        raise CaptureError("fully_shard: CPU offload is not supported by capture")


def _all_gather_inputs(self) -> list[torch.Tensor]:
    """The local shard, flattened when it is read (FSDP2 keeps a flat view from before; an in-place
    optimizer step through the parameter would then be read through that older alias)."""
    from torch.distributed.fsdp._fully_shard._fsdp_common import _to_dtype_if_needed
    from torch.distributed.fsdp._fully_shard._fsdp_param import ShardedState

    if self.sharded_state != ShardedState.SHARDED:
        raise CaptureError("fully_shard: resharding after forward to a smaller mesh is not supported by capture")
    return [_to_dtype_if_needed(self._sharded_local_tensor.reshape(-1), self.param_dtype)]


def _all_gather(fsdp_params, group, async_op, copy_in_stream, all_gather_stream, device, all_gather_comm):
    from torch.distributed.fsdp._fully_shard._fsdp_collectives import AllGatherResult

    world, outs = group.size(), []
    for fp in fsdp_params:
        _check(fp)
        (flat,) = fp.all_gather_inputs
        shard = flat.view(fp.padded_sharded_param_size)
        out = all_gather_comm.allocate((world * shard.shape[0],) + tuple(shard.shape[1:]), dtype=shard.dtype,
                                       device=device)
        all_gather_comm(output_tensor=out, input_tensor=shard, group=group, async_op=False)
        outs.append(out)
    numels = [[fp.padded_sharded_param_size.numel()] for fp in fsdp_params]
    return AllGatherResult(outs, None, None, [[o.dtype] for o in outs], numels, [n for (n,) in numels])


def _copy_out(result, fsdp_params, group) -> None:
    for fp, out in zip(fsdp_params, result.all_gather_output):
        fp.all_gather_outputs = [out.reshape(-1)]   # the padded parameter: the ranks' shards on dim 0


def _init_all_gather_outputs(self, numels, dtypes, world, device) -> None:
    self.all_gather_outputs = [torch.empty(n * world, dtype=d, device=device) for n, d in zip(numels, dtypes)]


def _traced(t: torch.Tensor):
    """What ``t`` holds in the trace: its current node under ``make_fx`` (an in-place update moves
    it; the tensor's version counter does not, when the update runs inside DTensor's dispatch),
    else the tensor itself."""
    from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot

    mode = get_proxy_mode()
    return t if mode is None else get_proxy_slot(t, mode.tracer, t, lambda p: p.proxy.node)


def _init_unsharded_param(self) -> None:
    _check(self)
    local, old = self._sharded_local_tensor, getattr(self, "_unsharded_param", None)
    held = (local, _traced(local))
    same = old is not None and self._pvcert_gathered[0] is local and self._pvcert_gathered[1] is held[1]
    if not same and old is not None and (torch._C._current_autograd_node() is not None or self._pvcert_pending):
        # FSDP2 would refill the storage a pending backward reads (its saved tensors) with other values
        raise CaptureError(f"fully_shard: parameter '{self._module_info.param_name}' changed between a forward "
                           "and its backward (capture refuses it)")
    if not same:
        flat = self.all_gather_outputs[0].reshape(-1)
        value = flat.narrow(0, 0, self._orig_size.numel()).view(self._orig_size)
        self._unsharded_param = value.detach().requires_grad_(self.sharded_param.requires_grad)
        if old is not None and old.grad is not None:   # FSDP2's one parameter keeps an unreduced gradient
            self._unsharded_param.grad = old.grad
        self._pvcert_gathered = held
    if torch._C._current_autograd_node() is None and torch.is_grad_enabled():
        self._pvcert_pending = True   # a forward that records a backward: until its post-backward


def _post_backward(original):
    def post_backward(group, *args, **kwargs):
        out = original(group, *args, **kwargs)
        for fp in group.fsdp_params:
            fp._pvcert_pending = False
        return out
    return post_backward


def _no_storage(self) -> None:
    """No storage to allocate or free: the values are functional."""


def _reduce(fsdp_params, unsharded_grads, rs_group, rs_stream, rs_comm, orig_dtype, reduce_dtype, device,
            gradient_divide_factor, all_reduce_group, all_reduce_stream, all_reduce_grads, partial_reduce_output,
            all_reduce_hook, force_sum_reduction_for_comms=False):
    from torch.distributed.fsdp._fully_shard._fsdp_collectives import _get_gradient_divide_factors
    from torch.distributed.fsdp._fully_shard._fsdp_common import _get_dim0_padded_size, _to_dtype_if_needed

    if all_reduce_group is not None or partial_reduce_output is not None:
        raise CaptureError("fully_shard: HSDP / replicated meshes are not supported by capture")
    if len({g.dtype for g in unsharded_grads}) != 1:
        raise CaptureError("fully_shard: gradients of mixed dtypes")
    reduce_dtype = reduce_dtype or unsharded_grads[0].dtype
    pre, post, op, _ = _get_gradient_divide_factors(rs_group, None, reduce_dtype, device.type,
                                                    gradient_divide_factor, force_sum_reduction_for_comms)
    world = rs_group.size() if rs_group is not None else 1
    padded, grads = [], []
    for fp, g in zip(fsdp_params, unsharded_grads):
        _check(fp)
        size = _get_dim0_padded_size(g.size(), world)
        if size != g.size():
            g = torch.cat([g, g.new_zeros((size[0] - g.size(0),) + tuple(g.shape[1:]))])
        g = g.to(reduce_dtype)
        grads.append(g / pre if pre is not None and pre != 1 else g)
        padded.append(size)
    unsharded_grads.clear()
    for size, fp, g in zip(padded, fsdp_params, grads):
        if world > 1:
            out = rs_comm.allocate((size[0] // world,) + tuple(size[1:]), dtype=reduce_dtype, device=device)
            rs_comm(output_tensor=out, input_tensor=g, group=rs_group, op=op)
        else:
            out = g / gradient_divide_factor if gradient_divide_factor is not None else g
        if all_reduce_hook is not None:
            all_reduce_hook(out)
        if post is not None and post != 1:
            out = out / post
        new = _to_dtype_if_needed(out, orig_dtype).narrow(0, 0, fp.sharded_size[0])
        old = fp.sharded_param.grad
        fp.sharded_param.grad = fp.to_sharded_dtensor(new if old is None else old._local_tensor + new)
        for hook in (getattr(fp.sharded_param, "_post_accumulate_grad_hooks", None) or {}).values():
            hook(fp.sharded_param)
    event = rs_stream.record_event()
    return None, event, rs_stream, event, None, None, None


def _rebind(model: nn.Module, params: list) -> None:
    """Point each sharded parameter's storage at the module's current parameter (capture's traced
    input) and clear its gradient."""
    qual = {id(m): q for q, m in model.named_modules()}
    current = dict(model.named_parameters())
    for fp in params:
        _check(fp)
        info = fp._module_info
        q = qual.get(id(info.module))
        name = f"{q}.{info.param_name}" if q else info.param_name
        new = current.get(name)
        local = getattr(new, "_local_tensor", None)
        if local is None or tuple(local.shape) != tuple(fp.padded_sharded_param_size):
            raise CaptureError(f"fully_shard: parameter '{name}' is not an evenly sharded DTensor under capture "
                               "(sizes must divide by the world size)")
        fp.sharded_param._local_tensor = local
        fp._sharded_param_data = local.view(-1)
        fp.sharded_param.grad = None
        if hasattr(fp, "_unsharded_param"):
            del fp._unsharded_param
        fp._pvcert_pending = False
        fp._setattr_on_modules(fp.sharded_param)


@contextlib.contextmanager
def functional_fsdp(model: nn.Module):
    """FSDP2 on ``model`` with functional collectives' packing (module docstring) while active."""
    from torch.distributed.fsdp._fully_shard import _fsdp_param_group as pg
    from torch.distributed.fsdp._fully_shard._fsdp_param import FSDPParam
    from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPParamGroup

    params = fsdp_params(model)
    if not params:
        raise CaptureError("functional_fsdp: the model has no fully_shard-ed parameters")
    patches: list[tuple[Any, str, Any]] = [
        (pg, "foreach_all_gather", _all_gather), (pg, "foreach_all_gather_copy_out", _copy_out),
        (pg, "foreach_reduce", _reduce), (FSDPParam, "init_all_gather_outputs", _init_all_gather_outputs),
        (FSDPParam, "init_unsharded_param", _init_unsharded_param),
        (FSDPParam, "all_gather_inputs", property(_all_gather_inputs)),
        (FSDPParamGroup, "post_backward", _post_backward(FSDPParamGroup.post_backward)),
        (FSDPParam, "alloc_all_gather_outputs", _no_storage), (FSDPParam, "free_unsharded_param", _no_storage)]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    for obj, name, new in patches:
        setattr(obj, name, new)
    try:
        _rebind(model, params)
        yield
    finally:
        for obj, name, old in saved:
            setattr(obj, name, old)
