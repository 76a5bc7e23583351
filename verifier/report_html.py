"""``--report-html``: one self-contained HTML page (inline CSS and SVG, no external URL) per verify run.

Every page shows the verdict and the claim (spec and impl with their sha256, the input relation
and the expectations). A failure adds the failing operator with its module path and the user's
source lines, the neighbourhood of the operator in the spec and the impl subgraph the engine
explored (SVG drawn by Graphviz ``dot``, or tables where Graphviz is missing), the executed
counterexample (REFUTED) or what was tried and what would help (UNKNOWN). A success adds what
was proved, the obligations and their reuse, and the time per phase.
"""

from __future__ import annotations

import hashlib
import html
import os
import time
from dataclasses import dataclass, field

from certificates.graph import Graph, Node
from certificates.limits import canonical_bytes

from .refine import report
from .refine.infer import Failure
from .verdict import Verdict

SOURCE_CONTEXT = 4          # lines shown on each side of the failing operator's line
MAX_RELATION_LINES = 12     # per relation, in the claim

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #dde1e8}
.badge{display:inline-block;padding:3px 12px;border-radius:4px;color:#fff;font-weight:600;margin-right:8px}
.VERIFIED{background:#1f7a3d} .REFUTED{background:#b3261e} .UNKNOWN{background:#9a6700}
table{border-collapse:collapse;margin:6px 0} td,th{border:1px solid #dde1e8;padding:3px 8px;text-align:left;
vertical-align:top} th{background:#f3f5f8;font-weight:600}
code,pre{font:12.5px/1.4 ui-monospace,monospace} pre{background:#f6f8fa;padding:10px;overflow-x:auto;margin:6px 0}
.src .hit{background:#ffe8a3;display:block} .where{font-size:16px;margin:6px 0} .note{color:#5a6270}
.svg{overflow-x:auto;border:1px solid #dde1e8;padding:6px;background:#fff} .svg svg{max-width:100%;height:auto}
"""


@dataclass
class Run:
    """What the page shows about one verify run (the CLI fills it in)."""

    verdict: Verdict
    spec: Graph
    impl: Graph
    spec_json: dict
    impl_json: dict
    inputs: dict[str, list[str]]             # the input relation
    expect: dict[str, list[str]]             # the expectations
    failure: Failure | None = None
    proved: dict[str, list[str]] = field(default_factory=dict)   # spec output -> impl expressions
    obligations: tuple[int, int] | None = None                   # (distinct, reused)
    phases: dict[str, float] = field(default_factory=dict)       # phase -> seconds


def page(run: Run) -> str:
    """The report as one HTML document."""
    v = run.verdict
    parts = [f"<!doctype html><html lang=en><meta charset=utf-8><title>pvcert {_e(v.word)} {_e(v.name)}</title>",
             f"<style>{STYLE}</style><body>",
             f"<h1><span class='badge {_e(v.word)}'>{_e(v.word)}</span>{_e(v.name)}</h1>",
             f"<p>{_e(v.reason)}</p>" if v.reason else ""]
    if run.failure is not None and run.failure.node is not None:
        parts.append(_where(run.failure.node))
    if v.evidence:
        parts.append("<h2>Counterexample (executed in both programs)</h2><pre>"
                     + _e("\n".join(x.removeprefix("  ") for x in v.evidence)) + "</pre>")
    if v.help:
        parts.append("<h2>What would help</h2><ul>" + "".join(f"<li>{_e(h)}</li>" for h in v.help) + "</ul>")
    if run.failure is not None:
        parts.append(_failure(run, run.failure))
    if run.proved:
        parts.append(_proved(run))
    if run.phases:
        parts.append("<h2>Time per phase</h2>" + _table(["phase", "seconds"],
                                                      [[k, f"{s:.2f}"] for k, s in run.phases.items()]))
    parts.append(_claim(run))
    parts.append(f"<p class=note>pvcert, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}</p></body></html>")
    return "\n".join(p for p in parts if p)


def _claim(run: Run) -> str:
    rows = [["spec", run.spec.name, f"{len(run.spec.nodes)} ops", _sha(run.spec_json)],
            ["impl", run.impl.name, f"{run.impl.world_size} ranks, {len(run.impl.nodes)} ops", _sha(run.impl_json)]]
    return ("<h2>Claim</h2><p>The implementation refines the specification: given the input relation, every "
            "expected output relation holds (floats are reals).</p>"
            + _table(["", "graph", "size", "sha256 (canonical JSON of the graph)"], rows)
            + _relation("Input relation", run.inputs) + _relation("Expectations", run.expect))


def _relation(title: str, rel: dict[str, list[str]]) -> str:
    lines = [f"{t} = {e}" for t, es in rel.items() for e in es]
    more = len(lines) - MAX_RELATION_LINES
    shown = lines[:MAX_RELATION_LINES] + ([f"... {more} more"] if more > 0 else [])
    return f"<p><b>{title}</b> ({len(lines)})</p><pre>{_e(chr(10).join(shown) or '(none)')}</pre>"


def _where(n: Node) -> str:
    return (f"<h2>Where</h2><p class=where>first spec operator without a relation: <code>{_e(report.where(n))}"
            f"</code> <span class=note>(node '{_e(n.name)}')</span></p>" + _source(n))


def _failure(run: Run, f: Failure) -> str:
    out = [f"<h2>What was tried</h2><p>{_e(f.message)}</p>"]
    if f.node is not None:
        near = [f.node] + _around(run.spec, f.node)
        out.append("<h2>Neighbourhood in the spec</h2>"
                   + _graph(report.graph_dot("neighbourhood", run.spec, near, focus=f.node), near))
    if f.explored:
        out.append(f"<h2>Implementation explored ({len(f.explored)} operators; the failing operator's inputs "
                   "are shaded)</h2>" + _graph(report.dot(f, run.impl), f.explored))
    out.append("<details><summary>Full text report</summary><pre>"
               + _e(report.text(f, run.impl)) + "</pre></details>")
    return "\n".join(out)


def _source(n: Node) -> str:
    """The user's source lines around the operator, when its file can be read."""
    src = n.source or {}
    path, line = src.get("file"), src.get("line")
    if not path or not line or not os.path.isfile(path):
        return "<p class=note>(no source location recorded for this operator)</p>" if not path else \
            f"<p class=note>(source file {_e(path)} not found here)</p>"
    with open(path, errors="replace") as fh:
        text = fh.read().splitlines()
    lo, hi = max(1, line - SOURCE_CONTEXT), min(len(text), line + SOURCE_CONTEXT)
    rows = "".join(f"<span class={'hit' if k == line else 'ln'}>{k:5d}  {_e(text[k - 1])}</span>"
                   + ("" if k == line else "\n") for k in range(lo, hi + 1))
    return f"<p><code>{_e(path)}:{line}</code></p><pre class=src>{rows}</pre>"


def _around(g: Graph, node: Node) -> list[Node]:
    """The producers of the operator's inputs and the users of its outputs (one step each way)."""
    outs = set(node.outputs)
    before = [g.producer[t] for t in node.inputs if t in g.producer]
    after = [n for n in g.nodes if outs & set(t for t in n.inputs if t)]
    return list({n.name: n for n in before + after if n is not node}.values())


def _graph(dot: str, nodes: list[Node]) -> str:
    """Inline SVG of ``dot``; a table of the operators where Graphviz is not installed."""
    svg = svg_of(dot)
    if svg is not None:
        return f"<div class=svg>{svg}</div>"
    rows = [[report.location(n), n.target, n.name, ", ".join(t or "-" for t in n.inputs), ", ".join(n.outputs)]
            for n in nodes]
    return ("<p class=note>Graphviz (<code>dot</code> and the <code>graphviz</code> Python package) is not "
            "installed: the graph is shown as a table.</p>"
            + _table(["location", "operator", "node", "inputs", "outputs"], rows))


def svg_of(dot: str) -> str | None:
    """``dot -Tsvg`` through the ``graphviz`` package, without the XML prologue; None if unavailable."""
    try:
        import graphviz
        svg = graphviz.Source(dot).pipe(format="svg").decode()
    except (ImportError, OSError, RuntimeError):   # ExecutableNotFound is a RuntimeError
        return None
    return svg[svg.index("<svg"):]


def _proved(run: Run) -> str:
    lines = [f"{t} = {' = '.join(es)}" for t, es in run.proved.items()]
    head = "<h2>What was proved</h2>"
    if run.obligations:
        distinct, reused = run.obligations
        head += (f"<p>{len(run.proved)} spec outputs related; {distinct} distinct obligations decided, "
                 f"{reused} reused (the same obligation met again is not re-proved).</p>")
    return head + f"<pre>{_e(chr(10).join(lines))}</pre>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    return ("<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows) + "</table>")


def _sha(obj: dict) -> str:
    return hashlib.sha256(canonical_bytes(obj)).hexdigest()


def _e(s: str) -> str:
    return html.escape(str(s))
