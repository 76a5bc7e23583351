"""Tensor + data parallelism written the usual DTensor way (issue 16): no pvcert code inside the step.

Four ranks on a 2-D mesh ``(dp=2, tp=2)``: the MLP's ``up`` projection is ``ColwiseParallel`` and
``down`` ``RowwiseParallel`` over ``mesh["tp"]`` (``parallelize_module``); data parallelism over
``mesh["dp"]`` is done by hand, without DDP: after ``loss.backward()`` every gradient's local
tensor is all-reduced over the dp group with ``ReduceOp.AVG``; then ``SGD(momentum=0.9).step()``
and ``zero_grad``. The spec is the same model and step at world size 1 (``setup(1, 1)``: no
``parallelize_module``).
``verifier.train.user_tp.tp_dp_case`` captures both and derives the lineage from the DTensor
placements (docs/training.md, "Tensor + data parallel")::

    pvcert verify examples/train/tp_dp_user.py --emit-cert cert.json && pvcert replay cert.json

``make_case(bug)`` plants one of ``BUGS`` instead (tests/train/test_user_tp.py);
``make_case(optimizer="adamw")`` is the same step with ``AdamW`` (docs/training.md, "With AdamW").
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

from verifier.train.user_tp import tp_dp_case

BATCH, D_IN, D_HID, DP, TP = 4, 4, 4, 2, 2


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(D_IN, D_HID), nn.Linear(D_HID, D_IN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.tanh(self.up(x)))


def setup(dp: int, tp: int) -> tuple[nn.Module, DeviceMesh]:
    """What the launcher does on each rank: the ``(dp, tp)`` mesh and the model split over tp
    (at world size 1, the plain model)."""
    mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
    model = MLP()
    if tp > 1:
        model = parallelize_module(model, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
    return model, mesh


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def adamw(params):
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)


OPTIMIZERS = {"sgd": sgd, "adamw": adamw}


def train_step(model: nn.Module, opt: torch.optim.Optimizer, mesh: DeviceMesh, x: torch.Tensor,
               y: torch.Tensor, bug: str | None = None) -> torch.Tensor:
    """One step on this rank's ``x [batch, features]`` (``bug``: a planted bug, see ``BUGS``)."""
    loss = F.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():
        g = p.grad.to_local() if isinstance(p.grad, DTensor) else p.grad
        if bug == "stale":
            g = g.clone()                    # the average lands in a copy, not in p.grad
        if bug == "no_allreduce":
            continue
        group = mesh.get_group("tp" if bug == "wrong_group" else "dp")
        dist.all_reduce(g, op=dist.ReduceOp.SUM if bug == "no_scale" else dist.ReduceOp.AVG, group=group)
    opt.step()
    opt.zero_grad()
    return loss.detach()


BUGS = {
    "no_allreduce": "the dp gradient all-reduce is missing",
    "no_scale": "the gradients are summed over dp, not averaged (no 1/dp)",
    "wrong_group": "the gradients are averaged over the tp group instead of the dp group",
    "stale": "the average updates a copy: the optimizer steps on the local gradients",
}


def make_case(bug: str | None = None, optimizer: str = "sgd"):
    """The step with ``bug`` planted (``BUGS``; ``None``: the correct step) and the optimizer
    ``optimizer`` (``OPTIMIZERS``: ``"sgd"``, SGD with momentum, or ``"adamw"``)."""
    step = train_step if bug is None else lambda *a, **kw: train_step(*a, **kw, bug=bug)
    name = "tp_dp_user" + ("" if optimizer == "sgd" else f"_{optimizer}") + (f"_{bug}" if bug else "")
    return tp_dp_case(name, setup, OPTIMIZERS[optimizer], step, DP, TP,
                      {"x": (BATCH, D_IN), "y": (BATCH, D_IN)})
