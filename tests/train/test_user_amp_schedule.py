"""A user's DDP step under ``torch.autocast`` (bf16) and with an LR scheduler (issue 16): both verify;
the autocast claim states that bf16 rounding is not modelled (values over the reals), and the
scheduler's current learning rate is what the step uses."""

from __future__ import annotations

import os
import sys
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from certificates.replay import replay
from verifier import certificate
from verifier.capture.case import capture_case
from verifier.refine import infer
from verifier.train.user import ddp_case

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))
import ddp_adamw_user as example  # noqa: E402


def _adamw(scheduled: bool):
    def make(params):
        opt = torch.optim.AdamW(params, lr=1e-2)
        if scheduled:   # resumed at the scheduler's third step: lr = 1e-2 / 4
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 0.5 ** k)
            with warnings.catch_warnings():   # "scheduler stepped before the optimizer": a resumed run
                warnings.simplefilter("ignore")
                sched.step()
                sched.step()
        return opt
    return make


def _step(amp: bool, lr: float | None = None):
    def step(model, opt, x, y):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = F.mse_loss(model(x[0]).float(), y[0])
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        if lr is not None:
            opt.param_groups[0]["lr"] = lr
        opt.step()
        return loss
    return step


def _case(step, scheduled: bool):
    return ddp_case("variant", example.MLP, _adamw(scheduled), step, example.WORLD,
                    {"x": (1, example.BATCH, example.D_IN), "y": (1, example.BATCH, example.D_OUT)})


def test_autocast_step_verifies_and_its_claim_says_bf16_is_not_modelled(tmp_path):
    case = capture_case(_case(_step(amp=True), scheduled=False))
    assert any(t["dtype"] == "bfloat16" for t in case.spec["tensors"].values())
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message
    path = str(tmp_path / "c.json")
    certificate.write(certificate.per_operator_certificate(inf), path)
    (res,) = replay(path)
    assert res.ok and "bfloat16 rounding not modelled" in res.shown[-1]


@pytest.mark.parametrize("impl_lr", [None, 1e-2])
def test_scheduled_learning_rate_is_the_one_used(impl_lr):
    """The spec runs at the scheduled lr (1e-2 / 4); an impl that resets it to 1e-2 is declined."""
    c = _case(_step(amp=False), scheduled=True)
    c.impl = lambda rank, world, built=c.impl: (built()[0], _bugged_call(impl_lr)) if impl_lr else built()
    inf = infer(capture_case(c))
    assert inf.verified == (impl_lr is None), inf.failure and inf.failure.message


def _bugged_call(lr: float):
    from verifier.train.user import step_call
    return step_call(_step(amp=False, lr=lr), _adamw(True))
