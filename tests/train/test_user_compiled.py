"""A user's step on ``torch.compile``'d modules (issue 16): captured from the code as written (the
compiled module's original), never refused for being compiled, and verified like the eager one."""

from __future__ import annotations

import os
import sys

import torch

from verifier.capture.case import capture_case
from verifier.refine import infer
from verifier.train.user import ddp_case

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))
import ddp_adamw_user as example  # noqa: E402


def _compiled_mlp() -> torch.nn.Module:
    m = example.MLP()
    m.l1 = torch.compile(m.l1)        # one block compiled, and the whole model
    return torch.compile(m)


def _case(step):
    return ddp_case("compiled", _compiled_mlp, example.adamw, step, example.WORLD,
                    {"x": (example.MICRO, example.BATCH, example.D_IN),
                     "y": (example.MICRO, example.BATCH, example.D_OUT)})


def test_compiled_model_verifies():
    inf = infer(capture_case(_case(example.train_step)))
    assert inf.verified, inf.failure and inf.failure.message
    # restored after capture: compiled code compiles again, a trace of it is refused again
    assert torch._dynamo.eval_frame._stance.stance == "default" and torch._dynamo.config.error_on_nested_fx_trace


def test_compiled_model_with_a_bug_is_declined():
    bugged = lambda model, opt, x, y: example.train_step(model, opt, x, y, "no_allreduce")  # noqa: E731
    inf = infer(capture_case(_case(bugged)))
    assert not inf.verified and inf.failure.node is not None
