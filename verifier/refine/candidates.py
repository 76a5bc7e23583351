"""Candidate clean expressions for a spec tensor, found by value.

Both graphs are run once on random inputs that satisfy the input relation. A spec
tensor's candidates are the clean expressions over impl tensors of the explored
region whose values equal it: an impl tensor itself, the concatenation of one
tensor's copies across a group along some dim, their sum, or a slice of one
tensor; failing those, any of these times a rational constant (``scale``: a local mean
against a global one). Values only *propose*: every candidate is then proved symbolically, so a
coincidence costs a failed proof, never a wrong verdict.
"""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

import numpy as np

from certificates import terms
from certificates.graph import Graph

from .copies import Stems


def same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        return bool(np.array_equal(a, b))
    return bool((np.abs(a - b) <= 1e-10 + 1e-7 * np.abs(b)).all())


class Index:
    """Impl tensor values, grouped for candidate search."""

    def __init__(self, impl: Graph, values: dict[str, np.ndarray], groups: list[tuple[int, ...]]) -> None:
        self.impl, self.values = impl, values
        self.groups = [g for g in groups if len(g) > 1]  # rank groups over which copies concatenate or sum
        self.stems = Stems(impl)   # copies across ranks, by structure (never by name)
        self.totals: dict[str, float] = {}
        self.ranks = sorted({t.rank for t in impl.tensors.values()} - {None})

    def find(self, want: np.ndarray, region: set[str], is_int: bool) -> list[terms.Term]:
        """Clean expressions over ``region`` whose value equals ``want``; simplest first.

        Only tensors of the spec tensor's kind (integer or real, by declared dtype) are
        used: the checker rejects relations that mix the two.
        """
        region = {t for t in region if self.impl.tensors[t].is_int == is_int}
        self.aim(want)
        out = self.match(self._bases(region, want.size), want)
        if not out:  # 2-D meshes (DP x TP): copies combined over one group, then over another
            out = self.match(self._nested(region, want.size), want)
        if not out:  # a slice is the last resort: it only covers part of a tensor (padded vocabularies)
            out = self._slices(want, region)
        if not out and not is_int:
            out = self._scaled(region, want)
        return self._simplest(out + self.translates(out, want, region))

    def collapsed(self, exprs: list[terms.Term], want: np.ndarray) -> list[terms.Term]:
        """A (scaled) sum of copies of equal value is also each copy times the count: ``scale(sum(a, b),
        1/2)`` with ``a == b`` (the DP replicas' averaged gradients) gives ``a`` and ``b``, which bind a
        later step's copies one by one (the sum binds only their total)."""
        out = []
        for e in exprs:
            k, u = terms.factor(e)
            if not (isinstance(u, terms.Call) and u.fn == "sum" and len(u.args) > 1):
                continue
            vals = [np.asarray(terms.evaluate(a, self.values.__getitem__)) for a in u.args]
            if not all(same(v, vals[0]) for v in vals[1:]):
                continue
            k *= len(u.args)
            for a in u.args:
                c = a if k == 1 else _call("scale", [a], num=k.numerator, den=k.denominator)
                if same(np.asarray(terms.evaluate(c, self.values.__getitem__), dtype=want.dtype), want):
                    out.append(c)
        return out

    def translates(self, exprs: list[terms.Term], want: np.ndarray, region: set[str] | None = None) -> list[terms.Term]:
        """Each expression's copies on ranks shifted by a constant (every tensor replaced by its copy,
        by stem; within ``region`` if given), where their value is the wanted one: the other DP
        replicas' copies of a TP-sharded tensor (2-D meshes), which a later step or the expectation needs."""
        out = []
        for e in exprs:
            names = terms.refs(e)
            used = {self.impl.tensors[n].rank for n in names}
            if None in used:
                continue
            for d in sorted({b - a for a in used for b in self.ranks} - {0}):
                copies = {n: self.stems.copies(self.stems.of(n)).get(self.impl.tensors[n].rank + d) for n in names}
                if any(c is None or region is not None and c not in region for c in copies.values()):
                    continue
                moved = terms.rename(e, copies.__getitem__)
                if same(np.asarray(terms.evaluate(moved, self.values.__getitem__), dtype=want.dtype), want):
                    out.append(moved)
        return out

    def _scaled(self, region: set[str], want: np.ndarray) -> list[terms.Term]:
        """``scale(e, k)`` for a base ``e`` equal to ``want / k``, ``k`` a small rational read off the
        largest magnitudes (either sign); the checker re-checks ``k`` exactly."""
        top, out = float(np.abs(want).max(initial=0.0)), []
        for t, v in list(self._bases(region, want.size, lambda names: True)):
            for k in _factors(top, v):
                self.aim(want / float(k))
                for e in self.match([(t, v)], want / float(k)):
                    mean = isinstance(e, terms.Call) and e.fn == "sum" and k == Fraction(1, len(e.args))
                    out.append(_call("mean", e.args) if mean else _call("scale", [e], num=k.numerator, den=k.denominator))
        if not out:  # 2-D meshes: copies nested over DP x TP; a factor read off one copy (concat keeps maxima)
            pieces = [self.values[t] for t in sorted(region) if t in self.values and self.values[t].size
                      and want.size % self.values[t].size == 0]
            for k in sorted({k for v in pieces for k in _factors(top, v)}):
                self.aim(want / float(k))
                out += [_call("scale", [e], num=k.numerator, den=k.denominator)
                        for e in self.match(self._nested(region, want.size), want / float(k))]
        self.aim(want)
        return out

    def aim(self, want: np.ndarray) -> None:
        """Remember what ``want`` holds: its grand total and its sorted values."""
        w = np.asarray(want, dtype=float)
        self.want = (float(w.sum()), 1e-9 * w.size + 2e-7 * float(np.abs(w).sum()))
        self.sorted_want = np.sort(want, axis=None)

    def _moved(self, v: np.ndarray) -> bool:
        """Whether ``v`` holds the wanted multiset of values (what any move keeps)."""
        return v.size == self.sorted_want.size and same(np.sort(v, axis=None), self.sorted_want)

    def match(self, bases, want: np.ndarray) -> list[terms.Term]:
        """Each base as is, permuted or reshaped, where its value equals ``want``."""
        out: list[terms.Term] = []
        for t, v in bases:
            if not self._moved(v):
                continue
            if v.shape == want.shape and same(v, want):
                out.append(t)
                continue
            if sorted(v.shape) == sorted(want.shape) and v.ndim <= 5:   # a square one too: its transpose
                for p in itertools.permutations(range(v.ndim)):
                    if tuple(v.shape[i] for i in p) == want.shape and same(np.transpose(v, p), want):
                        out.append(_permute(t, p))
                        break
            if same(v.reshape(want.shape), want):
                inner = t.args[0] if isinstance(t, terms.Call) and t.fn == "reshape" else t
                out.append(_call("reshape", [inner], shape=tuple(want.shape)))
        return out

    def _simplest(self, exprs: list[terms.Term]) -> list[terms.Term]:
        """One expression per placement (which impl element lands where), the shortest first."""
        by_placement: dict[tuple, terms.Term] = {}
        for t in sorted(set(exprs), key=lambda e: (len(str(e)), str(e))):
            by_placement.setdefault(self._placement(t), t)
        return list(by_placement.values())

    def _placement(self, t: terms.Term) -> tuple:
        k, t = terms.factor(t)
        if k != 1:
            return (k,) + self._placement(t)
        if isinstance(t, terms.Ref):
            return (t.name,)
        if all(self.impl.tensors[r].shape == () for r in terms.refs(t)):
            return (str(t),)   # scalars: nothing to place (0-d label arrays do not survive the ops)
        v = np.asarray(terms.evaluate(t, self._labels), dtype=object)
        return v.shape, tuple(x.items if isinstance(x, _Lab) else frozenset() for x in v.ravel())

    @functools.lru_cache(maxsize=None)
    def _labels(self, n: str) -> np.ndarray:
        out = np.empty(self.impl.tensors[n].shape, dtype=object)
        for ix in np.ndindex(*out.shape):
            out[ix] = _Lab(frozenset({(n, ix)}))
        return out

    def total_fits(self, names: list[str]) -> bool:
        """Whether the copies' grand total is the wanted one: moves (concat, permute,
        reshape) and sums keep the total of all elements, so this prunes cheaply."""
        tot = 0.0
        for n in names:
            if n not in self.totals:
                self.totals[n] = float(np.asarray(self.values[n], dtype=float).sum())
            tot += self.totals[n]
        return abs(tot - self.want[0]) <= self.want[1]

    def _bases(self, region: set[str], numel: int, fits=None):
        """(expression, value) pairs with ``numel`` elements: tensors, and copies concatenated or
        summed, whose grand total ``fits`` (default: the wanted one)."""
        fits = fits or self.total_fits
        for t in sorted(region):
            v = self.values.get(t)
            if v is not None and v.size == numel and fits([t]):
                yield terms.Ref(t), v
        for stem in sorted({self.stems.loose[t] for t in region}):
            for names in (names for g in self.groups for names in self.stems.alike(g, stem, region)):
                if not fits(names):
                    continue
                vals = [self.values[n] for n in names]
                if any(v.ndim != vals[0].ndim for v in vals) or sum(v.size for v in vals) < numel:
                    continue
                refs = [terms.Ref(n) for n in names]
                if all(v.shape == vals[0].shape for v in vals) and vals[0].size == numel and \
                        vals[0].dtype.kind == "f":
                    yield _call("sum", refs), sum(vals[1:], vals[0])
                if sum(v.size for v in vals) == numel:  # shards may be uneven along the concat dim
                    for d in range(vals[0].ndim):
                        if all(v.shape[:d] + v.shape[d + 1:] == vals[0].shape[:d] + vals[0].shape[d + 1:]
                               for v in vals):
                            yield _call("concat", refs, dim=d), np.concatenate(vals, axis=d)
                            if all(v.shape == vals[0].shape for v in vals) and vals[0].shape[d] % 2 == 0:
                                yield _halves(refs, vals, d)

    def _nested(self, region: set[str], numel: int):
        """Copies combined over an inner group ``B`` and its translates ``B + (a - a0)``,
        then over an outer group ``A`` meeting ``B`` in its first rank only."""
        groups, done = set(self.groups), set()
        exact = sorted({s for s in map(self.stems.of, region) if s is not None})
        loose = sorted({self.stems.loose[t] for t in region})
        for outer, inner in itertools.permutations(self.groups, 2):
            if outer[0] != inner[0] or set(outer) & set(inner) != {outer[0]}:
                continue
            rows = [tuple(b - inner[0] + a for b in inner) for a in outer]
            if any(r not in groups for r in rows):
                continue
            mesh = tuple(r for row in rows for r in row)
            # copies by exact stem, then each alike choice by loose stem (a rank's micro-batches share
            # loose stems, and rank-dependent attributes, a sharded rotary table's offsets, split exact ones)
            flats = [[self.stems.copies(stem).get(r) for r in mesh] for stem in exact]
            flats += [c for stem in loose for c in self.stems.alike(mesh, stem, region)]
            for flat in flats:
                if any(n is None or n not in region for n in flat) or (mesh, *flat) in done or \
                        not self.total_fits(flat):
                    continue
                done.add((mesh, *flat))
                names = [flat[i * len(inner):(i + 1) * len(inner)] for i in range(len(outer))]
                vals = [[self.values[n] for n in row] for row in names]
                if len({v.shape for row in vals for v in row}) != 1 or \
                        vals[0][0].size * len(outer) * len(inner) < numel:
                    continue
                refs = [[terms.Ref(n) for n in row] for row in names]
                for inner_kind in ("sum", "concat"):
                    if vals[0][0].dtype.kind != "f" and inner_kind == "sum":
                        continue
                    rows = [sum(r[1:], r[0]) for r in vals] if inner_kind == "sum" else None
                    kinds = {"sum", "concat"}   # prune by the multiset of values where it is known
                    if inner_kind == "concat" and not self._moved(np.concatenate([v.ravel() for r in vals for v in r])):
                        kinds.discard("concat")
                    if inner_kind == "sum" and not self._moved(np.concatenate([x.ravel() for x in rows])):
                        kinds.discard("concat")
                    if inner_kind == "sum" and not self._moved(sum(rows[1:], rows[0])):
                        kinds.discard("sum")
                    if kinds:
                        for inner_t, inner_v in _combos(refs, vals, inner_kind):
                            yield from _combos([[x] for x in inner_t], [[x] for x in inner_v], "outer", kinds)

    def _slices(self, want: np.ndarray, region: set[str]) -> list[terms.Term]:
        """A slice of a larger tensor along one dim (e.g. a padded vocabulary)."""
        out, shape = [], want.shape
        for t in sorted(region):
            v = self.values.get(t)
            if v is None or v.ndim != len(shape) or v.shape == shape:
                continue
            diff = [d for d in range(len(shape)) if v.shape[d] != shape[d]]
            if len(diff) == 1 and v.shape[diff[0]] > shape[diff[0]]:
                d = diff[0]
                for lo in range(v.shape[d] - shape[d] + 1):
                    if same(np.take(v, range(lo, lo + shape[d]), axis=d), want):
                        out.append(_call("slice", [terms.Ref(t)], dim=d, start=lo, end=lo + shape[d]))
                        break
        return out


