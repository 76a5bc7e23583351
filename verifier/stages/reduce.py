"""Analytic shape reduction of a case (docs/stages.md).

The constraints are the checker's own (``certificates.shapes.constraints``: ties, pins,
scaled constants, reshape groups); this module only solves them: union-find classes,
reshape groups resolved by keeping the largest axis of each side free, then per class
the largest divisor of the gcd of its sizes and scaled constants that leaves at least 2
elements on every member. No optimizer is needed: every constraint is a tie, a pin or a
divisibility. ``certificates.shapes.reduce`` then rewrites (and re-checks) the graphs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from certificates import shapes
from certificates.limits import Limits

from .. import direct
from ..case import Case

Axis = shapes.Axis


@dataclass
class Reduction:
    case: Case                                   # the reduced case
    classes: list[dict]                          # [{"divisor", "full", "reason", "axes"}] (certificate form)
    kept: list[dict] = field(default_factory=list)                    # classes at full size, same form
    sizes: dict[Axis, tuple[int, int]] = field(default_factory=dict)  # real axis -> (full, reduced)
    volume: tuple[int, int] = (0, 0)             # elements over all tensors, full and reduced


def _resolve_groups(C: shapes.Constraints) -> None:
    """Pin reshape-group axes until each side has at most one free axis, then tie the free pair."""
    changed = True
    while changed:
        changed = False
        pinned = {C.find(a) for a in C.pins}
        for xs, ys, why in C.groups:
            free = []
            for side in (xs, ys):
                f = [v for v in side if C.find(v) not in pinned]
                for v in sorted(f, key=lambda v: -C.size[v])[1:]:
                    C.pin(v, f"{why}: another axis of the reshape is reduced")
                    pinned.add(C.find(v))
                    changed = True
                free.append(f and max(f, key=lambda v: C.size[v]))
            fx, fy = free
            if bool(fx) != bool(fy):
                C.pin(fx or fy, f"{why}: the other side of the reshape keeps full size")
                pinned.add(C.find(fx or fy))
                changed = True
            elif fx and C.find(fx) != C.find(fy):
                C.tie(fx, fy)
                changed = True


def solve(C: shapes.Constraints) -> dict[Axis, tuple[int, str]]:
    """A divisor and a reason per class root."""
    _resolve_groups(C)
    members: dict[Axis, list[Axis]] = {}
    for a in C.size:
        members.setdefault(C.find(a), []).append(a)
    quantities: dict[Axis, list[int]] = {}
    for a, v, _ in C.scaled:
        quantities.setdefault(C.find(a), []).append(v)
    out: dict[Axis, tuple[int, str]] = {}
    for root, ms in members.items():
        pin = next((C.pins[m] for m in ms if m in C.pins), None)
        if pin:
            out[root] = (1, f"full size: {pin}")
            continue
        g = math.gcd(*[C.size[m] for m in ms], *quantities.get(root, []))
        cap = min(C.size[m] // 2 for m in ms)
        d = max((k for k in range(1, min(g, cap) + 1) if g % k == 0), default=1)
        out[root] = (d, f"gcd {g} of sizes and offsets, smallest member {min(C.size[m] for m in ms)}"
                        f" kept >= 2" if d > 1 else f"kept: gcd {g}, smallest member {min(C.size[m] for m in ms)}")
    return out


def reduce_case(case: Case, limits: Limits | None = None) -> Reduction:
    """The reduced case, with its classes (for the certificate) and the axis size map."""
    limits = limits or Limits()
    r = direct.prepare(case, limits)
    rels = {"input": r.inputs, "output": r.expect}
    C = shapes.constraints(r.spec, r.impl, rels)
    divisors = solve(C)
    classes: dict[Axis, dict] = {}
    for a in C.size:
        root = C.find(a)
        d, why = divisors[root]
        c = classes.setdefault(root, {"divisor": d, "full": C.size[a], "reason": why, "axes": []})
        if a[0] != "term":
            c["axes"].append(list(a))
    listed = [c for c in classes.values() if c["divisor"] > 1 and c["axes"]]
    rspec, rimpl, rrels, out = shapes.reduce(case.spec, case.impl, r.spec, r.impl, rels, listed,
                                             f"{case.name}: reduction", limits)
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
