"""Whole-graph refinement: one obligation over the complete graphs at their own shapes.

A random numeric run comes first (cheap, finds most bugs with concrete values: ``refute``);
then every output element is decided symbolically by the checker core.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from dataclasses import dataclass, field

import numpy as np

from certificates import approx, refinement, solve, terms
from certificates.chain import witnessed
from certificates.errors import Malformed, Unsupported
from certificates.graph import Graph, Tensor, evaluate
from certificates.limits import Limits
from certificates.refinement import Outcome, Relation

from .case import Case
from .ir import parsed
from .verdict import Counterexample, Undecided

TRIES = 3                  # random input draws searched for a counterexample (seeds seed, seed + 1, ...)
SCALES = (1.0, 1e-2, 1e-4)  # each draw's float inputs at these magnitudes: a bug hidden by a normalizing
                            # step (Adam's m / (sqrt(v) + eps), clipping) shows where eps is not negligible
RTOL, ATOL = 1e-5, 1e-6    # a counterexample differs beyond float64 rounding of either side ...
ROUNDING = 1e-9            # ... and of the largest intermediate value: (x + 1e12) - 1e12 is x over the reals


@dataclass
class Result:
    case: Case
    spec: Graph
    impl: Graph
    inputs: Relation
    expect: Relation
    outcomes: list[Outcome] = field(default_factory=list)
    counterexample: Counterexample | None = None
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
    where = f"{case.name}: input_relation"
    try:
        rin = refinement.parse_relation(case.input_relation, spec, impl, where, True, limits)
    except Malformed as e:   # every entry given is well formed, but some inputs have none: say which
        missing = [t for t in spec.inputs if isinstance(case.input_relation, dict) and t not in case.input_relation]
        if e.where != where or not missing:
            raise
        raise Undecided(where, f"no relation for spec input(s) {', '.join(missing)}: add one per input "
                               "(docs/cases.md), or a placement for each parameter") from None
    rout = refinement.parse_relation(case.expect, spec, impl, f"{case.name}: expect", False, limits)
    return Result(case, spec, impl, rin, rout)


def _replicas(r: Result, whole) -> tuple[dict, dict] | None:
    """``refinement.instantiate``'s values at once, where every equation of a spec input after its first names one
    impl input (a replica) that no other equation reads: each impl input drawn ``whole``, each replica set to its
    spec input's value; None otherwise."""
    rest = [e for t in r.spec.inputs for e in r.inputs[t][1:]]
    named = [e.name for e in rest if isinstance(e, terms.Ref)]
    if len(named) < len(rest) or len(set(named)) < len(named) or \
            set(named) & {u for t in r.spec.inputs for u in terms.refs(r.inputs[t][0])}:
        return None
    impl_env = {n: whole(n, r.impl.tensors[n]) for n in r.impl.inputs}
    spec_env = {t: np.asarray(terms.evaluate(r.inputs[t][0], impl_env.__getitem__)) for t in r.spec.inputs}
    impl_env.update((e.name, spec_env[t].copy()) for t in r.spec.inputs for e in r.inputs[t][1:])
    return spec_env, impl_env


