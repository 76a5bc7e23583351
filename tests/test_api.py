"""The Python API (docs/api.md): ``pvcert.verify`` / ``replay`` / ``kernels`` run the command line's code
paths and return a result object; nothing is printed."""

import json
import os

import pytest

import pvcert
from conftest import ROOT
from verifier.case import load_case

BUG = os.path.join(ROOT, "examples/tp_mlp/case_missing_allreduce.json")


def test_tp_mlp_captured_is_verified_with_its_certificate(tmp_path, capsys):
    pytest.importorskip("torch")
    cert = tmp_path / "c.json"
    r = pvcert.verify(os.path.join(ROOT, "examples/cases/tp_mlp.py"), emit_cert=str(cert))
    assert r.verified and not r.refuted and not r.unknown and r.exit_code == 0, r.output
    assert r.certificate == json.loads(cert.read_text()) and r.counterexample is None
    sources = r.certificate["header"]["provenance"]["sources"]
    assert {"tp_mlp.py", "../models/mlp.py"} <= set(sources), sources   # the case and the model it imports
    assert "VERIFIED tp_mlp" in r.output and capsys.readouterr() == ("", "")
    rep = pvcert.replay(cert)
    assert rep.accepted and rep.exit_code == 0 and rep.results[0]["name"] == "tp_mlp"


def test_bundled_bug_is_refuted_with_the_counterexample():
    r = pvcert.verify(BUG)
    assert r.refuted and not r.verified and r.exit_code == 1 and r.certificate is None
    assert r.counterexample["output"] == "Y" and r.counterexample["want"] != r.counterexample["got"]
    assert pvcert.verify(BUG, engine="whole-graph").refuted


def test_case_object_and_a_certificate_without_a_file(tmp_path):
    r = pvcert.verify(load_case(os.path.join(ROOT, "examples/tp_mlp/case.json")))
    assert r.verified and r.certificate_path is None and r.certificate["claims"][0]["id"] == "tp_mlp"
    forged = json.loads(json.dumps(r.certificate))
    forged["claims"][0]["output_relation"]["Y"] = ["p@r0"]
    (tmp_path / "f.json").write_text(json.dumps(forged))
    rep = pvcert.replay(tmp_path / "f.json")
    assert not rep.accepted and rep.verdict == "REJECT" and rep.exit_code == 1


def test_errors_and_kernels(tmp_path):
    r = pvcert.verify(tmp_path / "missing.json")
    assert r.verdict == "ERROR" and r.exit_code == 2 and r.errors[0]["kind"] == "MALFORMED"
    k = pvcert.kernels("reduce3_sequential", corpus=os.path.join(ROOT, "examples/kernels"))
    assert k.verified and [x["verdict"] for x in k.results] == ["VERIFIED"]
