"""A 2-stage pipeline training step with ``torch.distributed.pipelining``'s 1F1B schedule (issue 16).

No pvcert code inside the step. Each rank holds its stage of ``Net`` (the other stage's module
set to ``None``, as torchtitan's manual split does): stage 0 is ``l1`` + tanh, stage 1 is ``l2``
and the loss. The step wraps the stage in ``PipelineStage`` (static shapes: ``input_args`` /
``output_args``), runs ``Schedule1F1B`` over 4 micro-batches with a mean-squared-error loss (the
schedule sends activations forward and gradients back, accumulates and divides the gradients by
the number of micro-batches), and steps ``SGD(momentum=0.9)`` on the stage's parameters. The
spec is the same step with world size 1 (one stage holding the whole model)::

    pvcert verify examples/train/pipeline_user.py --emit-cert cert.json && pvcert replay cert.json

``make_case(bug)`` plants one of ``BUGS`` instead (tests/train/test_user_pipeline.py); the
hand-written 1F1B of examples/train/pipeline_1f1b_user.py has the schedule's own bugs.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.pipelining import PipelineStage, Schedule1F1B

from verifier.train.user_pipeline import pipeline_case

MICRO, BATCH, D_IN, D_HID, D_OUT, STAGES = 4, 2, 4, 3, 2, 2


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2 = nn.Linear(D_IN, D_HID), nn.Linear(D_HID, D_OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.l1 is not None:
            x = torch.tanh(self.l1(x))
        if self.l2 is not None:
            x = self.l2(x)
        return x


def stage_model(rank: int, world: int) -> nn.Module:
    """Stage ``rank`` of ``world``: the whole model on one device, ``l1`` / ``l2`` on two."""
    model = Net()
    if world > 1:
        setattr(model, "l2" if rank == 0 else "l1", None)
    return model


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor | None = None,
               y: torch.Tensor | None = None, bug: str | None = None,
               schedule_class: type = Schedule1F1B) -> torch.Tensor | None:
    """One step over ``x [micro-batches * batch, D_IN]`` (first stage) and ``y`` (last stage);
    returns the mean loss on the last stage (``bug``: see ``BUGS``; ``schedule_class``: e.g.
    ``ScheduleGPipe``)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    first, last = rank == 0, rank == world - 1
    stage = PipelineStage(model, rank, world, torch.device("cpu"),
                          input_args=torch.empty(BATCH, D_IN if first else D_HID, requires_grad=not first),
                          output_args=torch.empty(BATCH, D_OUT if last else D_HID, requires_grad=True))
    schedule = schedule_class(stage, n_microbatches=MICRO, loss_fn=F.mse_loss, scale_grads=bug != "scale")
    opt.zero_grad()
    if bug == "stale":
        opt.step()
    losses: list[torch.Tensor] = []
    schedule.step(*([x] if first else []), target=y if last else None, losses=losses if last else None)
    if bug != "stale":
        opt.step()
    return torch.stack(losses).mean() if last else None


BUGS = {
    "scale": "Schedule1F1B(scale_grads=False) with a mean loss: the accumulated gradient is 4 times the mean's",
    "stale": "opt.step() before schedule.step(): it steps on the gradients from before (none: no update)",
}


def make_case(bug: str | None = None):
    """The case; with ``bug`` the ranks run the buggy step, the spec the correct one."""
    if bug not in (None, *BUGS):
        raise ValueError(f"unknown bug {bug!r}")
    step = train_step if bug is None else lambda model, opt, x=None, y=None: train_step(model, opt, x, y, bug)
    return pipeline_case("pipeline_user" + (f"_{bug}" if bug else ""), stage_model, sgd, step, STAGES,
                         {"x": (MICRO * BATCH, D_IN), "y": (MICRO * BATCH, D_OUT)}, labels=("y",),
                         spec_step=train_step)
