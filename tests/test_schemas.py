"""The JSON Schemas in certificates/schema describe what the tools write."""

import glob
import json
import os

import pytest

from conftest import ROOT, run_pvcert

jsonschema = pytest.importorskip("jsonschema")
from referencing import Registry, Resource  # noqa: E402  (ships with jsonschema)

SCHEMAS = {name: json.load(open(os.path.join(ROOT, "certificates", "schema", f"{name}-v1.json")))
           for name in ("graph", "certificate")}
REGISTRY = Registry().with_resources(
    (s["$id"], Resource.from_contents(s)) for s in SCHEMAS.values())


def validate(obj, name):
    jsonschema.Draft202012Validator(SCHEMAS[name], registry=REGISTRY).validate(obj)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "examples", "*", "*.json"))))
def test_example_graphs_match_schema(path):
    obj = json.load(open(path))
    if obj.get("format") == "pvcert-graph":
        validate(obj, "graph")


def test_certificate_matches_schema(tmp_path):
    path = tmp_path / "c.json"
    assert run_pvcert("verify", "examples/tp_mlp/case.json", "--engine", "whole-graph", "--emit-cert", str(path)).returncode == 0
    validate(json.load(open(path)), "certificate")


def test_certificate_with_declared_custom_ops_matches_schema(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "c.json"
    assert run_pvcert("verify", "examples/cases/vllm_layer.py", "--emit-cert", str(path)).returncode == 0
    cert = json.load(open(path))
    assert any(a["kind"] == "source" for a in cert["subject"]["artifacts"])
    validate(cert, "certificate")


def test_schema_rejects_what_the_parser_rejects():
    bad = {"format": "pvcert-graph", "version": 1, "name": "g", "world_size": 1, "tensors": {},
           "inputs": [], "outputs": [], "nodes": [{"name": "n", "target": "aten.mm.default", "rank": 0,
                                                   "group": [0], "inputs": [], "outputs": []}]}
    with pytest.raises(jsonschema.ValidationError):
        validate(bad, "graph")
