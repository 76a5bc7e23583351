"""Failure reports: the operator, its input relations, what was tried, the explored impl subgraph."""

from __future__ import annotations

import html

from certificates import terms
from certificates.graph import Graph, Node

from .infer import Failure


def text(f: Failure, impl: Graph) -> str:
    lines = []
    if f.node is not None:
        lines.append(f"first unrelated spec operator: '{f.node.name}' {f.node.target}"
                     f"({', '.join(t or '-' for t in f.node.inputs)}) -> {', '.join(f.node.outputs)}")
    lines.append(f"  {f.message}")
    if f.inputs:
        lines.append("  relations of its inputs:")
        lines += [f"    {t} = {e}" for t, es in f.inputs.items() for e in es]
    for o, cands in f.tried.items():
        lines.append(f"  candidates for {o}: {'none matched by value' if not cands else ''}")
        lines += [f"    {c}" for c in cands]
    if f.explored:
        lines.append(f"  impl nodes explored ({len(f.explored)}):")
        lines += [f"    {_node(n, impl)}" for n in f.explored[:40]]
        if len(f.explored) > 40:
            lines.append(f"    ... {len(f.explored) - 40} more")
    return "\n".join(lines)


def _node(n: Node, impl: Graph) -> str:
    where = f"group {n.group}" if n.group is not None else f"rank {n.rank}"
    shapes = ", ".join(f"{t}{list(impl.tensors[t].shape)}" for t in n.inputs if t)
    attrs = "".join(f", {k}={v}" for k, v in n.attrs.items())
    return f"{n.name}: {n.target} [{where}] ({shapes}{attrs}) -> {', '.join(n.outputs)}"


def dot(f: Failure, impl: Graph) -> str:
    """Graphviz of the explored subgraph; the failing operator's input tensors are shaded."""
    related = {x for es in f.inputs.values() for e in es for x in _names(e)}
    out = ["digraph explored {", "  rankdir=LR; node [fontname=monospace, fontsize=10];"]
    tensors = set()
    for n in f.explored:
        out.append(f'  "{n.name}" [shape=box, label="{n.name}\\n{n.target}"];')
        for t in n.inputs:
            if t:
                tensors.add(t)
                out.append(f'  "{t}" -> "{n.name}";')
        for t in n.outputs:
            tensors.add(t)
            out.append(f'  "{n.name}" -> "{t}";')
    for t in sorted(tensors):
        style = ", style=filled, fillcolor=lightblue" if t in related else ""
        out.append(f'  "{t}" [shape=ellipse, label="{t}\\n{list(impl.tensors[t].shape)}"{style}];')
    out.append("}")
    return "\n".join(out)


def page(f: Failure, impl: Graph) -> str:
    """A self-contained HTML page with the text report and the DOT source."""
    return ("<!doctype html><meta charset=utf-8><title>pvcert failure report</title>"
            f"<h1>pvcert: refinement failed</h1><pre>{html.escape(text(f, impl))}</pre>"
            f"<h2>Explored impl subgraph (Graphviz)</h2><pre>{html.escape(dot(f, impl))}</pre>")


def _names(expr: str) -> list[str]:
    return terms.refs(terms.parse(expr))
