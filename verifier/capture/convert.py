"""FX graphs (ATen level, from ``make_fx``) to one rank's program in IR terms.

A ``RankProgram`` lists the rank's inputs, its plain nodes and its collective and
point-to-point calls (still unmatched: ``stitch`` pairs them across ranks). Tensor
names are bare here; the stitcher adds the ``@r<k>`` suffix.

Faithfulness rules (the capture is untrusted, but it must not invent semantics):
- every ATen op maps to the registry target of the same name; positional and keyword
  arguments map to the schema argument names; tensor arguments fill the registry's
  operand slots, the rest become attributes;
- arguments the registry does not model are dropped only when they cannot change a
  value (device, layout, pin_memory, memory_format, non_blocking) or equal the
  schema default; anything else is an error naming the op and the argument;
- in-place ops become their out-of-place form and rebind the mutated tensor; a
  mutation of a tensor that shares storage with another live tensor is refused;
- ops the registry does not know are collected and reported together, by name.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from certificates.ops import REGISTRY

from .locations import sources


UNSUP = "<unsupported>"  # value of a node whose op is reported as unsupported


class CaptureError(ValueError):
    """A program that cannot be captured faithfully; the message names the op."""


DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
          torch.float64: "float64", torch.int8: "int8", torch.uint8: "uint8", torch.int16: "int16",
          torch.int32: "int32", torch.int64: "int64", torch.bool: "bool"}
HARMLESS = {"device", "layout", "pin_memory", "memory_format", "non_blocking", "copy", "requires_grad"}
RESHAPES = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"}
IDENTITY = {"aten.detach.default", "aten.alias.default", "aten.clone.default", "aten.contiguous.default",
            "aten.lift_fresh_copy.default", "_c10d_functional.wait_tensor.default"}
EMPTY = {"aten.empty.memory_format", "aten.empty_like.default", "aten.new_empty.default",
         "aten.empty_strided.default", "aten.new_empty_strided.default"}
SCALAR_SELF = {"aten.sub.Tensor": "aten.rsub.Scalar", "aten.add.Tensor": "aten.add.Tensor",
               "aten.mul.Tensor": "aten.mul.Tensor"}
SAME_SHAPE_IDENTITY = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
                       "aten.expand.default"}
COLLECTIVES = {
    "_c10d_functional.all_reduce.default", "_c10d_functional.all_gather_into_tensor.default",
    "_c10d_functional.reduce_scatter_tensor.default", "_c10d_functional.all_to_all_single.default",
    "_c10d_functional.broadcast.default"}
P2P = {"pvcert.send.default": "send", "pvcert.recv.default": "recv"}
# Factory ops rewritten to registry factories (same value, fewer targets for the checker).
LIKE = {"aten.zeros_like.default": 0, "aten.ones_like.default": 1, "aten.new_zeros.default": 0,
        "aten.new_ones.default": 1, "aten.full_like.default": None, "aten.new_full.default": None}


def dtype_name(dt: torch.dtype, where: str) -> str:
    if dt not in DTYPES:
        raise CaptureError(f"{where}: dtype {dt} is not supported by the IR")
    return DTYPES[dt]


@dataclass
class Meta:
    shape: tuple[int, ...] | None
    dtype: str | None


@dataclass
class Item:
    """One step of a rank's program: a plain op, a collective call, or a send/recv."""

    kind: str                         # "op" | "coll" | "send" | "recv"
    target: str
    inputs: list[str | None]
    outputs: list[str]
    attrs: dict[str, Any]
    metas: list[Meta]
    group: list[int] | None = None    # collectives: global ranks; send/recv: [peer]
    fx: str = ""                      # the FX node it came from (for messages)
    source: dict | None = None        # module path, file, line (verifier/capture/locations.py)


@dataclass
class Input:
    name: str
    shape: tuple[int, ...]
    dtype: str
    role: str
    range: tuple[int, int] | None = None


@dataclass
class RankProgram:
    rank: int
    inputs: list[Input] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    where: str = ""
    placements: dict[str, tuple] = field(default_factory=dict)  # DTensor inputs/outputs

    def op_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for it in self.items:
            out[it.target] = out.get(it.target, 0) + 1
        return out


