"""Copies of one tensor across ranks, found by structure, never by name.

Candidate search combines "the same" tensor of several ranks (``concat`` / ``sum`` over a
group). Which tensors are the same must not depend on names (a renamed rank would lose its
copies) nor on node order: each impl tensor gets a *stem*, a digest of how it is computed.

- ``loose``: an input's rank-local position, role and dtype; a node output's target, output
  index, dtype and the loose stems of its inputs (a collective's output on member ``m``: of
  ``m``'s input). Attributes and shapes are left out, so ranks differing only in rank-dependent
  constants (a vocabulary shard's offsets) or uneven shards still share stems.
- ``exact``: the same with attributes and shapes, used where two tensors of one rank share a
  loose stem. A stem still shared by two tensors of one rank names no copies (``of``).
- ``alike``: every tensor of each rank with a loose stem, for candidate search to try each
  pairing (a rank's forward and backward slices of one table are alike; their values decide).

Stems are digests of content, so their order (and every order derived from it) is name- and
order-independent too.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import defaultdict

from certificates.graph import Graph


def _digest(*parts) -> str:
    return hashlib.blake2b(json.dumps(parts, sort_keys=True, default=str).encode(), digest_size=12).hexdigest()


def _offsets(group: list[int] | None) -> list[int] | None:
    """A group's ranks relative to its first: the translates of a group (one TP group per DP
    replica) are alike, so the copies of a tensor span every replica (2-D meshes)."""
    return [r - group[0] for r in group] if group else None


class Stems:
    """``of(t)``: ``t``'s stem (None: no copies); ``copies(stem)``: rank -> tensor."""

    def __init__(self, impl: Graph) -> None:
        loose: dict[str, str] = {}
        exact: dict[str, str] = {}
        seen: dict[int, int] = defaultdict(int)
        for t in impl.inputs:
            info = impl.tensors[t]
            k = seen[info.rank]
            seen[info.rank] += 1
            loose[t] = _digest("in", k, info.role, info.dtype)
            exact[t] = _digest(loose[t], info.shape, info.range)
        for n in impl.nodes:
            if n.group is not None and not n.op.p2p:   # one output per member, from that member's input
                pairs = [([i], o) for i, o in zip(n.inputs, n.outputs)]
            else:
                pairs = [(n.inputs, o) for o in n.outputs]
            for j, (ins, o) in enumerate(pairs):
                k = 0 if n.group is not None and not n.op.p2p else j
                info = impl.tensors[o]
                loose[o] = _digest(n.target, k, info.dtype, [loose.get(i) for i in ins])
                exact[o] = _digest(n.target, k, info.dtype, info.shape, n.attrs, _offsets(n.group),
                                   [exact.get(i) for i in ins])
        self.exact = exact   # tensor -> its exact stem (``order.canonical`` sorts by it)
        self._of: dict[str, str | None] = {}
        for table in (loose, exact):
            count: dict[tuple[int, str], int] = defaultdict(int)
            for t, s in table.items():
                count[impl.tensors[t].rank, s] += 1
            for t, s in table.items():
                if self._of.get(t) is None:
                    self._of[t] = s if count[impl.tensors[t].rank, s] == 1 else None
        self._copies: dict[str, dict[int, str]] = defaultdict(dict)
        for t, s in self._of.items():
            if s is not None:
                self._copies[s][impl.tensors[t].rank] = t
        self.loose = loose
        self._alike: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
        first_use: dict[str, int] = {}   # alike tensors of a rank: the one read first comes first
        for i, n in enumerate(impl.nodes):
            for t in n.inputs:
                if t is not None:
                    first_use.setdefault(t, i)
        for t in sorted(loose, key=lambda t: (first_use.get(t, len(impl.nodes)), exact[t])):
            self._alike[loose[t]][impl.tensors[t].rank].append(t)

    def of(self, t: str) -> str | None:
        return self._of.get(t)

    def copies(self, stem: str | None) -> dict[int, str]:
        return self._copies.get(stem, {}) if stem is not None else {}

    def alike(self, group: tuple[int, ...], stem: str, among: set[str], limit: int = 16) -> list[list[str]]:
        """Choices (up to ``limit`` of each kind) of one tensor per rank of ``group`` with loose stem
        ``stem`` (within ``among``); first the choice of each rank's first-read one (the forward's, of a
        table read forward and backward), then each rank's ``i``-th for every ``i`` (ranks running one
        program read alike tensors in one order: Adam's zero moments), then the other pairings."""
        ranks = self._alike.get(stem, {})
        options = [[t for t in ranks.get(r, ()) if t in among] for r in group]
        if not all(options):
            return []
        diagonal = [list(c) for c in itertools.islice(zip(*options), limit)]
        return diagonal + [c for c in map(list, itertools.islice(itertools.product(*options), limit))
                           if c not in diagonal]
