"""Per-operator refinement: local obligations chained in topological order.

For a spec operator ``v``, the relation ``R`` gives clean expressions for its
inputs and outputs over impl tensors. Its local obligation is: for all values of
the impl tensors that the input expressions name (the *frontier*) satisfying
``R[inputs]``, and for all values of any other leaf, the impl nodes between the
frontier and the output expressions compute ``R[outputs]`` from ``v``'s result.
The checker cuts that impl subgraph itself. By induction over a topological order
(agda/Composition), the chain gives the claim for the whole graphs.

Obligations identical modulo renaming (layer after layer, rank after rank) are
decided once: ``key`` is a canonical text of the obligation with every tensor
renamed by order of first appearance, so equal keys mean the same statement.
"""

from __future__ import annotations

import json
from typing import Iterable

from . import terms
from .graph import Graph, Node
from .limits import Limits
from .refinement import Outcome, Relation, check


def cone(impl: Graph, targets: Iterable[str], frontier: set[str]) -> list[Node]:
    """Impl nodes needed to compute ``targets`` from ``frontier``, in graph order."""
    seen: dict[str, Node] = {}
    stack = [t for t in targets if t not in frontier]
    while stack:
        node = impl.producer.get(stack.pop())
        if node is None or node.name in seen:
            continue
        seen[node.name] = node
        stack.extend(t for t in node.inputs if t is not None and t not in frontier)
    return sorted(seen.values(), key=lambda n: impl.position[n.name])


def subgraph(g: Graph, name: str, nodes: list[Node], outputs: list[str], extra: Iterable[str] = ()) -> Graph:
    """The graph of ``nodes``; every tensor they read but do not produce becomes an input."""
    produced = {t for n in nodes for t in n.outputs}
    used: list[str] = []
    for t in [t for n in nodes for t in n.inputs + n.outputs] + list(extra) + outputs:
        if t is not None and t not in used:
            used.append(t)
    inputs = [t for t in used if t not in produced]
    return Graph(name, g.world_size, {t: g.tensors[t] for t in used}, inputs, list(outputs), nodes,
                 {t: n for n in nodes for t in n.outputs}, {n.name: i for i, n in enumerate(nodes)})


def obligation(spec: Graph, impl: Graph, rel: Relation, node: Node | None,
               outputs: Relation) -> tuple[Graph, Graph, Relation, Relation]:
    """The local graphs and relations of one step (``node`` None: an expectation on ``outputs``)."""
    if node is None:
        ins = list(outputs)
        local_spec = subgraph(spec, "expectation", [], ins, ins)
    else:
        ins = [t for t in dict.fromkeys(node.inputs) if t is not None]
        local_spec = subgraph(spec, node.name, [node], node.outputs)
    rin = {t: list(rel[t]) for t in ins}
    targets = [r for es in outputs.values() for e in es for r in terms.refs(e)]
    while True:
        frontier = {r for es in rin.values() for e in es for r in terms.refs(e)}
        nodes = cone(impl, targets, frontier)
        inside = {t for n in nodes for t in n.outputs} & frontier
        if not inside:
            break
        # A collective in the cone also produces a frontier tensor: that tensor cannot be both
        # free and computed, so the hypotheses naming it are left out (weaker, still sound).
        rin = {t: [e for e in es if not set(terms.refs(e)) & inside] for t, es in rin.items()}
    local_impl = subgraph(impl, f"cone of {local_spec.name}", nodes, targets, frontier)
    return local_spec, local_impl, rin, outputs


def key(local_spec: Graph, local_impl: Graph, rin: Relation, rout: Relation) -> str:
    """Canonical text of an obligation: spec and impl tensors renamed apart, by first appearance."""
    names: dict[tuple[str, str], str] = {}

    def renamer(side: str):
        def ren(t: str | None) -> str | None:
            if t is None:
                return None
            if (side, t) not in names:
                names[(side, t)] = f"{side}{len(names)}"
            return names[(side, t)]
        return ren

    spec_name, impl_name = renamer("s"), renamer("i")

    def nodes(g: Graph, ren) -> list:
        return [[n.target, n.group is not None and [g.tensors[t].rank for t in n.inputs if t],
                 [ren(t) for t in n.inputs], [ren(t) for t in n.outputs],
                 sorted(n.attrs.items())] for n in g.nodes]

    def rel(r: Relation) -> list:
        return [(spec_name(t), [str(terms.rename(e, impl_name)) for e in es]) for t, es in r.items()]

    body = [nodes(local_spec, spec_name), [spec_name(t) for t in local_spec.outputs], sorted(rel(rin)),
            nodes(local_impl, impl_name), rel(rout)]
    shapes = sorted((names[(side, t)], list(g.tensors[t].shape), g.tensors[t].dtype, list(g.tensors[t].range or ()))
                    for side, g in (("s", local_spec), ("i", local_impl)) for t in g.tensors if (side, t) in names)
    return json.dumps([body, shapes], separators=(",", ":"), default=str)


class Chain:
    """Decides local obligations, once per canonical key."""

    def __init__(self, spec: Graph, impl: Graph, limits: Limits) -> None:
        self.spec, self.impl, self.limits = spec, impl, limits
        self.cache: dict[str, list[Outcome]] = {}
        self.reused = 0

    def prove(self, rel: Relation, node: Node | None, outputs: Relation) -> list[Outcome]:
        ls, li, rin, rout = obligation(self.spec, self.impl, rel, node, outputs)
        unusable = [t for t, es in rin.items() if not es]
        if unusable:
            why = f"no relation of input '{unusable[0]}' can be used: each names a tensor the cone recomputes"
            return [Outcome(s, str(e), failure=why) for s, es in rout.items() for e in es]
        k = key(ls, li, rin, rout)
        cached = self.cache.get(k)
        if cached is not None and all(c.holds for c in cached):
            self.reused += 1  # the same statement modulo renaming, under this step's names
            pairs = [(s, str(e)) for s, es in rout.items() for e in es]
            return [Outcome(s, e, c.elements, dict(c.methods)) for (s, e), c in zip(pairs, cached)]
        out = check(ls, li, rin, rout, self.limits, strict=False)
        self.cache[k] = out
        return out
