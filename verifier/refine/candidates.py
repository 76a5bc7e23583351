"""Candidate clean expressions for a spec tensor, found by value.

Both graphs are run once on random inputs that satisfy the input relation. A spec
tensor's candidates are the clean expressions over impl tensors of the explored
region whose values equal it: an impl tensor itself, the concatenation of one
tensor's copies across a group along some dim, their sum, or a slice of one
tensor. Values only *propose*: every candidate is then proved symbolically, so a
coincidence costs a failed proof, never a wrong verdict.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

from certificates import terms
from certificates.graph import Graph


def base(name: str) -> tuple[str, int | None]:
    """``'h@r3'`` -> ``('h', 3)``; names without a rank suffix -> ``(name, None)``."""
    stem, sep, rank = name.rpartition("@r")
    return (stem, int(rank)) if sep and rank.isdigit() else (name, None)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        return bool(np.array_equal(a, b))
    return bool(np.allclose(a, b, rtol=1e-7, atol=1e-10))


class Index:
    """Impl tensor values, grouped for candidate search."""

    def __init__(self, impl: Graph, values: dict[str, np.ndarray], groups: list[tuple[int, ...]]) -> None:
        self.impl, self.values = impl, values
        self.groups = groups  # rank groups over which copies concatenate or sum
        self.by_base: dict[str, dict[int, str]] = defaultdict(dict)
        for t in impl.tensors:
            stem, rank = base(t)
            if rank is not None:
                self.by_base[stem][rank] = t

    def find(self, want: np.ndarray, region: set[str]) -> list[str]:
        """Clean expressions (text) over ``region`` whose value equals ``want``; simplest first."""
        out: list[str] = []
        for text, v in self._bases(region, want.size):
            if v.shape == want.shape:
                if same(v, want):
                    out.append(text)
            elif sorted(v.shape) == sorted(want.shape) and v.ndim <= 4:
                for p in itertools.permutations(range(v.ndim)):
                    if tuple(v.shape[i] for i in p) == want.shape and same(np.transpose(v, p), want):
                        out.append(f"permute({text}, dims={list(p)})".replace(" ", "").replace(",", ", "))
                        break
            if v.shape != want.shape and same(v.reshape(want.shape), want):
                out.append(f"reshape({text}, shape={list(want.shape)})".replace(" ", "").replace(",", ", "))
        if not out:  # a slice is the last resort: it only covers part of a tensor (padded vocabularies)
            out = self._slices(want, region)
        return self._simplest(out)

    def _simplest(self, exprs: list[str]) -> list[str]:
        """One expression per placement (which impl element lands where), the shortest first."""
        by_placement: dict[tuple, str] = {}
        for text in sorted(dict.fromkeys(exprs), key=lambda e: (len(e), e)):
            by_placement.setdefault(self._placement(text), text)
        return list(by_placement.values())

    def _placement(self, text: str) -> tuple:
        def leaf(n: str) -> np.ndarray:
            out = np.empty(self.impl.tensors[n].shape, dtype=object)
            for ix in np.ndindex(*out.shape):
                out[ix] = ((n, ix),)
            return out
        v = np.asarray(terms.evaluate(terms.parse(text), leaf), dtype=object)
        return v.shape, tuple(frozenset(x) if isinstance(x, tuple) else frozenset() for x in v.ravel())

    def _bases(self, region: set[str], numel: int):
        """(expression, value) pairs with ``numel`` elements: tensors, and copies concatenated or summed."""
        for t in sorted(region):
            v = self.values.get(t)
            if v is not None and v.size == numel:
                yield t, v
        for stem in sorted({base(t)[0] for t in region}):
            copies = self.by_base.get(stem, {})
            for g in self.groups:
                names = [copies.get(r) for r in g]
                if any(n is None or n not in region for n in names):
                    continue
                vals = [self.values[n] for n in names]
                if any(v.ndim != vals[0].ndim for v in vals) or sum(v.size for v in vals) < numel:
                    continue
                if all(v.shape == vals[0].shape for v in vals) and vals[0].size == numel and \
                        vals[0].dtype.kind == "f":
                    yield f"sum({', '.join(names)})", sum(vals[1:], vals[0])
                if sum(v.size for v in vals) == numel:  # shards may be uneven along the concat dim
                    for d in range(vals[0].ndim):
                        if all(v.shape[:d] + v.shape[d + 1:] == vals[0].shape[:d] + vals[0].shape[d + 1:]
                               for v in vals):
                            yield f"concat({', '.join(names)}, dim={d})", np.concatenate(vals, axis=d)

    def _slices(self, want: np.ndarray, region: set[str]) -> list[str]:
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
                        out.append(f"slice({t}, dim={d}, start={lo}, end={lo + shape[d]})")
                        break
        return out
