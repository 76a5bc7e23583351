"""megatron-core's whole GPTModel at full size (vocabulary 32,768, sequence 1,024, hidden 768, 16 heads, forward and
backward) at TP2 with 1, 2 and 8 layers and at TP4 with 1: VERIFIED by ``pvcert verify`` on the shape-reduced graphs
and its certificate ACCEPTed (docs/benchmarks.md, "Full size: megatron-core GPTModel"). Minutes each: slow."""

import pytest

from conftest import run_pvcert


@pytest.mark.slow
@pytest.mark.parametrize("world, layers", [(2, 1), (2, 2), (2, 8), (4, 1)])
def test_full_size_gpt_is_verified_and_replayed(world, layers, tmp_path):
    pytest.importorskip("megatron.core")
    path, cert = tmp_path / "case.py", tmp_path / "c.json"
    path.write_text(f"from examples.cases.megatron_gpt import FULL, make_case\nCASE = make_case({world}, size=FULL, "
                    f"layers={layers})\n")
    r = run_pvcert("verify", str(path), "--emit-cert", str(cert), timeout=1200)
    assert r.returncode == 0 and "VERIFIED megatron_gpt_full" in r.stdout, r.stdout + r.stderr
    assert "sequential fallback" not in r.stdout   # re-inference repairs the relation found at reduced sizes
    r = run_pvcert("replay", str(cert), timeout=600)
    assert r.returncode == 0 and "(staged-refinement): ACCEPT" in r.stdout, r.stdout + r.stderr
