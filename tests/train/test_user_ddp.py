"""A user's own DDP training step (examples/train/ddp_adamw_user.py): the mean convention with
AdamW and gradient clipping verifies and replays; each planted bug is declined at the operator
where it shows, and its program put into the control's certificate is REJECTed by replay."""

from __future__ import annotations

import os
import sys

import pytest
import torch
import torch.distributed as dist

from certificates.limits import Limits
from verifier import certificate, direct
from verifier.capture.case import capture_case
from verifier.capture.decomp import DECOMPOSITIONS
from verifier.refine import infer
from verifier.train.user import ddp_case

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "soundness"))
import ddp_adamw_user as example  # noqa: E402
import forge  # noqa: E402

aten = torch.ops.aten


@pytest.fixture(scope="module")
def control():
    case = capture_case(example.make_case())
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message
    return case, inf, certificate.per_operator_certificate(inf)


def test_clipping_and_adam_decompositions_match_torch():
    """The capture's 2-norm, clamp and lerp (identities over the reals) against torch's kernels."""
    torch.manual_seed(0)
    x, y, w = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64), torch.rand(3, 4)
    norm = DECOMPOSITIONS[aten.linalg_vector_norm.default]
    assert torch.allclose(norm(x), torch.linalg.vector_norm(x))
    assert torch.allclose(norm(x, 2, [1], True), torch.linalg.vector_norm(x, 2, [1], True))
    assert norm(x, 1) is NotImplemented and norm(x, dtype=torch.float32) is NotImplemented
    clamp = DECOMPOSITIONS[aten.clamp.default]
    for lo, hi in [(None, 0.5), (-0.25, None), (-0.5, 0.5)]:
        assert torch.allclose(clamp(x, lo, hi), torch.clamp(x, lo, hi))
    lerp = DECOMPOSITIONS[aten.lerp.Scalar]
    assert torch.allclose(lerp(x, y, 0.9), torch.lerp(x, y, 0.9))
    assert torch.allclose(DECOMPOSITIONS[aten.lerp.Tensor](x, y, w.double()), torch.lerp(x, y, w.double()))
    z = x.clone()
    DECOMPOSITIONS[aten.lerp_.Scalar](z, y, 0.1)
    assert torch.allclose(z, torch.lerp(x, y, 0.1))


def test_user_ddp_step_verifies_and_replays(control, tmp_path):
    case, inf, cert = control
    assert not any("range" in t for t in case.spec["tensors"].values())   # Adam's v needs no declared range
    scaled = {t: [str(e) for e in es] for t, es in inf.relation.items()
              if any(str(e).startswith(("scale(", "mean(")) for e in es)}
    assert scaled, "the mean convention is related by scaled relations"
    assert case.expect["loss"] == ["mean(loss@r0, loss@r1)"]
    assert {n["target"] for n in case.impl["nodes"]} >= {"_c10d_functional.all_reduce.default", "aten.sqrt.default"}
    ok, why = forge.verdict(cert, tmp_path)
    assert ok, why


def _grad_step(model, opt, x, y):
    """The other usual form: ``torch.autograd.grad``, all-reduce, ``p.grad = g / world``, one micro-batch."""
    params = list(model.parameters())
    loss = torch.nn.functional.mse_loss(model(x[0]), y[0])
    for p, g in zip(params, torch.autograd.grad(loss, params)):
        dist.all_reduce(g)
        p.grad = g / dist.get_world_size()
    opt.step()
    return loss.detach()


@pytest.mark.parametrize("optimizer", [lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
                                       lambda ps: torch.optim.Adam(ps, lr=1e-2)], ids=["sgd-momentum", "adam"])
def test_autograd_grad_form_verifies(optimizer):
    case = capture_case(ddp_case("grad_form", example.MLP, optimizer, _grad_step, 2, {"x": (1, 4, 4), "y": (1, 4, 2)}))
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message


BUG_AT = {"no_allreduce": "aten.mul.Tensor", "stale": "aten.mul.Tensor", "accumulation": "aten.mul.Tensor",
          "no_scale": "aten.sqrt.default"}


@pytest.mark.parametrize("bug", sorted(example.BUGS))
def test_planted_bug_is_declined_at_the_operator(bug, control, tmp_path):
    """Not verified, stopped at the gradient norm (the square of an unsynchronized gradient, or the
    root of a norm W^2 times the spec's), and REFUTED by an executed run. The missing 1/world shows
    only on small inputs (clipping and Adam normalize the gradient's scale; at magnitude 1 the update
    differs only through eps)."""
    case = capture_case(example.make_case(bug))
    inf = infer(case)
    assert not inf.verified and inf.failure.node is not None
    assert inf.failure.node.target == BUG_AT[bug]
    cx = direct.refute(inf.prepared, 0, Limits())
    assert cx is not None and (cx.scale < 1) == (bug == "no_scale")   # where eps is not negligible
    _, _, cert = control
    ok, why = forge.verdict(forge.embed(cert, case.spec, case.impl), tmp_path)
    assert not ok, why
