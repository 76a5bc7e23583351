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

from . import FORMAT, VERSION
from .errors import CheckError, Malformed, Rejected, Unsupported, field
from .limits import Limits, canonical_bytes, load_json, read_bytes


@dataclass
class ClaimResult:
    claim: str
    kind: str
    ok: bool
    detail: str


def load_artifacts(cert: dict, path: str, limits: Limits) -> dict[str, Any]:
    """Artifacts by id, after checking each sha256; raises ``Rejected`` on a mismatch."""
    arts: dict[str, Any] = {}
    for i, a in enumerate(field(field(cert, "subject", dict, path), "artifacts", list, path)):
        where = f"{path}: artifact #{i}"
        aid = field(a, "id", str, where)
        digest = field(a, "sha256", str, where)
        if aid in arts:
            raise Malformed(where, f"duplicate artifact id '{aid}'")
        if ("embedded" in a) == ("path" in a):
            raise Malformed(where, "needs exactly one of 'embedded' and 'path'")
        if "embedded" in a:
            data, value = canonical_bytes(a["embedded"]), a["embedded"]
        else:
            rel = field(a, "path", str, where)
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


def _refinement(*args) -> str:
    from .chain import replay_refinement
    return replay_refinement(*args)


def _kernel(*args) -> str:
    from .kernel import replay_kernel
    return replay_kernel(*args)


def _staged(*args) -> str:
    from .stages import replay_staged
    return replay_staged(*args)


def _template(*args) -> str:
    from .wiring import replay_template
    return replay_template(*args)


# Each claim kind's checker is imported only when a claim of that kind is replayed, so its
# trusted base is the closure of its own module (tests/test_boundary.py measures each).
CLAIMS: dict[str, Callable[..., str]] = {"refinement": _refinement, "kernel-equivalence": _kernel,
                                         "staged-refinement": _staged, "train-template": _template}
def replay(path: str, limits: Limits | None = None) -> list[ClaimResult]:
    """Replay every claim of the certificate at ``path``; raises ``CheckError`` on bad input."""
    limits = limits or Limits()
    limits.start = time.monotonic()
    cert = load_json(path, limits)
    if not isinstance(cert, dict) or cert.get("format") != FORMAT:
        raise Malformed(path, f"not a {FORMAT} file")
    if cert.get("version") != VERSION:
        raise Malformed(path, f"certificate version {cert.get('version')!r}; this checker reads {VERSION}")
    field(cert, "header", dict, path)
    claims = field(cert, "claims", list, path)
    evidence = field(cert, "evidence", dict, path)
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
        cid, kind = field(claim, "id", str, where), field(claim, "kind", str, where)
        where = f"{path}: claim '{cid}'"
        if cid in seen:
            raise Malformed(where, "duplicate claim id")
        seen.add(cid)
        if kind not in CLAIMS:
            results.append(ClaimResult(cid, kind, False, f"unknown claim kind {kind!r}"))
            continue
        try:
            ev = field(evidence, cid, dict, f"{path}: evidence")
            detail = CLAIMS[kind](claim, ev, arts, where, limits)
            results.append(ClaimResult(cid, kind, True, detail))
        except (Rejected, Unsupported) as e:
            results.append(ClaimResult(cid, kind, False, str(e)))
    return results


__all__ = ["replay", "ClaimResult", "CheckError", "Rejected"]
