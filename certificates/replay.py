"""Certificate v1: read, check integrity, replay every claim.

Layout (docs/certificates.md, schema/certificate-v1.json)::

    {"format": "pvcert-certificate", "version": 1,
     "header":   {"tool": ..., "tool_version": ..., "created": ...},
     "subject":  {"artifacts": [{"id", "kind": "graph", "sha256", "embedded" | "path"}]},
     "claims":   [{"id", "kind": "refinement", "spec", "impl", "input_relation", "output_relation"}],
     "evidence": {claim id: {"method": "whole-graph", "obligations": [...]}},
     "verdict":  "ACCEPT"}

Nothing in the certificate is trusted: hashes are recomputed, graphs re-validated,
obligations re-derived from graphs and relations and re-decided here.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

from . import FORMAT, VERSION, approx, chain, kernel, refinement
from .errors import CheckError, Malformed, Rejected, Unsupported
from .graph import Graph, parse_graph
from .limits import Limits, canonical_bytes, load_json, read_bytes
from .stages import replay_staged
from .wiring import replay_template


@dataclass
class ClaimResult:
    claim: str
    kind: str
    ok: bool
    detail: str


def _field(obj: Any, key: str, kind, where: str):
    if not isinstance(obj, dict) or key not in obj or not isinstance(obj[key], kind):
        raise Malformed(where, f"missing or mistyped field '{key}'")
    return obj[key]


def load_artifacts(cert: dict, path: str, limits: Limits) -> dict[str, Any]:
    """Artifacts by id, after checking each sha256; raises ``Rejected`` on a mismatch."""
    arts: dict[str, Any] = {}
    for i, a in enumerate(_field(_field(cert, "subject", dict, path), "artifacts", list, path)):
        where = f"{path}: artifact #{i}"
        aid = _field(a, "id", str, where)
        digest = _field(a, "sha256", str, where)
        if aid in arts:
            raise Malformed(where, f"duplicate artifact id '{aid}'")
        if ("embedded" in a) == ("path" in a):
            raise Malformed(where, "needs exactly one of 'embedded' and 'path'")
        if "embedded" in a:
            data, value = canonical_bytes(a["embedded"]), a["embedded"]
        else:
            rel = _field(a, "path", str, where)
            if os.path.isabs(rel) or ".." in rel.split("/"):
                raise Malformed(where, f"artifact path '{rel}' must be relative, without '..'")
            full = os.path.join(os.path.dirname(path) or ".", rel)
            data, value = read_bytes(full, limits), None
        if hashlib.sha256(data).hexdigest() != digest:
            raise Rejected(f"artifact '{aid}': sha256 does not match its content")
        if value is None:
            value = load_json(full, limits)
        arts[aid] = (a.get("kind"), value, f"{path}: artifact '{aid}'")
    return arts


def _graph(arts: dict, aid: Any, where: str, limits: Limits, assumed: Any = ()) -> Graph:
    """The graph artifact ``aid``, with the claim's approximations (if any) applied."""
    if aid not in arts:
        raise Malformed(where, f"names artifact {aid!r}, which the subject does not list")
    kind, value, awhere = arts[aid]
    if kind != "graph":
        raise Malformed(where, f"artifact '{aid}' is a {kind!r}, not a graph")
    return parse_graph(approx.apply(value, assumed, f"{where}: approximations") if assumed else value, awhere, limits)


def replay_refinement(claim: dict, evidence: dict, arts: dict, where: str, limits: Limits) -> str:
    assumed = claim.get("approximations", [])
    spec = _graph(arts, claim.get("spec"), where, limits, assumed)
    impl = _graph(arts, claim.get("impl"), where, limits)
    rin = refinement.parse_relation(claim.get("input_relation"), spec, impl, f"{where}: input_relation",
                                    True, limits)
    rout = refinement.parse_relation(claim.get("output_relation"), spec, impl,
                                     f"{where}: output_relation", False, limits)
    unrelated = [t for t in spec.outputs if t not in rout]
    if unrelated:
        raise Rejected(f"the claim does not relate spec output '{unrelated[0]}'")
    method = evidence.get("method")
    if method == "whole-graph":
        detail = _whole_graph(spec, impl, rin, rout, evidence, where, limits)
    elif method == "per-operator":
        detail = _per_operator(spec, impl, rin, rout, evidence, where, limits)
    else:
        raise Rejected(f"evidence method {method!r} is not known to this checker")
    under = f" (assuming {approx.describe(assumed)})" if assumed else ""
    return f"{spec.name} refined by {impl.name}{under}: {detail}"


def _summary(outcomes: list) -> str:
    methods: dict[str, int] = {}
    for o in outcomes:
        for m, k in o.methods.items():
            methods[m] = methods.get(m, 0) + k
    total = sum(o.elements for o in outcomes)
    return f"{total} elements ({', '.join(f'{k} by {m}' for m, k in sorted(methods.items()))})"