def ir_name(name: str) -> str:
    """A module path as an IR tensor name: ``0.weight`` -> ``_0.weight``, odd characters -> ``_``."""
    name = "".join(c if c.isalnum() or c in "_." else "_" for c in name) or "_"
    return name if name[0].isalpha() or name[0] == "_" else "_" + name


def _meta(val, where: str) -> Meta:
    if val is None:   # an output the op does not compute (output_mask False): any name will do
        return Meta(None, None)
    if not isinstance(val, torch.Tensor):
        raise CaptureError(f"{where}: expected a tensor, got {type(val).__name__}")
    return Meta(tuple(int(s) for s in val.shape), dtype_name(val.dtype, where))


def _scalar(v, where: str):
    """An attribute value in JSON terms."""
    if isinstance(v, torch.dtype):
        return dtype_name(v, where)
    if isinstance(v, bool) or isinstance(v, int) or isinstance(v, str) or v is None:
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise CaptureError(f"{where}: non-finite constant {v} (the IR has exact rationals only)")
        return v
    if isinstance(v, (list, tuple)):
        return [_scalar(x, where) for x in v]
    if isinstance(v, (torch.SymInt, torch.SymFloat)):
        raise CaptureError(f"{where}: symbolic size {v} (capture with concrete shapes)")
    raise CaptureError(f"{where}: argument of type {type(v).__name__} is not supported")


def _storage(val):
    try:
        return StorageWeakRef(val.untyped_storage()) if isinstance(val, torch.Tensor) else None
    except Exception:  # sparse or opaque tensors: no aliasing information
        return None


def _mutated(target) -> list[int]:
    schema = getattr(target, "_schema", None)
    if schema is None:
        return []
    return [i for i, a in enumerate(schema.arguments) if a.alias_info is not None and a.alias_info.is_write]


def _bind_args(target, args, kwargs) -> list[tuple[Any, Any, bool]]:
    """``(schema argument, value, given)`` for every argument of ``target``'s schema."""
    out = []
    for i, a in enumerate(target._schema.arguments):
        if i < len(args):
            out.append((a, args[i], True))
        elif a.name in kwargs:
            out.append((a, kwargs[a.name], True))
        else:
            out.append((a, a.default_value if a.has_default_value() else None, False))
    return out


