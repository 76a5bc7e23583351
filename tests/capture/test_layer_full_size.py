"""A whole megatron-core transformer layer at full size (GPT-2 small's widths, sequence 1,024, forward and backward):
VERIFIED stage by stage and replayed; a planted bug REFUTED by an executed counterexample (docs/stages.md)."""

import json

import pytest

from conftest import run_pvcert


def _case(tmp_path, call: str) -> str:
    pytest.importorskip("megatron.core")
    path = tmp_path / "case.py"
    path.write_text(f"from examples.cases.megatron_layer import FULL, make_case\nCASE = {call}\n")
    return str(path)


@pytest.mark.parametrize("world", [2, 8])
def test_full_size_layer_is_verified_and_replayed(world, tmp_path):
    cert = tmp_path / "c.json"
    r = run_pvcert("verify", _case(tmp_path, f"make_case({world}, size=FULL)"), "--emit-cert", str(cert))
    assert r.returncode == 0 and "VERIFIED megatron_layer_full:" in r.stdout, r.stdout + r.stderr
    stages = json.loads(cert.read_text())["evidence"]["megatron_layer_full"]["stages"]
    held = {s["op"] for s in stages if "congruence" in s["methods"]}
    assert {"native_layer_norm_0", "native_layer_norm_backward_0", "_softmax", "_softmax_backward_data"} <= held, held
    r = run_pvcert("replay", str(cert))
    assert r.returncode == 0 and "(staged-refinement): ACCEPT" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("bug", ["no_all_reduce", pytest.param("attention_scale", marks=pytest.mark.slow)])
def test_full_size_layer_bug_is_refuted(bug, tmp_path):
    r = run_pvcert("verify", _case(tmp_path, f"make_case(2, bug={bug!r}, size=FULL)"))
    assert r.returncode == 1 and f"REFUTED megatron_layer_full_{bug}" in r.stdout, r.stdout + r.stderr
    assert "counterexample (executed)" in r.stdout
