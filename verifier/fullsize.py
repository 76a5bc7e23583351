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
import math
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from certificates import terms
from certificates.dtypes import DtypeError
from certificates.errors import Unsupported
from certificates.graph import Graph, Node, fit
from certificates.limits import Limits
from certificates.ops import ShapeError
from certificates.refinement import _uses

from .direct import ATOL, ROUNDING, SCALES, Result, _short, difference, excess
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


class Draw:
    """Spec and impl input arrays satisfying the input relation, each made when first asked for (and made again,
    the same, if asked again), so that a run holds only the inputs its live operators read: each impl input from its
    own random stream (floats uniform in its range times ``scale``, or with ``FAN_IN`` times 1 / sqrt(its last axis)
    where it has two or more, integers in their range), each spec input from its first relation, the impl elements
    bound by its other relations (replicas) set from it. Raises ``Unsupported`` for a relation that is not a move,
    or whose elements are bound twice or read by a first relation, or (when made) cannot hold the spec's values."""

    def __init__(self, r: Result, seed: int, scale: float | str) -> None:
        self.r, self.seed, self.scale = r, seed, scale
        self.writes: dict[str, list[tuple[str, slice | np.ndarray, slice | np.ndarray, float]]] = {}
        self.shown: dict[str, str] = {}
        uses = Counter(n for name in r.spec.inputs for t in r.inputs[name] for n in terms.refs(t))
        rest = []
        for name in r.spec.inputs:
            for k, t in enumerate(r.inputs[name]):
                c, u = terms.factor(t)
                if _uses(u, ("sum", "mean", "scale", "pad")):
                    raise Unsupported(f"input relation of '{name}': {t} is not a move of impl inputs")
                if k and isinstance(u, terms.Ref) and uses[u.name] == 1:   # a whole replica no other relation reads
                    self.writes[u.name] = [(name, slice(None), slice(None), float(c))]
                elif k:
                    rest.append((name, t))
        bound = sorted({n for _, t in rest for n in terms.refs(t)}, key=r.impl.inputs.index)
        sizes = [math.prod(r.impl.tensors[n].shape) for n in bound]
        offset = dict(zip(bound, itertools.accumulate(sizes, initial=0)))

        def ids(n: str) -> np.ndarray:   # each bound impl element by its number; -1 elsewhere (a view: no memory)
            shape = r.impl.tensors[n].shape
            return (offset[n] + np.arange(math.prod(shape))).reshape(shape) if n in offset else \
                np.broadcast_to(np.int64(-1), shape)
        taken = np.zeros(sum(sizes), dtype=bool)
        for name in r.spec.inputs:   # elements read by a first relation
            first = r.inputs[name][0]
            if offset.keys() & set(terms.refs(first)):
                ix = np.asarray(terms.evaluate(terms.factor(first)[1], ids)).ravel()
                taken[ix[ix >= 0]] = True
        starts = np.array(list(offset.values()), dtype=np.int64)
        for name, t in rest:
            c, u = terms.factor(t)
            ix = np.asarray(terms.evaluate(u, ids)).ravel()
            if not _distinct(ix) or taken[ix].any():
                raise Unsupported(f"input relation of '{name}': {t} binds an impl element twice")
            taken[ix] = True
            which = np.searchsorted(starts, ix, side="right") - 1
            for j in np.unique(which):
                sel = np.flatnonzero(which == j)
                self.writes.setdefault(bound[j], []).append((name, _span(ix[sel] - starts[j]), _span(sel), float(c)))

    def base(self, n: str) -> np.ndarray:
        """Impl input ``n`` as drawn, before replicas are set."""
        t = self.r.impl.tensors[n]
        rng = np.random.default_rng((self.seed, self.r.impl.inputs.index(n)))
        lo, hi = t.range or ((0, 2) if t.is_int else (-1.0, 1.0))
        if t.is_int:
            v = rng.integers(lo, hi, size=t.shape)
        else:
            v = rng.uniform(lo, hi, size=t.shape)
            v *= _magnitude(self.scale, t.shape)
        return fit(v.astype(bool) if t.dtype == "bool" else v, t.dtype, False)

    def spec(self, name: str) -> np.ndarray:
        v = self._made(self.r.inputs[name][0])
        self.shown.setdefault(name, _short(v))
        return v

    def _made(self, t: terms.Term) -> np.ndarray:
        """``terms.evaluate(t, self.base)``; a concatenation filled part by part (one part's inputs held at once)."""
        if not (isinstance(t, terms.Call) and t.fn == "concat"):
            return np.asarray(terms.evaluate(t, self.base))
        out, at = None, 0
        for a in t.args:
            x = self._made(a)
            if out is None:
                d = dict(t.kw)["dim"] % x.ndim
                out = np.empty(terms.infer_shape(t, lambda n: self.r.impl.tensors[n].shape), dtype=x.dtype)
            if x.dtype != out.dtype:   # parts of several element types: numpy's promotion, all at once
                return np.asarray(terms.evaluate(t, self.base))
            out[(slice(None),) * d + (slice(at, at + x.shape[d]),)] = x
            at += x.shape[d]
        return out

    def impl(self, n: str) -> np.ndarray:
        ws, t = self.writes.get(n, []), self.r.impl.tensors[n]
        if len(ws) == 1 and ws[0][1] == slice(None) and ws[0][3] == 1:   # a whole replica: its spec input's array
            v = self.spec(ws[0][0])                                         # (made anew), where of the same type
            if v.dtype == (bool if t.dtype == "bool" else np.int64 if t.is_int else np.float64):
                return v
        v = self.base(n)
        flat = v.reshape(-1)
        for name, local, src, c in self.writes.get(n, ()):
            want = self.spec(name).reshape(-1)[src]
            flat[local] = want / c if c != 1 else want
            if not np.array_equal(flat[local] * c if c != 1 else flat[local], want):   # as terms.evaluate scales
                raise Unsupported(f"input relation of '{name}': '{n}' cannot hold its values ({self.r.impl.tensors[n].dtype})")
        return v