class Converter:
    """Convert one traced ``GraphModule`` into a ``RankProgram``."""

    def __init__(self, gm: torch.fx.GraphModule, rank: int, where: str,
                 input_specs: list[Input], output_names: list[str], resolve_group) -> None:
        self.gm, self.rank, self.where = gm, rank, where
        self.prog = RankProgram(rank, list(input_specs), where=where)
        self.output_names = output_names
        self.resolve_group = resolve_group  # group name -> global ranks (at capture time)
        self.env: dict[torch.fx.Node, Any] = {}
        self.names: set[str] = {i.name for i in input_specs}
        self.unsupported: dict[str, int] = {}
        self.fresh = 0
        self.sources = sources(gm)

    # ------------------------------------------------------------ names
    def _name(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c in "_." else "_" for c in base) or "t"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "t_" + base
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def _emit(self, kind, target, inputs, fx: torch.fx.Node, attrs=None, vals=None, group=None,
              names=None) -> list[str]:
        vals = vals if vals is not None else _as_list(fx.meta.get("val"))
        metas = [_meta(v, f"{self.where}: {target} (node '{fx.name}')") for v in vals]
        if names is None:
            names = [self._name(fx.name if len(vals) == 1 else f"{fx.name}_{i}") for i in range(len(vals))]
        self.prog.items.append(Item(kind, target, list(inputs), names, attrs or {}, metas, group, fx.name,
                                    self.sources.get(fx)))
        return names

    # ------------------------------------------------------------ liveness
    def _live(self) -> set[torch.fx.Node]:
        """Nodes that reach an output or a collective; a mutation is live when its target, or a node
        that is the same tensor (``_whole``: a gradient's ``to_local()``), is read after it by a live
        node, to a fixed point (a target can turn live only through a node before the mutation)."""
        live: set[torch.fx.Node] = set()
        pos = {n: i for i, n in enumerate(self.gm.graph.nodes)}
        while True:
            before = len(live)
            last = {m: max([pos[u] for u in m.users if u in live], default=-1) for m in live}
            self._live_pass(live, last, pos)
            if len(live) == before:
                return live

    def _live_pass(self, live: set[torch.fx.Node], last: dict, pos: dict) -> None:
        for n in reversed(list(self.gm.graph.nodes)):
            if n.op == "output":
                live.add(n)
            elif n.op == "call_function":
                t = str(n.target)
                mut = _mutated(n.target) if not isinstance(n.target, type(operator.getitem)) else []
                if t in COLLECTIVES or t in P2P or t.startswith("c10d.") or n in live:
                    live.add(n)   # communication is never dropped (unsupported ones get reported)
                elif mut and any(m in live or any(last.get(w, -1) > pos[n] for w in self._sharing(m))
                                 for i in mut if i < len(n.args) for m in _nodes_in(n.args[i])):
                    live.add(n)   # read later through any tensor of its storage: kept (then handled or refused)
            if n in live:
                skip = set()
                if n.op == "call_function" and str(n.target) in (
                        "aten.copy_.default", "aten.copy.default", "aten.fill_.Scalar", "aten.zero_.default",
                        "pvcert.recv.default"):
                    skip = {0}  # the overwritten tensor's old value is not read
                for i, a in enumerate(n.args):
                    if i not in skip:
                        for m in _nodes_in(a):
                            live.add(m)
                for a in n.kwargs.values():
                    for m in _nodes_in(a):
                        live.add(m)

    # ------------------------------------------------------------ main loop
    def run(self) -> RankProgram:
        live = self._live()
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.prog.inputs):
            raise CaptureError(f"{self.where}: {len(placeholders)} graph inputs, "
                               f"{len(self.prog.inputs)} described")
        for n, spec in zip(placeholders, self.prog.inputs):
            self.env[n] = spec.name
        nodes = list(self.gm.graph.nodes)
        self.pos = {n: i for i, n in enumerate(nodes)}
        self.uses = {n: [self.pos[u] for u in n.users if u in live] for n in nodes}
        for n in nodes:
            if n.op in ("placeholder", "output") or n not in live:
                continue
            if n.op == "get_attr" and self._constant(n):
                continue
            if n.op == "get_attr" and not isinstance(getattr(self.gm, n.target, None), torch.Tensor):
                self.env[n] = UNSUP  # a process group or reduce-op object of a c10d.* call
                continue
            if n.op == "get_attr":
                raise CaptureError(f"{self.where}: node '{n.name}' reads a tensor constant "
                                   f"('{n.target}'); pass it as a module buffer or an input")
            if n.op != "call_function":
                raise CaptureError(f"{self.where}: unsupported FX node '{n.name}' ({n.op})")
            self._node(n)
        if self.unsupported:
            ops = ", ".join(f"{k} ({v}x)" if v > 1 else k for k, v in sorted(self.unsupported.items()))
            custom = any(k.split(".")[0] not in ("aten", "prims", "_c10d_functional", "c10d") for k in self.unsupported)
            raise CaptureError(f"{self.where}: ops not in the operator registry: {ops}" + (
                " (custom ops: declare their semantics, CaptureCase(declared={'ns::name': fn}))" if custom else ""))
        out_node = next(n for n in nodes if n.op == "output")
        outs = _flat(out_node.args[0])
        if len(outs) != len(self.output_names):
            raise CaptureError(f"{self.where}: {len(outs)} outputs, {len(self.output_names)} names")
        self._outputs(outs)
        return self.prog

    def _constant(self, n) -> bool:
        """A one-element tensor constant (``torch.tensor(0.0)`` in model code) becomes ``full``."""
        val = getattr(self.gm, n.target, None)
        if not isinstance(val, torch.Tensor) or val.numel() != 1 or isinstance(
                val, torch._subclasses.FakeTensor) or val.device.type == "meta":
            return False
        where = f"{self.where}: constant '{n.target}'"
        attrs = {"size": list(val.shape), "fill_value": _scalar(val.item(), where),
                 "dtype": dtype_name(val.dtype, where)}
        self.env[n] = self._emit("op", "aten.full.default", [], n, attrs, vals=[val])[0]
        return True

    def _outputs(self, outs) -> None:
        produced = {}
        for it in self.prog.items:
            for i, o in enumerate(it.outputs):
                produced[o] = (it, i)
        input_names = {i.name for i in self.prog.inputs}
        taken = set()
        for node, want in zip(outs, self.output_names):
            if not isinstance(node, torch.fx.Node):
                raise CaptureError(f"{self.where}: output '{want}' is not a tensor")
            cur = self.env[node]
            if cur in produced and cur not in taken and want not in self.names:
                self._rename(cur, want)
                self.env = {k: (want if v == cur else v) for k, v in self.env.items()}
                produced[want] = produced.pop(cur)
                self.names.add(want)
            elif cur not in input_names and cur not in produced:
                raise CaptureError(f"{self.where}: output '{want}' is not computed")
            else:  # an input, or a tensor already named: give the output its own name
                if want in self.names:
                    raise CaptureError(f"{self.where}: output name '{want}' clashes with a tensor")
                self.names.add(want)
                meta = produced[cur][0].metas[produced[cur][1]] if cur in produced else next(
                    Meta(i.shape, i.dtype) for i in self.prog.inputs if i.name == cur)
                self.prog.items.append(Item("op", "aten.alias.default", [cur], [want], {}, [meta], None, want))
            taken.add(want)
            self.prog.outputs.append(want)

    def _rename(self, old: str, new: str) -> None:
        for it in self.prog.items:
            it.inputs = [new if t == old else t for t in it.inputs]
            it.outputs = [new if t == old else t for t in it.outputs]

    def _val(self, a):
        if isinstance(a, torch.fx.Node):
            v = self.env.get(a)
            if v is None:
                raise CaptureError(f"{self.where}: node '{a.name}' is used but was not captured")
            return v
        return a

    def _node(self, n: torch.fx.Node) -> None:
        if n.target is operator.getitem:
            src, i = n.args
            self.env[n] = UNSUP if self.env[src] is UNSUP else self.env[src][i]
            return
        t = str(n.target)
        where = f"{self.where}: {t} (node '{n.name}')"
        if not hasattr(n.target, "_schema"):
            raise CaptureError(f"{where}: not an ATen operator")
        if t.startswith("c10d."):
            self._unsup(n, f"{t} (a collective called on a ProcessGroup object: use torch.distributed's API)")
            return
        if t in EMPTY:
            self._unsup(n, f"{t} (reads an uninitialized tensor)")
            return
        if t.startswith("aten.bernoulli") or t == "aten.native_dropout.default" and _random_dropout(n):
            self._unsup(n, f"{t} (random: dropout/bernoulli values are not a function of the inputs)")
            return
        bound = _bind_args(n.target, n.args, n.kwargs)
        if t in IDENTITY or t in SAME_SHAPE_IDENTITY and _same_shape(bound[0][1], n):
            self.env[n] = self._val(bound[0][1])
            return
        if t in COLLECTIVES:
            return self._collective(n, t, bound, where)
        if t in P2P:
            return self._p2p(n, t, bound, where)
        mut = _mutated(n.target)
        if mut:
            return self._inplace(n, t, bound, mut, where)
        self._plain(n, t, bound, where)

    def _unsup(self, n, what: str) -> None:
        self.unsupported[what] = self.unsupported.get(what, 0) + 1
        self.env[n] = UNSUP

    def _plain(self, n, t, bound, where, vals=None) -> list[str] | None:
        if t in LIKE:
            return self._like(n, t, bound, where)
        if t == "aten.scalar_tensor.default":
            return self._factory(n, "aten.full.default", {"size": [], "fill_value": bound[0][1]}, where)
        if t == "aten.copy.default":
            return self._copy(n, bound, where)
        if t == "aten.index_put.default":
            return self._index_put(n, bound, where)
        if t == "aten.index.Tensor":
            return self._index(n, bound)
        if t == "aten.max.dim" and all(u.target is operator.getitem and u.args[1] == 0
                                       for u in n.users if self.pos[u] in self.uses[n]):
            return self._max_values(n, bound)
        if t in ("aten.slice_backward.default", "aten.select_backward.default"):
            return self._slice_backward(n, t, bound, where)
        if t in SCALAR_SELF and not isinstance(bound[0][1], torch.fx.Node) \
                and isinstance(bound[1][1], torch.fx.Node):
            # c - x, c + x, c * x traced with a number as 'self': the same op on the tensor
            c, x = bound[0][1], bound[1][1]
            args = [x, c] + [v for _, v, _ in bound[2:]]
            nt = SCALAR_SELF[t]
            tgt = getattr(getattr(torch.ops.aten, nt.split(".")[1]), nt.split(".")[2])
            return self._plain(n, nt, _bind_args(tgt, args, {}), where, vals)
        op = REGISTRY.get(t)
        if op is None:
            self.unsupported[t] = self.unsupported.get(t, 0) + 1
            self.env[n] = UNSUP
            return None
        slots = [s.rstrip("?") for s in op.slots]
        inputs: list[str | None] = [None] * len(slots)
        attrs = {}
        for a, v, given in bound:
            if a.name in slots:
                k = slots.index(a.name)
                if op.variadic:
                    inputs = [self._val(x) for x in v]
                elif isinstance(v, torch.fx.Node):
                    inputs[k] = self._val(v)
                elif v is None:
                    pass
                elif a.name in op.attrs:
                    attrs[a.name] = _scalar(v, where)
                else:
                    raise CaptureError(f"{where}: operand '{a.name}' is a constant {v!r}, not a tensor")
            elif a.name in op.attrs:
                if any(isinstance(x, torch.fx.Node) for x in _flat(v)):
                    raise CaptureError(f"{where}: argument '{a.name}' is a tensor; the registry takes a constant")
                val = _scalar(v, where)
                if given or op.attrs[a.name] is not None:
                    attrs[a.name] = val
            elif a.name in HARMLESS or not given:
                continue
            elif a.has_default_value() and _same(v, a.default_value):
                continue
            else:
                raise CaptureError(f"{where}: argument '{a.name}'={v!r} is not modeled by the registry")
        while not op.variadic and inputs and inputs[-1] is None:
            inputs.pop()
        if not op.variadic and any(x is None and not s.endswith("?") for x, s in zip(inputs, op.slots)):
            raise CaptureError(f"{where}: a required operand is missing")
        outs = self._emit("op", t, inputs, n, attrs, vals)
        self.env[n] = outs if isinstance(n.meta.get("val"), (list, tuple)) else outs[0]
        return outs

    def _factory(self, n, target, attrs, where) -> list[str]:
        val = n.meta["val"]
        attrs = {k: _scalar(v, where) for k, v in attrs.items()}
        attrs["dtype"] = dtype_name(val.dtype, where)
        outs = self._emit("op", target, [], n, attrs)
        self.env[n] = outs[0]
        return outs

    def _like(self, n, t, bound, where):
        val = n.meta["val"]
        fill = LIKE[t]
        if fill is None:
            fill = dict((a.name, v) for a, v, _ in bound)["fill_value"]
        return self._factory(n, "aten.full.default", {"size": list(val.shape), "fill_value": fill}, where)

    def _copy(self, n, bound, where, target_val=None) -> list[str]:
        """``copy(self, src)``: the value of ``src`` cast and broadcast to ``self``."""
        dst, src = bound[0][1], bound[1][1]
        dv, sv = dst.meta["val"], src.meta["val"]
        cur = self._val(src)
        if sv.dtype != dv.dtype:
            cur = self._emit("op", "aten._to_copy.default", [cur], n, {"dtype": dtype_name(dv.dtype, where)},
                             [torch.empty(sv.shape, dtype=dv.dtype, device="meta")])[0]
        if tuple(sv.shape) != tuple(dv.shape):
            cur = self._emit("op", "aten.expand.default", [cur], n, {"size": list(dv.shape)},
                             [torch.empty(dv.shape, dtype=dv.dtype, device="meta")])[0]
        self.env[n] = cur
        return [cur]

    def _index_put(self, n, bound, where) -> list[str] | None:
        """``x[mask] = v`` with one boolean mask over leading dims: ``where(mask, v, x)``."""
        args = {a.name: v for a, v, _ in bound}
        x, idx, v = args["self"], args["indices"], args["values"]
        xv = x.meta["val"]
        ok = (not args.get("accumulate") and len(idx) == 1 and isinstance(idx[0], torch.fx.Node)
              and idx[0].meta["val"].dtype == torch.bool and isinstance(v, torch.fx.Node))
        if ok:
            mv, vv = idx[0].meta["val"], v.meta["val"]
            k = mv.dim()
            ok = tuple(mv.shape) == tuple(xv.shape[:k]) and vv.dim() <= xv.dim() - k
            if ok:
                try:
                    torch.broadcast_shapes(tuple(vv.shape), tuple(xv.shape[k:]))
                except RuntimeError:
                    ok = False
        if not ok:
            if not all(isinstance(i, torch.fx.Node) and not i.meta["val"].dtype.is_floating_point
                       and i.meta["val"].dtype != torch.bool for i in idx) or not isinstance(v, torch.fx.Node):
                self._unsup(n, "aten.index_put.default (other than x[bool_mask] = v or by integer index tensors)")
                return None
            outs = self._emit("op", "aten.index_put.default", [self._val(x)] + [self._val(i) for i in idx]
                              + [self._val(v)], n, {"accumulate": bool(args.get("accumulate"))})
            self.env[n] = outs[0]
            return outs
        mask = self._val(idx[0])
        extra = xv.dim() - k
        if extra:
            shape = list(mv.shape) + [1] * extra
            mask = self._emit("op", "aten.view.default", [mask], n, {"size": shape},
                              [torch.empty(shape, dtype=torch.bool, device="meta")])[0]
        out = self._emit("op", "aten.where.self", [mask, self._val(v), self._val(x)], n, {},
                         [torch.empty(xv.shape, dtype=xv.dtype, device="meta")])
        self.env[n] = out[0]
        return out

    def _index(self, n, bound) -> list[str] | None:
        """``x[i0, i1, ...]`` by index tensors on the leading dims: operands ``[x, i0, i1, ...]``."""
        x, idx = bound[0][1], bound[1][1]
        if not all(isinstance(i, torch.fx.Node) for i in idx):
            self._unsup(n, "aten.index.Tensor (an index list with None: index the leading dims)")
            return None
        outs = self._emit("op", "aten.index.Tensor", [self._val(x)] + [self._val(i) for i in idx], n)
        self.env[n] = outs[0]
        return outs

    def _max_values(self, n, bound) -> list[str]:
        """``max.dim`` whose indices are unused: ``amax`` over the dim (exact over symbolic reals too)."""
        a = {arg.name: v for arg, v, _ in bound}
        outs = self._emit("op", "aten.amax.default", [self._val(a["self"])], n,
                          {"dim": [a["dim"]], "keepdim": a["keepdim"]}, vals=[n.meta["val"][0]])
        self.env[n] = [outs[0], UNSUP]
        return outs

    def _slice_backward(self, n, t, bound, where) -> list[str] | None:
        """The gradient of a slice (step 1) or select: the gradient zero-padded back."""
        args = {a.name: v for a, v, _ in bound}
        sizes = [int(x) for x in args["input_sizes"]]
        d = int(args["dim"]) % len(sizes)
        g = self._val(args["grad_output"])
        gv = args["grad_output"].meta["val"]
        if t == "aten.select_backward.default":
            i = int(args["index"]) % sizes[d]
            lo, hi = i, sizes[d] - i - 1
            shape = list(gv.shape[:d]) + [1] + list(gv.shape[d:])
            g = self._emit("op", "aten.unsqueeze.default", [g], n, {"dim": d},
                           [torch.empty(shape, dtype=gv.dtype, device="meta")])[0]
        else:
            start, end, step = args["start"], args["end"], args["step"]
            start = 0 if start is None else int(start)
            end = sizes[d] if end is None else int(end)
            start = max(0, min(start + sizes[d] if start < 0 else start, sizes[d]))
            end = max(start, min(end + sizes[d] if end < 0 else end, sizes[d]))
            if int(step) != 1 or end - start != gv.shape[d]:
                self.unsupported[f"{t} (step {step})"] = 1
                self.env[n] = UNSUP
                return None
            lo, hi = start, sizes[d] - end
        pad = [0, 0] * (len(sizes) - 1 - d) + [lo, hi]
        out = self._emit("op", "aten.constant_pad_nd.default", [g], n, {"pad": pad, "value": 0})
        self.env[n] = out[0]
        return out

    def _inplace(self, n, t, bound, mut, where) -> None:
        if mut != [0]:
            raise CaptureError(f"{where}: in-place op mutating arguments {mut} is not supported")
        target = bound[0][1]
        if not isinstance(target, torch.fx.Node):
            raise CaptureError(f"{where}: in-place op on a non-tensor")
        family = self._reshapes(target)
        self._check_alias(n, target, where, family)
        if t == "aten.copy_.default":
            new = self._copy(n, bound, where)[0]
        elif t == "aten.fill_.Scalar":
            new = self._factory(n, "aten.full.default", {"size": list(target.meta["val"].shape),
                                                          "fill_value": bound[1][1]}, where)[0]
        elif t == "aten.zero_.default":
            new = self._factory(n, "aten.full.default", {"size": list(target.meta["val"].shape),
                                                          "fill_value": 0}, where)[0]
        else:
            name, _, overload = t.rpartition(".")
            if not name.endswith("_"):
                raise CaptureError(f"{where}: mutating op without an out-of-place form")
            functional = f"{name[:-1]}.{overload}"
            if functional not in REGISTRY and functional != "aten.index_put.default":
                self.unsupported[t] = self.unsupported.get(t, 0) + 1
                self.env[n] = self.env[target] = UNSUP
                return
            outs = self._plain(n, functional, bound, where, vals=[target.meta["val"]])
            new = outs[0] if outs else None
        self.env[n] = new
        whole = self._whole(target)
        for m in whole:
            self.env[m] = new
        for m in family - whole:   # the base and its other reshapes read the new values, reshaped
            if new is not None and new is not UNSUP:
                self.env[m] = self._emit("op", "aten.view.default", [new], m, {"size": list(_shape(m))})[0]

    def _sharing(self, target) -> list[torch.fx.Node]:
        """The nodes whose value shares ``target``'s storage (views of it, its base, the same tensor);
        just ``target`` where the storage is unknown."""
        st = _storage(target.meta.get("val"))
        if st is None:
            return [target]
        if not hasattr(self, "_by_storage"):
            self._by_storage: dict = {}
            for m in self.gm.graph.nodes:
                if (k := _storage(m.meta.get("val"))) is not None:
                    self._by_storage.setdefault(k, []).append(m)
        return self._by_storage.get(st, [target])

    def _whole(self, target) -> set[torch.fx.Node]:
        """``target`` and the nodes that are the same tensor (``detach``, ``alias``, a view to the same
        shape, either way, sharing its storage): a mutation of one is a mutation of all (DTensor's
        ``to_local()`` of a gradient, all-reduced in place)."""
        st, shape = _storage(target.meta.get("val")), _shape(target)
        out, todo = {target}, [target]
        while todo and st is not None:
            x = todo.pop()
            parent = x.args[0] if _identity(x) else None
            for m in list(x.users) + [parent]:
                if isinstance(m, torch.fx.Node) and m not in out and (m is parent or _identity(m)) \
                        and _shape(m) == shape and _storage(m.meta.get("val")) == st:
                    out.add(m)
                    todo.append(m)
        return out

    def _reshapes(self, target) -> set[torch.fx.Node]:
        """``target`` and the tensors that are it reshaped (``view``/``reshape`` chains either way over
        one contiguous storage, same offset and size): an update of one is an update of each."""
        def flat(m) -> tuple | None:
            v = m.meta.get("val") if isinstance(m, torch.fx.Node) else None
            if not isinstance(v, torch.Tensor) or not v.is_contiguous() or _storage(v) is None:
                return None
            return _storage(v), v.storage_offset(), v.numel()
        key, out, todo = flat(target), {target}, [target]
        while todo and key is not None:
            x = todo.pop()
            parent = x.args[0] if str(x.target) in RESHAPES else None
            for m in list(x.users) + [parent]:
                if isinstance(m, torch.fx.Node) and m not in out and (m is parent or str(m.target) in RESHAPES) \
                        and flat(m) == key:
                    out.add(m)
                    todo.append(m)
        return out

    def _check_alias(self, n, target, where, family: set = frozenset()) -> None:
        st = _storage(target.meta.get("val"))
        if st is None:
            return
        here = self.pos[n]
        whole = self._whole(target) | family
        for m in self.gm.graph.nodes:
            if m in whole or m is n or m.op == "output" or m not in self.env and m.op != "call_function":
                continue
            if m.target is operator.getitem or m.op not in ("call_function", "placeholder") \
                    or self.pos[m] > here:
                continue
            vm = m.meta.get("val")
            if not isinstance(vm, torch.Tensor) or _storage(vm) != st:
                continue
            if self._same_chain(m, target):
                continue
            if any(u > here for u in self.uses[m]):
                raise CaptureError(f"{where}: in-place update of '{target.name}' is seen through the "
                                   f"view '{m.name}' that is used later (mutation through aliases "
                                   f"is not supported)")

    def _same_chain(self, m, target) -> bool:
        """``m`` is an earlier in-place result on ``target`` (the same logical tensor)."""
        return bool(_mutated(m.target)) and m.args and m.args[0] is target if m.op == "call_function" \
            and hasattr(m.target, "_schema") else False

    # ------------------------------------------------------------ communication
    def _collective(self, n, t, bound, where) -> None:
        args = {a.name: v for a, v, _ in bound}
        group = self.resolve_group(args["group_name"])
        attrs: dict[str, Any] = {}
        if "reduce_op" in args:
            attrs["reduce_op"] = str(args["reduce_op"]).lower()
        if t.endswith("all_to_all_single.default"):
            attrs["output_split_sizes"] = [int(x) for x in args["output_split_sizes"]]
            attrs["input_split_sizes"] = [int(x) for x in args["input_split_sizes"]]
        if t.endswith("broadcast.default"):
            attrs["src"] = group[int(args["src"])]   # group-local root -> global rank
        if "group_size" in args and int(args["group_size"]) != len(group):
            raise CaptureError(f"{where}: group_size {args['group_size']} but group {group}")
        outs = self._emit("coll", t, [self._val(args["input"])], n, attrs, group=group)
        self.env[n] = outs[0]

    def _p2p(self, n, t, bound, where) -> None:
        args = {a.name: v for a, v, _ in bound}
        peer = int(args["peer"])
        if P2P[t] == "send":
            self.prog.items.append(Item("send", "c10d.send_recv.default", [self._val(args["self"])], [],
                                        {"tag": int(args["tag"])}, [], [peer], n.name, self.sources.get(n)))
            self.env[n] = self._val(args["self"])
        else:
            outs = self._emit("recv", "c10d.send_recv.default", [], n, {"tag": int(args["tag"])},
                              group=[peer])
            self.env[n] = outs[0]


