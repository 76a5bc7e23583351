"""Shape reduction, re-checked: a claimed divisor per tensor axis, justified or rejected.

A reduction divides every axis of the spec and impl graphs by a divisor (1: full size).
``constraints`` reads from the FULL graphs and relations, with the checker's own rules,
what any reduction must respect (docs/stages.md maps them to agda/ShapeReduction):

* ties: axes indexed together (elementwise operands, contraction dims, cat/split/slice/pad
  axes, collective pieces, concat pieces of a relation) take one divisor;
* pins: axes that keep full size: sizes that enter values (mean, layer/rms norm, mean
  losses), axes indexed by integer values (embedding tables, loss classes), ``select``,
  strided slices, chunk counts that do not divide, and every axis of an op without a rule;
* scaled: constants counted along an axis (slice/narrow offsets, split sizes, pads,
  all_to_all splits) must be divisible by that axis' divisor and are divided by it;
* groups: the axes one reshape merges or splits: at most one reduced axis on each side.

``reduce`` checks a claimed reduction against them, plus divisibility and at least 2
elements on every reduced axis, rewrites shapes and size-carrying attributes, and
re-validates the reduced graphs and relations (registry shape rules).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from . import terms
from .errors import Malformed
from .graph import Graph, Node, parse_graph
from .limits import Limits
from .ops import _dim
from .refinement import Relation, parse_relation

Axis = tuple[str, str, int]  # (side "spec" | "impl" | "term", tensor or term path, axis)


class Unjustified(Exception):
    """A claimed reduction that breaks one of the side conditions."""

ELEMENTWISE = set("""add sub rsub mul div maximum lt le gt ge eq ne logical_or logical_and bitwise_or bitwise_and
neg exp log sqrt rsqrt reciprocal tanh sigmoid silu relu gelu logical_not clone _to_copy pow _softmax _log_softmax
where masked_fill threshold_backward gelu_backward silu_backward _softmax_backward_data cos sin all_reduce broadcast
send_recv""".split())
NORMS = {"native_layer_norm", "layer_norm", "rms_norm", "native_layer_norm_backward"}
LOSSES = {"nll_loss_forward", "cross_entropy_loss", "nll_loss_backward", "mse_loss"}


@dataclass
class Constraints:
    size: dict[Axis, int] = field(default_factory=dict)
    parent: dict[Axis, Axis] = field(default_factory=dict)
    pins: dict[Axis, str] = field(default_factory=dict)
    scaled: list[tuple[Axis, int, str]] = field(default_factory=list)
    groups: list[tuple[list[Axis], list[Axis], str]] = field(default_factory=list)

    def find(self, a: Axis) -> Axis:
        root = a
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while a != root:  # path compression
            self.parent[a], a = root, self.parent[a]
        return root

    def tie(self, a: Axis, b: Axis) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def pin(self, a: Axis, why: str) -> None:
        self.pins.setdefault(a, why)


def _axes(side: str, name: str, n: int) -> list[Axis]:
    return [(side, name, k) for k in range(n)]


def _bcast(C: Constraints, x: list[Axis], out: list[Axis]) -> None:
    """Tie ``x`` to ``out`` aligned from the right, skipping broadcast (size-1) axes."""
    for a, b in zip(reversed(x), reversed(out)):
        if C.size[a] == C.size[b]:
            C.tie(a, b)


def _reshape(C: Constraints, x: list[Axis], out: list[Axis], why: str) -> None:
    """Group the non-1 axes of a reshape by equal products; one-to-one groups are ties."""
    a, b = [v for v in x if C.size[v] != 1], [v for v in out if C.size[v] != 1]
    if any(C.size[v] == 0 for v in a + b):
        for v in x + out:
            C.pin(v, f"{why}: empty reshape")
        return
    i = j = 0
    while i < len(a) or j < len(b):
        ga, gb, pa, pb = [], [], 1, 1
        while not (ga and gb and pa == pb):
            if i < len(a) and (pa <= pb or j == len(b)):
                ga.append(a[i]); pa *= C.size[a[i]]; i += 1  # noqa: E702
            elif j < len(b):
                gb.append(b[j]); pb *= C.size[b[j]]; j += 1  # noqa: E702
            else:
                raise Malformed(why, "reshape sizes do not match")
        if len(ga) == 1 and len(gb) == 1:
            C.tie(ga[0], gb[0])
        else:
            C.groups.append((ga, gb, why))


def _quantity(C: Constraints, a: Axis, v, why: str) -> None:
    if isinstance(v, int) and abs(v) <= C.size[a]:
        C.scaled.append((a, abs(v), why))


def _node(C: Constraints, g: Graph, side: str, n: Node) -> None:
    I = [_axes(side, t, len(g.tensors[t].shape)) if t else None for t in n.inputs]  # noqa: E741
    O = [_axes(side, t, len(g.tensors[t].shape)) for t in n.outputs]  # noqa: E741
    x, out, a = I[0] if I else None, O[0], n.full_attrs(False)
    op, why = n.op.target.split(".")[1], f"node '{n.name}' ({n.target})"
    if op in ELEMENTWISE:
        for o in O:
            for p, q in zip(o, out):
                C.tie(p, q)
        for y in I:
            if y is not None:
                _bcast(C, y, out)
    elif op in ("sum", "mean"):
        ds = [a["dim"]] if isinstance(a["dim"], int) else list(a["dim"] or [])
        dims = [_dim(d, len(x)) for d in ds] or list(range(len(x)))
        kept = [v for k, v in enumerate(x) if a["keepdim"] or k not in dims]
        for p, q in zip(kept, out):
            C.tie(p, q) if C.size[p] == C.size[q] else None
        if op == "mean":
            for d in dims:
                C.pin(x[d], f"{why}: its size enters the mean")
    elif op in ("mm", "bmm", "addmm", "matmul"):
        y, z = (I[1], I[2]) if op == "addmm" else (I[0], I[1])
        if len(y) < 2 or len(z) < 2:
            for v in y + z + out:
                C.pin(v, f"{why}: matmul of a vector")
            return
        C.tie(y[-1], z[-2]), C.tie(y[-2], out[-2]), C.tie(z[-1], out[-1])
        _bcast(C, y[:-2], out[:-2]), _bcast(C, z[:-2], out[:-2])
        if op == "addmm":
            _bcast(C, I[0], out)
    elif op == "linear":
        C.tie(x[-1], I[1][1]), C.tie(I[1][0], out[-1])
        _bcast(C, x[:-1], out[:-1])
        if len(I) > 2 and I[2]:
            _bcast(C, I[2], out)
    elif op in ("view", "reshape"):
        _reshape(C, x, out, why)
    elif op in ("unsqueeze", "squeeze"):
        for p, q in zip([v for v in x if C.size[v] != 1], [v for v in out if C.size[v] != 1]):
            C.tie(p, q)
    elif op == "expand":
        _bcast(C, x, out)
    elif op in ("permute", "transpose", "t"):
        perm = (list(range(len(x)))[::-1] if op == "t" else [_dim(d, len(x)) for d in a["dims"]]
                if op == "permute" else _swap(len(x), _dim(a["dim0"], len(x)), _dim(a["dim1"], len(x))))
        for k, p in enumerate(perm):
            C.tie(x[p], out[k])
    elif op in ("slice", "narrow"):
        d = _dim(a["dim"], len(x))
        for p, q in zip(x, out):
            C.tie(p, q)
        if op == "slice" and a.get("step", 1) != 1:
            C.pin(x[d], f"{why}: strided slice")
        for key in ("start", "end", "length"):
            _quantity(C, x[d], a.get(key), f"{why}: {key}")
    elif op == "select":
        d = _dim(a["dim"], len(x))
        C.pin(x[d], f"{why}: select picks one index")
        for p, q in zip(x[:d] + x[d + 1:], out):
            C.tie(p, q)
    elif op in ("cat", "split", "split_with_sizes", "chunk", "constant_pad_nd", "all_to_all_single"):
        pieces = [y for y in I + O if y and not (len(y) == 1 and C.size[y[0]] == 0)]
        for y in pieces:
            for p, q in zip(y, pieces[0]):
                C.tie(p, q)
        if op in ("split", "split_with_sizes", "chunk"):
            d = _dim(a["dim"], len(x))
            sizes = [a["split_size"]] if op == "split" else a.get("split_sizes", [])
            if op == "chunk":
                q, r = divmod(C.size[x[d]], a["chunks"])
                sizes = [q] if not r else C.pin(x[d], f"{why}: {a['chunks']} chunks do not divide") or []
            for s in sizes:
                _quantity(C, x[d], s, f"{why}: split size")
        elif op == "constant_pad_nd":
            for k, v in enumerate(a["pad"]):
                _quantity(C, x[len(x) - 1 - k // 2], v, f"{why}: pad")
        elif op == "all_to_all_single":
            for v in (a["output_split_sizes"] or []) + (a["input_split_sizes"] or []):
                _quantity(C, x[0], v, f"{why}: split size")
    elif op in ("all_gather_into_tensor", "reduce_scatter_tensor"):
        for y in I + O:
            for p, q in zip(y, out):
                C.tie(p, q)
    elif op == "embedding":
        C.pin(x[0], f"{why}: rows indexed by integer values")
        C.tie(x[1], out[-1])
        _bcast(C, I[1], out[:-1])
    elif op == "embedding_dense_backward":
        C.pin(out[0], f"{why}: rows indexed by integer values")
        C.tie(x[-1], out[1])
        _bcast(C, I[1], x[:-1])
    elif op in ("full", "zeros", "ones"):
        pass
    elif op in NORMS:
        k = len(a["normalized_shape"])
        for y in I + O:
            if y and len(y) in (k, len(out)):
                _bcast(C, y, out)
            elif y:
                _bcast(C, y[:len(out) - k], out[:len(out) - k])
        for v in out[len(out) - k:]:
            C.pin(v, f"{why}: normalized size enters the mean")
    elif op in LOSSES and a.get("reduction") in (0, 2):  # sum or none: no size enters a value
        ref = I[1] if op == "nll_loss_backward" else x
        for y in I + O:
            for p, q in zip(y or [], ref):  # batch axes lead
                C.tie(p, q) if C.size[p] == C.size[q] else None
        if op != "mse_loss":
            C.pin(ref[min(1, len(ref) - 1)], f"{why}: classes indexed by integer targets")
    else:
        for y in I + O:
            for v in y or []:
                C.pin(v, f"{why}: no reduction rule (sizes kept)")


def _swap(n: int, i: int, j: int) -> list[int]:
    p = list(range(n))
    p[i], p[j] = p[j], p[i]
    return p


def _term(C: Constraints, t: terms.Term, path: str, shape) -> list[Axis]:
    """Axes of a clean expression's value: leaves are impl axes, every call makes new ones."""
    if isinstance(t, terms.Ref):
        return _axes("impl", t.name, len(shape(t.name)))
    args = [_term(C, s, f"{path}.{k}", shape) for k, s in enumerate(t.args)]
    out = _axes("term", path, len(terms.infer_shape(t, shape)))
    for v, n in zip(out, terms.infer_shape(t, shape)):
        C.size[v] = n
    x, kw = args[0], dict(t.kw)
    if t.fn == "reshape":
        _reshape(C, x, out, f"{path}: {t}")
    elif t.fn in ("permute", "transpose"):
        perm = ([_dim(d, len(x)) for d in kw["dims"]] if t.fn == "permute"
                else _swap(len(x), _dim(kw["dim0"], len(x)), _dim(kw["dim1"], len(x))))
        for k, p in enumerate(perm):
            C.tie(x[p], out[k])
    else:
        for y in args:
            for p, q in zip(y, out):
                C.tie(p, q)
        if t.fn == "slice":
            d = _dim(kw["dim"], len(x))
            if kw.get("step", 1) != 1:
                C.pin(x[d], f"{path}: strided slice")
            for key in ("start", "end"):
                _quantity(C, x[d], kw[key], f"{path}: slice {key}")
        elif t.fn == "pad":
            for key in ("before", "after"):
                _quantity(C, x[_dim(kw["dim"], len(x))], kw[key], f"{path}: pad {key}")
    return out