def draw(r: Result, seed: int, scale: float | str) -> tuple[dict, dict]:
    """Every input of ``Draw`` at once: spec inputs, impl inputs."""
    d = Draw(r, seed, scale)
    return {n: d.spec(n) for n in r.spec.inputs}, {n: d.impl(n) for n in r.impl.inputs}


def _span(ix: np.ndarray) -> slice | np.ndarray:
    """``ix`` (increasing where ``_distinct`` passed it) as a slice where it is a run of consecutive numbers."""
    return slice(int(ix[0]), int(ix[0]) + ix.size) if ix.size and ix[-1] - ix[0] + 1 == ix.size and \
        (ix.size < 2 or bool((ix[1:] > ix[:-1]).all())) else ix


def _distinct(ix: np.ndarray) -> bool:
    """Whether no element number repeats (increasing, as copies and slices give, is decided without sorting)."""
    return ix.size < 2 or bool((ix[1:] > ix[:-1]).all()) or len(np.unique(ix)) == ix.size


def run(g: Graph, source, seen, limits: Limits, hold: bool = True) -> dict[str, np.ndarray]:
    """Evaluate ``g`` numerically (as ``certificates.graph.evaluate``), each input made by ``source(name)`` at its
    first reader (one read by none at the end) and every tensor dropped after its last reader; ``seen(name, value)``
    is told every tensor. Returns the outputs (``hold`` False: outputs are dropped too, once ``seen``; returns {})."""
    last = {x: k for k, n in enumerate(g.nodes) for x in n.inputs if x is not None}
    vals: dict[str, np.ndarray] = {}
    keep = set(g.outputs) if hold else set()

    def value(t: str) -> np.ndarray:
        if t not in vals:   # a graph input, first read here
            vals[t] = source(t)
            seen(t, vals[t])
        return vals[t]
    for k, node in enumerate(g.nodes):
        limits.tick()
        xs = [value(t) if t is not None else None for t in node.inputs]
        while xs and xs[-1] is None:
            xs.pop()
        try:
            outs = node.op.run(xs, node.full_attrs(False))
        except (ShapeError, ZeroDivisionError, DtypeError) as e:
            raise Unsupported(f"{g.name}: node '{node.name}' ({node.target}): {e}") from None
        del xs
        for t, v in zip(node.outputs, outs):
            vals[t] = fit(np.asarray(v), g.tensors[t].dtype, False)
            seen(t, vals[t])
        del outs
        for t in {*node.inputs, *node.outputs} - keep:
            if t is not None and t in vals and last.get(t, -1) <= k:
                del vals[t]
    for t in g.inputs:   # read by no operator: still made and told (the sketches of an input an impl drops are
        if t not in last:   # evidence)
            v = source(t)
            seen(t, v)
            if t in keep:
                vals[t] = v
    return {o: vals[o] for o in g.outputs} if hold else {}


SPILL = 1 << 24   # bytes from which a spec output waits for its comparison in a file, not in memory


class Outputs:
    """The spec's expected outputs as its run makes them (``seen``), each of ``SPILL`` bytes or more written to a
    file in ``folder`` and read back whole when asked for, so that the impl's run does not hold them."""

    def __init__(self, expected: set[str], folder: str) -> None:
        self.expected, self.folder = expected, folder
        self.vals: dict[str, np.ndarray] = {}
        self.files: dict[str, tuple[str, np.dtype, tuple]] = {}

    def seen(self, name: str, v: np.ndarray) -> None:
        if name not in self.expected:
            return
        if v.nbytes < SPILL:
            self.vals[name] = v
            return
        path = os.path.join(self.folder, f"{len(self.files)}.bin")
        np.ascontiguousarray(v).tofile(path)
        self.files[name] = path, v.dtype, v.shape

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self.vals:
            return self.vals[name]
        path, dtype, shape = self.files[name]
        return np.fromfile(path, dtype=dtype).reshape(shape)

    def __delitem__(self, name: str) -> None:
        if self.vals.pop(name, None) is None:
            os.remove(self.files.pop(name)[0])


