"""Writing certificates (format: docs/certificates.md); ``certificates.replay`` reads them."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from certificates import FORMAT, VERSION
from certificates.errors import CheckError, Rejected
from certificates.graph import Graph
from certificates.limits import Limits, canonical_bytes
from certificates.refinement import Relation
from certificates.replay import ClaimResult, replay

from . import __version__
from .direct import Result
from .refine import Inference


def artifact(aid: str, value: Any) -> dict[str, Any]:
    """An embedded artifact with the sha256 of its canonical JSON bytes."""
    return {"id": aid, "kind": "graph", "sha256": hashlib.sha256(canonical_bytes(value)).hexdigest(),
            "embedded": value}


def declared_sources(assumptions: list[dict]) -> list[dict[str, Any]]:
    """Artifacts holding the source of each declared custom op (``capture.case.declared_ops``)."""
    return [{**artifact(f"declared {a['custom_op']}", a["source"]), "kind": "source"} for a in assumptions]


def declared_claims(assumptions: list[dict]) -> list[dict[str, str]]:
    """The claim's assumptions: each custom op computes the function in its source artifact."""
    return [{"custom_op": a["custom_op"], "computes": f"declared {a['custom_op']}"} for a in assumptions]


def claim_kind(spec: Graph, impl: Graph, approximations: list) -> str:
    """``training-refinement`` for a claim with approximations or training operators (batch norm, MoE routing),
    else ``refinement``; the checker refuses operators its kind does not trust (docs/architecture.md)."""
    train = any(n.op.run.__module__.endswith(".ops_train") for g in (spec, impl) for n in g.nodes)
    return "training-refinement" if approximations or train else "refinement"


def _refinement(r: Result, engine: str, evidence: dict[str, Any], found: Relation | None = None) -> dict[str, Any]:
    """A refinement certificate; spec outputs without an expectation are claimed as ``found``."""
    cid = r.case.name
    claimed = {**{t: found[t] for t in r.spec.outputs if t not in r.expect and found}, **r.expect}
    return {
        "format": FORMAT, "version": VERSION,
        "header": {"tool": "pvcert", "tool_version": __version__, "engine": engine},   # no clock: reproducible
        "subject": {"artifacts": [artifact("spec", r.case.spec), artifact("impl", r.case.impl),
                                  *declared_sources(r.case.assumptions)]},
        "claims": [{"id": cid, "kind": claim_kind(r.spec, r.impl, r.case.approximations),
                    "spec": "spec", "impl": "impl",
                    "input_relation": {k: [str(t) for t in v] for k, v in r.inputs.items()},
                    "output_relation": {k: [str(t) for t in v] for k, v in claimed.items()},
                    **({"approximations": r.case.approximations} if r.case.approximations else {}),
                    **({"assumptions": declared_claims(r.case.assumptions)} if r.case.assumptions else {})}],
        "evidence": {cid: evidence},
        "verdict": "ACCEPT",
    }


def whole_graph_certificate(r: Result) -> dict[str, Any]:
    """The certificate of a verified whole-graph refinement."""
    if not r.verified:
        raise ValueError("only verified results get a certificate")
    return _refinement(r, "whole-graph", {
        "method": "whole-graph",
        "obligations": [{"spec": o.spec, "expr": o.expr, "elements": o.elements, "methods": o.methods}
                        for o in r.outcomes]})


def per_operator_certificate(inf: Inference) -> dict[str, Any]:
    """The certificate of a verified per-operator inference: the relation and the chain of steps."""
    if not inf.verified:
        raise ValueError("only verified results get a certificate")
    r = inf.prepared
    found = {t: [str(e) for e in es] for t, es in inf.relation.items() if t not in r.spec.inputs}
    return _refinement(r, "per-operator", {
        "method": "per-operator", "relation": found, "steps": inf.steps,
        "obligations": inf.obligations, "reused": inf.reused}, inf.relation)


def write(cert: dict[str, Any], path: str, limits: Limits | None = None) -> None:
    """Write ``cert`` to ``path`` only if the checker accepts it: it is replayed from a temporary
    file beside ``path`` first (within ``limits``, the replay's own by default); a certificate the checker
    refuses raises ``Rejected`` and is not written."""
    tmp = f"{path}.unchecked"
    with open(tmp, "w") as f:
        json.dump(cert, f, indent=1)
        f.write("\n")
    try:
        try:
            bad = [r for r in replay(tmp, limits) if not r.ok]
        except CheckError as e:
            bad = [ClaimResult("-", "-", False, str(e).replace(tmp, path))]
        if bad:
            raise Rejected(f"{path}: not written: the checker refuses the certificate the engine made "
                           f"(claim '{bad[0].claim}': {bad[0].detail})")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