def _random_dropout(n) -> bool:
    """``native_dropout`` that draws its mask: p != 0 in training (``train`` None or True)."""
    a = {arg.name: v for arg, v, _ in _bind_args(n.target, n.args, n.kwargs)}
    return a["p"] != 0 and a["train"] is not False


def _shape(n) -> tuple | None:
    v = n.meta.get("val")
    return tuple(v.shape) if isinstance(v, torch.Tensor) else None


def _identity(n) -> bool:
    """A node whose value is its first argument's (looked through by the converter)."""
    t = str(n.target)
    return n.op == "call_function" and bool(n.args) and isinstance(n.args[0], torch.fx.Node) and (
        t in IDENTITY or t in SAME_SHAPE_IDENTITY and _shape(n.args[0]) == _shape(n))


def _same_shape(src, n) -> bool:
    a, b = getattr(src, "meta", {}).get("val"), n.meta.get("val")
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and tuple(a.shape) == tuple(b.shape)


def _same(v, d) -> bool:
    try:
        return bool(v == d)
    except Exception:
        return False


def _as_list(v) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _flat(a) -> list:
    if isinstance(a, (list, tuple)):
        return [x for y in a for x in _flat(y)]
    if isinstance(a, dict):
        return [x for y in a.values() for x in _flat(y)]
    return [a]


def _nodes_in(a) -> list:
    return [x for x in _flat(a) if isinstance(x, torch.fx.Node)]
