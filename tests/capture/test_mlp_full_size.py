"""megatron-core's transformer MLP at GPT-2 small's widths and sequence 1024, forward and backward, through
``pvcert verify`` as a user runs it (examples/cases/megatron_mlp.py): VERIFIED at full size on the reduced
graphs (its contracted and summed axes at two divisors, docs/stages.md "Summed axes"), the certificate ACCEPTed;
so is the SwiGLU MLP at Llama-2-7B's widths (hidden 4096, FFN 11,008; its fused [gate; up] projection related
by the ranks' halves); the MLP without its all-reduce REFUTED at full size and located at the bias add after
FC2. The same holds for transformers' LlamaMLP parallelized by a DTensor TP plan."""

import json

import pytest

from conftest import run_pvcert


def _case(tmp_path, call: str) -> str:
    pytest.importorskip("megatron.core")
    path = tmp_path / "case.py"
    path.write_text(f"from examples.cases.megatron_mlp import FULL, LLAMA, make_case\nCASE = {call}\n")
    return str(path)


@pytest.mark.parametrize("world, size, name", [(2, "FULL", "megatron_mlp_full"), (8, "FULL", "megatron_mlp_full"),
                                               (2, "LLAMA", "megatron_mlp_llama_full")])
def test_full_size_mlp_is_verified_and_replayed(world, size, name, tmp_path):
    cert = tmp_path / "c.json"
    r = run_pvcert("verify", _case(tmp_path, f"make_case({world}, size={size})"), "--emit-cert", str(cert))
    assert r.returncode == 0 and f"VERIFIED {name}:" in r.stdout, r.stdout + r.stderr
    assert "verifying on the shape-reduced graphs" in r.stdout
    stages = json.loads(cert.read_text())["evidence"][name]["stages"]
    decided = sum(k for s in stages for m, k in s["methods"].items() if m != "congruence")
    assert decided < 100_000   # every stage decided far below its 10^8 elements, or held by congruence
    r = run_pvcert("replay", str(cert))
    assert r.returncode == 0 and "(staged-refinement): ACCEPT" in r.stdout, r.stdout + r.stderr


def test_full_size_mlp_without_its_all_reduce_is_refuted_at_its_operator(tmp_path):
    r = run_pvcert("verify", _case(tmp_path, "make_case(2, bug='no_all_reduce', size=FULL)"))
    assert r.returncode == 1 and "REFUTED megatron_mlp_full_no_all_reduce" in r.stdout, r.stdout + r.stderr
    assert "located by value at full size: spec operator 'out' (aten.add.Tensor)" in r.stdout, r.stdout


def test_transformers_llama_mlp_through_a_dtensor_plan_is_verified_at_full_size(tmp_path):
    """transformers' LlamaMLP at Llama-2-7B's widths, tensor-parallel by ColwiseParallel / RowwiseParallel: the
    parameters' relations come from the DTensor placements (examples/cases/hf_llama_mlp_tp.py)."""
    pytest.importorskip("transformers")
    path = tmp_path / "case.py"
    path.write_text("from examples.cases.hf_llama_mlp_tp import FULL, make_case\nCASE = make_case(2, size=FULL)\n")
    cert = tmp_path / "c.json"
    r = run_pvcert("verify", str(path), "--emit-cert", str(cert))
    assert r.returncode == 0 and "VERIFIED hf_llama_mlp_tp2_full:" in r.stdout, r.stdout + r.stderr
    r = run_pvcert("replay", str(cert))
    assert r.returncode == 0 and "(staged-refinement): ACCEPT" in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
def test_transformers_llama_mlp_without_its_all_reduce_is_refuted_at_full_size(tmp_path):
    """RowwiseParallel(output_layouts=Partial()) on down_proj: REFUTED by both graphs run at full size (38 s)."""
    pytest.importorskip("transformers")
    path = tmp_path / "case.py"
    path.write_text("from examples.cases.hf_llama_mlp_tp import FULL, make_case\n"
                    "CASE = make_case(2, bug='no_all_reduce', size=FULL)\n")
    r = run_pvcert("verify", str(path))
    assert r.returncode == 1 and "REFUTED hf_llama_mlp_tp2_full_no_all_reduce" in r.stdout, r.stdout + r.stderr
