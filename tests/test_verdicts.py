"""Three verdicts (docs/exit-codes.md): VERIFIED 0, REFUTED 1 only with an executed counterexample
(inputs and differing values printed), UNKNOWN 4 when neither a proof nor a counterexample was found.

Incompleteness is never reported as a bug: a correct program the per-operator engine cannot relate
is UNKNOWN (and the whole-graph engine verifies it); a bug is REFUTED by every engine, and the correct
program's certificate carrying the bug is rejected by replay.
"""

import copy
import hashlib
import json
import os

import numpy as np
import pytest

from certificates.limits import Limits, canonical_bytes
from certificates.replay import replay
from conftest import ROOT, run_pvcert
from verifier import direct
from verifier.case import load_case
from verifier.ir import GraphBuilder
from verifier.verdict import REFUTED, Verdict

BUG = "examples/tp_mlp/case_missing_allreduce.json"
BUGS = ["grad_accum_mean", "moe_aux_loss_tp", "moe_router_grad_tp_sp", "moe_sp_sharded_experts",
        "pad_slice_gather", "rope_sp", "row_parallel_config", "sp_layernorm_grad"]


def _write_case(tmp_path, spec: GraphBuilder, impl: GraphBuilder, rin: dict, expect: dict) -> str:
    (tmp_path / "spec.json").write_text(json.dumps(spec.build()))
    (tmp_path / "impl.json").write_text(json.dumps(impl.build()))
    case = {"format": "pvcert-case", "version": 1, "name": "t", "spec": "spec.json", "impl": "impl.json",
            "input_relation": rin, "expect": expect}
    (tmp_path / "case.json").write_text(json.dumps(case))
    return str(tmp_path / "case.json")


def _detour(tmp_path) -> str:
    """Correct, but the spec's intermediate ``T = X * X`` has no impl counterpart: ``Y = (X + T) - T = X``."""
    s = GraphBuilder("detour")
    s.input("X", [2, 2], "activation")
    s.node("aten.mul.Tensor", ["X", "X"], "T")
    s.node("aten.add.Tensor", ["X", "T"], "V")
    s.node("aten.sub.Tensor", ["V", "T"], "Y")
    s.output("Y")
    g = GraphBuilder("copy", 2)
    for r in range(2):
        g.input(f"x@r{r}", [2, 2], "activation", rank=r)
        g.node("aten.clone.default", [f"x@r{r}"], f"y@r{r}", rank=r)
        g.output(f"y@r{r}")
    return _write_case(tmp_path, s, g, {"X": ["x@r0", "x@r1"]}, {"Y": ["y@r0", "y@r1"]})


