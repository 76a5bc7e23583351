"""transformers Llama (SDPA, GQA, forward and backward) and Qwen2 (forward) at full size (vocabulary 32,000, sequence
1,024, hidden 768 / 1,024), called as ``model(input_ids)`` with the causal mask and the positions built in the graph,
tensor-parallel through DTensor: VERIFIED by ``pvcert verify`` on the shape-reduced graphs (the in-graph positions and
mask cut out for inference, ``verifier/stages/reduce.py`` ``_cut``, and evaluated exactly by the checker,
``stages.constants``) and the certificate ACCEPTed (docs/benchmarks.md). About 15 s each with the replay."""

import pytest

from conftest import run_pvcert

pytest.importorskip("transformers", reason="transformers is not installed")


@pytest.mark.parametrize("model", ["llama", pytest.param("qwen2", marks=pytest.mark.slow)])
def test_full_size_transformers_model_is_verified_and_replayed(model, tmp_path):
    path, cert = tmp_path / "case.py", tmp_path / "c.json"
    path.write_text(f"from examples.cases.hf_{model}_sdpa_tp import FULL, make_case\nCASE = make_case(2, size=FULL)\n")
    r = run_pvcert("verify", str(path), "--emit-cert", str(cert), timeout=600)
    assert r.returncode == 0 and f"VERIFIED hf_{model}_sdpa_tp2_full" in r.stdout, r.stdout + r.stderr
    r = run_pvcert("replay", str(cert), timeout=600)
    assert r.returncode == 0 and "(staged-refinement): ACCEPT" in r.stdout, r.stdout + r.stderr