def constraints(spec: Graph, impl: Graph, relations: dict[str, Relation]) -> Constraints:
    """What every reduction of these graphs and relations (by kind: input, output...) must respect."""
    C = Constraints()
    for side, g in (("spec", spec), ("impl", impl)):
        for t, v in g.tensors.items():
            for k, n in enumerate(v.shape):
                C.size[(side, t, k)] = n
    for side, g in (("spec", spec), ("impl", impl)):
        for n in g.nodes:
            _node(C, g, side, n)
    shape = impl.tensors.__getitem__
    for kind, rel in relations.items():
        for s, es in rel.items():
            for k, e in enumerate(es):
                for p, q in zip(_term(C, e, f"{kind}:{s}#{k}", lambda r: shape(r).shape),
                                _axes("spec", s, len(spec.tensors[s].shape))):
                    C.tie(p, q)
    return C


def parse_classes(obj, C: Constraints, where: str) -> dict[Axis, int]:
    """``[{"divisor", "axes": [[side, tensor, axis], ...]}, ...]`` as a divisor per real axis."""
    if not isinstance(obj, list):
        raise Malformed(where, "reduction classes must be a list")
    div: dict[Axis, int] = {}
    for i, c in enumerate(obj):
        d, axes = c.get("divisor") if isinstance(c, dict) else None, c.get("axes") if isinstance(c, dict) else None
        if isinstance(d, bool) or not isinstance(d, int) or d < 1 or not isinstance(axes, list):
            raise Malformed(where, f"reduction class #{i}: needs an int 'divisor' >= 1 and a list 'axes'")
        for ax in axes:
            ok = isinstance(ax, list) and len(ax) == 3 and all(type(v) in (str, int) for v in ax)
            a = tuple(ax) if ok else None
            if a is None or a[0] not in ("spec", "impl") or a not in C.size:
                raise Malformed(where, f"reduction class #{i}: {ax!r} is not an axis of the graphs")
            if a in div:
                raise Malformed(where, f"reduction class #{i}: axis {ax!r} is listed twice")
            div[a] = d
    return div


