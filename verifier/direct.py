"""Whole-graph refinement: one obligation over the complete graphs at their own shapes.

A random numeric run comes first (cheap, finds most bugs with concrete values);
then every output element is decided symbolically by the checker core.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import numpy as np

from certificates import approx, refinement
from certificates.errors import Malformed, Unsupported
from certificates.graph import Graph, Tensor, evaluate
from certificates.limits import Limits
from certificates.refinement import Outcome, Relation

from .case import Case
from .ir import parsed


@dataclass
class Result:
    case: Case
    spec: Graph
    impl: Graph
    inputs: Relation
    expect: Relation
    outcomes: list[Outcome] = field(default_factory=list)
    counterexample: str | None = None
    seconds: float = 0.0

    @property
    def verified(self) -> bool:
        return self.counterexample is None and all(o.holds for o in self.outcomes)


class ImplFailed(Exception):
    """The implementation cannot run on inputs that satisfy the relation."""


def prepare(case: Case, limits: Limits) -> Result:
    """Validate the graphs and relations of a case (raises ``Malformed`` on defects)."""
    where = f"{case.name}: spec graph"   # graphs validated at capture are reused while unchanged
    spec = parsed(approx.apply(case.spec, case.approximations, where) if case.approximations else case.spec,
                  where, limits)
    impl = parsed(case.impl, f"{case.name}: impl graph", limits)
    rin = refinement.parse_relation(case.input_relation, spec, impl, f"{case.name}: input_relation",
                                    True, limits)
    rout = refinement.parse_relation(case.expect, spec, impl, f"{case.name}: expect", False, limits)
    return Result(case, spec, impl, rin, rout)


def numeric_values(r: Result, seed: int, limits: Limits) -> tuple[dict, dict]:
    """Values of every spec and impl tensor on random inputs that satisfy the input relation.

    Raises ``ImplFailed`` if the impl fails on them (e.g. an index out of range).
    """
    rng = random.Random(seed)

    def fresh(label: str, t: Tensor):
        if t.is_int:
            lo, hi = t.range or (0, 2)
            return rng.randrange(lo, hi)
        return rng.uniform(*(t.range or (-1.0, 1.0)))   # a float range only guides sampling

    spec_env, impl_env = refinement.instantiate(r.spec, r.impl, r.inputs, fresh, limits)
    (_, s_env, i_env), = refinement.integer_assignments(r.spec, r.impl, spec_env, impl_env, limits)
    s_vals = evaluate(r.spec, s_env, False, limits)
    try:
        return s_vals, evaluate(r.impl, i_env, False, limits)
    except Unsupported as e:
        raise ImplFailed(f"impl fails on random inputs (seed {seed}): {e}") from None


def numeric_test(r: Result, seed: int, limits: Limits) -> str | None:
    """Run both graphs on random inputs that satisfy the input relation; describe a mismatch."""
    try:
        s_vals, i_vals = numeric_values(r, seed, limits)
    except ImplFailed as e:
        return str(e)
    for name, exprs in r.expect.items():
        for t in exprs:
            want = np.asarray(s_vals[name], dtype=float)
            got = np.asarray(refinement.terms.evaluate(t, i_vals.__getitem__), dtype=float)
            bad = ~np.isclose(want, got, rtol=1e-6, atol=1e-9)
            if bad.any():
                idx = tuple(int(i) for i in np.argwhere(bad)[0])
                return (f"{name}{list(idx)} = {want[idx]:.6g} but {t}{list(idx)} = {got[idx]:.6g} "
                        f"on random inputs (seed {seed}); {int(bad.sum())} of {bad.size} elements differ")
    return None


def verify(case: Case, seed: int = 0, limits: Limits | None = None) -> Result:
    limits = limits or Limits()
    start = time.monotonic()
    r = prepare(case, limits)
    unrelated = [t for t in r.spec.outputs if t not in r.expect]
    if unrelated:
        raise Malformed(f"{case.name}: expect", f"the whole-graph engine needs an expectation for every "
                                                f"spec output; '{unrelated[0]}' has none")
    r.counterexample = numeric_test(r, seed, limits)
    if r.counterexample is None:
        r.outcomes = refinement.check(r.spec, r.impl, r.inputs, r.expect, limits)
    r.seconds = time.monotonic() - start
    return r
