"""A data-parallel training step with ``DistributedDataParallel`` itself (issue 16): the model is
wrapped in DDP, micro-batches accumulate under ``no_sync()`` and the last backward synchronizes,
``clip_grad_norm_``, ``AdamW``. No pvcert code inside the step. The spec is the same code with
world size 1 on the whole batch (DDP over one rank). Capture models DDP's reducer by its documented
semantics (docs/capture.md, "DistributedDataParallel")::

    pvcert verify examples/train/ddp_module_user.py --emit-cert cert.json && pvcert replay cert.json

``make_case(bug)`` plants one of ``BUGS`` instead (tests/train/test_user_ddp_module.py).
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from verifier.train.user import ddp_case

MICRO, BATCH, D_IN, D_HID, D_OUT, WORLD = 2, 4, 4, 3, 2, 2


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2 = nn.Linear(D_IN, D_HID), nn.Linear(D_HID, D_OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.tanh(self.l1(x)))


def model() -> DDP:
    return DDP(MLP())


def adamw(params):
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)


def train_step(ddp: DDP, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
               bug: str | None = None) -> torch.Tensor:
    """One step over ``x [micro-batches, batch, features]``, synchronizing on the last micro-batch."""
    opt.zero_grad()
    total = torch.zeros(())
    for m in range(x.shape[0]):
        last = m == x.shape[0] - 1
        sync = last and bug != "never_synced" or bug == "sync_each"
        fwd = ddp.module if bug == "bypass" and last else ddp   # bypass: the wrapper is skipped
        with contextlib.nullcontext() if sync else ddp.no_sync():
            loss = F.mse_loss(fwd(x[m]), y[m]) / x.shape[0]
            loss.backward()
        total = total + loss.detach()
    nn.utils.clip_grad_norm_(ddp.parameters(), max_norm=1.0)
    opt.step()
    return total


BUGS = {
    "bypass": "the last micro-batch runs model.module: its backward never synchronizes",
    "never_synced": "every micro-batch under no_sync(): the gradients stay local",
}
CORRECT = {"sync_each": "synchronizes every micro-batch (slower, same values)"}


def make_case(bug: str | None = None):
    step = train_step if bug is None else lambda m, opt, x, y: train_step(m, opt, x, y, bug)
    return ddp_case("ddp_module_user" + (f"_{bug}" if bug else ""), model, adamw, step, WORLD,
                    {"x": (MICRO, BATCH, D_IN), "y": (MICRO, BATCH, D_OUT)})
