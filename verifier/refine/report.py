"""Failure reports: the operator, its location, its input relations, what was tried, the explored
impl subgraph (text and Graphviz DOT; verifier/report_html.py renders the HTML page)."""

from __future__ import annotations

import os

from certificates import terms
from certificates.graph import Graph, Node

from .infer import Failure


def text(f: Failure, impl: Graph) -> str:
    lines = []
    if f.node is not None:
        lines.append(f"first unrelated spec operator: '{f.node.name}' {f.node.target}"
                     f"({', '.join(t or '-' for t in f.node.inputs)}) -> {', '.join(f.node.outputs)}")
        if f.node.source:
            lines.append(f"  at {where(f.node)}")
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


def location(n: Node) -> str:
    """``layers.0.self_attn.o_proj (model.py:57)``: the module path and file:line captured, or ''."""
    src = n.source or {}
    line = f"{os.path.basename(src['file'])}:{src.get('line', '?')}" if "file" in src else ""
    return " ".join(x for x in (src.get("module", ""), f"({line})" if line else "") if x)


def where(n: Node) -> str:
    """An operator as users read it: ``layers.0.mlp.fc2 (model.py:57) aten.mm.default``."""
    return " ".join(x for x in (location(n), n.target) if x)


def _node(n: Node, impl: Graph) -> str:
    place = f"group {n.group}" if n.group is not None else f"rank {n.rank}"
    shapes = ", ".join(f"{t}{list(impl.tensors[t].shape)}" for t in n.inputs if t)
    attrs = "".join(f", {k}={v}" for k, v in n.attrs.items())
    at = f" at {location(n)}" if n.source else ""
    return f"{n.name}: {n.target} [{place}] ({shapes}{attrs}) -> {', '.join(n.outputs)}{at}"


def dot(f: Failure, impl: Graph) -> str:
    """Graphviz of the explored subgraph; the failing operator's input tensors are shaded."""
    related = {x for es in f.inputs.values() for e in es for x in _names(e)}
    return graph_dot("explored", impl, f.explored, shaded=related)


def graph_dot(title: str, g: Graph, nodes: list[Node], shaded: frozenset[str] | set[str] = frozenset(),
              focus: Node | None = None) -> str:
    """DOT of ``nodes`` of ``g`` and their tensors; ``focus`` is outlined in red.

    Operators and tensors have separate id spaces (``op:<name>``, ``t:<name>``): a captured
    node is named after its first output, so shared ids would merge the two."""
    out = [f"digraph {title} {{", "  rankdir=LR; node [fontname=monospace, fontsize=10];"]
    tensors: set[str] = set()
    for n in nodes:
        label = quote(*(x for x in (location(n), n.target, n.name) if x))
        style = ', style=filled, fillcolor="#ffd6d2", color="#b3261e", penwidth=2' if n is focus else ""
        out.append(f"  {dot_id('op', n.name)} [shape=box, label={label}{style}];")
        for t in n.inputs:
            if t:
                tensors.add(t)
                out.append(f"  {dot_id('t', t)} -> {dot_id('op', n.name)};")
        for t in n.outputs:
            tensors.add(t)
            out.append(f"  {dot_id('op', n.name)} -> {dot_id('t', t)};")
    for t in sorted(tensors):
        style = ", style=filled, fillcolor=lightblue" if t in shaded else ""
        out.append(f"  {dot_id('t', t)} [shape=ellipse, label={quote(t, str(list(g.tensors[t].shape)))}{style}];")
    out.append("}")
    return "\n".join(out)


def dot_id(kind: str, name: str) -> str:
    """A DOT id for an operator (``op``) or a tensor (``t``) named ``name``."""
    return quote(f"{kind}:{name}")


def quote(*lines: str) -> str:
    """A DOT double-quoted string of ``lines`` (backslashes and quotes escaped)."""
    return '"' + "\\n".join(x.replace("\\", "\\\\").replace('"', '\\"') for x in lines) + '"'


def _names(expr: str) -> list[str]:
    return terms.refs(terms.parse(expr))
