"""A user's step resumed after earlier optimizer steps (issue 16): the optimizer state is an input and
an output, Adam's second moment is sampled non-negative because the math needs it (inferred, never
declared by hand), and the step verifies, replays and declines its bugs."""

from __future__ import annotations

import os
import sys

import pytest
import torch

from certificates.limits import Limits
from certificates.replay import replay
from verifier import certificate, direct
from verifier.capture.case import capture_case
from verifier.capture.sampling import nonnegative_inputs
from verifier.refine import infer
from verifier.train.user import ddp_case

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))
import ddp_adamw_user as example  # noqa: E402

OPTIMIZERS = {"adamw": example.adamw, "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)}


def _case(opt: str, bug: str | None = None):
    step = example.train_step if bug is None else lambda m, o, x, y: example.train_step(m, o, x, y, bug)
    return ddp_case("resumed", example.MLP, OPTIMIZERS[opt], step, example.WORLD,
                    {"x": (example.MICRO, example.BATCH, example.D_IN),
                     "y": (example.MICRO, example.BATCH, example.D_OUT)}, resume=3)


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_resumed_step_verifies_and_replays(opt, tmp_path):
    case = capture_case(_case(opt))
    state = [t for t in case.spec["inputs"] if t.startswith("state.")]
    assert state and all(f"new.{t}" in case.expect for t in state)
    ranged = {t for t, v in case.spec["tensors"].items() if "range" in v}
    assert ranged == ({t for t in state if t.startswith("state.exp_avg_sq.")} if opt == "adamw" else set())
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message
    path = str(tmp_path / "c.json")
    certificate.write(certificate.per_operator_certificate(inf), path)
    (res,) = replay(path)
    assert res.ok, res.detail
    assert not any("integer ranges" in line for line in res.shown)   # float ranges only guide sampling


@pytest.mark.parametrize("bug", ["no_scale", "stale"])
def test_resumed_step_bug_is_refuted(bug):
    inf = infer(capture_case(_case("adamw", bug)))
    assert not inf.verified and inf.failure.node is not None
    assert direct.refute(inf.prepared, 0, Limits()) is not None


def _graph(nodes: list, inputs: list[str]) -> dict:
    tensors = {t: {"shape": [2], "dtype": "float32"} for n in nodes for t in n["inputs"] + n["outputs"]}
    return {"inputs": inputs, "tensors": tensors, "nodes": nodes}


def test_nonnegative_inputs_follow_only_sign_keeping_operations():
    def node(target, ins, out, **attrs):
        return {"target": target, "inputs": ins, "outputs": [out], "attrs": attrs}
    kept = [node("aten.mul.Scalar", ["v"], "a", other=0.99), node("aten.mul.Tensor", ["g", "g"], "b"),
            node("aten.add.Tensor", ["a", "b"], "c"), node("aten.sqrt.default", ["c"], "d")]
    assert nonnegative_inputs(_graph(kept, ["v", "g"])) == ["v"]
    lost = [node("aten.sub.Tensor", ["v", "g"], "c"), node("aten.sqrt.default", ["c"], "d")]
    assert nonnegative_inputs(_graph(lost, ["v", "g"])) == []
    negative = [node("aten.mul.Scalar", ["v"], "a", other=-1.0), node("aten.log.default", ["a"], "d")]
    assert nonnegative_inputs(_graph(negative, ["v"])) == []
