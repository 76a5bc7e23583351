"""Correct training-step plans verify with the per-operator engine and their certificates replay."""

import pytest

pytest.importorskip("torch")

from verifier.train.models import ModelConfig  # noqa: E402
from verifier.train import plan  # noqa: E402
from verifier.train.plan import ParallelConfig, TrainCase  # noqa: E402


def _case(module: str, **kw) -> TrainCase:
    import importlib

    return importlib.import_module(f"examples.train.{module[:-3]}").make_case(**kw)


def _verify(tc: TrainCase, tmp_path, capsys) -> str:
    from verifier.cli import main

    cap = plan.plan_case(tc)
    path, cert = tmp_path / "case.json", tmp_path / "cert.json"
    plan.write_case(cap.case, str(path))
    rc = main(["verify", str(path), "--emit-cert", str(cert)])
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    assert main(["replay", str(cert)]) == 0, capsys.readouterr().out[-3000:]
    return out


def test_coords_megatron_order():
    p = ParallelConfig(dp=2, tp=2, pp=2)
    assert [p.coords(r) for r in range(4)] == [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0)]
    assert all(p.rank(*p.coords(r)) == r for r in range(p.world))


def test_unsupported_plans_are_refused():
    with pytest.raises(ValueError, match="divisible by pp"):
        plan.check(ModelConfig(layers=3), ParallelConfig(pp=2))
    with pytest.raises(ValueError, match="ZeRO-1"):
        plan.check(ModelConfig(), ParallelConfig(dp=2, tp=2, zero1=True))
    with pytest.raises(ValueError, match="sequence parallelism"):
        plan.check(ModelConfig(), ParallelConfig(tp=1, sp=True))
    with pytest.raises(ValueError, match="sequence parallelism"):
        plan.check(ModelConfig(kind="moe"), ParallelConfig(tp=2, sp=True))
    with pytest.raises(ValueError, match="sequence parallelism"):
        plan.check(ModelConfig(seq=3), ParallelConfig(tp=2, sp=True))
    with pytest.raises(ValueError, match="rope"):
        plan.check(ModelConfig(), ParallelConfig(tp=2, sp=True, rope="nope"))
    plan.check(ModelConfig(), ParallelConfig(tp=2, sp=True))


def test_lineage_names_every_input_and_output():
    tc = _case("llama_plan.py", dp=2, tp=1, pp=2, micro_batches=2)
    rel, exp = plan._lineage(tc)
    assert rel["x"] == ["concat(x@r0, x@r1, dim=1)"] and rel["y"] == ["concat(y@r2, y@r3, dim=1)"]
    assert rel["layers.1.q"] == ["layers.1.q@r2", "layers.1.q@r3"]
    assert exp["loss"] == ["loss@r2", "loss@r3"] and len(exp["grad_norm"]) == 4


def test_sp_lineage_shards_the_sequence():
    tc = _case("llama_plan.py", dp=2, tp=2, pp=2, micro_batches=2, sp=True)
    rel, exp = plan._lineage(tc)
    assert rel["x"] == ["concat(concat(x@r0, x@r1, dim=2), concat(x@r2, x@r3, dim=2), dim=1)"]
    assert rel["y"] == ["concat(concat(y@r4, y@r5, dim=2), concat(y@r6, y@r7, dim=2), dim=1)"]
    assert rel["layers.0.n1"] == [f"layers.0.n1@r{r}" for r in range(4)]
    assert exp["loss"] == ["loss@r4", "loss@r5", "loss@r6", "loss@r7"]


def test_dp1_tp2_sp_mb2_verifies(tmp_path, capsys):
    """Megatron sequence parallelism: RoPE after the all_gather (full sequence)."""
    out = _verify(_case("llama_plan.py", dp=1, tp=2, pp=1, micro_batches=2, sp=True), tmp_path, capsys)
    assert "VERIFIED" in out


def test_dp2_mb2_sgd_verifies(tmp_path, capsys):
    out = _verify(_case("llama_plan.py", dp=2, tp=1, pp=1, micro_batches=2, layers=1), tmp_path, capsys)
    assert "VERIFIED" in out


def test_dp2_tp2_pp2_mb2_verifies(tmp_path, capsys):
    """The peer's reference configuration: 2 layers, DP x TP x PP with 2 micro-batches."""
    out = _verify(_case("llama_plan.py", dp=2, tp=2, pp=2, micro_batches=2), tmp_path, capsys)
    assert "VERIFIED" in out


@pytest.mark.slow
@pytest.mark.parametrize("module,kw", [
    ("llama_plan.py", dict(dp=2, tp=1, pp=2, micro_batches=2)),
    ("llama_plan.py", dict(dp=1, tp=2, pp=1, micro_batches=4, optimizer="adam")),
    ("llama_plan.py", dict(dp=1, tp=2, pp=2, micro_batches=2)),
    ("llama_plan.py", dict(dp=2, tp=1, pp=1, micro_batches=2, optimizer="adam", zero1=True)),
    ("llama_plan.py", dict(dp=2, tp=1, pp=1, micro_batches=2, zero1=True)),
    ("moe_plan.py", dict(dp=2, ep=2, micro_batches=2)),
    ("llama_plan.py", dict(dp=2, tp=2, pp=2, micro_batches=2, sp=True)),
    ("llama_plan.py", dict(dp=1, tp=2, pp=1, micro_batches=2, sp=True, rope="sharded")),
    ("llama_plan.py", dict(dp=2, tp=2, pp=2, micro_batches=2, sp=True, rope="sharded")),
], ids=["dp2-pp2-mb2", "tp2-mb4-adam", "tp2-pp2-mb2", "dp2-zero1-adam", "dp2-zero1-sgd", "moe-ep2",
        "dp2-tp2-pp2-mb2-sp", "tp2-mb2-sp-sharded-rope", "dp2-tp2-pp2-mb2-sp-sharded-rope"])
def test_plan_verifies_and_replays(module, kw, tmp_path, capsys):
    assert "VERIFIED" in _verify(_case(module, **kw), tmp_path, capsys)


def test_pvcert_verify_routes_a_templated_plan(tmp_path, capsys):
    from verifier.cli import main

    mod = tmp_path / "tpl.py"
    mod.write_text("from verifier.train.template import TemplateCase\n\n\ndef make_template():\n"
                   "    return TemplateCase('tiny_template', 2, 2, 2, 2, 2, seq=8, hidden=8)\n")
    cert = tmp_path / "cert.json"
    assert main(["verify", str(mod), "--emit-cert", str(cert)]) == 0
    assert "VERIFIED tiny_template: 8 ranks" in capsys.readouterr().out
    assert main(["replay", str(cert)]) == 0
    mod.write_text("def make_template():\n    return 3\n")
    assert main(["verify", str(mod)]) == 2
    assert "TemplateCase" in capsys.readouterr().err
