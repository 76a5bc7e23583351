"""megatron-core's whole GPTModel at full size (vocabulary 32,768, sequence 1,024, hidden 768, 16 heads, forward and
backward) at TP2: VERIFIED by ``pvcert verify`` on the shape-reduced graphs and its certificate ACCEPTed
(docs/benchmarks.md, "Full size: megatron-core GPTModel"). Minutes each: slow."""

import pytest

from conftest import run_pvcert


@pytest.mark.slow
@pytest.mark.parametrize("layers", [1, 2, 8])
def test_full_size_gpt_is_verified_and_replayed(layers, tmp_path):
    pytest.importorskip("megatron.core")
    path, cert = tmp_path / "case.py", tmp_path / "c.json"
    path.write_text(f"from examples.cases.megatron_gpt import FULL, make_case\nCASE = make_case(2, size=FULL, "
                    f"layers={layers})\n")
    r = run_pvcert("verify", str(path), "--emit-cert", str(cert), timeout=1200)
    assert r.returncode == 0 and "VERIFIED megatron_gpt_full" in r.stdout, r.stdout + r.stderr
    r = run_pvcert("replay", str(cert), timeout=600)
    assert r.returncode == 0 and "(staged-refinement): ACCEPT" in r.stdout, r.stdout + r.stderr
