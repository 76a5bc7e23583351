"""The ``staged-refinement`` certificate of a staged run (format: docs/stages.md).

The claim is about the FULL graphs (embedded as artifacts); the evidence holds the relation
inferred at reduced shapes lifted to the full sizes, and the stages (one per spec operator in
graph order, then the expectations) with the stage that proves each one. The checker derives
each stage's reduction itself.
"""

from __future__ import annotations

import datetime
from typing import Any

from certificates import FORMAT, VERSION

from .. import __version__
from ..certificate import artifact, declared_claims, declared_sources
from .run import StagedResult


def staged_certificate(res: StagedResult) -> dict[str, Any]:
    """The certificate of a verified staged run."""
    if not res.verified:
        raise ValueError("only verified results get a certificate")
    case = res.case
    evidence = {
        "method": "staged", "seconds": {k: round(v, 4) for k, v in res.seconds.items()},
        "relation": {t: [str(e) for e in es] for t, es in res.relation.items()},
        "stages": [{"op": s.op, "key": s.key, "proved_by": s.rep,
                    "elements": sum(o.elements for o in s.outcomes),
                    "methods": _methods(s.outcomes)} for s in res.stages],
    }
    return {
        "format": FORMAT, "version": VERSION,
        "header": {"tool": "pvcert", "tool_version": __version__, "engine": "staged",
                   "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")},
        "subject": {"artifacts": [artifact("spec", case.spec), artifact("impl", case.impl),
                                  *declared_sources(case.assumptions)]},
        "claims": [{"id": case.name, "kind": "staged-refinement", "spec": "spec", "impl": "impl",
                    "input_relation": {k: list(v) for k, v in case.input_relation.items()},
                    "output_relation": {t: [str(e) for e in es] for t, es in res.claimed.items()},
                    **({"assumptions": declared_claims(case.assumptions)} if case.assumptions else {})}],
        "evidence": {case.name: evidence},
        "verdict": "ACCEPT",
    }


def _methods(outcomes) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in outcomes:
        for m, k in o.methods.items():
            out[m] = out.get(m, 0) + k
    return out
