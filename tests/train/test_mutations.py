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
    assert "REJECT" in out and ("first unrelated spec operator" in out or "expectation" in out), out[-2000:]
    return out


def test_missing_allreduce_rejected(tmp_path, capsys):
    tc = mutate.apply(make_case(dp=2, tp=1, pp=1, micro_batches=2, layers=1), "drop_grad_allreduce")
    assert "REJECT" in _rejected(tc, tmp_path, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(mutate.MUTATIONS))
def test_mutation_rejected(name, tmp_path, capsys):
    tc = mutate.apply(make_case(dp=2, tp=2, pp=2, micro_batches=2), name)
    out = _rejected(tc, tmp_path, capsys)
    assert out.startswith("structural") or "REJECT" in out
