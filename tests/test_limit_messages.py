"""Sizes (issue 15): ``pvcert verify`` reduces a case too large to decide element by element, as
``--staged`` does; a LIMIT names the tensor and its operators, at parse and after the shape reduction
with the reason each axis kept its size; shape-only work (the families check, the reduction's analysis)
runs on graphs of any size."""

import json

import numpy as np
import pytest

from certificates.errors import LIMIT, LimitExceeded
from certificates.graph import evaluate
from certificates.limits import Limits
from conftest import run_pvcert
from verifier.case import Case
from verifier.ir import GraphBuilder, parsed
from verifier.stages.reduce import reduce_case


def test_parse_limit_names_the_operators_of_the_tensor():
    g = GraphBuilder("big")
    g.input("X", [64, 64], "activation")
    g.node("aten.neg.default", ["X"], "Y")
    g.output("Y")
    with pytest.raises(LimitExceeded, match=r"tensor 'X' has shape \[64, 64\], too large to check "
                                            r"\(read by 'n0' \(aten.neg.default\)\)"):
        parsed(g.build(), "big", Limits(max_elements=16))


def test_evaluation_limit_names_the_tensor_and_its_operator():
    """A tensor made over the element limit while a graph runs (an outer product of two small inputs)."""
    g = GraphBuilder("outer")
    g.input("X", [8, 1], "activation")
    g.input("Y", [1, 8], "activation")
    g.node("aten.mul.Tensor", ["X", "Y"], "Z", name="outer_mul")
    g.output("Z")
    graph = parsed(g.build(), "outer", Limits())
    with pytest.raises(LimitExceeded, match=r"outer: 'Z' of aten.mul.Tensor 'outer_mul': 64 elements, over 16"):
        evaluate(graph, {"X": np.ones((8, 1)), "Y": np.ones((1, 8))}, False, Limits(max_elements=16))


def test_reduction_limit_names_tensor_operator_and_why_each_axis_kept_its_size():
    def side(name: str, x: str) -> dict:
        g = GraphBuilder(name)
        g.input(x, [4, 6], "activation")
        g.node("aten._softmax.default", [x], x + "_s", dim=1, half_to_float=False)
        g.output(x + "_s")
        return g.build()
    case = Case("softmax", side("spec", "X"), side("impl", "x"), {"X": ["x"]}, {"X_s": ["x_s"]})
    with pytest.raises(LimitExceeded) as e:   # inference reduces a normalized axis (relax); the checker does not
        reduce_case(case, Limits(max_elements=4), relax=False)
    assert "spec tensor 'X' is still [2, 6] after the shape reduction (read by 'n0' (aten._softmax.default))" \
        in str(e.value)
    assert "axis 1 (6): full size: node 'n0' (aten._softmax.default): normalized along dim" in str(e.value)


def _sum_case(tmp_path, n: int, op: str = "mean", divided: bool = False) -> str:
    """``y = op(x, 1)`` on one rank against the same on another (``divided``: a sum divided by ``n``): axis 1 is
    summed (reduced at two divisors), or held by congruence, or, by a mean against a division, kept at full size."""
    for name, x in (("spec", "X"), ("impl", "x@r0")):
        g, y = GraphBuilder(name), x.replace("x", "y").replace("X", "Y")
        g.input(x, [4, n], "activation")
        if divided and name == "impl":
            g.node("aten.sum.dim_IntList", [x], "s@r0", attrs={"dim": [1]})
            g.node("aten.div.Tensor", ["s@r0"], y, attrs={"other": n})
        else:
            g.node(f"aten.{op}.dim" + ("_IntList" if op == "sum" else ""), [x], y, attrs={"dim": [1]})
        g.output(y)
        (tmp_path / f"{name}.json").write_text(json.dumps(g.obj))   # (build() would refuse 16 M elements)
    case = {"format": "pvcert-case", "version": 1, "name": "sum", "spec": "spec.json", "impl": "impl.json",
            "input_relation": {"X": ["x@r0"]}, "expect": {"Y": ["y@r0"]}}
    (tmp_path / "case.json").write_text(json.dumps(case))
    return str(tmp_path / "case.json")


