"""Certificate v1 (docs/certificates.md): read, check integrity, replay every claim. Nothing in it is
trusted: hashes are recomputed, graphs re-validated, obligations re-derived and re-decided."""

import hashlib
import json
import os
import time
from dataclasses import dataclass, field as dc_field
from typing import Any

from . import FORMAT, VERSION
from .errors import CheckError, Malformed, Rejected, Unsupported, fail_if, field
from .limits import Limits, canonical_bytes, load_json, read_bytes


@dataclass
class ClaimResult:
    claim: str
    kind: str
    ok: bool
    detail: str
    shown: list[str] = dc_field(default_factory=list)   # the claim as stated (``describe``)


def describe(claim: dict, evidence: dict, arts: dict, sha: dict[str, str]) -> list[str]:
    """What an accepted claim states: a kernel claim's kernels (``kernel_claim.describe_kernels``), another claim's
    graphs, relations and assumptions (``refinement.describe_graphs``), each imported for those only; the domain."""
    low: set = set()
    if claim.get("kind") == "kernel-equivalence":
        from .kernel_claim import describe_kernels
        out = describe_kernels(claim, sha, low)
    else:
        from .refinement import describe_graphs
        out = describe_graphs(claim, evidence, arts, sha, low)
    return out + ["values over the reals" + (f"; {'/'.join(sorted(low))} rounding not modelled" if low else "")]


def _text(x, n: int) -> str:
    """``x`` as escaped text (no newline can start a line of its own), cut to ``n`` characters."""
    return json.dumps(str(x))[1:-1][:n]


def _spec_matches(claims: list, arts: dict, sha: dict, spec: tuple[str, set[str]]) -> ClaimResult:
    """``--spec``: every claim that names a spec names the auditor's (by sha256)."""
    named = [(c.get("id"), c.get("spec")) for c in claims if isinstance(c.get("spec"), str)]
    wrong = [cid for cid, aid in named if sha.get(aid) not in spec[1]]
    ok = bool(named) and not wrong
    detail = (f"every claim's spec is {spec[0]}" if ok else "no claim names a spec" if not named
              else f"claim '{wrong[0]}' certifies another spec than {spec[0]}")
    return ClaimResult("--spec", "spec", ok, detail)


def load_artifacts(cert: dict, path: str, limits: Limits) -> dict[str, Any]:
    """Artifacts by id, after checking each sha256; raises ``Rejected`` on a mismatch."""
    arts: dict[str, Any] = {}
    for i, a in enumerate(field(field(cert, "subject", dict, path), "artifacts", list, path)):
        where = f"{path}: artifact #{i}"
        aid, digest = field(a, "id", str, where), field(a, "sha256", str, where)
        fail_if(aid in arts, Malformed, where, f"duplicate artifact id '{aid}'")
        fail_if(("embedded" in a) == ("path" in a), Malformed, where, "needs exactly one of 'embedded' and 'path'")
        if "embedded" in a:
            data = canonical_bytes(a["embedded"])
        else:
            rel = field(a, "path", str, where)
            if os.path.isabs(rel) or ".." in rel.split("/"):
                raise Malformed(where, f"artifact path '{rel}' must be relative, without '..'")
            full = os.path.join(os.path.dirname(path) or ".", rel)
            data = read_bytes(full, limits)
        fail_if(hashlib.sha256(data).hexdigest() != digest, Rejected, f"artifact '{aid}': sha256 does not match its content")
        value = a["embedded"] if "embedded" in a else load_json(full, limits, data)   # the bytes hashed, not a re-read
        arts[aid] = (a.get("kind"), value, f"{path}: artifact '{aid}'")
    return arts


# Each claim kind's checker is imported only when a claim of that kind is replayed, so its
# trusted base is the closure of its own module (tests/test_boundary.py measures each).
CLAIMS = ("refinement", "training-refinement", "kernel-equivalence", "staged-refinement", "train-template")


def _replay_claim(kind: str, *args) -> str:
    if kind == "refinement":
        from .refinement_kind import replay as run
    elif kind == "training-refinement":
        from .approx import replay as run
    elif kind == "kernel-equivalence":
        from .kernel_claim import replay_kernel as run
    elif kind == "staged-refinement":
        from .stages import replay_staged as run
    else:
        from .wiring import replay_template as run
    return run(*args)


def replay(path: str, limits: Limits | None = None, spec: tuple[str, set[str]] | None = None) -> list[ClaimResult]:
    """Replay every claim of the certificate at ``path``; raises ``CheckError`` on bad input. ``spec``: (a label,
    the sha256 values of the auditor's spec) that every claim's spec must have."""
    limits = limits or Limits()
    limits.start = time.monotonic()
    cert = load_json(path, limits)
    fail_if(not isinstance(cert, dict) or cert.get("format") != FORMAT, Malformed, path, f"not a {FORMAT} file")
    fail_if(cert.get("version") != VERSION, Malformed, path, f"version {cert.get('version')!r}; checker reads {VERSION}")
    field(cert, "header", dict, path)
    claims, evidence = field(cert, "claims", list, path), field(cert, "evidence", dict, path)
    if cert.get("verdict") != "ACCEPT":
        return [ClaimResult("-", "-", False, f"certificate verdict is {cert.get('verdict')!r}, not 'ACCEPT'")]
    fail_if(not claims, Malformed, path, "no claims")
    try:
        arts = load_artifacts(cert, path, limits)
    except Rejected as e:
        return [ClaimResult("-", "-", False, str(e))]
    results, seen = [], set()
    sha = {a["id"]: a["sha256"] for a in cert["subject"]["artifacts"]}   # checked by load_artifacts
    for i, claim in enumerate(claims):
        where = f"{path}: claim #{i}"
        cid, kind = field(claim, "id", str, where), field(claim, "kind", str, where)
        where = f"{path}: claim '{cid}'"
        fail_if(cid in seen, Malformed, where, "duplicate claim id")
        seen.add(cid)
        if kind not in CLAIMS:
            results.append(ClaimResult(cid, kind, False, f"unknown claim kind {kind!r}"))
            continue
        ev = field(evidence, cid, dict, f"{path}: evidence")
        try:
            results.append(ClaimResult(cid, kind, True, _replay_claim(kind, claim, ev, arts, where, limits)))
        except (Rejected, Unsupported) as e:
            results.append(ClaimResult(cid, kind, False, str(e)))
        if results[-1].ok:
            results[-1].shown = describe(claim, ev, arts, sha)
    if results and isinstance(cert["header"].get("provenance"), dict):   # shown, never checked: in no claim
        prov = cert["header"]["provenance"]
        parts = [f"{k}: " + (", ".join(f"{_text(n, 40)} {_text(x, 12)}" for n, x in list(v.items())[:8])
                             if isinstance(v, dict) else _text(v, 80)) for k, v in list(prov.items())[:6]]
        results[0].shown.append(f"provenance (not checked): {'; '.join(parts)}"[:900])
    if spec is not None:
        results.append(_spec_matches(claims, arts, sha, spec))
    return results


__all__ = ["replay", "ClaimResult", "CheckError", "Rejected"]
