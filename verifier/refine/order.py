"""A canonical node order for the impl graph, independent of names and of the given order.

The checker numbers an obligation's tensors by first appearance in graph order
(``certificates.obligations.key``), so alike obligations are recognized (and counted) as one
only if their nodes come in alike orders. The engine therefore proves, and certifies, the
impl with its nodes sorted by: depth (longest path from the inputs: a topological order),
rank, target, attributes, output shapes, then the exact structural stem (``copies.py``).
None of these reads a name, and a sorted topological list is kept as it is by the checker's
parser, so replay sees the same order. The artifact is the same graph, nodes listed anew.
"""

from __future__ import annotations

import dataclasses

from certificates.graph import Node
from verifier.ir import remember

from ..direct import Result
from .copies import Stems


def canonical(r: Result) -> Result:
    """``r`` with its impl graph (JSON value and parsed graph) in the canonical node order."""
    impl, stems = r.impl, Stems(r.impl)
    depth: dict[str, int] = {t: 0 for t in impl.inputs}
    key: dict[str, tuple] = {}
    for n in impl.nodes:   # already topological: every input's depth is known
        d = 1 + max((depth[t] for t in n.inputs if t is not None), default=0)
        for t in n.outputs:
            depth[t] = d
        key[n.name] = (d, _rank(n), n.target, repr(sorted(n.attrs.items())),
                       [impl.tensors[t].shape for t in n.outputs], [stems.exact[t] for t in n.outputs])
    nodes = sorted(impl.nodes, key=lambda n: key[n.name])
    if all(a is b for a, b in zip(nodes, impl.nodes)):
        return r
    raw = {n["name"]: n for n in r.case.impl["nodes"]}
    obj = {**r.case.impl, "nodes": [raw[n.name] for n in nodes]}
    graph = dataclasses.replace(impl, nodes=nodes, position={n.name: i for i, n in enumerate(nodes)})
    remember(obj, graph)
    return dataclasses.replace(r, case=dataclasses.replace(r.case, impl=obj), impl=graph)


def _rank(n: Node) -> int:
    return n.rank if n.rank is not None else min(n.group or [0])
