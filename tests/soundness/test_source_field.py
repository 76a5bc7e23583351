"""The graph IR's optional node ``source`` (module path, file, line) is a report aid only.

Attacks: (1) a buggy program whose nodes carry locations must still be refuted, and replay of
its forged certificate (the engine's certificate for the correct program, with the buggy impl
and the correct impl's ``source`` fields pasted in) REJECTs: a location cannot vouch for a graph;
(2) a certificate whose graph carries a malformed ``source`` (a smuggled key, an oversized
string, a non-integer line) is REJECTed, not ignored. Control: a well-formed ``source`` edited in
a valid certificate (digest recomputed) still replays, since it does not change the claim."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

from certificates import cli as checker_cli
from certificates.limits import canonical_bytes
from verifier import certificate
from verifier.case import Case
from verifier.ir import GraphBuilder
from verifier.refine import infer


def _graphs(buggy: bool) -> tuple[dict, dict]:
    """y = x @ w; impl: two ranks each multiply by a column shard of w (buggy: rank 1 uses rank 0's)."""
    s = GraphBuilder("spec")
    s.input("x", (2, 2), "activation")
    s.input("w", (2, 4), "parameter")
    s.node("aten.mm.default", ["x", "w"], "y", name="y")
    s.output("y")
    i = GraphBuilder("impl", 2)
    for r in (0, 1):
        i.input(f"x@r{r}", (2, 2), "activation", rank=r)
        i.input(f"w@r{r}", (2, 2), "parameter", rank=r)
    for r in (0, 1):
        w = "w@r0" if buggy and r == 1 else f"w@r{r}"
        if w.endswith("@r0") and r == 1:   # rank 1 reads a copy of rank 0's shard: a send/recv
            i.node("c10d.send_recv.default", ["w@r0"], ["wc@r1"], group=[0, 1], name="send_w")
            w = "wc@r1"
        i.node("aten.mm.default", [f"x@r{r}", w], f"y@r{r}", rank=r, name=f"y@r{r}")
    i.output("y@r0", "y@r1")
    for g in (s.obj, i.obj):
        for n in g["nodes"]:
            n["source"] = {"module": "proj", "file": "model.py", "line": 7}
    return s.obj, i.obj


def _case(buggy: bool) -> Case:
    spec, impl = _graphs(buggy)
    rel = {"x": ["x@r0", "x@r1"], "w": ["concat(w@r0, w@r1, dim=1)"]}
    return Case("mm", spec, impl, rel, {"y": ["concat(y@r0, y@r1, dim=1)"]})


def _replay(cert: dict, tmp_path) -> int:
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(cert))
    return checker_cli.main([str(path)])


def _impl(cert: dict) -> dict:
    return next(a for a in cert["subject"]["artifacts"] if a["id"] == "impl")


def _rehash(art: dict) -> None:
    art["sha256"] = hashlib.sha256(canonical_bytes(art["embedded"])).hexdigest()


def _good_cert() -> dict:
    inf = infer(_case(False))
    assert inf.verified
    return certificate.per_operator_certificate(inf)


def test_buggy_program_with_locations_is_not_verified_and_forgery_rejected(tmp_path):
    assert not infer(_case(True)).verified
    cert = _good_cert()
    _impl(cert)["embedded"] = _graphs(True)[1]   # the buggy impl, every node with the same source
    _rehash(_impl(cert))
    assert _replay(cert, tmp_path) != 0


@pytest.mark.parametrize("source", [{"module": "proj", "trusted": True}, {"file": "m" * 301},
                                    {"line": 7.0}, {"line": -1}, "model.py:7"])
def test_malformed_source_in_a_certificate_is_rejected(tmp_path, capsys, source):
    cert = _good_cert()
    _impl(cert)["embedded"]["nodes"][0]["source"] = source
    _rehash(_impl(cert))
    assert _replay(cert, tmp_path) != 0
    assert "source" in capsys.readouterr().err


def test_control_edited_location_still_replays(tmp_path):
    cert = _good_cert()
    assert _replay(copy.deepcopy(cert), tmp_path) == 0
    _impl(cert)["embedded"]["nodes"][0]["source"] = {"module": "layers.0.o_proj", "file": "other.py", "line": 99}
    _rehash(_impl(cert))
    assert _replay(cert, tmp_path) == 0
