"""Candidate clean expressions for a spec tensor, found by value.

Both graphs are run once on random inputs that satisfy the input relation. A spec
tensor's candidates are the clean expressions over impl tensors of the explored
region whose values equal it: an impl tensor itself, the concatenation of one
tensor's copies across a group along some dim, their sum, or a slice of one
tensor. Values only *propose*: every candidate is then proved symbolically, so a
coincidence costs a failed proof, never a wrong verdict.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

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

    def find(self, want: np.ndarray, region: set[str], limit: int = 6) -> list[str]:
        """Clean expressions (text) over ``region`` whose value equals ``want``; simplest first."""
        out: list[str] = []
        shape = want.shape
        for t in sorted(region):
            v = self.values.get(t)
            if v is not None and v.shape == shape and same(v, want):
                out.append(t)
        for stem in sorted({base(t)[0] for t in region}):
            copies = self.by_base.get(stem, {})
            for g in self.groups:
                names = [copies.get(r) for r in g]
                if any(n is None or n not in region for n in names):
                    continue
                vals = [self.values[n] for n in names]
                if any(v.shape != vals[0].shape for v in vals):
                    continue
                if vals[0].shape == shape and vals[0].dtype.kind == "f" and same(sum(vals[1:], vals[0]), want):
                    out.append(f"sum({', '.join(names)})")
                for d in range(len(shape)):
                    if vals[0].ndim == len(shape) and vals[0].shape[d] * len(g) == shape[d] and \
                            same(np.concatenate(vals, axis=d), want):
                        out.append(f"concat({', '.join(names)}, dim={d})")
        for t in sorted(region):  # a slice of a larger tensor (e.g. a padded vocabulary)
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
        return out[:limit]
