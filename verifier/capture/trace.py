"""Tracing a module's forward (and backward) to a ``RankProgram`` with fake tensors.

``capture_module`` runs ``make_fx(..., tracing_mode="fake")`` over
``torch.func.functional_call`` and, for the backward, ``torch.autograd.grad`` of the
outputs (with seed gradients ``d_<output>`` as graph inputs) or of a scalar loss, with
respect to the parameters and the float inputs. This runs the real autograd engine,
so custom ``torch.autograd.Function`` backwards (Megatron's copy/reduce regions) are
what gets captured. Parameters and buffers become graph inputs named by their module
path; gradients are outputs named ``grad.<name>``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch._subclasses import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from .convert import CaptureError, Converter, Input, RankProgram, dtype_name, ir_name
from .decomp import DECOMPOSITIONS, AboveAutograd
from .dist import group_ranks, traceable_collectives
from .locations import backward_locations, module_paths


@dataclass
class InputSpec:
    """An example input: its shape, dtype, role and (integer inputs) value range [lo, hi)."""

    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32
    role: str | None = None
    range: tuple[int, int] | None = None

    def role_name(self) -> str:
        if self.role:
            return self.role
        return "activation" if self.dtype.is_floating_point else "index"

    def example(self, mode: FakeTensorMode, device="cpu") -> torch.Tensor:
        """A fake tensor of this shape and dtype in ``mode``: nothing is allocated, at any size."""
        with mode:
            return torch.empty(self.shape, dtype=self.dtype, device=device)


def as_spec(v) -> InputSpec:
    if isinstance(v, InputSpec):
        return v
    if isinstance(v, torch.Tensor):
        return InputSpec(tuple(v.shape), v.dtype)
    if isinstance(v, (tuple, list)) and all(isinstance(x, int) for x in v):
        return InputSpec(tuple(v))
    if isinstance(v, dict):
        return InputSpec(tuple(v["shape"]), v.get("dtype", torch.float32), v.get("role"),
                         tuple(v["range"]) if v.get("range") else None)
    raise CaptureError(f"bad input description {v!r} (a shape, a tensor, an InputSpec or a dict)")


@dataclass
class Captured:
    program: RankProgram
    gm: torch.fx.GraphModule
    seconds: float
    stats: dict[str, Any] = field(default_factory=dict)


def _flat_out(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for x in out for t in _flat_out(x)]
    if isinstance(out, dict):
        return [t for x in out.values() for t in _flat_out(x)]
    if hasattr(out, "to_tuple"):          # transformers ModelOutput
        return _flat_out(out.to_tuple())
    if out is None:
        return []
    raise CaptureError(f"module output of type {type(out).__name__} is not a tensor structure")


def capture_module(module: torch.nn.Module, inputs: dict[str, Any], *, backward: bool = False,
                   loss: Callable | None = None, loss_inputs: dict[str, Any] | None = None,
                   output_names: list[str] | None = None, rank: int = 0, where: str = "",
                   call: Callable | None = None, grad_inputs: bool = True,
                   decompositions: dict | None = None) -> Captured:
    """Trace ``module(**inputs)`` (forward, or forward + backward) into a ``RankProgram``.

    ``inputs`` maps argument names to shapes / ``InputSpec``s / example tensors, passed
    as keyword arguments (or to ``call(module, **inputs)`` when given). With ``loss``,
    the backward differentiates ``loss(output, **loss_inputs)``; otherwise it feeds a
    seed gradient input ``d_<output>`` per float output.
    """
    where = where or type(module).__name__
    specs = {k: as_spec(v) for k, v in inputs.items()}
    lspecs = {k: as_spec(v) for k, v in (loss_inputs or {}).items()}
    params = [(k, p) for k, p in module.named_parameters() if p.requires_grad or not backward]
    frozen = [(k, p) for k, p in module.named_parameters() if backward and not p.requires_grad]
    buffers = list(module.named_buffers()) + frozen
    device = next((p.device for _, p in params), torch.device("cpu"))
    call = call or _default_call(module, list(inputs))
    n_p, n_b, n_in = len(params), len(buffers), len(specs)
    out_place: dict[int, tuple] = {}
    names_in = list(specs)
    names_l = list(lspecs)
    diff_inputs = [k for k in names_in if specs[k].dtype.is_floating_point] if grad_inputs else []

    def fn(*flat):
        ps = list(flat[:n_p])
        bs = list(flat[n_p:n_p + n_b])
        xs = dict(zip(names_in, flat[n_p + n_b:n_p + n_b + n_in]))
        rest = list(flat[n_p + n_b + n_in:])
        if backward:
            ps = [p.requires_grad_(True) for p in ps]
            for k in diff_inputs:
                xs[k] = xs[k].requires_grad_(True)
        state = {k: _wrap(v, dmeta.get(k)) for (k, _), v in zip(params, ps)}
        state.update({k: _wrap(v, dmeta.get(k)) for (k, _), v in zip(buffers, bs)})
        with torch.nn.utils.stateless._reparametrize_module(module, state, tie_weights=True):
            out = call(module, **xs)
        outs = _flat_out(out)
        out_place.update({i: _dtensor_meta(o) for i, o in enumerate(outs) if _dtensor_meta(o)})
        outs = [_local(o) for o in outs]
        if not backward:
            return outs
        wrt = ps + [xs[k] for k in diff_inputs]
        if loss is not None:
            lval = loss(out, **dict(zip(names_l, rest)))
            backward_locations([lval])
            grads = torch.autograd.grad(lval, wrt, allow_unused=True)
            outs = outs + [lval]
        else:
            seeds = rest[len(names_l):]
            pairs = [(o, s) for o, s in zip(outs, seeds) if o.requires_grad]
            backward_locations([o for o, _ in pairs])
            grads = torch.autograd.grad([o for o, _ in pairs], wrt, [s for _, s in pairs],
                                        allow_unused=True)
        return outs + [g for g in grads if g is not None], [g is not None for g in grads]

    dmeta = {k: _dtensor_meta(p) for k, p in params + buffers if _dtensor_meta(p) is not None}
    # One fake mode for every input: make_fx finds it in the example inputs and traces in it.
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    example = [_local(p).detach() for _, p in params] + [_local(b).detach() for _, b in buffers]
    example += [specs[k].example(mode, device) for k in names_in]
    example += [lspecs[k].example(mode, device) for k in names_l]
    t0 = time.perf_counter()
    # Probe the forward once to learn the outputs (names and seed shapes).
    fake: list = []
    try:
        with mode:
            fake = [x if isinstance(x, torch._subclasses.FakeTensor) else mode.from_tensor(x) for x in example]
            with traceable_collectives(), AboveAutograd(), torch.no_grad():
                xs = dict(zip(names_in, fake[n_p + n_b:n_p + n_b + n_in]))
                with torch.nn.utils.stateless._reparametrize_module(
                        module, {**{k: _wrap(v, dmeta.get(k)) for (k, _), v in zip(params, fake)},
                                 **{k: _wrap(v, dmeta.get(k)) for (k, _), v in zip(buffers, fake[n_p:])}},
                        tie_weights=True):
                    probe = [_local(o) for o in _flat_out(call(module, **xs))]
    except CaptureError:
        raise
    except Exception as e:
        raise _failed(e, where) from e
    finally:   # the fakes are memoized per tensor: a step's backward in the probe must not leave .grad for the trace
        for x in fake:
            x.grad = None
    n_out = len(probe)
    if output_names is None:
        output_names = ["out"] if n_out == 1 else [f"out{i}" for i in range(n_out)]
    if len(output_names) != n_out:
        raise CaptureError(f"{where}: {n_out} outputs but {len(output_names)} output names")
    seed_specs = []
    if backward and loss is None:
        seed_specs = [(f"d_{nm}", InputSpec(tuple(o.shape), o.dtype, "gradient"))
                      for nm, o in zip(output_names, probe) if o.dtype.is_floating_point]
        example += [s.example(mode, device) for _, s in seed_specs]
    used = {}

    def traced(*flat):
        res = fn(*flat)
        if backward:
            res, mask = res
            used["mask"] = mask
        return res

    try:
        with traceable_collectives(), module_paths(module), AboveAutograd():
            gm = make_fx(traced, tracing_mode="fake", decomposition_table=decompositions or DECOMPOSITIONS,
                         _allow_non_fake_inputs=True, record_stack_traces=True)(*example)
    except CaptureError:
        raise
    except Exception as e:  # data-dependent control flow, fake-tensor gaps, ...
        raise _failed(e, where) from e
    t1 = time.perf_counter()
    in_specs = [Input(ir_name(k), tuple(_local(p).shape), dtype_name(p.dtype, where), "parameter")
                for k, p in params]
    in_specs += [Input(ir_name(k), tuple(_local(b).shape), dtype_name(b.dtype, where), "buffer")
                 for k, b in buffers]
    for k in names_in:
        s = specs[k]
        _range_ok(k, s, where)
        in_specs.append(Input(k, s.shape, dtype_name(s.dtype, where), s.role_name(), s.range))
    for k in names_l:
        s = lspecs[k]
        _range_ok(k, s, where)
        in_specs.append(Input(k, s.shape, dtype_name(s.dtype, where), s.role or "label", s.range))
    in_specs += [Input(k, s.shape, dtype_name(s.dtype, where), "gradient") for k, s in seed_specs]
    outs = list(output_names)
    if backward:
        if loss is not None:
            outs.append("loss")
        wrt_names = [k for k, _ in params] + diff_inputs
        outs += [f"grad.{ir_name(k)}" for k, m in zip(wrt_names, used["mask"]) if m]
    conv = Converter(gm, rank, where, in_specs, outs, group_ranks)
    prog = conv.run()
    prog.placements = {ir_name(k): v for k, v in dmeta.items()}
    for i, pl in out_place.items():
        prog.placements[output_names[i]] = pl
    if backward:
        for k, m in zip(wrt_names, used["mask"]):
            if m and k in dmeta:
                prog.placements[f"grad.{ir_name(k)}"] = dmeta[k]
    t2 = time.perf_counter()
    stats = {"trace_s": t1 - t0, "convert_s": t2 - t1, "fx_nodes": len(gm.graph.nodes)}
    return Captured(prog, gm, t2 - t0, stats)


def _default_call(module, names):
    """Keyword arguments when ``forward`` has parameters of those names, else positional."""
    import inspect

    try:
        params = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        params = {}
    if all(n in params for n in names):
        return lambda m, **kw: m(**kw)
    return lambda m, **kw: m(*kw.values())


def _dtensor_meta(t):
    """``(placements, mesh ranks, mesh, global shape, stride)`` of a DTensor, else None."""
    from torch.distributed.tensor import DTensor

    if isinstance(t, DTensor):
        # A sub-mesh's ranks are computed with tensor ops: run them untraced (inside make_fx too).
        with torch.utils._python_dispatch._disable_current_modes(), torch._C.DisableTorchFunction():
            ranks = t.device_mesh.mesh.tolist()
        return (tuple(t.placements), ranks, t.device_mesh, tuple(t.shape), t.stride())
    return None


def _local(t):
    from torch.distributed.tensor import DTensor

    return t.to_local() if isinstance(t, DTensor) else t


def _wrap(local, meta):
    """The DTensor a parameter was, around its local part (no communication)."""
    if meta is None:
        return local
    from torch.distributed.tensor import DTensor

    placements, _, mesh, shape, stride = meta
    return DTensor.from_local(local, mesh, placements, run_check=False, shape=shape, stride=stride)


def _failed(e: Exception, where: str) -> CaptureError:
    """A one-line capture error for an exception raised while tracing."""
    from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException

    if isinstance(e, DataDependentOutputException):
        return CaptureError(f"{where}: tracing failed: data-dependent control flow or value ({e.func}): "
                            "capture needs control flow that does not read tensor values")
    if isinstance(e, DynamicOutputShapeException):
        return CaptureError(f"{where}: tracing failed: op {e.func} has a data-dependent output shape")
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return CaptureError(f"{where}: tracing failed: {type(e).__name__}: {msg[:300]}")


def _range_ok(name: str, s: InputSpec, where: str) -> None:
    if not s.dtype.is_floating_point and s.dtype != torch.bool and s.range is None:
        raise CaptureError(f"{where}: integer input '{name}' needs a value range (lo, hi)")
