"""``--json`` and ``--junitxml`` on verify, kernels and replay (docs/output.md): stdout is exactly one
object valid under docs/schema/output-v1.json, verdict and exit code agree with the text mode; one
JUnit testcase per claim / pair / case (REFUTED/REJECT: failure, UNKNOWN: skipped, errors: error)."""

import hashlib
import json
import os
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT, run_pvcert
from test_verdicts import _detour

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = json.load(open(os.path.join(ROOT, "docs", "schema", "output-v1.json")))
OK = "examples/tp_mlp/case.json"
BUG = "examples/tp_mlp/case_missing_allreduce.json"
PAIRS = ("reduce3_sequential", "bug_reduce3_stride_off_by_one")


def run_json(*args: str) -> tuple:
    """Run with ``--json``: stdout must be one schema-valid object whose exit code is the process's."""
    r = run_pvcert(*args, "--json")
    obj = json.loads(r.stdout)   # nothing else on stdout
    jsonschema.Draft202012Validator(SCHEMA).validate(obj)
    assert obj["exit_code"] == r.returncode and "Traceback" not in r.stderr, r.stderr
    return r, obj


def junit(path) -> list[tuple[str, str | None]]:
    """(testcase name, failure/skipped/error tag or None) of a JUnit file."""
    suite = ET.parse(path).getroot()
    assert suite.tag == "testsuite"
    return [(c.get("name"), next((e.tag for e in c), None)) for c in suite.iter("testcase")]


def test_verified_with_certificate_and_provenance(tmp_path):
    cert = tmp_path / "c.json"
    r, obj = run_json("verify", OK, "--emit-cert", str(cert), "--junitxml", str(tmp_path / "j.xml"))
    assert (r.returncode, obj["verdict"], obj["name"], obj["certificate"]) == (0, "VERIFIED", "tp_mlp", str(cert))
    assert obj["counterexample"] is None and obj["unknown"] is None and obj["timing"]["infer_s"] >= 0
    want = hashlib.sha256(open(os.path.join(ROOT, OK), "rb").read()).hexdigest()
    assert obj["provenance"]["sources"]["case.json"] == want
    assert json.loads(cert.read_text())["header"]["provenance"] == obj["provenance"]
    assert "VERIFIED tp_mlp" in r.stderr   # the text goes to stderr
    assert junit(tmp_path / "j.xml") == [("tp_mlp", None)]
    r, obj = run_json("replay", str(cert))
    assert (r.returncode, obj["verdict"], [x["verdict"] for x in obj["results"]]) == (0, "ACCEPT", ["ACCEPT"])
    assert any(line.startswith("provenance (not checked): ") for line in obj["results"][0]["shown"])


def test_refuted_has_the_executed_counterexample(tmp_path):
    r, obj = run_json("verify", BUG, "--junitxml", str(tmp_path / "j.xml"), "--emit-cert", str(tmp_path / "c.json"))
    assert (r.returncode, obj["verdict"]) == (1, "REFUTED") and obj["certificate"] is None
    cx = obj["counterexample"]
    assert cx["output"] == "Y" and cx["want"] != cx["got"] and set(cx["inputs"]) == {"X", "W1", "W2"}
    assert not (tmp_path / "c.json").exists()
    assert junit(tmp_path / "j.xml") == [("tp_mlp_missing_allreduce", "failure")]


def test_unknown_says_what_was_tried_and_what_would_help(tmp_path):
    r, obj = run_json("verify", _detour(tmp_path), "--junitxml", str(tmp_path / "j.xml"))
    assert (r.returncode, obj["verdict"], obj["counterexample"]) == (4, "UNKNOWN", None)
    assert "no relation for spec operator" in obj["unknown"]["tried"] and obj["unknown"]["help"]
    assert junit(tmp_path / "j.xml") == [("t", "skipped")]


def test_malformed_input_is_an_error_naming_file_and_element(tmp_path):
    case = json.load(open(os.path.join(ROOT, OK)))
    case.update({k: os.path.join(ROOT, f"examples/tp_mlp/{k}.json") for k in ("spec", "impl")}, expect={"Y": ["y@r7"]})
    (tmp_path / "case.json").write_text(json.dumps(case))
    r, obj = run_json("verify", str(tmp_path / "case.json"), "--junitxml", str(tmp_path / "j.xml"))
    assert (r.returncode, obj["verdict"], len(obj["errors"])) == (2, "ERROR", 1)
    e = obj["errors"][0]
    assert e["kind"] == "MALFORMED" and "y@r7" in e["message"] and e["file"]
    assert len(r.stderr.strip().splitlines()) == 1
    assert junit(tmp_path / "j.xml")[0][1] == "error"


def test_kernel_pairs(tmp_path):
    r, obj = run_json("kernels", *PAIRS, "--junitxml", str(tmp_path / "j.xml"))
    assert (r.returncode, obj["verdict"]) == (1, "REFUTED")
    ok, bug = obj["results"]
    assert (ok["name"], ok["verdict"], bug["verdict"]) == (PAIRS[0], "VERIFIED", "REFUTED")
    assert bug["counterexample"]["element"] == ["out", 0] and bug["counterexample"]["witness"]
    assert junit(tmp_path / "j.xml") == [(PAIRS[0], None), (PAIRS[1], "failure")]


def test_replay_of_a_tampered_certificate_rejects(tmp_path):
    cert = tmp_path / "c.json"
    assert run_pvcert("verify", OK, "--emit-cert", str(cert), "-q").returncode == 0
    c = json.loads(cert.read_text())
    c["claims"][0]["output_relation"]["Y"] = ["p@r0"]   # the partial sum, not the all-reduced output
    cert.write_text(json.dumps(c))
    r, obj = run_json("replay", str(cert), "--junitxml", str(tmp_path / "j.xml"))
    assert (r.returncode, obj["verdict"], obj["results"][0]["verdict"]) == (1, "REJECT", "REJECT")
    assert junit(tmp_path / "j.xml") == [("tp_mlp", "failure")]
    cert.write_text("{")
    r, obj = run_json("replay", str(cert))
    assert (r.returncode, obj["verdict"], obj["errors"][0]["kind"]) == (2, "ERROR", "MALFORMED")