class _Lab:
    """The impl elements one element of an expression is made of (sums join them)."""

    __slots__ = ("items",)

    def __init__(self, items: frozenset) -> None:
        self.items = items

    def __add__(self, o):
        return _Lab(self.items | o.items) if isinstance(o, _Lab) else self

    __radd__ = __add__


def _factors(top: float, v: np.ndarray) -> set[Fraction]:
    """Small rationals ``k`` (either sign, not 0 or 1) with ``|k| max|v| = top`` (a NaN or inf run gives none)."""
    big = float(np.abs(np.asarray(v, dtype=float)).max(initial=0.0))
    if not (big and top and np.isfinite(top / big)):
        return set()
    ks = {Fraction(sign * top / big).limit_denominator(1 << 12) for sign in (1, -1)}
    return {k for k in ks if k not in (0, 1) and abs(abs(float(k)) * big - top) <= 1e-9 * top}


def _permute(t: terms.Term, p) -> terms.Term:
    """``permute(t, p)``, composed with ``t``'s own permute (chains stay one deep)."""
    if isinstance(t, terms.Call) and t.fn == "permute":
        q = dict(t.kw)["dims"]
        return _call("permute", [t.args[0]], dims=tuple(q[i] for i in p))
    return _call("permute", [t], dims=tuple(p))


