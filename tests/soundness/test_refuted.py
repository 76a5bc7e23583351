"""Rule 5 (three verdicts): REFUTED only with an executed counterexample whose values differ over the
reals, never for float64 rounding. ``(X + 1e12) - 1e12`` is ``X`` over the reals but about 1e-5 off in
float64; a copy of ``X`` must not be REFUTED against it by any engine (the whole-graph engine proves it).
The same spec against ``x + 0.5`` (a real difference, below what rounding at 1e12 could explain) is
not VERIFIED, and the trap's certificate carrying that impl is rejected by replay."""

import copy
import hashlib
import json

import pytest

from certificates.limits import canonical_bytes
from conftest import run_pvcert
from verifier.ir import GraphBuilder


def _case(tmp_path, shift: float | None) -> str:
    s = GraphBuilder("trap")
    s.input("X", [4, 4], "activation")
    s.node("aten.add.Tensor", ["X"], "T", other=1e12)
    s.node("aten.sub.Tensor", ["T"], "Y", other=1e12)
    s.output("Y")
    g = GraphBuilder("impl", 1)
    g.input("x@r0", [4, 4], "activation", rank=0)
    if shift is None:
        g.node("aten.clone.default", ["x@r0"], "y@r0", rank=0)
    else:
        g.node("aten.add.Tensor", ["x@r0"], "y@r0", rank=0, other=shift)
    g.output("y@r0")
    d = tmp_path / ("copy" if shift is None else "shifted")
    d.mkdir()
    (d / "spec.json").write_text(json.dumps(s.build()))
    (d / "impl.json").write_text(json.dumps(g.build()))
    (d / "case.json").write_text(json.dumps({"format": "pvcert-case", "version": 1, "name": "trap",
                                             "spec": "spec.json", "impl": "impl.json",
                                             "input_relation": {"X": ["x@r0"]}, "expect": {"Y": ["y@r0"]}}))
    return str(d / "case.json")


@pytest.mark.parametrize("engine", [[], ["--engine", "whole-graph"], ["--staged"]])
def test_rounding_is_not_a_counterexample(tmp_path, engine):
    r = run_pvcert("verify", _case(tmp_path, None), *engine)
    assert r.returncode in (0, 4) and "REFUTED" not in r.stdout, r.stdout + r.stderr


def test_trap_control_verifies_and_its_certificate_with_a_real_difference_is_rejected(tmp_path):
    cert = tmp_path / "cert.json"
    r = run_pvcert("verify", _case(tmp_path, None), "--engine", "whole-graph", "--emit-cert", str(cert))
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    assert run_pvcert("replay", str(cert)).returncode == 0
    shifted = _case(tmp_path, 0.5)
    for engine in ([], ["--engine", "whole-graph"], ["--staged"]):
        r = run_pvcert("verify", shifted, *engine)
        assert r.returncode != 0 and "VERIFIED" not in r.stdout, r.stdout + r.stderr
    forged = json.loads(cert.read_text())
    bad = json.loads((tmp_path / "shifted" / "impl.json").read_text())
    for art in forged["subject"]["artifacts"]:
        if art["id"] == "impl":
            art["embedded"] = copy.deepcopy(bad)
            art["sha256"] = hashlib.sha256(canonical_bytes(bad)).hexdigest()
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    r = run_pvcert("replay", str(tmp_path / "forged.json"))
    assert r.returncode != 0 and "ACCEPT" not in r.stdout, r.stdout + r.stderr
