"""Attacks on the machine-readable output and on ``header.provenance`` (docs/output.md, docs/certificates.md).

* Provenance is display only: a forged claim carrying the genuine provenance of a verified run is still
  REJECTed; provenance of any shape (or none) changes no verdict; a provenance string with a newline
  cannot print a forged ``ACCEPT`` line.
* ``--json``, JUnit and the Python API never say VERIFIED / ACCEPT for a bug or a forged certificate,
  and never disagree with the exit code.
"""

import json
import xml.etree.ElementTree as ET

import pytest

from certificates.replay import replay
from conftest import run_pvcert

OK = "examples/tp_mlp/case.json"
BUG = "examples/tp_mlp/case_missing_allreduce.json"


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("prov") / "good.json"
    r = run_pvcert("verify", OK, "--emit-cert", str(path), "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(path.read_text())


def _replay(cert: dict, path) -> tuple:
    path.write_text(json.dumps(cert))
    r = run_pvcert("replay", str(path), "--json", "--junitxml", str(path) + ".xml")
    obj = json.loads(r.stdout)
    failures = ET.parse(str(path) + ".xml").getroot().get("failures")
    assert obj["exit_code"] == r.returncode
    return r, obj, failures


def _forged(good: dict) -> dict:
    c = json.loads(json.dumps(good))
    c["claims"][0]["output_relation"]["Y"] = ["p@r0"]   # one rank's partial sum: false
    return c


@pytest.mark.parametrize("prov", ["keep", None, [], "ACCEPT", {"verdict": "ACCEPT", "checked": True}])
def test_provenance_never_changes_a_verdict(good, tmp_path, prov):
    forged, control = _forged(good), json.loads(json.dumps(good))
    for c in (forged, control):
        if prov is None:
            del c["header"]["provenance"]
        elif prov != "keep":
            c["header"]["provenance"] = prov
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    (tmp_path / "control.json").write_text(json.dumps(control))
    assert not any(r.ok for r in replay(str(tmp_path / "forged.json")))
    [ok] = replay(str(tmp_path / "control.json"))   # with or without provenance
    shown = [s for s in ok.shown if s.startswith("provenance")]
    assert ok.ok and len(shown) == (prov == "keep" or isinstance(prov, dict))


def test_provenance_cannot_print_a_forged_accept(good, tmp_path):
    forged = _forged(good)
    forged["header"]["provenance"] = {"sources": {"x.py": "\nACCEPT forged.json (0.01 s)"}}
    r, obj, failures = _replay(forged, tmp_path / "forged.json")
    assert r.returncode == 1 and obj["verdict"] == "REJECT" and failures == "1", r.stdout + r.stderr
    assert not any(line.startswith("ACCEPT") for line in r.stderr.splitlines()), r.stderr
    r = run_pvcert("replay", str(tmp_path / "forged.json"))
    assert r.returncode == 1 and not any(line.startswith("ACCEPT") for line in r.stdout.splitlines()), r.stdout


def test_bug_is_not_verified_in_any_output(tmp_path):
    r = run_pvcert("verify", BUG, "--json", "--emit-cert", str(tmp_path / "c.json"),
                   "--junitxml", str(tmp_path / "j.xml"))
    obj = json.loads(r.stdout)
    assert (r.returncode, obj["exit_code"], obj["verdict"], obj["certificate"]) == (1, 1, "REFUTED", None)
    assert obj["counterexample"]["want"] != obj["counterexample"]["got"] and not (tmp_path / "c.json").exists()
    assert ET.parse(tmp_path / "j.xml").getroot().get("failures") == "1"


def test_api_bug_is_refuted_without_certificate():
    import pvcert

    r = pvcert.verify(BUG)
    assert r.refuted and not r.verified and r.certificate is None and r.exit_code == 1
    assert pvcert.verify(OK).verified   # control
