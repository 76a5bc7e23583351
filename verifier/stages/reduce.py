"""Shape reduction of a whole case, for inference by value (docs/stages.md).

The constraints and divisors are the checker's own (``certificates.shapes``: ties, pins, scaled
constants, reshape links and grains, solved per divisor class); each stage is then reduced again
on its own by the checker (``certificates.stages.stage``). ``lift`` carries the relation found
on the reduced case to full size.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from certificates import shapes, terms
from certificates.errors import LimitExceeded, Unsupported
from certificates.refinement import _uses
from certificates.limits import Limits
from certificates.stages import constants

from .. import direct
from ..case import Case
from ..ir import UNBOUNDED, operators_of

Axis = shapes.Axis


@dataclass
class Reduction:
    case: Case                                   # the reduced case
    classes: list[dict]                          # [{"divisor", "second"?, "full", "reason", "axes"}] (certificate form)
    kept: list[dict] = field(default_factory=list)                    # classes at full size, same form
    sizes: dict[Axis, tuple[int, int]] = field(default_factory=dict)  # real axis -> (full, reduced)
    volume: tuple[int, int] = (0, 0)             # elements over all tensors, full and reduced
    full: tuple = ()                             # the full-size (spec, impl, relations) the classes reduce
    relaxed: bool = False                        # mixed axes reduced (``MIXED``)
    constants: dict[str, list] = field(default_factory=dict)   # spec tensor made from no input -> equal impl ones
    lifted: dict = field(default_factory=dict, repr=False)      # (tensor, equation) -> at full size or None (``lift``)


# Pins of axes whose values are only mixed along them (a normalization, a mean, a sum into a gradient): the graphs
# stay well formed reduced, so inference by value reduces them; each stage is then reduced by the checker, which
# keeps them at full size where they are mixed.
MIXED = ("its size enters the mean", "normalized along dim", "normalized size enters the mean",
         "batch summed into the weight and bias gradients", "positions summed into rows")


def _fits(case: Case, reduced: tuple, divisors: dict[Axis, tuple[int, str]], limits: Limits) -> None:
    """A LIMIT naming the first reduced tensor over ``limits.max_elements``, its operators and why each axis
    kept its size (the engine decides element by element)."""
    for side, g, obj in zip(("spec", "impl"), reduced, (case.spec, case.impl)):
        for t, v in g.tensors.items():
            if math.prod(v.shape) > limits.max_elements:
                why = "; ".join(f"axis {k} ({n}): {divisors[(side, t, k)][1]}" for k, n in enumerate(v.shape)
                                if (side, t, k) in divisors and divisors[(side, t, k)][0] == 1 and n > 1)
                raise LimitExceeded(f"{case.name}: {side} tensor '{t}' is still {list(v.shape)} after the shape "
                                    f"reduction ({operators_of(obj, t)}), over {limits.max_elements} elements; "
                                    f"{why or 'no axis reduces further'}")


def _cut(case: Case, r) -> tuple[Case, dict[str, list]] | None:
    """The case without the nodes that make tensors from no input which the spec and the impl both make (in-graph
    positions and masks, counted along the sequence: no reduction rule reduces them), those the rest reads becoming
    inputs related to the impl's equal ones (for inference, a boolean always true: a mask at reduced size is not the
    full one's), and every such spec tensor's equal impl tensors (``stages.constants``, exact at full size; the
    checker holds their stages by congruence). None: nothing to cut."""
    graphs = {"spec": (r.spec, case.spec), "impl": (r.impl, case.impl)}
    known = {side: constants(g, Limits()) for side, (g, _) in graphs.items()}

    def value(v: np.ndarray) -> tuple:   # exact: integers by their bytes, reals (``Rat``s) by their text
        return v.shape, str(v.dtype), v.tobytes() if v.dtype != object else repr(v.tolist())

    def made(g, t: str) -> tuple:
        n = g.producer[t]
        return n.target, n.attrs, n.outputs.index(t)
    by_value: dict[tuple, list[str]] = {}
    for u, v in known["impl"].items():
        by_value.setdefault(value(v), []).append(u)
    equal = {}
    for t, v in known["spec"].items():   # those made as the spec's is first: their stages hold by congruence
        if us := by_value.get(value(v)):
            equal[t] = [u for u in us if made(r.impl, u) == made(r.spec, t)] or us
    both = {"spec": set(equal), "impl": {u for us in equal.values() for u in us}}
    if not equal:
        return None
    objs, bounds = {}, {}
    for side, (g, raw) in graphs.items():
        cut = {n.name for n in g.nodes if n.outputs and all(t in both[side] for t in n.outputs)}
        rest = [n for n in raw["nodes"] if n["name"] not in cut]
        read = {t for n in rest for t in n["inputs"] if t} | set(raw["outputs"])
        bounds[side] = bound = [t for t in known[side] if t in both[side] and t in read]
        obj = {**raw, "nodes": rest, "inputs": raw["inputs"] + bound, "tensors": {k: dict(v) for k, v in
                                                                                raw["tensors"].items()}}
        for t in bound:
            v, info = known[side][t], obj["tensors"][t]
            info["role"] = "mask" if v.dtype == bool else "index" if g.tensors[t].is_int else "activation"
            if g.tensors[t].is_int:
                info["range"] = [1, 2] if v.dtype == bool else [int(v.min()), int(v.max()) + 1]
        obj["tensors"] = {k: v for k, v in obj["tensors"].items() if k in read or k in {
            x for n in rest for x in n["outputs"]} or k in obj["inputs"]}
        objs[side] = obj
    rel = {t: [u for u in equal[t] if u in bounds["impl"]] for t in bounds["spec"]}
    if not all(rel.values()) or set(bounds["impl"]) - {u for us in rel.values() for u in us}:
        return None   # an input either graph would read unrelated
    return Case(case.name, objs["spec"], objs["impl"], {**case.input_relation, **rel}, case.expect), equal


def _distinct(C: shapes.Constraints, divisors: dict[Axis, tuple[int, int]], cls: dict[Axis, Axis],
              graphs: dict[str, Any], everywhere: bool = False) -> dict[Axis, tuple[int, int]]:
    """``divisors`` with a smaller divisor (a divisor of the checker's) for a class whose reduced sizes another class
    with an axis in one of its tensors (``everywhere``: any class) already has, where one keeps them apart: inference
    by value at reduced sizes then cannot relate two axes that only happen to have one size (a sequence and a head
    count both 2), a relation that would not lift. Classes with an axis of an integer or boolean input keep their
    sizes and come first (its elements are decided case by case: a mask's cases grow with the square of a sequence),
    then the smaller. A moved class has no second divisor (reported only: the checker derives its own)."""
    members: dict[Axis, list[Axis]] = {}
    tensors: dict[tuple, set[Axis]] = {}   # (side, tensor) -> the classes of its axes
    for a in C.size:
        if a[0] != "term":
            members.setdefault(cls[a], []).append(a)
            tensors.setdefault(a[:2], set()).add(cls[a])
    near = {root: set(members) if everywhere else set().union(*(tensors[a[:2]] for a in ms))
            for root, ms in members.items()}
    size = {root: {C.size[a] // divisors[root][0] for a in ms} for root, ms in members.items()}
    ints = {root: any(graphs[a[0]].tensors[a[1]].is_int and a[1] in graphs[a[0]].inputs for a in ms)
            for root, ms in members.items()}
    picks = {}
    for root, ms in sorted(members.items(), key=lambda kv: (not ints[kv[0]], min(C.size[a] for a in kv[1]))):
        d, second = divisors[root]
        if d == 1:
            continue
        used = set().union(*(size[c] for c in near[root] - {root} if c in picks or divisors[c][0] == 1))
        ks = [d] if ints[root] else [k for k in range(d, 1, -1) if d % k == 0]
        pick = next((k for k in ks if not {C.size[a] // k for a in ms} & used), d)
        size[root] = {C.size[a] // pick for a in ms}
        picks[root] = (pick, second if pick == d else 0)
    return {a: picks.get(cls[a], divisors[a]) for a in C.size}


def _volume(*graphs) -> int:
    """Elements over all tensors of the graphs (how much a reduction saves)."""
    return sum(math.prod(t.shape) for g in graphs for t in g.tensors.values())


def _json(obj: dict, g) -> dict:
    """Graph JSON ``obj`` with the shapes and attributes of ``g`` (its reduction)."""
    out, nodes = copy.deepcopy(obj), {n.name: n for n in g.nodes}
    for t, v in out["tensors"].items():
        v["shape"] = list(g.tensors[t].shape)
    for raw in out["nodes"]:
        raw["attrs"] = nodes[raw["name"]].attrs
    return out


def reduce_case(case: Case, limits: Limits | None = None, relax: bool = True, everywhere: bool = False) -> Reduction:
    """The case reduced for inference (by value: each stage is then reduced on its own, by the checker), with its
    classes for reports and the axis size map; ``relax``: mixed axes reduced too (``MIXED``); ``everywhere``: reduced
    sizes kept apart between all classes, not only those that share a tensor (``_distinct``)."""
    limits = limits or Limits()
    r = direct.prepare(case, UNBOUNDED)   # shapes only: the reduced case must fit ``limits`` (``_fits``)
    full, equal = (r.spec, r.impl, {"input": r.inputs, "output": r.expect}), {}
    if cut := _cut(case, r):
        case, equal = cut
        r = direct.prepare(case, UNBOUNDED)
    rels = {"input": r.inputs, "output": r.expect}
    scaled = [t for rel in rels.values() for t, es in rel.items() if any(_uses(e, ("scale", "mean")) for e in es)]
    if scaled:   # inference at reduced sizes would meet the claim's full-size constant (the checker takes it)
        raise Unsupported(f"{case.name}: shape reduction: '{scaled[0]}' is related by a scaled relation "
                          "(verify without --staged)")
    C = shapes.constraints(r.spec, r.impl, rels)
    kept = {a: why for a, why in C.pins.items() if not (relax and why.endswith(MIXED))}
    relaxed, C.pins, cls = len(kept) < len(C.pins), kept, C.divisor_classes()
    if relax:   # the checker's rule for rows indexed by values; the engine's graphs are the whole case
        shapes.indexed(C, cls, (("spec", r.spec), ("impl", r.impl)), rels)
    relaxed, plain = relaxed or bool(C.least), shapes.solve(C)
    for divisors in (_distinct(C, plain, cls, {"spec": r.spec, "impl": r.impl}, everywhere), plain):   # where they fit
        rspec, rimpl, rrels = shapes.reduce(r.spec, r.impl, rels, C, {a: d[0] for a, d in divisors.items()},
                                            f"{case.name}: reduction", UNBOUNDED)
        if all(math.prod(v.shape) <= limits.max_elements for g in (rspec, rimpl) for v in g.tensors.values()):
            break
    classes: dict[Axis, dict] = {}
    for a in C.size:
        d, second = divisors[a]
        c = classes.setdefault(cls[a], {"divisor": d, **({"second": second} if second else {}), "full": C.size[a],
                                        "reason": "", "axes": []})
        c["reason"] = c["reason"] or (f"full size: {C.pins[a]}" if a in C.pins else "")
        if a[0] != "term":
            c["axes"].append(list(a))
    for c in classes.values():
        c["reason"] = c["reason"] or (f"divided by {c['divisor']}" + (f"; summed: checked again at divisor "
                                                                       f"{c['second']}" if "second" in c else "")
                                      if c["divisor"] > 1 else "kept: no divisor divides its sizes and offsets "
                                                               "(in blocks) leaving every member 2 blocks")
    listed = [c for c in classes.values() if c["divisor"] > 1 and c["axes"]]
    _fits(case, (rspec, rimpl), {a: (d[0], classes[cls[a]]["reason"]) for a, d in divisors.items()}, limits)
    objs = {"spec": _json(case.spec, rspec), "impl": _json(case.impl, rimpl)}
    for (side, t), ax in C.ranges.items():   # the values' ranges, divided with their rows
        objs[side]["tensors"][t]["range"] = [v // divisors[ax][0] for v in objs[side]["tensors"][t]["range"]]
    reduced = Case(case.name, objs["spec"], objs["impl"],
                   {t: [str(e) for e in es] for t, es in rrels["input"].items()},
                   {t: [str(e) for e in es] for t, es in rrels["output"].items()})
    sizes = {}
    for side, g, rg in (("spec", r.spec, rspec), ("impl", r.impl, rimpl)):
        for t, v in g.tensors.items():
            for k, n in enumerate(v.shape):
                sizes[(side, t, k)] = (n, rg.tensors[t].shape[k])
    kept = [c for c in classes.values() if c["divisor"] == 1 and c["axes"] and c["full"] > 1]
    return Reduction(reduced, listed, kept, sizes, (_volume(*full[:2]), _volume(rspec, rimpl)), full, relaxed,
                     {t: [terms.Ref(u) for u in us] for t, us in equal.items()})


def lift(red: Reduction, rel: dict[str, list], rspec, rimpl) -> dict[str, list]:
    """A relation found on the reduced graphs at full size: each constant counted along an axis (slice and pad
    offsets, reshape sizes) times that axis' divisor, followed from the impl tensors it names. Equations that
    do not keep to the reduction at full size (``keeps``) are left out."""
    def divs(name: str) -> list[int]:
        return [red.sizes[("impl", name, k)][0] // red.sizes[("impl", name, k)][1]
                for k in range(len(rimpl.tensors[name].shape))]
    def one(t: str, e: terms.Term) -> terms.Term | None:
        if (t, str(e)) not in red.lifted:   # the same reduced graphs each time: lifted once
            f = _lift(_plainer(e, rimpl), divs, lambda n: rimpl.tensors[n].shape)[0]
            red.lifted[(t, str(e))] = f if keeps(red, t, f) else None
        return red.lifted[(t, str(e))]
    return {t: [f for e in es if (f := one(t, e)) is not None] for t, es in rel.items()}


def _plainer(e: terms.Term, g) -> terms.Term:
    """``reshape(concat(pieces, dim=k), shape)`` as ``concat(pieces, dim=j)`` where that places every element
    alike (pieces stacked on a size-1 axis, then merged with the next): the reshape would flatten a reduced axis
    into another, which no reduction allows, while the concat keeps at every size."""
    if not (isinstance(e, terms.Call) and e.fn == "reshape" and isinstance(c := e.args[0], terms.Call)
            and c.fn == "concat"):
        return e
    labels, n = {}, 0
    for r in dict.fromkeys(terms.refs(c)):   # every impl element numbered apart
        size = math.prod(g.tensors[r].shape)
        labels[r], n = np.arange(n, n + size).reshape(g.tensors[r].shape), n + size
    want = terms.evaluate(e, labels.__getitem__)
    for j in range(len(want.shape)):
        plain = terms.Call("concat", c.args, (("dim", j),))
        try:
            if np.array_equal(terms.evaluate(plain, labels.__getitem__), want):
                return plain
        except (terms.TermError, ValueError):
            continue
    return e


def _lift(t: terms.Term, divs, shape) -> tuple[terms.Term, list[int]]:
    """``t`` at full size and the divisor of each axis of its value."""
    if isinstance(t, terms.Ref):
        return t, divs(t.name)
    parts = [_lift(a, divs, shape) for a in t.args]
    d, kw = parts[0][1], dict(t.kw)
    if t.fn in ("slice", "pad"):
        k = kw["dim"] % len(d)
        kw.update({key: kw[key] * d[k] for key in ("start", "end", "before", "after") if key in kw})
    elif t.fn == "permute":
        d = [d[i] for i in kw["dims"]]
    elif t.fn == "transpose":
        d = list(d)
        i, j = kw["dim0"] % len(d), kw["dim1"] % len(d)
        d[i], d[j] = d[j], d[i]
    elif t.fn == "reshape":   # the checker's grouping: one-to-one axes keep their divisor, a group's outer axis too
        xs, ys = terms.infer_shape(t.args[0], shape), kw["shape"]
        C = shapes.Constraints(size={**{("x", "", i): n for i, n in enumerate(xs)},
                                     **{("y", "", j): n for j, n in enumerate(ys)}})
        xa, ya = list(C.size)[:len(xs)], list(C.size)[len(xs):]
        C.reshape(xa, ya, "lift")
        outer = {b: a for a, b in C.links}
        d = [1 if y in C.pins else next((d[i] for i, x in enumerate(xa) if C.find(x) == C.find(y) or outer.get(y) == x),
                                        1) for y in ya]
        kw["shape"] = tuple(n * k for n, k in zip(ys, d))
    return terms.Call(t.fn, tuple(p[0] for p in parts), tuple((k, kw[k]) for k, _ in t.kw)), d


def keeps(red: Reduction, t: str, e: terms.Term) -> bool:
    """Whether the equation ``t = e`` (at full size) keeps, on its own, to the divisors of ``red``: e.g. a
    reshape found at reduced sizes that flattens a reduced axis into another is refused at full size."""
    spec, impl, _ = red.full
    def stub(g, names):
        return SimpleNamespace(tensors={n: g.tensors[n] for n in names}, nodes=[])
    try:
        C = shapes.constraints(stub(spec, [t]), stub(impl, terms.refs(e)), {"evidence": {t: [e]}})
    except terms.TermError:
        return False
    return _consistent(C, {a: red.sizes[a][0] // red.sizes[a][1] for a in C.size if a[0] != "term"})


def _consistent(C: shapes.Constraints, div: dict[Axis, int], least: int = 2) -> bool:
    """Whether ``div`` gives tied axes one divisor that divides each size and scaled constant, in blocks, leaving
    ``least`` blocks (a second divisor: 1), and no pinned axis is divided."""
    cls, real = C.divisor_classes(), {}
    for a, d in div.items():
        if real.setdefault(cls[a], d) != d:
            return False
    full = {a: real.get(cls[a], 1) for a in C.size}
    return all(d == 1 or not (C.size[a] % (d * C.blocks(a)) or C.size[a] // (d * C.blocks(a)) < least or a in C.pins)
               for a, d in full.items()) and all(full[a] == 1 or v % (full[a] * C.blocks(a)) == 0
                                                for a, v, _ in C.scaled)
