"""A data-parallel training step written the usual DDP way (issue 16): no pvcert code inside it.

Two ranks, two micro-batches accumulated with a mean loss, the gradients all-reduced and divided
by the world size, ``clip_grad_norm_``, an ``AdamW`` step. The spec is the same step with world
size 1 on the whole batch. ``verifier.train.user.ddp_case`` captures both and derives the lineage
(parameters replicated, the batch split over the ranks, the loss the mean of the ranks' losses)::

    pvcert verify examples/train/ddp_adamw_user.py --emit-cert cert.json && pvcert replay cert.json

``make_case(bug)`` plants one of ``BUGS`` instead (each is REJECTed: tests/train/test_user_ddp.py).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from verifier.train.user import ddp_case

MICRO, BATCH, D_IN, D_HID, D_OUT, WORLD = 2, 4, 4, 3, 2, 2


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2 = nn.Linear(D_IN, D_HID), nn.Linear(D_HID, D_OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.tanh(self.l1(x)))


def adamw(params):
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
               bug: str | None = None) -> torch.Tensor:
    """One step over ``x [micro-batches, batch, features]`` (``bug``: a planted bug, see ``BUGS``)."""
    world, last = dist.get_world_size(), x.shape[0] - 1
    opt.zero_grad()
    total = torch.zeros(())
    for m in range(x.shape[0]):
        loss = F.mse_loss(model(x[m]), y[m]) / x.shape[0]
        loss.backward()
        total = total + loss.detach()
        if m == (0 if bug == "accumulation" else last):   # synchronize the accumulated gradients
            for p in model.parameters():
                g = p.grad.clone() if bug == "stale" else p.grad   # stale: a copy is synchronized
                if bug != "no_allreduce":
                    dist.all_reduce(g)
                if bug != "no_scale":
                    g /= world
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    return total


BUGS = {
    "no_allreduce": "the gradient all-reduce is missing",
    "no_scale": "the gradients are summed over ranks, not divided by the world size",
    "accumulation": "synchronized after the first micro-batch: the later ones stay local",
    "stale": "the all-reduce and scaling update a copy: the optimizer steps on the local gradients",
}


def make_case(bug: str | None = None):
    step = train_step if bug is None else lambda model, opt, x, y: train_step(model, opt, x, y, bug)
    return ddp_case("ddp_adamw_user" + (f"_{bug}" if bug else ""), MLP, adamw, step, WORLD,
                    {"x": (MICRO, BATCH, D_IN), "y": (MICRO, BATCH, D_OUT)})
