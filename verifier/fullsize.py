"""Full-size runs of cases too large to decide (issue 15): an executed counterexample, located by value.

Where a case stays over the element limit even after the shape reduction, nothing is proved, but the
graphs can still be run at their captured sizes: ``search`` draws whole input arrays that satisfy the
input relation (each relation must be a move of impl inputs: copies, concatenations, slices), runs both
graphs in numpy dropping every tensor after its last reader, and compares the expected outputs as
``direct.refute`` does. Every tensor is also summarized by a *sketch*, its contraction with one random
vector per (axis, length); sketches are linear, so a concatenation across ranks or a sum over ranks has
the sketch of its pieces' sketches. ``Search.located`` is the first spec operator (in graph order) whose
inputs all have an impl counterpart by sketch but one of whose float results has none: where the
values first part, by value only (the proof of a location is the per-operator engine's, at sizes it
can decide).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from certificates import terms
from certificates.dtypes import DtypeError
from certificates.errors import Unsupported
from certificates.graph import Graph, Node, fit
from certificates.limits import Limits
from certificates.ops import ShapeError
from certificates.refinement import _uses

from .direct import ATOL, ROUNDING, SCALES, Result, _short, differing
from .verdict import Counterexample

MATCH = 1e-7   # sketches agree within this fraction of the sketch of the absolute values
FAN_IN = "fan-in"   # the first draw: floats of two or more axes scaled by 1 / sqrt(their last axis), as weights
# are initialized, so that a deep model's activations stay near 1: uniform magnitudes overflow it (SiLU's
# exp(-x), softmax's exp) or shrink its later terms below the tolerance; then the magnitudes of ``SCALES``
DRAWS = (FAN_IN, *SCALES)


@dataclass
class Search:
    """What ``search`` found: the counterexample (or None), the draws run, and by value the first spec
    operator whose result no impl tensor carries (with the spec tensors that had no counterpart)."""

    counterexample: Counterexample | None
    draws: int
    located: Node | None = None
    unmatched: list[str] = field(default_factory=list)


def _magnitude(scale: float | str, shape: tuple) -> float:
    return (1 / np.sqrt(shape[-1]) if len(shape) > 1 and shape[-1] else 1.0) if scale == FAN_IN else scale


def draw(r: Result, seed: int, scale: float | str) -> tuple[dict, dict]:
    """Spec and impl input arrays satisfying the input relation: impl inputs at random (floats uniform in
    their range times ``scale``, or with ``FAN_IN`` times 1 / sqrt(the input's last axis) where it has two or
    more, integers in their range), spec inputs from their first relation, impl elements of the other
    relations set from them. Raises ``Unsupported`` for a relation that is not a move."""
    rng = np.random.default_rng(seed)
    impl: dict[str, np.ndarray] = {}
    for n in r.impl.inputs:
        t = r.impl.tensors[n]
        lo, hi = t.range or ((0, 2) if t.is_int else (-1.0, 1.0))
        v = rng.integers(lo, hi, size=t.shape) if t.is_int else \
            rng.uniform(lo, hi, size=t.shape) * _magnitude(scale, t.shape)
        impl[n] = fit(v.astype(bool) if t.dtype == "bool" else v, t.dtype, False)
    sizes = {n: impl[n].size for n in r.impl.inputs}
    offset = dict(zip(sizes, itertools.accumulate(sizes.values(), initial=0)))
    starts, names = np.array(list(offset.values())), list(offset)

    def ids(n: str) -> np.ndarray:   # each impl input element by its global number
        return (offset[n] + np.arange(sizes[n])).reshape(r.impl.tensors[n].shape)
    taken = np.zeros(sum(sizes.values()), dtype=bool)
    spec: dict[str, np.ndarray] = {}
    for name in r.spec.inputs:
        first, *rest = r.inputs[name]
        for k, t in enumerate([first, *rest]):
            c, u = terms.factor(t)
            if _uses(u, ("sum", "mean", "scale", "pad")):
                raise Unsupported(f"input relation of '{name}': {t} is not a move of impl inputs")
            ix = np.asarray(terms.evaluate(u, ids)).ravel()
            if k == 0:
                spec[name] = np.asarray(terms.evaluate(first, impl.__getitem__))
            elif not _distinct(ix) or taken[ix].any():
                raise Unsupported(f"input relation of '{name}': {t} binds an impl element twice")
            else:
                val = np.asarray(spec[name] / float(c) if c != 1 else spec[name]).ravel()
                which = np.searchsorted(starts, ix, side="right") - 1
                for j in np.unique(which):
                    sel = which == j
                    impl[names[j]].reshape(-1)[ix[sel] - offset[names[j]]] = val[sel]
            taken[ix] = True
    for name in r.spec.inputs:   # what the checker's instantiate guarantees, checked on the arrays
        for t in r.inputs[name]:
            if not np.array_equal(np.asarray(terms.evaluate(t, impl.__getitem__)), spec[name]):
                raise Unsupported(f"input relation of '{name}': {t} cannot be satisfied by drawing")
    return spec, impl


def _distinct(ix: np.ndarray) -> bool:
    """Whether no element number repeats (increasing, as copies and slices give, is decided without sorting)."""
    return ix.size < 2 or bool((ix[1:] > ix[:-1]).all()) or len(np.unique(ix)) == ix.size


def run(g: Graph, env: dict, seen, limits: Limits) -> dict[str, np.ndarray]:
    """Evaluate ``g`` numerically (as ``certificates.graph.evaluate``) on ``env``, which it consumes: each
    tensor, inputs included, is dropped after its last reader; ``seen(name, value)`` is told every tensor.
    Returns the outputs."""
    last = {x: k for k, n in enumerate(g.nodes) for x in n.inputs if x is not None}
    vals, keep = env, set(g.outputs)
    for name, v in env.items():
        seen(name, v)
    for k, node in enumerate(g.nodes):
        limits.tick()
        xs = [vals[t] if t is not None else None for t in node.inputs]
        while xs and xs[-1] is None:
            xs.pop()
        try:
            outs = node.op.run(xs, node.full_attrs(False))
        except (ShapeError, ZeroDivisionError, DtypeError) as e:
            raise Unsupported(f"{g.name}: node '{node.name}' ({node.target}): {e}") from None
        for t, v in zip(node.outputs, outs):
            vals[t] = fit(np.asarray(v), g.tensors[t].dtype, False)
            seen(t, vals[t])
        for t in set(node.inputs) - keep:
            if t is not None and last.get(t) == k:
                del vals[t]
    return {o: vals[o] for o in g.outputs}


class Sketches:
    """One random vector per (axis, length), shared by both graphs; a tensor's sketch contracts each axis with
    its vector (axis ``d`` of rank ``r``'s piece with rank ``r``'s slice of the whole axis' vector)."""

    def __init__(self, seed: int) -> None:
        self.rng, self.vecs = np.random.default_rng(seed), {}

    def vec(self, axis: int, n: int) -> np.ndarray:
        if (axis, n) not in self.vecs:
            self.vecs[axis, n] = self.rng.standard_normal(n)
        return self.vecs[axis, n]

    def of(self, v: np.ndarray, piece: tuple[int, int, int] | None = None, absolute: bool = False) -> float:
        """``piece``: (axis, rank, ranks): ``v`` is that rank's equal part of a concatenation along axis."""
        x = np.abs(v) if absolute else v.astype(float, copy=False)
        for axis in reversed(range(v.ndim)):
            n = v.shape[axis]
            w = self.vec(axis, n * piece[2])[piece[1] * n:(piece[1] + 1) * n] \
                if piece and piece[0] == axis else self.vec(axis, n)
            x = np.tensordot(x, np.abs(w) if absolute else w, axes=([axis], [0]))
        return float(x)

    def pieces(self, v: np.ndarray, rank: int, ranks: int) -> tuple[float, list[float], list[float]]:
        """``of(v)`` and, per axis, ``of(v, (axis, rank, ranks))``, in two passes over ``v`` instead of one per
        axis: the contractions of the trailing axes (``tail[k]``: axes k.. contracted) are shared, and each axis'
        sketch contracts the leading axes of ``tail[axis + 1]`` before its own. Third, per axis of even length,
        the sketch of ``v``'s halves as pieces of the ranks' first halves, then their second halves (a fused
        ``[gate; up]`` projection sharded by rows: ``candidates._halves``)."""
        x, nd = v.astype(float, copy=False), v.ndim
        tail = [x] * (nd + 1)
        for k in reversed(range(nd)):
            tail[k] = np.tensordot(tail[k + 1], self.vec(k, v.shape[k]), axes=([k], [0]))
        cats, halves = [], []
        for a in range(nd):
            y = tail[a + 1]
            for k in range(a):   # each time axis k is y's first
                y = np.tensordot(self.vec(k, v.shape[k]), y, axes=([0], [0]))
            n, w, h = v.shape[a], self.vec(a, v.shape[a] * ranks), v.shape[a] // 2
            cats.append(float(np.dot(y, w[rank * n:(rank + 1) * n])))
            halves.append(float(np.dot(y[:h], w[rank * h:(rank + 1) * h]) + np.dot(
                y[h:], w[ranks * h + rank * h:ranks * h + (rank + 1) * h])) if n % 2 == 0 else None)
        return float(tail[0]), cats, halves


def _bounds(v: np.ndarray) -> float:
    """The largest magnitude in ``v`` (not finite where any element is not), without an absolute-value copy."""
    return max(float(v.max()), -float(v.min()))


def _stem(name: str) -> tuple[str, int]:
    stem, _, rank = name.rpartition("@r")
    return (stem, int(rank)) if stem and rank.isdigit() else (name, -1)


def search(r: Result, seed: int, limits: Limits, tries: int = 1) -> Search:
    """Draws ``seed``, ..., ``seed + tries - 1`` at each magnitude of ``DRAWS`` until an expected output
    differs; on that draw, the spec operator where the values first part. Only the first draw and a refuting
    one are sketched (a later refuting draw is run again, the same arrays, with its sketches: sketching costs
    about as much as the run); with no counterexample, ``unmatched`` is the first draw's."""
    runs = list(itertools.product(range(seed, seed + tries), DRAWS))
    first: tuple[dict, dict] = ({}, {})
    for n, (s, scale) in enumerate(runs, 1):
        cx, spec_sk, impl_sk = _one(r, s, scale, limits, sketch=n == 1)
        if n == 1:
            first = spec_sk, impl_sk
        elif cx is not None:
            cx, spec_sk, impl_sk = _one(r, s, scale, limits, sketch=True)
        if cx is not None:
            located, unmatched = _locate(r, spec_sk, impl_sk, r.impl.world_size)
            return Search(cx, n, located, unmatched)
    return Search(None, len(runs), None, _locate(r, *first, r.impl.world_size)[1])


def _one(r: Result, seed: int, scale: float | str, limits: Limits,
         sketch: bool = True) -> tuple[Counterexample | None, dict, dict]:
    """One draw: its counterexample if any and, if ``sketch``, the spec tensors' sketches (with their absolute
    values' sketches) and the impl's by ``(stem, shape, ("rank", r))`` and, summed over ranks,
    ``(stem, shape, ("cat", axis))`` and ``(stem, shape, ("halves", axis))`` (else both empty)."""
    spec_env, impl_env = draw(r, seed, scale)
    sk, world, top = Sketches(seed), r.impl.world_size, [0.0]
    spec_sk: dict[str, tuple[float, float]] = {}
    impl_sk: dict[tuple, float] = {}

    def on_spec(name: str, v: np.ndarray) -> None:
        if v.dtype.kind == "f" and v.size and np.isfinite(m := _bounds(v)):
            top[0] = max(top[0], m)
            if sketch:
                spec_sk[name] = (sk.of(v), sk.of(v, absolute=True))

    def on_impl(name: str, v: np.ndarray) -> None:
        stem, rank = _stem(name)
        if v.dtype.kind != "f" or not v.size or rank < 0 or not np.isfinite(m := _bounds(v)):
            return
        top[0] = max(top[0], m)
        if not sketch:
            return
        whole, cats, halves = sk.pieces(v, rank, world)
        impl_sk[stem, v.shape, ("rank", rank)] = whole
        for kind, parts in (("cat", cats), ("halves", halves)):
            for axis, c in enumerate(parts):
                if c is not None:
                    key = (stem, v.shape, (kind, axis))
                    impl_sk[key] = impl_sk.get(key, 0.0) + c
    shown = {n: _short(spec_env[n]) for n in r.spec.inputs}   # the inputs as the report shows them
    spec_out = run(r.spec, spec_env, on_spec, limits)
    impl_out = run(r.impl, impl_env, on_impl, limits)
    return _differs(r, spec_out, impl_out, shown, seed, scale, top[0]), spec_sk, impl_sk


def _differs(r: Result, spec_out: dict, impl_out: dict, shown: dict, seed: int, scale: float | str,
             top: float) -> Counterexample | None:
    fan_in = scale == FAN_IN
    hit = differing(r, spec_out, impl_out, (1.0 if fan_in else scale) * ATOL + ROUNDING * top)
    return (FanInCounterexample if fan_in else Counterexample)(seed, shown, *hit, 1.0 if fan_in else scale) \
        if hit else None


class FanInCounterexample(Counterexample):
    """A counterexample of the ``FAN_IN`` draw (its ``scale`` field 1: the output schema's magnitude is a number)."""

    @property
    def _scaled(self) -> str:
        return ", floats of two or more axes scaled by 1/sqrt(their last axis)"


def _locate(r: Result, spec_sk: dict, impl_sk: dict, world: int) -> tuple[Node | None, list[str]]:
    """The first spec node whose inputs (graph inputs too) are carried (or not sketched) and one of whose sketched
    results is not: carried = some impl stem has it as one rank's copy, the sum or mean over ranks, or the concatenation across
    ranks along an axis (of the copies, or of their first halves, then their second halves)."""
    by_shape: dict[tuple, list[float]] = {}
    sums: dict[tuple, float] = {}
    for (stem, shape, (kind, x)), v in impl_sk.items():
        if kind == "rank":
            by_shape.setdefault(shape, []).append(v)
            sums[stem, shape] = sums.get((stem, shape), 0.0) + v
        else:
            whole = shape[:x] + (shape[x] * world,) + shape[x + 1:]
            by_shape.setdefault(whole, []).append(v)
    for (stem, shape), v in sums.items():
        by_shape[shape] += [v, v / world]

    def carried(t: str) -> bool:
        if t not in spec_sk:
            return True   # not sketched (integer, empty or not finite): no evidence either way
        s, bound = spec_sk[t]
        return any(abs(s - v) <= MATCH * bound for v in by_shape.get(r.spec.tensors[t].shape, ()))
    unmatched = [t for n in r.spec.nodes for t in n.outputs if not carried(t)]
    bad = set(unmatched) | {t for t in r.spec.inputs if not carried(t)}   # an input the sketches cannot carry (a
    # merged weight: slices of every rank's, interleaved) is no evidence for the nodes that read it
    for n in r.spec.nodes:
        if bad & set(n.outputs) and not bad & set(n.inputs):
            return n, unmatched
    return None, unmatched
