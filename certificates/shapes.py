"""Shape reduction of one stage: ``constraints`` reads its map and summed axes by rules.py, ``solve`` picks divisors
keeping their side conditions, ``reduce`` rewrites it (docs/stages.md, "What the checker re-checks")."""

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction

from . import terms
from .errors import Malformed
from .graph import Graph, _check_shapes
from .limits import Limits
from .ops import MOVES, _dim
from .refinement import Relation, _uses, parse_relation
from .rules import RULES

INDEXED = "rows indexed by integer values"   # the pin of a table's rows (rules.py), lifted by ``indexed``
Axis = tuple[str, str, int]  # (side "spec" | "impl" | "term", tensor or term path, axis)
Site = tuple  # (attribute, list index or None, the axis of a constant | the output axes of a shape)


def _root(parent: dict, a: Axis) -> Axis:
    """The root of ``a`` in a union-find forest ``parent``."""
    while parent.get(a, a) != a:
        a = parent[a]
    return a


@dataclass
class Constraints:
    size: dict[Axis, int] = field(default_factory=dict)
    parent: dict[Axis, Axis] = field(default_factory=dict)
    pins: dict[Axis, str] = field(default_factory=dict)
    scaled: list[tuple[Axis, int, str]] = field(default_factory=list)
    links: list[tuple[Axis, Axis]] = field(default_factory=list)  # outer axes of a reshape: one divisor
    grains: list[tuple[Axis, int, str]] = field(default_factory=list)  # (axis, elements per block, why)
    grain: dict[Axis, int] = field(default_factory=dict)          # class root -> its one grain (``settle``)
    sites: dict[tuple[str, str], list[Site]] = field(default_factory=dict)  # per node: attributes to rewrite
    sums: dict[tuple[str, str], list[Axis]] = field(default_factory=dict)   # per node: the axes it sums
    least: dict[Axis, list] = field(default_factory=dict)   # indexed class root -> the values' tensors (``indexed``)
    ranges: dict[tuple[str, str], Axis] = field(default_factory=dict)   # (side, tensor) -> its range's axis
    node: tuple[str, str] = ("", "")  # (side, node name) or ("term", path) whose rule runs

    def find(self, a: Axis) -> Axis:
        root = _root(self.parent, a)
        while a != root:  # path compression
            self.parent[a], a = root, self.parent[a]
        return root

    def tie(self, a: Axis, b: Axis) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def tie_all(self, xs: list[Axis], ys: list[Axis]) -> None:
        for a, b in zip(xs, ys):
            self.tie(a, b)

    def pin(self, a: Axis, why: str) -> None:
        self.pins.setdefault(a, why)

    def sum(self, a: Axis) -> None:
        """``a`` is summed (a plain sum or a contraction): reduced only at two divisors (``solve``)."""
        self.sums.setdefault(self.node, []).append(a)

    def pin_all(self, xs: list[Axis], why: str) -> None:
        for a in xs:
            self.pin(a, why)

    def bcast(self, x: list[Axis], out: list[Axis]) -> None:
        """Tie ``x`` to ``out`` aligned from the right, skipping broadcast (size-1) axes."""
        for a, b in zip(reversed(x), reversed(out)):
            if self.size[a] == self.size[b]:
                self.tie(a, b)

    def reshape(self, x: list[Axis], out: list[Axis], why: str) -> None:
        """Group the non-1 axes of a reshape by equal products; one-to-one groups are ties."""
        a, b = [v for v in x if self.size[v] != 1], [v for v in out if self.size[v] != 1]
        if any(self.size[v] == 0 for v in a + b):
            return self.pin_all(x + out, f"{why}: empty reshape")
        i = j = 0
        while i < len(a) or j < len(b):
            ga, gb, pa, pb = [], [], 1, 1
            while not (ga and gb and pa == pb):
                if i < len(a) and (pa <= pb or j == len(b)):
                    ga.append(a[i]); pa *= self.size[a[i]]; i += 1  # noqa: E702
                elif j < len(b):
                    gb.append(b[j]); pb *= self.size[b[j]]; j += 1  # noqa: E702
                else:
                    raise Malformed(why, "reshape sizes do not match")
            if len(ga) == 1 and len(gb) == 1:
                self.tie(ga[0], gb[0])
            else:
                self.pin_all(ga[1:] + gb[1:], f"{why}: inner axis of a reshape group")
                ia, ib = math.prod(self.size[v] for v in ga[1:]), math.prod(self.size[v] for v in gb[1:])
                block = math.lcm(ia, ib)
                self.links.append((ga[0], gb[0]))
                self.grains += [(ga[0], block // ia, why), (gb[0], block // ib, why)]

    def settle(self) -> None:
        """One grain per tie class: a class asked for two keeps full size."""
        for a, g, why in self.grains:
            r = self.find(a)
            if self.grain.setdefault(r, g) != g:
                self.pin(r, f"{why}: reshape blocks of {g} and {self.grain[r]} elements on one axis")

    def blocks(self, a: Axis) -> int:
        """Elements per block of axis ``a`` (1 unless a reshape groups it)."""
        return self.grain.get(self.find(a), 1)

    def divisor_classes(self) -> dict[Axis, Axis]:
        """Every axis -> the root of its divisor class: tie classes joined by reshape links."""
        up: dict[Axis, Axis] = {}
        for a, b in self.links:
            ra, rb = _root(up, self.find(a)), _root(up, self.find(b))
            if ra != rb:
                up[max(ra, rb)] = min(ra, rb)
        return {a: _root(up, self.find(a)) for a in self.size}

    def quantity(self, a: Axis, v, why: str, key: str | None = None, i: int | None = None) -> None:
        """A constant ``v`` counted along ``a``, held by attribute ``key`` (at index ``i``) if named."""
        if isinstance(v, int) and abs(v) <= self.size[a]:
            self.scaled.append((a, abs(v), why))
            if key:
                self.sites.setdefault(self.node, []).append((key, i, a))

    def resize(self, key: str, out: list[Axis]) -> None:
        """Attribute ``key`` holds the shape of the axes ``out`` (-1 entries stay)."""
        self.sites.setdefault(self.node, []).append((key, None, out))


def _axes(side: str, name: str, n: int) -> list[Axis]:
    return [(side, name, k) for k in range(n)]


TERM_RULES = {"reshape": "aten.view.default", "permute": "aten.permute.default", "transpose": "aten.transpose.int",
              "slice": "aten.slice.Tensor"}


def _term(C: Constraints, t: terms.Term, path: str, shape) -> list[Axis]:
    """Axes of a clean expression's value: leaves are impl axes, each call makes new ones; constants are literals."""
    if isinstance(t, terms.Ref):
        return _axes("impl", t.name, len(shape(t.name)))
    args = [_term(C, s, f"{path}.{k}", shape) for k, s in enumerate(t.args)]
    sizes = terms.infer_shape(t, shape)
    out = _axes("term", path, len(sizes))
    C.size.update(zip(out, sizes))
    x, kw, C.node = args[0], dict(t.kw), ("term", path)
    if t.fn in TERM_RULES:   # as the operator does (its attributes have the term's names)
        RULES[TERM_RULES[t.fn]](C, [x], [out], kw, f"{path}: {t}")
        return out
    for y in args:   # concat, pad, sum, mean, scale: every axis tied across the operands
        C.tie_all(y, out)
    for key in ("before", "after") if t.fn == "pad" else ():
        C.quantity(x[_dim(kw["dim"], len(x))], kw[key], f"{path}: pad {key}", key)
    return out


def constraints(spec: Graph, impl: Graph, relations: dict[str, Relation]) -> Constraints:
    """What every reduction of these graphs and relations (by kind: input, output...) must respect."""
    C = Constraints()
    for side, g in (("spec", spec), ("impl", impl)):   # a node's rule reads the sizes of its own graph's axes alone
        for t, v in g.tensors.items():
            C.size.update(zip(_axes(side, t, len(v.shape)), v.shape))
        for n in g.nodes:
            I = [_axes(side, t, len(g.tensors[t].shape)) if t else None for t in n.inputs]  # noqa: E741
            O = [_axes(side, t, len(g.tensors[t].shape)) for t in n.outputs]  # noqa: E741
            why, C.node = f"node '{n.name}' ({n.target})", (side, n.name)
            rule = RULES.get(n.op.target)
            if rule is None or rule(C, I, O, n.full_attrs(False), why) is False:
                C.pin_all([v for y in I + O for v in y or []], f"{why}: no reduction rule (sizes kept)")
    for kind, rel in relations.items():
        for s, es in rel.items():
            for k, e in enumerate(es):
                C.tie_all(_term(C, e, f"{kind}:{s}#{k}", lambda r: impl.tensors[r].shape),
                          _axes("spec", s, len(spec.tensors[s].shape)))
    C.settle()
    return C


def solve(C: Constraints) -> dict[Axis, tuple[int, int | Fraction]]:
    """Per axis, its class's divisor and second one (0: none): 1 if pinned, else the largest divisor d of the gcd g of
    its sizes and constants in blocks leaving each member 2 blocks (scale s = g / d); a summed class is also checked at
    scale s - 1 (divisor g / (s - 1), exact on every member; scale 2 where s is 1, if below full size), else kept at 1."""
    cls, members, units = C.divisor_classes(), {}, {}
    for a in C.size:
        members.setdefault(cls[a], []).append(a)
        units.setdefault(cls[a], []).append((C.size[a], C.blocks(a)))
    for a, v, _ in C.scaled:
        units[cls[a]].append((v, C.blocks(a)))
    summed, out = {a for axes in C.sums.values() for a in axes}, {}
    for root, ms in sorted(members.items(), key=lambda kv: kv[0] in C.least):   # indexed classes last: ``need``
        if any(m in C.pins for m in ms) or any(n % g for n, g in units[root]):
            out[root] = (1, 0)
            continue
        g, cap = math.gcd(*[n // k for n, k in units[root]]), min(C.size[m] // (2 * C.blocks(m)) for m in ms)
        need = 2 + sum(math.prod(C.size[a] // min(d for d in out.get(cls[a], (1, 0)) if d) for a in C.size if a[:2] == t)
                       for t in C.least.get(root, ()))   # the values' elements at the largest corner, row and 0
        ds = [k for k in range(min(g, cap), 0, -1) if g % k == 0 and (root not in C.least or g // k >= need)] or [1]
        s = g // ds[0]   # a summed class's second scale: one below (at least 1), else 2 if that is below full size
        second = Fraction(g, s - 1) if s > 1 else Fraction(g, 2) if 2 < g else 0
        out[root] = (ds[0], 0) if not summed & set(ms) else (ds[0], second) if 1 < ds[0] and second else (1, 0)
    return {a: out[r] for a, r in cls.items()}


def _rewrite(kw: dict, sites: list[Site], C: Constraints, full: dict[Axis, int]) -> dict:
    """``kw`` with its recorded constants divided by their axis' divisor and shapes reduced."""
    for key, i, ax in sites:
        v = kw[key]
        if isinstance(ax, list):  # a shape
            kw[key] = type(v)(n if n == -1 else C.size[o] // full[o] for n, o in zip(v, ax))
        elif i is None:
            kw[key] = v // full[ax]
        else:
            kw[key] = type(v)(n // full[ax] if k == i else n for k, n in enumerate(v))
    return kw


def _rescale_term(t: terms.Term, path: str, C: Constraints, full: dict[Axis, int]) -> terms.Term:
    if isinstance(t, terms.Ref):
        return t
    args = tuple(_rescale_term(s, f"{path}.{k}", C, full) for k, s in enumerate(t.args))
    kw = _rewrite(dict(t.kw), C.sites.get(("term", path), []), C, full)
    return terms.Call(t.fn, args, tuple((k, kw[k]) for k, _ in t.kw))


def reduce_graph(g: Graph, side: str, C: Constraints, full: dict[Axis, int], where: str) -> Graph:
    """``g`` with every axis divided by ``full``, its recorded attributes rewritten; every node type-checks again."""
    tensors = {t: dataclasses.replace(v, shape=tuple(n // full[(side, t, k)] for k, n in enumerate(v.shape)),
                                      range=tuple(x // full[C.ranges[(side, t)]] for x in v.range)
                                      if (side, t) in C.ranges else v.range) for t, v in g.tensors.items()}
    nodes = [dataclasses.replace(n, attrs=_rewrite(dict(n.attrs), C.sites[(side, n.name)], C, full))
             if (side, n.name) in C.sites else n for n in g.nodes]
    for n in nodes:
        _check_shapes(n, tensors, f"{where}: reduced {side} (not justified)")
    return Graph(g.name, g.world_size, tensors, g.inputs, g.outputs, nodes,
                 {t: n for n in nodes for t in n.outputs}, g.position)


def reduce(spec: Graph, impl: Graph, relations: dict[str, Relation], C: Constraints, full: dict[Axis, int],
           where: str, limits: Limits) -> tuple[Graph, Graph, dict[str, Relation]]:
    """The graphs and relations ``C`` was read from, each axis divided by ``full`` (from ``solve``)."""
    rspec, rimpl = reduce_graph(spec, "spec", C, full, where), reduce_graph(impl, "impl", C, full, where)
    return rspec, rimpl, {kind: parse_relation({s: [str(_rescale_term(e, f"{kind}:{s}#{k}", C, full))
                                                    for k, e in enumerate(es)] for s, es in rel.items()},
                                               rspec, rimpl, f"{where}: reduced {kind} relation (not justified)",
                                               False, limits) for kind, rel in relations.items()}


# What an integer value that indexes rows may reach (agda/ShapeReduction/Indexed.agda, ``natural``): moves, a shift by
# or a comparison with a scalar, a choice between values, a lookup by it; the constants there scale with the rows.
UNIFORM = MOVES | set("add sub lt le gt ge eq ne where masked_fill full embedding embedding_dense_backward".split())
KEYS, CMP = ("other", "value", "fill_value", "num_weights"), set("lt le gt ge eq ne".split())


def indexed(C: Constraints, cls: dict[Axis, Axis], graphs: tuple, rels: dict[str, Relation]) -> None:
    """Unpin the classes of the rows that integer values index (agda/ShapeReduction/Indexed.agda) where every value
    reaching them comes from an integer input with a range or an integer ``full``, reaches ``UNIFORM`` alone and
    relations by moves, and every pin of the classes is such a row's, none summed or reshaped: one divisor for them,
    the values' range bounds and constants scaled with it (``C.ranges``, ``C.sites``), as many rows per block as the
    values have elements (an impl value equal to a spec one and a ``full`` add none), plus 2 (``C.least``)."""
    src, bad, axes, marks = {}, set(), {}, []   # tensor -> the sources of its values; per source: tables, constants
    for side, g in graphs:
        for t in (t for t in g.inputs if g.tensors[t].is_int and g.tensors[t].dtype != "bool"):
            src[(side, t)] = {(side, t)}
            bad |= {(side, t)} if g.tensors[t].range is None else set()
        for n in g.nodes:
            op, a, ins = n.target.split(".")[1], n.attrs, [t for t in n.inputs if t]
            ints = [o for o in n.outputs if g.tensors[o].is_int and g.tensors[o].dtype != "bool"]
            xs = {(side, ints[0])} if op == "full" and ints else set().union(*(src.get((side, t), ()) for t in ins))
            lookup = op.startswith("embedding") and not a.get("scale_grad_by_freq") and a.get("padding_idx", -1) == -1
            if xs and (op not in UNIFORM or op in CMP | {"add", "sub"} and (len(ins) > 1 or a.get("alpha", 1) != 1)
                       or op.startswith("embedding") and not lookup or not (op in CMP or lookup or ints == n.outputs)
                       or any(g.tensors[t].is_int and g.tensors[t].dtype != "bool" and (side, t) not in src for t in ins)
                       or any(a.get(k) is not None and type(a[k]) is not int for k in KEYS)):   # 2.5: no block's
                bad |= xs
            marks += [(x, side, n.name, k) for x in xs for k in KEYS if type(a.get(k)) is int]
            for x in xs if lookup else ():
                axes.setdefault(x, []).append((side, n.outputs[0] if "backward" in op else n.inputs[0], 0))
            src.update(((side, o), xs) for o in ints if xs and op not in CMP)
    for rel in rels.values():   # a value meets a relation by moves (no sum or scale)
        for s, es in rel.items():
            bad |= set().union(src.get(("spec", s), ()), *(src.get(("impl", r), ()) for e in es for r in terms.refs(e))
                               ) if any(_uses(e, ("sum", "mean", "scale")) for e in es) else set()
    groups, summed, gs = [], {a for xs in C.sums.values() for a in xs}, dict(graphs)
    named = [r for es in rels.get("input", {}).values() for e in es for r in terms.refs(e)]
    for x in sorted(axes):   # the values that reach rows, grouped where they reach rows of one class
        xs, roots = {x}, {cls[t] for t in axes[x]}
        for other in [o for o in groups if o[1] & roots]:
            groups.remove(other)
            xs, roots = xs | other[0], roots | other[1]
        groups.append((xs, roots))
    for xs, roots in groups:
        tables, members = [t for x in sorted(xs) for t in axes[x]], [a for a in C.size if cls[a] in roots]
        if bad & xs or any(not C.pins.get(a, INDEXED).endswith(INDEXED) or a in C.pins and a not in tables or
                           a in summed or C.blocks(a) != 1 for a in members) or any(cls[v] in roots for v in sum(
                               C.links, ())):
            continue
        for a in members:
            C.pins.pop(a, None)
        C.links += [(tables[0], t) for t in tables[1:]]
        for side, t in (x for x in xs if gs[x[0]].tensors[x[1]].range):
            C.scaled += [(tables[0], abs(v), f"{t}: range") for v in gs[side].tensors[t].range]
            C.ranges[(side, t)] = tables[0]
        for side, name, k in {m[1:] for m in marks if m[0] in xs}:
            C.scaled.append((tables[0], abs(gs[side].nodes[gs[side].position[name]].attrs[k]), f"{name}: {k}"))
            C.sites.setdefault((side, name), []).append((k, None, tables[0]))
        same = {("impl", e.name) for t, es in rels.get("input", {}).items() if ("spec", t) in xs for e in es
                if isinstance(e, terms.Ref) and named.count(e.name) == 1}   # equal to a spec value in every order
        C.least[tables[0]] = sorted(x for x in xs if gs[x[0]].tensors[x[1]].range and x not in same)   # full: offset 0
    cls.update(C.divisor_classes())
    C.least.update({cls[t]: C.least.pop(t) for t in list(C.least)})


# Ops through which a value made by a sum stays affine in it: moves, sums, +, -, and * or / by a free value.
AFFINE = {"add", "sub", "neg", "mul", "div", "sum", "view", "reshape", "_unsafe_view", "permute", "transpose", "t",
          "unsqueeze", "squeeze", "expand", "slice", "cat", "clone", "all_reduce", "wait_tensor", "reduce_scatter_tensor",
          "all_gather_into_tensor"}


def affine(C: Constraints, members: set[Axis], *graphs: tuple[str, Graph]) -> str | None:
    """The first node (None: none) at which the local graphs stop being affine in their sums over ``members``
    (agda/ShapeReduction/Summed.agda): a value is along them ("a"), made by a sum over them ("s") or free of
    both ("f"); a sum reads no "s" and makes floats, an "s" meets only "f" values, through ``AFFINE``."""
    for side, g in graphs:
        kind = {t: "a" if any((side, t, k) in members for k in range(len(v.shape))) else "f"
                for t, v in g.tensors.items()}
        for n in g.nodes:
            ins, op = [kind[t] for t in n.inputs if t], n.target.split(".")[-2:][0]
            summed = any(a in members for a in C.sums.get((side, n.name), ()))
            s = summed or "s" in ins
            bad = ("s" in ins or any(g.tensors[t].is_int for t in n.outputs) if summed else
                   op not in AFFINE or "a" in ins or op in ("mul", "div") and (ins.count("s") > 1 or op == "div"
                                                                             and ins[0] != "s") if s else
                   "a" in ins and any(kind[t] == "f" for t in n.outputs))
            if bad or s and any(kind[t] == "a" for t in n.outputs):
                return f"{side} node '{n.name}' ({n.target})"
            kind.update((t, "s") for t in n.outputs if s)
    return None
