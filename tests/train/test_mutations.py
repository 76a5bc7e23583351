"""Every mutation category is rejected: the engine names the failing operator (exit 1), or
capture stops with a structural error."""

import pytest

pytest.importorskip("torch")

from examples.train.llama_plan import make_case  # noqa: E402
from verifier.capture.convert import CaptureError  # noqa: E402
from verifier.train import mutate, plan  # noqa: E402


def test_mutations_listed_and_checked():
    assert len(mutate.MUTATIONS) >= 9
    tc = make_case(dp=1, tp=2, pp=1)
    with pytest.raises(ValueError, match="needs dp > 1"):
        mutate.apply(tc, "drop_grad_allreduce")
    with pytest.raises(ValueError, match="unknown mutation"):
        mutate.apply(tc, "nope")
    with pytest.raises(ValueError, match="needs sp"):
        mutate.apply(make_case(dp=1, tp=2, pp=1, sp=True), "rope_not_sliced")   # RoPE on the full sequence
    m = mutate.apply(make_case(dp=1, tp=2, pp=1, sp=True, rope="sharded"), "rope_not_sliced")
    assert m.bugs.rope_not_sliced
    m = mutate.apply(make_case(), "early_grad_reduce")
    assert m.bugs.reduce_after == 0 and m.name.endswith("+early_grad_reduce")


def _rejected(tc, tmp_path, capsys) -> str:
    from verifier.cli import main

    try:
        cap = plan.plan_case(tc)
    except CaptureError as e:      # the graph breaks structurally (e.g. unmatched collectives)
        return f"structural: {e}"
    path = tmp_path / "case.json"
    plan.write_case(cap.case, str(path))
    rc = main(["verify", str(path)])
    out = capsys.readouterr().out
    assert rc == 1, out[-2000:]
    assert "REFUTED" in out and ("first unrelated spec operator" in out or "expectation" in out), out[-2000:]
    return out


def test_missing_allreduce_rejected(tmp_path, capsys):
    tc = mutate.apply(make_case(dp=2, tp=1, pp=1, micro_batches=2, layers=1), "drop_grad_allreduce")
    assert "REFUTED" in _rejected(tc, tmp_path, capsys)


def test_rope_not_sliced_rejected(tmp_path, capsys):
    """Sharded RoPE under SP, every rank using table rows 0 .. S/tp: rejected at the first
    rotary multiplication with the cos table (layer 0, forward)."""
    tc = mutate.apply(make_case(dp=1, tp=2, pp=1, micro_batches=1, layers=1, sp=True, rope="sharded"),
                      "rope_not_sliced")
    out = _rejected(tc, tmp_path, capsys)
    assert "first unrelated spec operator" in out and "aten.mul.Tensor" in out and "cos@r1" in out, out[-2000:]


def _mutation_case(name):
    if name == "rope_not_sliced":
        return make_case(dp=2, tp=2, pp=2, micro_batches=2, sp=True, rope="sharded")
    return make_case(dp=2, tp=2, pp=2, micro_batches=2)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(mutate.MUTATIONS))
def test_mutation_rejected(name, tmp_path, capsys):
    tc = mutate.apply(_mutation_case(name), name)
    out = _rejected(tc, tmp_path, capsys)
    assert out.startswith("structural") or "REFUTED" in out