def numeric_values(r: Result, seed: int, limits: Limits, scale: float = 1.0,
                   spread: bool = False) -> tuple[dict, dict]:
    """Values of every spec and impl tensor on random inputs that satisfy the input relation
    (float inputs drawn in their sampling range, default [-1, 1], times ``scale``; ``spread``: the n free elements
    of an integer input whose range has n values or more fall one in each n-th of it, in random order, so that no
    run has every token id in one shard's rows, where a rank's partial lookup equals the whole).

    Raises ``ImplFailed`` if the impl fails on them (e.g. an index out of range).
    """
    rng, strata = random.Random(seed), {}

    def whole(n: str, t: Tensor) -> np.ndarray:   # ``fresh`` of each element in turn: the same draws
        return np.array([fresh(n, t) for _ in range(math.prod(t.shape))], dtype=object).reshape(t.shape)

    def fresh(label: str, t: Tensor):
        if t.is_int:
            lo, hi = t.range or (0, 2)
            n = math.prod(t.shape)
            if spread and hi - lo >= n > 1:
                ks = strata.setdefault(label.split("[")[0], rng.sample(range(n), n))
                k = ks.pop()
                return rng.randrange(lo + (hi - lo) * k // n, lo + (hi - lo) * (k + 1) // n)
            return rng.randrange(lo, hi)
        return rng.uniform(*(t.range or (-1.0, 1.0))) * scale   # a float range only guides sampling

    try:
        spec_env, impl_env = _replicas(r, whole) or refinement.instantiate(r.spec, r.impl, r.inputs, fresh, limits)
    except Unsupported:   # an element bound twice: fine where it is the same impl element (a merged weight's
        spec_env, impl_env = refinement.instantiate(r.spec, r.impl, r.inputs, fresh, limits, strict=False)
        if not all(np.array_equal(np.asarray(terms.evaluate(e, impl_env.__getitem__)), spec_env[n])   # repeated
                   for n, es in r.inputs.items() for e in es):                                       # q rows)
            raise
    (_, s_env, i_env), = refinement.integer_cases(r.spec, r.impl, spec_env, impl_env, limits)
    s_vals = evaluate(r.spec, s_env, False, limits)
    try:
        return s_vals, evaluate(r.impl, i_env, False, limits)
    except Unsupported as e:
        raise ImplFailed(f"impl fails on random inputs (seed {seed}): {e}") from None


def refute(r: Result, seed: int, limits: Limits, tries: int = TRIES) -> Counterexample | None:
    """Run both graphs on ``tries`` random draws of inputs that satisfy the input relation, each at
    every magnitude of ``SCALES``; the first expected output element whose values differ (both finite,
    by more than ``scale * ATOL + RTOL * |value| + ROUNDING * M``, ``M`` the largest finite magnitude
    of any tensor of either graph), if any."""
    for s, scale in itertools.product(range(seed, seed + tries), SCALES):
        try:
            s_vals, i_vals = numeric_values(r, s, limits, scale)
        except ImplFailed:   # not a counterexample: the impl's inputs may be out of its domain
            continue
        hit = differing(r, s_vals, i_vals, scale * ATOL + ROUNDING * max(_magnitude(s_vals), _magnitude(i_vals)))
        if hit:
            return Counterexample(s, {n: _short(s_vals[n]) for n in r.spec.inputs}, *hit, scale)
    return None


CHUNK = 1 << 22   # elements compared at once: the comparison's temporaries stay small at full size


def differing(r: Result, s_vals: dict, i_vals: dict, slack: float) -> tuple | None:
    """The first expected output element whose values differ, both finite, by more than ``slack`` plus
    ``RTOL`` of the value: ``(output, expression, index, spec value, impl value, elements that differ, of)``."""
    for name, exprs in r.expect.items():
        want = np.asarray(s_vals[name], dtype=float)
        for t in exprs:
            got = np.broadcast_to(np.asarray(refinement.terms.evaluate(t, i_vals.__getitem__), dtype=float),
                                  want.shape)
            if hit := difference(want, got, slack):
                return (name, str(t), *hit)
    return None


def difference(want: np.ndarray, got: np.ndarray, slack: float) -> tuple | None:
    """``(index, spec value, impl value, elements that differ, of)`` for the first element of ``want`` and ``got``
    (the same shape) that differ, both finite, by more than ``slack`` plus ``RTOL`` of ``got``'s; None if none do."""
    first, count, want_flat, got_flat = None, 0, want.reshape(-1), got.reshape(-1)
    for lo in range(0, want.size, CHUNK):
        a, b = want_flat[lo:lo + CHUNK], got_flat[lo:lo + CHUNK]
        bad = np.flatnonzero(np.isfinite(a) & np.isfinite(b) & ~np.isclose(a, b, rtol=RTOL, atol=slack))
        first = lo + int(bad[0]) if first is None and bad.size else first
        count += bad.size
    if not count:
        return None
    idx = tuple(int(i) for i in np.unravel_index(first, want.shape))
    return idx, float(want[idx]), float(got[idx]), count, int(want.size)


def excess(want: np.ndarray, got: np.ndarray) -> float:
    """The largest ``|want - got| - RTOL |got|`` over the elements both finite (-inf where none are): ``difference``
    finds an element under a slack below it, none under one above it."""
    top, want_flat, got_flat = -np.inf, want.reshape(-1), got.reshape(-1)
    for lo in range(0, want.size, CHUNK):
        a, b = want_flat[lo:lo + CHUNK], got_flat[lo:lo + CHUNK]
        ok = np.isfinite(a) & np.isfinite(b)
        if ok.any():
            top = max(top, float((np.abs(a[ok] - b[ok]) - RTOL * np.abs(b[ok])).max()))
    return top


def _magnitude(vals: dict) -> float:
    """The largest finite absolute value among the float tensors of ``vals``."""
    top = 0.0
    for v in vals.values():
        a = np.asarray(v)
        if a.dtype.kind == "f" and a.size:
            finite = np.abs(a[np.isfinite(a)])
            top = max(top, float(finite.max()) if finite.size else 0.0)
    return top


def _short(v) -> str:
    a = np.asarray(v, dtype=float)
    head = ", ".join(f"{x:.4g}" for x in a.ravel()[:4])
    return head if a.ndim == 0 else f"{list(a.shape)} [{head}{', ...' if a.size > 4 else ''}]"


def verify(case: Case, seed: int = 0, limits: Limits | None = None) -> Result:
    limits = limits or Limits()
    start = time.monotonic()
    r = prepare(case, limits)
    unrelated = [t for t in r.spec.outputs if t not in r.expect]
    if unrelated:
        raise Malformed(f"{case.name}: expect", f"the whole-graph engine needs an expectation for every "
                                                f"spec output; '{unrelated[0]}' has none")
    r.counterexample = refute(r, seed, limits)
    if r.counterexample is None:
        r.outcomes = refinement.check(r.spec, r.impl, r.inputs, r.expect, limits, defined=witnessed, solver=solve)
    r.seconds = time.monotonic() - start
    return r