def _whole_graph(spec: Graph, impl: Graph, rin, rout, evidence: dict, where: str, limits: Limits) -> str:
    claimed = {}
    for o in _field(evidence, "obligations", list, where):
        key = (_field(o, "spec", str, f"{where}: obligation"), _field(o, "expr", str, f"{where}: obligation"))
        claimed[key] = _field(o, "elements", int, f"{where}: obligation {key[0]} = {key[1]}")
    derived = {(s, str(t)) for s, ts in rout.items() for t in ts}
    if set(claimed) != derived:
        extra = sorted(map(str, set(claimed) ^ derived))[:1]
        raise Rejected(f"evidence obligations do not match the claim's output relation: {extra}")
    outcomes = refinement.check(spec, impl, rin, rout, limits)
    for o in outcomes:
        if not o.holds:
            raise Rejected(o.failure)
        if claimed[(o.spec, o.expr)] != o.elements:
            raise Rejected(f"evidence says {claimed[(o.spec, o.expr)]} elements for {o.spec} = {o.expr}, "
                           f"replay found {o.elements}")
    return f"{len(outcomes)} equations, {_summary(outcomes)}"


def _per_operator(spec: Graph, impl: Graph, rin, rout, evidence: dict, where: str, limits: Limits) -> str:
    """Check the chain: order, completeness, every local obligation, then the expectation."""
    found = refinement.parse_relation(_field(evidence, "relation", dict, where), spec, impl,
                                      f"{where}: evidence relation", False, limits)
    for t in found:
        if t in spec.inputs:
            raise Malformed(where, f"evidence relation redefines spec input '{t}'")
    rel = {**rin, **found}
    steps = _field(evidence, "steps", list, where)
    if not all(isinstance(s, str) for s in steps):
        raise Malformed(where, "evidence steps must be spec operator names")
    by_name = {n.name: n for n in spec.nodes}
    if sorted(steps) != sorted(by_name):
        missing = sorted(set(by_name) - set(steps))
        raise Rejected(f"steps do not list every spec operator exactly once"
                       f"{': missing ' + repr(missing[0]) if missing else ''}")
    known, prover, outcomes = set(spec.inputs), chain.Chain(spec, impl, limits), []
    for name in steps:
        node = by_name[name]
        for t in node.inputs:
            if t is not None and t not in known:
                raise Rejected(f"step '{name}' uses '{t}' before the step that produces it")
        for t in node.outputs:
            if t not in rel:
                raise Rejected(f"relation incomplete: no clean expression for '{t}' (output of '{name}')")
            known.add(t)
        for o in prover.prove(rel, node, {t: rel[t] for t in node.outputs}):
            if not o.holds:
                raise Rejected(f"step '{name}' ({node.target}): {o.failure}")
            outcomes.append(o)
    for t in rout:
        if t not in rel:
            raise Rejected(f"expectation on '{t}', which the relation does not cover")
    for o in prover.prove(rel, None, rout):
        if not o.holds:
            raise Rejected(f"expectation not met: {o.failure}")
        outcomes.append(o)
    return (f"{len(steps)} steps, {len(prover.cache)} distinct obligations ({prover.reused} reused), "
            f"{_summary(outcomes)}")


CLAIMS: dict[str, Callable[..., str]] = {"refinement": replay_refinement, "kernel-equivalence": kernel.replay_kernel}
CLAIMS["staged-refinement"] = replay_staged
CLAIMS["train-template"] = replay_template


def replay(path: str, limits: Limits | None = None) -> list[ClaimResult]:
    """Replay every claim of the certificate at ``path``; raises ``CheckError`` on bad input."""
    limits = limits or Limits()
    limits.start = time.monotonic()
    cert = load_json(path, limits)
    if not isinstance(cert, dict) or cert.get("format") != FORMAT:
        raise Malformed(path, f"not a {FORMAT} file")
    if cert.get("version") != VERSION:
        raise Malformed(path, f"certificate version {cert.get('version')!r}; this checker reads {VERSION}")
    _field(cert, "header", dict, path)
    claims = _field(cert, "claims", list, path)
    evidence = _field(cert, "evidence", dict, path)
    if cert.get("verdict") != "ACCEPT":
        return [ClaimResult("-", "-", False, f"certificate verdict is {cert.get('verdict')!r}, not 'ACCEPT'")]
    if not claims:
        raise Malformed(path, "no claims")
    try:
        arts = load_artifacts(cert, path, limits)
    except Rejected as e:
        return [ClaimResult("-", "-", False, str(e))]
    results, seen = [], set()
    for i, claim in enumerate(claims):
        where = f"{path}: claim #{i}"
        cid, kind = _field(claim, "id", str, where), _field(claim, "kind", str, where)
        where = f"{path}: claim '{cid}'"
        if cid in seen:
            raise Malformed(where, "duplicate claim id")
        seen.add(cid)
        if kind not in CLAIMS:
            results.append(ClaimResult(cid, kind, False, f"unknown claim kind {kind!r}"))
            continue
        try:
            ev = _field(evidence, cid, dict, f"{path}: evidence")
            detail = CLAIMS[kind](claim, ev, arts, where, limits)
            results.append(ClaimResult(cid, kind, True, detail))
        except (Rejected, Unsupported) as e:
            results.append(ClaimResult(cid, kind, False, str(e)))
    return results


__all__ = ["replay", "ClaimResult", "CheckError", "Rejected"]
