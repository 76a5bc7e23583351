"""``DistributedDataParallel`` itself in a user's step (examples/train/ddp_module_user.py): no_sync
accumulation verifies and replays, synchronizing every micro-batch too; skipping the wrapper or never
synchronizing is REFUTED at the operator; refused DDP features name themselves."""

from __future__ import annotations

import os
import sys

import pytest
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from certificates.limits import Limits
from certificates.replay import replay
from verifier import certificate, direct
from verifier.capture.case import capture_case
from verifier.capture.ddp import documented_ddp
from verifier.capture.dist import fake_world
from verifier.refine import infer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))
import ddp_module_user as example  # noqa: E402


def _all_reduces(case) -> int:
    return sum(n["target"] == "_c10d_functional.all_reduce.default" for n in case.impl["nodes"])


@pytest.mark.parametrize("variant", [None, "sync_each"])
def test_ddp_module_step_verifies_and_replays(variant, tmp_path):
    case = capture_case(example.make_case(variant))
    assert _all_reduces(case) == 4 * (2 if variant else 1)   # one per parameter (4) per synced backward
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message
    path = str(tmp_path / "c.json")
    certificate.write(certificate.per_operator_certificate(inf), path)
    assert all(r.ok for r in replay(path))


@pytest.mark.parametrize("bug", sorted(example.BUGS))
def test_ddp_module_bug_is_refuted_at_the_operator(bug):
    case = capture_case(example.make_case(bug))
    inf = infer(case)
    assert not inf.verified and inf.failure.node is not None
    assert direct.refute(inf.prepared, 0, Limits()) is not None


def test_ddp_features_not_modelled_are_refused():
    class WithBuffer(example.MLP):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("scale", torch.ones(()))

    with fake_world(0, 2), documented_ddp():
        ddp = DDP(WithBuffer())
        with pytest.raises(Exception, match="broadcast_buffers"):
            ddp(torch.zeros(1, example.D_IN))
