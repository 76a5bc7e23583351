"""MoE routing as one captured op, ``torch.ops.pvcert.route`` (no gradient: a choice).

``route(scores [G, T, E], k, capacity, nodes=1, limit=1) -> dispatch [G, T, E, C]``: in
each token group, tokens in order pick their ``k`` highest-scoring experts and take the
next free of that expert's ``capacity`` slots (a full expert drops the token). With
``nodes > 1`` the experts form ``nodes`` equal blocks (one per node) and a token keeps
only the ``limit`` blocks whose best score is highest (node-limited routing, DeepSeek-V3).
Ties go to the lower index. The checker's own definition is certificates/ops_train.py.
"""

from __future__ import annotations

import torch

_lib = torch.library.Library("pvcert", "FRAGMENT")  # noqa: F841 (keeps the definition alive)
_lib.define("route(Tensor scores, int k, int capacity, int nodes=1, int limit=1) -> Tensor")


def _route(scores: torch.Tensor, k: int, capacity: int, nodes: int = 1, limit: int = 1) -> torch.Tensor:
    g_n, t_n, e_n = scores.shape
    block = e_n // nodes
    out = torch.zeros(g_n, t_n, e_n, capacity, dtype=scores.dtype)
    for g in range(g_n):
        load = [0] * e_n
        for t in range(t_n):
            s = scores[g, t].tolist()
            tops = [max(s[b * block:(b + 1) * block]) for b in range(nodes)]
            keep = sorted(range(nodes), key=lambda b: (-tops[b], b))[:limit]
            candidates = [e for e in range(e_n) if e // block in keep]
            for e in sorted(candidates, key=lambda e: (-s[e], e))[:k]:
                if load[e] < capacity:
                    out[g, t, e, load[e]] = 1.0
                    load[e] += 1
    return out


_lib.impl("route", _route, "CompositeExplicitAutograd")
_lib.impl("route", lambda s, k, capacity, nodes=1, limit=1: s.new_empty(tuple(s.shape) + (capacity,)), "Meta")


def route(scores: torch.Tensor, k: int, capacity: int, nodes: int = 1, limit: int = 1) -> torch.Tensor:
    """The dispatch of ``scores`` (taken without gradient)."""
    return torch.ops.pvcert.route(scores.detach(), k, capacity, nodes, limit)