class Compared:
    """The expected outputs compared as the impl's run makes them, so that the impl's outputs are never all held:
    each expression of ``r.expect`` is evaluated once the impl tensors it names exist and reduced to its ``excess``
    (the spec output, and the tensors no other expression reads, dropped once all their expressions are); an
    expression differs under a slack below its excess. Kept to report: the arrays of the earliest expression in
    ``r.expect`` whose excess is over the slack at the time (the run's largest magnitude so far enters the slack: it
    only grows), or with ``every`` the arrays of every such expression."""

    def __init__(self, r: Result, want: Outputs, atol: float, every: bool = False) -> None:
        self.want, self.atol, self.every = want, atol, every
        self.exprs = [(o, t) for o, ts in r.expect.items() for t in ts]
        self.waiting = {k: set(terms.refs(t)) for k, (_, t) in enumerate(self.exprs)}
        self.readers = Counter(n for refs in self.waiting.values() for n in refs)
        self.left = Counter(o for o, _ in self.exprs)
        self.held: dict[str, np.ndarray] = {}
        self.excess: dict[int, float] = {}
        self.kept: dict[int, np.ndarray] = {}
        for k in [k for k, names in self.waiting.items() if not names]:   # an expression of constants only
            self._compare(k, 0.0)

    def seen(self, name: str, v: np.ndarray, top: float) -> None:
        if name not in self.readers:
            return
        self.held[name] = v
        for k, names in self.waiting.items():
            if name in names:
                names.discard(name)
                if not names:
                    self._compare(k, top)

    def _compare(self, k: int, top: float) -> None:
        o, t = self.exprs[k]
        want = np.asarray(self.want[o], dtype=float)
        got = np.broadcast_to(np.asarray(terms.evaluate(t, self.held.__getitem__), dtype=float), want.shape)
        self.excess[k] = e = excess(want, got)
        if e > TIE * (self.atol + ROUNDING * top) and (self.every or not self.kept or k < min(self.kept)):
            if not self.every:   # one kept: the earliest so far
                for j in list(self.kept):
                    self._release(j)
            self.kept[k] = got
        for n in set(terms.refs(t)):
            self.readers[n] -= 1
            if not self.readers[n]:
                del self.held[n]
        self.left[o] -= 1
        self._release(None)

    def _release(self, j: int | None) -> None:
        """Drop kept expression ``j``, and every spec output no expression needs any more."""
        self.kept.pop(j, None)
        for o in [o for o in self.left if not self.left[o] and not any(self.exprs[i][0] == o for i in self.kept)]:
            del self.want[o], self.left[o]

    def first(self, top: float) -> tuple | None:
        """``direct.differing``'s answer under the run's largest magnitude ``top``, or ``RERUN`` where it lies in an
        expression whose arrays were not kept."""
        slack = self.atol + ROUNDING * top
        for k, (o, t) in enumerate(self.exprs):
            if k in self.kept:
                if hit := difference(np.asarray(self.want[o], dtype=float), self.kept[k], slack):
                    return (o, str(t), *hit)
            elif self.excess[k] > TIE * slack:
                return RERUN
        return None


TIE = 1 - 1e-9   # an excess within rounding of the slack counts as over it
RERUN = ()


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
    d = Draw(r, seed, scale)
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
    fan_in = scale == FAN_IN
    with tempfile.TemporaryDirectory(prefix="pvcert-") as folder:
        for every in (False, True):   # the second time only where the first did not keep the refuting arrays
            want = Outputs(set(r.expect), folder)
            run(r.spec, d.spec, lambda n, v: (on_spec(n, v), want.seen(n, v)), limits, hold=False)
            cmp = Compared(r, want, (1.0 if fan_in else scale) * ATOL, every)
            run(r.impl, d.impl, lambda n, v: (on_impl(n, v), cmp.seen(n, v, top[0])), limits, hold=False)
            if (hit := cmp.first(top[0])) != RERUN:
                break
            top[0], spec_sk, impl_sk = 0.0, {}, {}
    shown = {n: d.shown[n] if n in d.shown else _short(d.spec(n)) for n in r.spec.inputs}   # as the report shows them
    return (FanInCounterexample if fan_in else Counterexample)(seed, shown, *hit, 1.0 if fan_in else scale) \
        if hit else None, spec_sk, impl_sk


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
