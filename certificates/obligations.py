"""Local obligations of per-operator refinement (refinement, staged and template claims): the impl cone from
the frontier, decided once per ``key`` (docs/refinement.md, "Local obligations"; agda/Composition)."""

import dataclasses
import json
from collections import Counter
from typing import Any, Iterable

from . import terms
from .dtypes import bounds
from .graph import Graph, Node, _fail_if, parse_graph
from .ops import MOVES
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
    used = list(dict.fromkeys(t for t in [t for n in nodes for t in n.inputs + n.outputs] + list(extra) + outputs
                              if t is not None))
    inputs = [t for t in used if t not in produced]
    return Graph(name, g.world_size, {t: g.tensors[t] for t in used}, inputs, list(outputs), nodes,
                 {t: n for n in nodes for t in n.outputs}, {n.name: i for i, n in enumerate(nodes)})


def integer_ranges(g: Graph) -> dict[str, tuple[int, int]]:
    """Sound value intervals ``[lo, hi)`` of integer tensors made from the declared input ranges by
    moves and shifts; a tensor made by any other op gets none (a step that enumerates it fails)."""
    rng = {t: g.tensors[t].range for t in g.inputs if g.tensors[t].range}
    rng.update({t: (0, 2) for t in g.tensors if g.tensors[t].dtype == "bool"})
    for n in g.nodes:
        ins = [rng.get(t) for t in n.inputs if t is not None]
        name = n.target.split(".")[1] if "." in n.target else n.target
        out = None
        if name in MOVES and ins and all(ins):
            out = (min(r[0] for r in ins), max(r[1] for r in ins))
        elif name in ("add", "sub") and len(ins) == 1 and ins[0] and isinstance(n.attrs.get("other"), int) \
                and n.attrs.get("alpha", 1) == 1:
            c = n.attrs["other"] if name == "add" else -n.attrs["other"]
            out = (ins[0][0] + c, ins[0][1] + c)
        elif name == "masked_fill" and ins and ins[0] and isinstance(n.attrs.get("value"), int):
            v = n.attrs["value"]
            out = (min(ins[0][0], v), max(ins[0][1], v + 1))
        elif name == "where" and len(ins) == 3 and ins[1] and ins[2]:
            out = (min(ins[1][0], ins[2][0]), max(ins[1][1], ins[2][1]))
        for t in n.outputs:
            if out and g.tensors[t].is_int and t not in rng:
                lo, hi = bounds(g.tensors[t].dtype)  # beyond the dtype, values wrap: any of them
                rng[t] = out if lo <= out[0] and out[1] <= hi + 1 else (lo, hi + 1)
    return rng


def obligation(spec: Graph, impl: Graph, rel: Relation, node: Node | None, outputs: Relation,
               ranges: dict[str, tuple[int, int]] | None = None) -> tuple[Graph, Graph, Relation, Relation]:
    """The local graphs and relations of one step (``node`` None: an expectation on ``outputs``);
    integer inputs of the cone without a declared range get their interval from ``ranges``."""
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
    for t in local_impl.inputs:
        tensor = local_impl.tensors[t]
        if tensor.is_int and tensor.range is None and ranges and t in ranges:
            local_impl.tensors[t] = dataclasses.replace(tensor, range=ranges[t])
    return local_spec, local_impl, rin, outputs


def key(local_spec: Graph, local_impl: Graph, rin: Relation, rout: Relation) -> str:
    """Canonical text of an obligation: spec and impl tensors renamed apart, by first appearance."""
    names: dict[tuple[str, str], str] = {}

    def renamer(side: str):
        return lambda t: None if t is None else names.setdefault((side, t), f"{side}{len(names)}")

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


def orders(rin: Relation):
    """``rin``, then ``rin`` with each other equation of each input first (see ``Chain``)."""
    yield rin
    for t, es in rin.items():
        for i in range(1, len(es)):
            yield {**rin, t: [es[i]] + es[:i] + es[i + 1:]}


def decide(ls: Graph, li: Graph, rin: Relation, rout: Relation, limits: Limits,
           check_one=None) -> list[Outcome]:
    """One local obligation, holding if it holds under any order of its hypotheses
    (``check_one(ls, li, hyp, rout)`` decides one order; default: ``refinement.check``)."""
    first = None
    for hyp in orders(rin):
        out = check_one(ls, li, hyp, rout) if check_one else check(ls, li, hyp, rout, limits, strict=False)
        if all(o.holds for o in out):
            return out
        first = first or out
    return first


def summary(outcomes: list) -> str:
    methods = sum((Counter(o.methods) for o in outcomes), Counter())
    total = sum(o.elements for o in outcomes)
    return f"{total} elements ({', '.join(f'{k} by {m}' for m, k in sorted(methods.items()))})"


def graph_value(arts: dict, aid: Any, where: str) -> tuple[Any, str]:
    """The JSON value of graph artifact ``aid`` and where it was read from."""
    _fail_if(aid not in arts, where, f"names artifact {aid!r}, which the subject does not list")
    kind, value, awhere = arts[aid]
    _fail_if(kind != "graph", where, f"artifact '{aid}' is a {kind!r}, not a graph")
    return value, awhere


def graph_artifact(arts: dict, aid: Any, where: str, limits: Limits) -> Graph:
    """The graph artifact ``aid``, validated."""
    return parse_graph(*graph_value(arts, aid, where), limits)
