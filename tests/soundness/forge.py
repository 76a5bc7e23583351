"""What an attacker does with a certificate, shared by the soundness tests: take the certificate the
engine wrote for a correct CONTROL, put the bug's program into it (sha256 recomputed), replay it."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable

from certificates.errors import CheckError, Unsupported
from certificates.limits import canonical_bytes
from certificates.replay import replay
from verifier import certificate, direct
from verifier.case import Case
from verifier.refine import infer

Pair = tuple[dict, dict, dict, dict]  # spec, impl, input relation, expectation
FORMS = ("whole-graph", "per-operator")


def case(pair: Pair, name: str = "attack") -> Case:
    s, g, rin, expect = pair
    return Case(name, copy.deepcopy(s), copy.deepcopy(g), rin, expect)


def verified(pair: Pair, form: str) -> bool:
    """Does the engine of evidence ``form`` say VERIFIED (a refusal is a no)?"""
    try:
        return (direct.verify(case(pair)) if form == "whole-graph" else infer(case(pair))).verified
    except Unsupported:
        return False


def certify(pair: Pair, form: str) -> dict:
    """The engine's certificate of a verified pair, with evidence of ``form``."""
    if form == "whole-graph":
        return certificate.whole_graph_certificate(direct.verify(case(pair)))
    return certificate.per_operator_certificate(infer(case(pair)))


def embed(cert: dict, spec: dict, impl: dict) -> dict:
    """``cert`` with ``spec`` and ``impl`` as its artifacts, their sha256 recomputed."""
    cert = copy.deepcopy(cert)
    for art in cert["subject"]["artifacts"]:
        art["embedded"] = copy.deepcopy(impl if art["id"] == "impl" else spec)
        art["sha256"] = hashlib.sha256(canonical_bytes(art["embedded"])).hexdigest()
    return cert


def replayed(cert: dict, path) -> list:
    path.write_text(json.dumps(cert))
    return replay(str(path))


def verdict(cert: dict, tmp_path) -> tuple[bool, str]:
    """Replay ``cert``: (every claim accepted, the reasons); a malformed certificate is not accepted."""
    try:
        rs = replayed(cert, tmp_path / "c.json")
    except CheckError as e:
        return False, str(e)
    return all(r.ok for r in rs), "; ".join(r.detail for r in rs)


def attack(bug: Pair, ok: Pair, form: str, tmp_path, forge: Callable[[dict, Pair], dict]) -> None:
    """The bug is not verified, the control is and replays, and ``forge(control's certificate, bug)``
    is REJECTed by replay (or refused as malformed, e.g. evidence naming a tensor the bug lacks)."""
    assert not verified(bug, form)
    assert verified(ok, form)  # the correct control still verifies
    cert = certify(ok, form)
    assert all(r.ok for r in replayed(cert, tmp_path / "good.json"))
    try:
        results = replayed(forge(cert, bug), tmp_path / "forged.json")
    except CheckError:   # malformed: no ACCEPT either
        return
    assert not all(r.ok for r in results), [r.detail for r in results]