def _halves(refs: list, vals: list, d: int) -> tuple[terms.Term, np.ndarray]:
    """The first halves of the copies along ``d``, then their second halves: ``[gate; up]`` from the ranks'
    ``[gate_r; up_r]`` (a fused SwiGLU projection sharded by column-parallel rows)."""
    h = vals[0].shape[d] // 2
    parts = [(lo, lo + h) for lo in (0, h)]
    return (_call("concat", [_call("slice", [r], dim=d, start=a, end=b) for a, b in parts for r in refs], dim=d),
            np.concatenate([np.take(v, range(a, b), axis=d) for a, b in parts for v in vals], axis=d))


def _call(fn: str, args: list, **kw) -> terms.Call:
    """A clean-expression node with its keys in the printer's order."""
    return terms.Call(fn, tuple(args), tuple(kw.items()))


def _combos(refs: list[list], vals: list[list], kind: str, outer_kinds=("sum", "concat")):
    """Each row's copies summed (``kind`` "sum") or concatenated along one dim, the same for
    every row ("concat"): yields (row terms, row values). With ``kind`` "outer", the rows'
    single items combined by ``outer_kinds`` into one (term, value)."""
    if kind == "outer":
        items, vs = [r[0] for r in refs], [v[0] for v in vals]
        if vs[0].dtype.kind == "f" and "sum" in outer_kinds:
            yield _call("sum", items), sum(vs[1:], vs[0])
        if "concat" in outer_kinds:
            for d in range(vs[0].ndim):
                if all(v.shape[:d] + v.shape[d + 1:] == vs[0].shape[:d] + vs[0].shape[d + 1:] for v in vs):
                    yield _call("concat", items, dim=d), np.concatenate(vs, axis=d)
    elif kind == "sum":
        yield [_call("sum", r) for r in refs], [sum(v[1:], v[0]) for v in vals]
    else:
        for d in range(vals[0][0].ndim):
            yield [_call("concat", r, dim=d) for r in refs], [np.concatenate(v, axis=d) for v in vals]