def check(C: Constraints, div: dict[Axis, int]) -> dict[Axis, int]:
    """Every side condition of a claimed reduction; returns the divisor of every axis."""
    real: dict[Axis, int] = {}
    for a in C.size:
        if a[0] != "term":
            r, d = C.find(a), div.get(a, 1)
            if real.setdefault(r, d) != d:
                raise Unjustified(f"axis {list(a)} and axis {list(r)} are tied but divided by {d} and {real[r]}")
    full = {a: real.get(C.find(a), 1) for a in C.size}
    for a, d in full.items():
        if d > 1 and (C.size[a] % d or C.size[a] // d < 2):
            raise Unjustified(f"axis {list(a)} of size {C.size[a]} cannot be divided by {d} (needs >= 2 left)")
        if d > 1 and a in C.pins:
            raise Unjustified(f"axis {list(a)} must keep full size: {C.pins[a]}")
    for a, v, why in C.scaled:
        if v % full[a]:
            raise Unjustified(f"{why}: {v} is not a multiple of the divisor {full[a]} of axis {list(a)}")
    for xs, ys, why in C.groups:
        rx, ry = [v for v in xs if full[v] > 1], [v for v in ys if full[v] > 1]
        if len(rx) > 1 or len(ry) > 1 or len(rx) != len(ry) or rx and full[rx[0]] != full[ry[0]]:
            raise Unjustified(f"{why}: reshape group reduced unevenly ({len(rx)} and {len(ry)} reduced axes)")
    return full


def _scale(v, d: int, size: int):
    return v // d if isinstance(v, int) and abs(v) <= size else v


def _rescale_attrs(n: Node, g: Graph, side: str, full: dict[Axis, int], red: dict[str, list[int]]) -> dict:
    attrs, op = dict(n.attrs), n.op.target.split(".")[1]
    x = n.inputs[0] if n.inputs else None
    div = (lambda k: full[(side, x, k)]) if x else None
    size = (lambda k: g.tensors[x].shape[k]) if x else None
    if op in ("view", "reshape", "expand", "full", "zeros", "ones"):
        key = next(k for k in ("size", "shape") if k in attrs)
        attrs[key] = [v if v == -1 else m for v, m in zip(attrs[key], red[n.outputs[0]])]
    elif op in ("slice", "narrow", "split", "split_with_sizes"):
        d = _dim(n.full_attrs(False)["dim"], len(g.tensors[x].shape))
        for key in ("start", "end", "length", "split_size"):
            if key in attrs:
                attrs[key] = _scale(attrs[key], div(d), size(d))
        if "split_sizes" in attrs:
            attrs["split_sizes"] = [_scale(v, div(d), size(d)) for v in attrs["split_sizes"]]
    elif op == "constant_pad_nd":
        r = len(g.tensors[x].shape)
        attrs["pad"] = [_scale(v, div(r - 1 - k // 2), size(r - 1 - k // 2)) for k, v in enumerate(attrs["pad"])]
    elif op == "all_to_all_single":
        for key in ("output_split_sizes", "input_split_sizes"):
            if attrs.get(key):
                attrs[key] = [_scale(v, div(0), size(0)) for v in attrs[key]]
    return attrs


def _rescale_term(t: terms.Term, path: str, full: dict[Axis, int], shape) -> terms.Term:
    if isinstance(t, terms.Ref):
        return t
    args = tuple(_rescale_term(s, f"{path}.{k}", full, shape) for k, s in enumerate(t.args))
    kw, x = dict(t.kw), _term_axes(t.args[0], f"{path}.0", shape)
    if t.fn == "reshape":
        kw["shape"] = tuple(n // full[("term", path, k)] for k, n in enumerate(kw["shape"]))
    elif t.fn in ("slice", "pad"):
        d = _dim(kw["dim"], len(x))
        for key in ("start", "end", "before", "after"):
            if key in kw:
                kw[key] = _scale(kw[key], full[x[d]], terms.infer_shape(t.args[0], shape)[d])
    return terms.Call(t.fn, args, tuple((k, kw[k]) for k, _ in t.kw))


def _term_axes(t: terms.Term, path: str, shape) -> list[Axis]:
    n = len(terms.infer_shape(t, shape))
    return _axes("impl", t.name, n) if isinstance(t, terms.Ref) else _axes("term", path, n)


def reduce(spec_json: dict, impl_json: dict, spec: Graph, impl: Graph, relations: dict[str, Relation],
           classes, where: str, limits: Limits) -> tuple[Graph, Graph, dict[str, Relation], dict]:
    """Check a claimed reduction; return the reduced graphs and relations and their JSON values."""
    C = constraints(spec, impl, relations)
    full = check(C, parse_classes(classes, C, where))
    out: dict[str, dict] = {}
    for side, g, obj in (("spec", spec, spec_json), ("impl", impl, impl_json)):
        red = {t: [n // full[(side, t, k)] for k, n in enumerate(v.shape)] for t, v in g.tensors.items()}
        new = copy.deepcopy(obj)
        for t, v in new["tensors"].items():
            v["shape"] = red[t]
        nodes = {n.name: n for n in g.nodes}
        for raw in new["nodes"]:
            attrs = _rescale_attrs(nodes[raw["name"]], g, side, full, red)
            if attrs or "attrs" in raw:
                raw["attrs"] = attrs
        out[side] = new
    shape = lambda r: impl.tensors[r].shape  # noqa: E731
    rels = {kind: {s: [str(_rescale_term(e, f"{kind}:{s}#{k}", full, shape)) for k, e in enumerate(es)]
                   for s, es in rel.items()} for kind, rel in relations.items()}
    try:
        rspec = parse_graph(out["spec"], f"{where}: reduced spec", limits)
        rimpl = parse_graph(out["impl"], f"{where}: reduced impl", limits)
        parsed = {kind: parse_relation(rel, rspec, rimpl, f"{where}: reduced {kind} relation", False, limits)
                  for kind, rel in rels.items()}
    except Malformed as e:  # the side conditions above should exclude this; never accept it
        raise Unjustified(f"the reduced graphs do not type-check: {e}") from None
    return rspec, rimpl, parsed, out


def volume(g: Graph) -> int:
    """Elements over all tensors of a graph (how much a reduction saves)."""
    return sum(math.prod(t.shape) for t in g.tensors.values())