def test_cli_limits_name_the_operator_by_engine(tmp_path):
    # summed: reduced at two divisors; the rows to 2, the columns to 4 (apart from the rows)
    r = run_pvcert("verify", _sum_case(tmp_path, 300_000, "sum"), "--staged")
    assert r.returncode == 0 and "reduced to 20 of 2400008 elements" in r.stdout, r.stdout + r.stderr
    r = run_pvcert("verify", _sum_case(tmp_path, 300_000), "--staged")   # the same mean on both sides: congruence
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    r = run_pvcert("verify", _sum_case(tmp_path, 300_000, divided=True), "--staged")   # reduced: [2, 300000]
    assert r.returncode == LIMIT, r.stdout + r.stderr
    assert "spec tensor 'X' is still [2, 300000]" in r.stderr and "its size enters the mean" in r.stderr, r.stderr
    assert "with the mixed axes reduced too it was not verified: expectation Y = y@r0 not met" in r.stderr
    case = _sum_case(tmp_path, 4_000_000, divided=True)   # 16 M elements
    r = run_pvcert("verify", case)   # reduced first, as --staged does: still too large
    assert r.returncode == LIMIT and "'X' is still [2, 4000000]" in r.stderr, r.stdout + r.stderr
    r = run_pvcert("verify", case, "--engine", "whole-graph")   # refused at parse
    assert r.returncode == LIMIT, r.stdout + r.stderr
    assert "read by 'n0' (aten.mean.dim)" in r.stderr and "--staged" in r.stderr, r.stderr


def _mm_case(tmp_path, n: int) -> str:
    """``Y = X @ W`` against two ranks each holding half of X's rows: the rows are a map axis."""
    s = GraphBuilder("mm")
    s.input("X", [n, 2], "activation")
    s.input("W", [2, 2], "parameter")
    s.node("aten.mm.default", ["X", "W"], "Y")
    s.output("Y")
    g = GraphBuilder("mm_tp", 2)
    for r in range(2):
        g.input(f"x@r{r}", [n // 2, 2], "activation", rank=r)
        g.input(f"w@r{r}", [2, 2], "parameter", rank=r)
        g.node("aten.mm.default", [f"x@r{r}", f"w@r{r}"], f"y@r{r}", rank=r)
        g.output(f"y@r{r}")
    (tmp_path / "spec.json").write_text(json.dumps(s.obj))
    (tmp_path / "impl.json").write_text(json.dumps(g.obj))
    case = {"format": "pvcert-case", "version": 1, "name": "bigmm", "spec": "spec.json", "impl": "impl.json",
            "input_relation": {"X": ["concat(x@r0, x@r1, dim=0)"], "W": ["w@r0", "w@r1"]},
            "expect": {"Y": ["concat(y@r0, y@r1, dim=0)"]}}
    (tmp_path / "case.json").write_text(json.dumps(case))
    return str(tmp_path / "case.json")


def test_verify_reduces_a_case_too_large_to_decide_element_by_element(tmp_path):
    cert = tmp_path / "c.json"
    r = run_pvcert("verify", _mm_case(tmp_path, 300_000), "--emit-cert", str(cert))   # 600,000-element X
    assert r.returncode == 0 and "verifying on the shape-reduced graphs" in r.stdout, r.stdout + r.stderr
    assert "reduced to 76 of 2400012 elements" in r.stdout   # 4 rows, apart from W's 2 x 2
    r = run_pvcert("replay", str(cert))
    assert r.returncode == 0 and "(staged-refinement): ACCEPT" in r.stdout, r.stdout
    assert "stage by stage at reduced shapes" in r.stdout, r.stdout


def test_verify_says_why_a_case_too_large_is_not_reduced(tmp_path):
    """A case too large to decide element by element, with an operator staged claims do not trust (``aten.abs``, of
    the ATen family): the first line says the graphs are not reduced and why, before the full-size run."""
    s, g = GraphBuilder("abs"), GraphBuilder("abs_tp", 2)
    s.input("X", [300_000, 2], "activation")
    s.node("aten.abs.default", ["X"], "Y")
    s.output("Y")
    for r in range(2):
        g.input(f"x@r{r}", [150_000, 2], "activation", rank=r)
        g.node("aten.abs.default", [f"x@r{r}"], f"y@r{r}", rank=r)
        g.output(f"y@r{r}")
    (tmp_path / "spec.json").write_text(json.dumps(s.obj))
    (tmp_path / "impl.json").write_text(json.dumps(g.obj))
    (tmp_path / "case.json").write_text(json.dumps({
        "format": "pvcert-case", "version": 1, "name": "bigabs", "spec": "spec.json", "impl": "impl.json",
        "input_relation": {"X": ["concat(x@r0, x@r1, dim=0)"]}, "expect": {"Y": ["concat(y@r0, y@r1, dim=0)"]}}))
    r = run_pvcert("verify", str(tmp_path / "case.json"), "--timeout", "120")
    assert "bigabs: a tensor has more than 200000 elements, and the graphs are not reduced: " in r.stdout and \
        "aten.abs.default: not an operator this kind of claim trusts" in r.stdout, r.stdout + r.stderr
    assert "verifying on the shape-reduced graphs" not in r.stdout
    last = r.stderr.strip().splitlines()[-1]   # the LIMIT that stands says why the reduction did not apply
    assert r.returncode == 3 and "LIMIT" in last and "not reduced: bigabs (--staged): aten.abs.default" in last, last
