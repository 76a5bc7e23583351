"""Input relations and expectations as clean expressions.

For hand-written code: ``shard("w1", dim=0)``, ``replicate("x")``, ``partial("g")`` name
an impl tensor (without rank suffix) and how it lies across ranks; ``exprs(ranks)``
gives the clean-expression strings of the relation (certificates/terms.py):

- ``shard(t, dim)``   -> ``["concat(t@r0, t@r1, ..., dim=d)"]`` (shards in rank order),
- ``replicate(t)``    -> ``["t@r0", "t@r1", ...]`` (every rank holds the whole tensor),
- ``partial(t)``      -> ``["sum(t@r0, t@r1, ...)"]`` (the tensor is the sum over ranks).

For DTensors, ``placements_relation`` reads the placements over a 1-D or 2-D mesh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Rel:
    kind: str                      # shard | replicate | partial | exact
    tensor: str
    dim: int = 0
    ranks: tuple[int, ...] | None = None   # the ranks holding it (default: all)

    def exprs(self, world_or_ranks) -> list[str]:
        ranks = list(self.ranks) if self.ranks is not None else (
            list(range(world_or_ranks)) if isinstance(world_or_ranks, int) else list(world_or_ranks))
        names = [f"{self.tensor}@r{r}" for r in ranks]
        if self.kind == "replicate":
            return names
        if self.kind == "shard":
            return [f"concat({', '.join(names)}, dim={self.dim})" if len(names) > 1 else names[0]]
        if self.kind == "partial":
            return [f"sum({', '.join(names)})" if len(names) > 1 else names[0]]
        if self.kind == "exact":
            return [self.tensor]
        raise ValueError(f"unknown relation kind {self.kind!r}")


def shard(tensor: str, dim: int = 0, ranks: Sequence[int] | None = None) -> Rel:
    return Rel("shard", tensor, dim, tuple(ranks) if ranks is not None else None)


def replicate(tensor: str, ranks: Sequence[int] | None = None) -> Rel:
    return Rel("replicate", tensor, 0, tuple(ranks) if ranks is not None else None)


def partial(tensor: str, ranks: Sequence[int] | None = None) -> Rel:
    return Rel("partial", tensor, 0, tuple(ranks) if ranks is not None else None)


def on(tensor: str, rank: int) -> Rel:
    """The tensor held by one rank: ``t@r<rank>``."""
    return Rel("replicate", tensor, 0, (rank,))


def resolve(rel, world: int) -> list[str]:
    """A relation entry (``Rel``, a list of them, a string, or a list of strings) as strings."""
    if isinstance(rel, Rel):
        return rel.exprs(world)
    if isinstance(rel, str):
        return [rel]
    out: list[str] = []
    for r in rel:
        out.extend(resolve(r, world))
    return out


def placements_relation(tensor: str, placements: Sequence, mesh_ranks) -> list[str]:
    """Clean expressions of a DTensor from its placements over a mesh of global ranks.

    ``mesh_ranks`` is the mesh as nested lists of global ranks (``mesh.mesh.tolist()``).
    ``Shard(d)`` on a mesh dimension concatenates the sub-meshes along ``d`` (in mesh
    order, so shard offsets follow the local shapes); ``Replicate`` lists every copy;
    ``Partial`` sums. Nested mesh dimensions compose (outer mesh dimension first).
    """
    mesh = mesh_ranks if isinstance(mesh_ranks, list) else list(mesh_ranks)

    def build(sub, level) -> list[str]:
        if level == len(placements):
            return [f"{tensor}@r{int(sub)}"]
        p = placements[level]
        parts = [build(s, level + 1) for s in sub]
        kind = type(p).__name__
        if kind == "Replicate":
            return [e for part in parts for e in part]
        first = [part[0] for part in parts]
        if kind == "Shard":
            head = f"concat({', '.join(first)}, dim={p.dim})" if len(first) > 1 else first[0]
        elif kind == "Partial":
            if getattr(p, "reduce_op", "sum") not in ("sum", None):
                raise ValueError(f"Partial({p.reduce_op}) has no clean expression")
            head = f"sum({', '.join(first)})" if len(first) > 1 else first[0]
        else:
            raise ValueError(f"placement {p!r} has no clean expression")
        if any(len(part) > 1 for part in parts):   # replicated inside: more copies of the whole
            n = len(parts[0])
            return [head] + [_combine(kind, [part[i] for part in parts], p) for i in range(1, n)]
        return [head]

    return build(mesh, 0)


def _combine(kind, items, p) -> str:
    if len(items) == 1:
        return items[0]
    return f"concat({', '.join(items)}, dim={p.dim})" if kind == "Shard" else f"sum({', '.join(items)})"
