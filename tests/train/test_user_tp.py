"""A user's TP+DP step with DTensor on a 2-D mesh (examples/train/tp_dp_user.py): the lineage comes
from the placements, the step verifies and replays; each planted bug is refuted at the operator
where it shows, and its program put into the control's certificate is REJECTed by replay. The same
step with AdamW verifies and replays too, and a planted bug in it is refuted."""

from __future__ import annotations

import os
import sys

import pytest

from certificates.limits import Limits
from verifier import certificate, direct
from verifier.capture.case import capture_case
from verifier.refine import infer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "soundness"))
import forge  # noqa: E402
import tp_dp_user as example  # noqa: E402


@pytest.fixture(scope="module")
def control():
    case = capture_case(example.make_case())
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message
    return case, inf, certificate.per_operator_certificate(inf)


def test_lineage_from_placements(control):
    """Parameters and updated parameters: one copy per tp group (from the DTensor placements, every
    rank's sub-mesh); the batch: concatenated over dp, the same on every tp rank; loss: the dp mean."""
    case, _, _ = control
    assert case.input_relation["up.weight"] == ["concat(up.weight@r0, up.weight@r1, dim=0)",
                                                "concat(up.weight@r2, up.weight@r3, dim=0)"]
    assert case.input_relation["down.weight"][1] == "concat(down.weight@r2, down.weight@r3, dim=1)"
    assert case.input_relation["down.bias"] == [f"down.bias@r{r}" for r in range(4)]
    assert case.input_relation["x"] == ["concat(x@r0, x@r2, dim=0)", "concat(x@r1, x@r3, dim=0)"]
    assert case.expect["new.up.bias"] == ["concat(new.up.bias@r0, new.up.bias@r1, dim=0)",
                                          "concat(new.up.bias@r2, new.up.bias@r3, dim=0)"]
    assert case.expect["loss"] == ["mean(loss@r0, loss@r2)", "mean(loss@r1, loss@r3)"]
    groups = sorted(n["group"] for n in case.impl["nodes"] if "group" in n)
    assert groups == [[0, 1]] + [[0, 2]] * 4 + [[1, 3]] * 4 + [[2, 3]]   # tp forward, dp gradients


def test_user_tp_dp_step_verifies_and_replays(control, tmp_path):
    _, _, cert = control
    ok, why = forge.verdict(cert, tmp_path)
    assert ok, why


BUG_AT = {"no_allreduce": "mm_1", "wrong_group": "mm_1", "no_scale": "new.up.weight", "stale": "new.up.weight"}


@pytest.mark.parametrize("bug", sorted(example.BUGS))
def test_planted_bug_is_refuted_at_the_operator(bug, control, tmp_path):
    """Not verified, stopped where the bug shows: without the dp average (or with it over tp) the
    down projection's weight gradient covers half the batch; summed (2x) or averaged into a copy,
    the first parameter update differs. Each has a concrete counterexample."""
    case = capture_case(example.make_case(bug))
    inf = infer(case)
    assert not inf.verified and inf.failure.node is not None
    assert inf.failure.node.name == BUG_AT[bug]
    assert direct.refute(inf.prepared, 0, Limits()) is not None
    _, _, cert = control
    ok, why = forge.verdict(forge.embed(cert, case.spec, case.impl), tmp_path)
    assert not ok, why


@pytest.fixture(scope="module")
def adamw_control():
    case = capture_case(example.make_case(optimizer="adamw"))
    inf = infer(case, limits=Limits(seconds=120))
    assert inf.verified, inf.failure and inf.failure.message
    return case, inf, certificate.per_operator_certificate(inf)


def test_user_tp_dp_adamw_step_verifies_and_replays(adamw_control, tmp_path):
    """AdamW's zero moments equal every arrangement of the impl's zeros; the engine keeps each DP
    replica's own copy first (``infer._disjoint_first``), so both replicas' moments, square roots
    and updates are related and the expectation on every copy is met (it ran out of time before)."""
    case, inf, cert = adamw_control
    assert inf.seconds < 60
    assert "concat(zeros_like@r2, zeros_like@r3, dim=0)" in [str(e) for e in inf.relation["zeros_like"]][:2]
    ok, why = forge.verdict(cert, tmp_path)
    assert ok, why


ADAMW_BUG_AT = {"no_scale": "sub_2", "stale": "mul_6"}


@pytest.mark.parametrize("bug", sorted(ADAMW_BUG_AT))
def test_planted_bug_with_adamw_is_refuted(bug, adamw_control, tmp_path):
    """Summed over dp (2x): Adam's ``g - m`` differs (``m`` is a free hypothesis there, so
    ``(2g - m) / 2`` is not ``g - m``). Stepping on the local gradients: ``g - m`` and its
    linear successors are the DP mean of the replicas' own (a sound, true relation), the squared
    gradient ``(1 - b2) g g`` is not. Each has a counterexample; replay REJECTs the program in the
    control's certificate."""
    case = capture_case(example.make_case(bug, optimizer="adamw"))
    inf = infer(case, limits=Limits(seconds=120))
    assert not inf.verified and inf.failure.node is not None
    assert inf.failure.node.name == ADAMW_BUG_AT[bug]
    assert direct.refute(inf.prepared, 0, Limits()) is not None
    _, _, cert = adamw_control
    ok, why = forge.verdict(forge.embed(cert, case.spec, case.impl), tmp_path)
    assert not ok, why
