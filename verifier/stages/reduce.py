"""Analytic shape reduction of a case (docs/stages.md).

The constraints are the checker's own (``certificates.shapes.constraints``: ties, pins,
scaled constants, reshape links and grains); this module only solves them: per divisor
class the largest divisor of the gcd of its sizes and scaled constants, counted in blocks,
that leaves at least 2 blocks on every member. No optimizer is needed: every constraint is a
tie, a pin or a divisibility. ``certificates.shapes.reduce`` then rewrites (and re-checks) the graphs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from certificates import shapes, terms
from certificates.errors import LimitExceeded, Unsupported
from certificates.limits import Limits

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


def _divisors(C: shapes.Constraints, ms: list[Axis], g: int) -> list[int]:
    """Divisors of ``g`` that leave every member of ``ms`` at least 2 blocks, largest first."""
    cap = min(C.size[m] // (2 * C.blocks(m)) for m in ms)
    return [k for k in range(min(g, cap), 0, -1) if g % k == 0]


def solve(C: shapes.Constraints) -> dict[Axis, tuple[int, str, int]]:
    """A divisor, a reason and a second divisor (0: none; summed classes need one) per divisor class
    (``C.divisor_classes``), keyed by every member axis."""
    cls = C.divisor_classes()
    members: dict[Axis, list[Axis]] = {}
    for a in C.size:
        members.setdefault(cls[a], []).append(a)
    units: dict[Axis, list[tuple[int, int]]] = {}    # class -> (a size or offset, its axis' grain)
    for a in C.size:
        units.setdefault(cls[a], []).append((C.size[a], C.blocks(a)))
    for a, v, _ in C.scaled:
        units[cls[a]].append((v, C.blocks(a)))
    summed = {a for axes in C.sums.values() for a in axes}
    out: dict[Axis, tuple[int, str, int]] = {}
    for root, ms in members.items():
        pin = next((C.pins[m] for m in ms if m in C.pins), None)
        if pin or any(n % g for n, g in units[root]):
            out[root] = (1, f"full size: {pin or 'a size or offset splits a reshape block'}", 0)
            continue
        g = math.gcd(*[n // k for n, k in units[root]])
        ds, small, sums = _divisors(C, ms, g) or [1], min(C.size[m] for m in ms), bool(summed & set(ms))
        if sums and len(ds) < 3:   # a summed class needs two divisors above 1 (never a second run at full size)
            ds = [1]
        second = ds[1] if sums and ds[0] > 1 else 0
        out[root] = (ds[0], f"gcd {g} of sizes and offsets (in blocks), smallest member {small} kept >= 2 blocks"
                     + (f"; summed: checked again at divisor {second}" if second else "")
                     if ds[0] > 1 else f"kept: gcd {g}, smallest member {small}", second)
    return {a: out[r] for a, r in cls.items()}


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


def _volume(*graphs) -> int:
    """Elements over all tensors of the graphs (how much a reduction saves)."""
    return sum(math.prod(t.shape) for g in graphs for t in g.tensors.values())


def reduce_case(case: Case, limits: Limits | None = None, pins: dict[Axis, str] | None = None) -> Reduction:
    """The reduced case, with its classes (for the certificate) and the axis size map; ``pins``: axes to keep
    at full size besides the checker's (a summed class whose stages were not affine)."""
    limits = limits or Limits()
    r = direct.prepare(case, UNBOUNDED)   # shapes only: the reduced case must fit ``limits`` (``_fits``)
    rels = {"input": r.inputs, "output": r.expect}
    try:
        C = shapes.constraints(r.spec, r.impl, rels)
    except shapes.Unjustified as e:   # e.g. a scaled relation: its constant would not be rescaled
        raise Unsupported(f"{case.name}: shape reduction: {e} (verify without --staged)") from None
    for a, why in (pins or {}).items():
        C.pin(a, why)
    divisors = solve(C)
    classes: dict[Axis, dict] = {}
    cls = C.divisor_classes()
    for a in C.size:
        root = cls[a]
        d, why, second = divisors[a]
        c = classes.setdefault(root, {"divisor": d, **({"second": second} if second else {}), "full": C.size[a],
                                      "reason": why, "axes": []})
        if a[0] != "term":
            c["axes"].append(list(a))
    listed = [c for c in classes.values() if c["divisor"] > 1 and c["axes"]]
    rspec, rimpl, rrels, out = shapes.reduce(case.spec, case.impl, r.spec, r.impl, rels, listed,
                                             f"{case.name}: reduction", UNBOUNDED)
    _fits(case, (rspec, rimpl), divisors, limits)
    reduced = Case(case.name, out["spec"], out["impl"],
                   {t: [str(e) for e in es] for t, es in rrels["input"].items()},
                   {t: [str(e) for e in es] for t, es in rrels["output"].items()})
    sizes = {}
    for side, g, rg in (("spec", r.spec, rspec), ("impl", r.impl, rimpl)):
        for t, v in g.tensors.items():
            for k, n in enumerate(v.shape):
                sizes[(side, t, k)] = (n, rg.tensors[t].shape[k])
    kept = [c for c in classes.values() if c["divisor"] == 1 and c["axes"] and c["full"] > 1]
    return Reduction(reduced, listed, kept, sizes,
                     (_volume(r.spec, r.impl), _volume(rspec, rimpl)),
                     (r.spec, r.impl, rels))


def lift(red: Reduction, rel: dict[str, list], rspec, rimpl) -> dict[str, list]:
    """A relation found on the reduced graphs at full size: each constant counted along an axis (slice and pad
    offsets, reshape sizes) times that axis' divisor, followed from the impl tensors it names. Equations that
    do not keep to the reduction at full size (``keeps``) are left out."""
    def divs(name: str) -> list[int]:
        return [red.sizes[("impl", name, k)][0] // red.sizes[("impl", name, k)][1]
                for k in range(len(rimpl.tensors[name].shape))]
    out = {t: [_lift(_plainer(e, rimpl), divs, lambda n: rimpl.tensors[n].shape)[0] for e in es]
           for t, es in rel.items()}
    return {t: [e for e in es if keeps(red, t, e)] for t, es in out.items()}


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
        shapes.check(C, {a: red.sizes[a][0] // red.sizes[a][1] for a in C.size if a[0] != "term"})
    except (shapes.Unjustified, terms.TermError):
        return False
    return True
