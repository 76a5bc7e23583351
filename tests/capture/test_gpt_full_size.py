"""megatron-core's whole GPTModel at full size (vocabulary 32,768, sequence 1,024, hidden 768, 16 heads, forward and
backward) at TP2 with 1, 2 and 8 layers and at TP4 and TP8 with 1: VERIFIED by ``pvcert verify`` on the shape-reduced
graphs and its certificate ACCEPTed (docs/benchmarks.md, "Full size: megatron-core GPTModel"). 1 layer TP2 takes
about a minute with its replay; the others are slow. At vocabulary 4,096 (about 30 s): a relation found at reduced
sizes that fails its stage is repaired by inferring again."""

import pytest

from conftest import run_pvcert


@pytest.mark.parametrize("world, layers", [(2, 1)] + [pytest.param(w, n, marks=pytest.mark.slow)
                                                      for w, n in [(2, 2), (2, 8), (4, 1), (8, 1)]])
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


def test_an_equation_that_fails_its_stage_is_banned_and_inference_runs_again(tmp_path, monkeypatch):
    """GPTModel, 1 layer, TP2, sequence 1,024, hidden 768, vocabulary 4,096. With one random run besides
    inference's own, inference at reduced sizes relates ``transpose_13`` (a head axis and a sequence axis cut to one
    length) by equations that fail their stage at full size; inference runs again without them and verifies,
    without the sequential engine (docs/stages.md, step 4). With ``RUNS`` (3) runs those equations are not kept."""
    pytest.importorskip("megatron.core")
    from verifier.case import load_case
    from types import SimpleNamespace

    from certificates import shapes
    from verifier.stages import reduce, run

    path = tmp_path / "case.py"
    path.write_text("from examples.cases.megatron_gpt import FULL, make_case\n"
                    "CASE = make_case(2, size=dict(FULL, vocab=4096))\n")
    case = load_case(str(path))
    res = run.verify_staged(case)
    assert res.verified and not res.fallback and run.summary(res)["banned"] == 0
    monkeypatch.setattr(run, "RUNS", 1)   # and the vocabulary kept at full size for inference, as when this was found
    monkeypatch.setattr(reduce, "shapes", SimpleNamespace(**{**vars(shapes), "indexed": lambda *a: None}))
    res = run.verify_staged(case)
    assert res.verified and not res.fallback and run.summary(res)["banned"] > 0
    assert {t for t, _ in res.banned} >= {"transpose_13"} and all(
        str(e) not in {x for t, x in res.banned if t == s} for s, es in res.relation.items() for e in es)
