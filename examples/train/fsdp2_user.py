"""An FSDP2 training step written the usual way (issue 16): no pvcert code inside it.

Two ranks; a two-layer MLP with ``fully_shard`` applied to each layer and to the root, as users
do; the step is forward, a mean loss, ``loss.backward()`` (FSDP2 all-gathers the parameters and
reduce-scatters the gradients itself), ``AdamW.step()``, ``zero_grad()`` (``clip_grad_norm_`` over
FSDP2's DTensor gradients is UNKNOWN: docs/training.md, "An FSDP2 step").
The spec is the same ``build()`` and ``train_step`` at world size 1 on the whole batch.
``verifier.train.user_fsdp.fsdp_case`` captures both and derives the lineage (parameters sharded
on dim 0 from their DTensor placements, the batch split over the ranks, the loss the mean of the
ranks' losses)::

    pvcert verify examples/train/fsdp2_user.py --emit-cert cert.json && pvcert replay cert.json

``make_case(bug)`` plants one of ``BUGS`` instead; ``make_accumulate_case()`` accumulates two
micro-batches with ``set_requires_gradient_sync`` (tests/train/test_user_fsdp.py).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp._fully_shard._fsdp_api import AllGather, ReduceScatter   # set_custom_* interfaces

from verifier.train.user_fsdp import fsdp_case

MICRO, BATCH, D_IN, D_HID, D_OUT, WORLD = 2, 4, 4, 4, 2, 2


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2 = nn.Linear(D_IN, D_HID), nn.Linear(D_HID, D_OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.tanh(self.l1(x)))


def build(bug: str | None = None) -> nn.Module:
    model = MLP()
    for layer in (model.l1, model.l2):
        fully_shard(layer)
    fully_shard(model)
    for m in (model.l1, model.l2, model):
        if bug == "no_scale":
            m.set_gradient_divide_factor(1.0)   # the reduce-scatter sums: the 1/world of the mean is lost
        if bug == "local_grads":
            m.set_custom_reduce_scatter(LocalReduceScatter())
        if bug == "wrong_shard":
            m.set_custom_all_gather(LocalAllGather())
    return model


class LocalAllGather(AllGather):
    """A custom all-gather that fills every rank's slot with this rank's shard (``wrong_shard``)."""

    def allocate(self, size, *, dtype, device):
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor, input_tensor, group, async_op=False):
        output_tensor.copy_(torch.cat([input_tensor] * group.size()).view(output_tensor.shape))


class LocalReduceScatter(ReduceScatter):
    """A custom reduce-scatter that keeps this rank's rows of its own gradient (``local_grads``)."""

    def allocate(self, size, *, dtype, device):
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
        output_tensor.copy_(input_tensor.chunk(group.size())[group.rank()].view(output_tensor.shape))


def adamw(params):
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One step over ``x [batch, features]``."""
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.detach()


def accumulate_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One step over ``x [micro-batches, batch, features]``, FSDP2's way of accumulating: gradients
    reduce-scattered only after the last micro-batch."""
    total = torch.zeros(())
    for m in range(x.shape[0]):
        model.set_requires_gradient_sync(m == x.shape[0] - 1)
        loss = F.mse_loss(model(x[m]), y[m]) / x.shape[0]
        loss.backward()
        total = total + loss.detach()
    opt.step()
    opt.zero_grad()
    return total


BUGS = {
    "no_scale": "set_gradient_divide_factor(1.0): the gradients are summed over the ranks, not averaged",
    "local_grads": "a custom reduce-scatter keeps the rank's own rows: the optimizer steps on local gradients",
    "wrong_shard": "a custom all-gather puts this rank's shard in every rank's slot",
}


def make_case(bug: str | None = None):
    return fsdp_case("fsdp2_user" + (f"_{bug}" if bug else ""), lambda: build(bug), adamw, train_step, WORLD,
                     {"x": (BATCH, D_IN), "y": (BATCH, D_OUT)})


def make_accumulate_case():
    return fsdp_case("fsdp2_user_accumulate", build, adamw, accumulate_step, WORLD,
                     {"x": (MICRO, BATCH, D_IN), "y": (MICRO, BATCH, D_OUT)}, batch_dim=1)