@pytest.mark.parametrize("engine", [[], ["--engine", "whole-graph"], ["--staged"]])
def test_bug_is_refuted_with_executed_values(engine):
    r = run_pvcert("verify", BUG, *engine)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REFUTED tp_mlp_missing_allreduce" in r.stdout and "counterexample (executed): Y[" in r.stdout
    assert "X = [" in r.stdout and "VERIFIED" not in r.stdout, r.stdout


def test_counterexample_values_are_what_torch_computes():
    """The counterexample's inputs run through the two programs again, in torch: the values printed."""
    torch = pytest.importorskip("torch")
    f = torch.nn.functional
    r = direct.prepare(load_case(os.path.join(ROOT, BUG)), Limits())
    cx = direct.refute(r, 0, Limits())
    assert cx is not None and cx.output == "Y" and cx.expr in ("p@r0", "p@r1") and cx.differ > 0
    s_vals, _ = direct.numeric_values(r, cx.seed, Limits(), cx.scale)
    x, w1, w2 = (torch.tensor(np.asarray(s_vals[t], dtype=float)) for t in ("X", "W1", "W2"))
    half = w1.shape[0] // 2   # W1 = concat(w1@r0, w1@r1, dim=0), W2 = concat(w2@r0, w2@r1, dim=1)
    rank = int(cx.expr[-1])
    want = f.linear(f.gelu(f.linear(x, w1)), w2)[cx.index]
    got = f.linear(f.gelu(f.linear(x, w1[rank * half:(rank + 1) * half])), w2[:, rank * half:(rank + 1) * half])
    assert np.isclose(float(want), cx.want) and np.isclose(float(got[cx.index]), cx.got)
    assert not np.isclose(cx.want, cx.got)


def test_correct_program_not_proved_is_unknown_not_refuted(tmp_path):
    path = _detour(tmp_path)
    r = run_pvcert("verify", path, "--emit-cert", str(tmp_path / "c.json"))
    assert r.returncode == 4, r.stdout + r.stderr
    assert "UNKNOWN t: no relation for spec operator" in r.stdout and "no counterexample" in r.stdout
    assert "what would help" in r.stdout and "REFUTED" not in r.stdout and not (tmp_path / "c.json").exists()
    r = run_pvcert("verify", path, "--engine", "whole-graph", "--emit-cert", str(tmp_path / "c.json"))
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr   # control: it is correct
    assert run_pvcert("replay", str(tmp_path / "c.json")).returncode == 0


def test_all_missing_input_relations_named_in_one_unknown(tmp_path):
    s = GraphBuilder("mm")
    for t in ("X", "A", "B"):
        s.input(t, [2, 2], "activation")
    s.node("aten.mm.default", ["X", "A"], "T")
    s.node("aten.mm.default", ["T", "B"], "Y")
    s.output("Y")
    g = GraphBuilder("mm1", 1)
    for t in ("x", "a", "b"):
        g.input(f"{t}@r0", [2, 2], "activation", rank=0)
    g.node("aten.mm.default", ["x@r0", "a@r0"], "t@r0", rank=0)
    g.node("aten.mm.default", ["t@r0", "b@r0"], "y@r0", rank=0)
    g.output("y@r0")
    path = _write_case(tmp_path, s, g, {"X": ["x@r0"]}, {"Y": ["y@r0"]})
    for engine in ([], ["--engine", "whole-graph"], ["--staged"]):
        r = run_pvcert("verify", path, *engine)
        assert r.returncode == 4 and "UNKNOWN" in r.stderr and "spec input(s) A, B" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_bug_certificate_forged_from_the_control_is_rejected(tmp_path):
    good = tmp_path / "good.json"
    assert run_pvcert("verify", "examples/tp_mlp/case.json", "--emit-cert", str(good)).returncode == 0
    cert = json.loads(good.read_text())
    bug = json.load(open(os.path.join(ROOT, "examples/tp_mlp/impl_missing_allreduce.json")))
    forged = copy.deepcopy(cert)
    for art in forged["subject"]["artifacts"]:
        if art["id"] == "impl":
            art["embedded"] = bug
            art["sha256"] = hashlib.sha256(canonical_bytes(bug)).hexdigest()
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    assert all(r.ok for r in replay(str(good)))
    r = run_pvcert("replay", str(tmp_path / "forged.json"))
    assert r.returncode != 0 and "ACCEPT" not in r.stdout, r.stdout + r.stderr


def test_refuted_needs_evidence():
    with pytest.raises(ValueError, match="executed counterexample"):
        Verdict(REFUTED, "t", "differs")


@pytest.mark.parametrize("name", BUGS)
def test_bundled_bugs_are_refuted(name, tmp_path):
    """Each bundled bug (examples/bugs/, buggy version) is REFUTED with executed values."""
    pytest.importorskip("torch")
    mod = tmp_path / f"{name}_buggy.py"
    mod.write_text(f"from examples.bugs.{name} import make_case as _make\n\n\ndef make_case():\n"
                   f"    return _make(True)\n")
    r = run_pvcert("verify", str(mod), timeout=300)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr
    assert f"REFUTED {name}_buggy" in r.stdout and "counterexample (executed)" in r.stdout, r.stdout[-3000:]
