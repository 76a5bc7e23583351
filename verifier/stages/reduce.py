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

from certificates import shapes
from certificates.errors import LimitExceeded, Unsupported
from certificates.limits import Limits

from .. import direct
from ..case import Case
from ..ir import UNBOUNDED, operators_of

Axis = shapes.Axis


@dataclass
class Reduction:
    case: Case                                   # the reduced case
    classes: list[dict]                          # [{"divisor", "full", "reason", "axes"}] (certificate form)
    kept: list[dict] = field(default_factory=list)                    # classes at full size, same form
    sizes: dict[Axis, tuple[int, int]] = field(default_factory=dict)  # real axis -> (full, reduced)
    volume: tuple[int, int] = (0, 0)             # elements over all tensors, full and reduced


def solve(C: shapes.Constraints) -> dict[Axis, tuple[int, str]]:
    """A divisor and a reason per divisor class (``C.divisor_classes``), keyed by every member axis."""
    cls = C.divisor_classes()
    members: dict[Axis, list[Axis]] = {}
    for a in C.size:
        members.setdefault(cls[a], []).append(a)
    units: dict[Axis, list[tuple[int, int]]] = {}    # class -> (a size or offset, its axis' grain)
    for a in C.size:
        units.setdefault(cls[a], []).append((C.size[a], C.blocks(a)))
    for a, v, _ in C.scaled:
        units[cls[a]].append((v, C.blocks(a)))
    out: dict[Axis, tuple[int, str]] = {}
    for root, ms in members.items():
        pin = next((C.pins[m] for m in ms if m in C.pins), None)
        if pin or any(n % g for n, g in units[root]):
            out[root] = (1, f"full size: {pin or 'a size or offset splits a reshape block'}")
            continue
        g = math.gcd(*[n // k for n, k in units[root]])
        cap = min(C.size[m] // (2 * C.blocks(m)) for m in ms)
        d = max((k for k in range(1, min(g, cap) + 1) if g % k == 0), default=1)
        small = min(C.size[m] for m in ms)
        out[root] = (d, f"gcd {g} of sizes and offsets (in blocks), smallest member {small} kept >= 2 blocks"
                        if d > 1 else f"kept: gcd {g}, smallest member {small}")
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


def reduce_case(case: Case, limits: Limits | None = None) -> Reduction:
    """The reduced case, with its classes (for the certificate) and the axis size map."""
    limits = limits or Limits()
    r = direct.prepare(case, UNBOUNDED)   # shapes only: the reduced case must fit ``limits`` (``_fits``)
    rels = {"input": r.inputs, "output": r.expect}
    try:
        C = shapes.constraints(r.spec, r.impl, rels)
    except shapes.Unjustified as e:   # e.g. a scaled relation: its constant would not be rescaled
        raise Unsupported(f"{case.name}: shape reduction: {e} (verify without --staged)") from None
    divisors = solve(C)
    classes: dict[Axis, dict] = {}
    cls = C.divisor_classes()
    for a in C.size:
        root = cls[a]
        d, why = divisors[a]
        c = classes.setdefault(root, {"divisor": d, "full": C.size[a], "reason": why, "axes": []})
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
                     (shapes.volume(r.spec) + shapes.volume(r.impl), shapes.volume(rspec) + shapes.volume(rimpl)))
