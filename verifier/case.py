"""Verification cases: a spec graph, an impl graph, an input relation, an expectation.

JSON form (``pvcert-case`` v1, docs/cases.md); paths are relative to the case file::

    {"format": "pvcert-case", "version": 1, "name": "tp_mlp",
     "spec": "spec.json", "impl": "impl.json",
     "input_relation": {"X": ["x@r0", "x@r1"], "W1": ["concat(w1@r0, w1@r1, dim=0)"]},
     "expect": {"Y": ["y@r0", "y@r1"]}}

An optional ``"approximations"`` list declares rewrites of the spec the user accepts
(certificates/approx.py); the claim is then "impl refines approx(spec)".

A ``.py`` case is a PyTorch program captured by ``verifier.capture``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from certificates.errors import Malformed
from certificates.limits import load_json

CASE_FORMAT, CASE_VERSION = "pvcert-case", 1


@dataclass
class Case:
    name: str
    spec: dict[str, Any]                   # graph JSON values
    impl: dict[str, Any]
    input_relation: dict[str, list[str]]   # spec input -> clean expressions over impl inputs
    expect: dict[str, list[str]]           # spec tensor -> clean expressions over impl tensors
    approximations: list[dict] = field(default_factory=list)   # spec rewrites (certificates/approx.py)
    assumptions: list[dict] = field(default_factory=list)      # declared custom ops (capture/case.py declared_ops)


def load_case(path: str) -> Case:
    """Load a JSON case file, or capture a Python case module."""
    if path.endswith(".py"):
        from .capture.case import load_case as capture_case  # needs torch
        c = capture_case(path)
        return Case(c.name, c.spec, c.impl, c.input_relation, c.expect, c.approximations, c.assumptions)
    obj = load_json(path)
    if not isinstance(obj, dict) or obj.get("format") != CASE_FORMAT or obj.get("version") != CASE_VERSION:
        raise Malformed(path, f"not a {CASE_FORMAT} version {CASE_VERSION} file")
    for key in ("name", "spec", "impl", "input_relation", "expect"):
        if key not in obj:
            raise Malformed(path, f"missing '{key}'")
    base = os.path.dirname(path)

    def graph(key: str) -> dict:
        ref = obj[key]
        if isinstance(ref, dict):
            return ref
        if not isinstance(ref, str):
            raise Malformed(path, f"'{key}' must be a file name or an inline graph")
        return load_json(os.path.join(base, ref))

    return Case(str(obj["name"]), graph("spec"), graph("impl"), obj["input_relation"], obj["expect"],
                obj.get("approximations", []))
