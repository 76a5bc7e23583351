"""Pipeline x data parallelism as users write it (issue 16): 2 pipeline stages x 2 replicas on 4 ranks.

No pvcert code inside the step. The launcher's ``(dp, pp)`` mesh (``init_device_mesh``, row-major:
rank ``d * 2 + p`` is stage ``p`` of replica ``d``); each rank wraps its stage of the two-layer MLP in a
``PipelineStage`` on its replica's ``pp`` group, runs ``Schedule1F1B`` over 4 micro-batches of its
replica's half of the batch, averages every gradient over its stage's ``dp`` group
(``all_reduce(..., AVG)``) and steps ``SGD(momentum=0.9)``. The spec is the same step on one device
(a 1 x 1 mesh, one stage holding the whole model, the whole batch)::

    pvcert verify examples/train/pipeline_dp_user.py --emit-cert cert.json && pvcert replay cert.json

``make_case(bug)`` plants one of ``BUGS``.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.pipelining import PipelineStage, Schedule1F1B

from pipeline_user import D_HID, D_IN, D_OUT, sgd, stage_model   # the same model and stages
from verifier.train.user_pipeline import pipeline_case

MICRO, BATCH, STAGES, DP = 4, 2, 2, 2


def stage_on_mesh(p: int, stages: int) -> torch.nn.Module:
    """What the launcher does on each rank: the ``(dp, pp)`` mesh over the world, and stage ``p`` of
    ``stages`` (one device: a 1 x 1 mesh and the whole model)."""
    model = stage_model(p, stages)
    world = dist.get_world_size()
    model.mesh = init_device_mesh("cpu", (world // stages, stages), mesh_dim_names=("dp", "pp"))
    return model


def train_step(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor | None = None,
               y: torch.Tensor | None = None, bug: str | None = None) -> torch.Tensor | None:
    """One step of this rank's stage on its replica's micro-batches (``bug``: see ``BUGS``)."""
    mesh = model.mesh
    pp = mesh.size(1)
    p = dist.get_rank() % pp   # this rank's stage (the mesh is row-major)
    first, last = p == 0, p == pp - 1
    stage = PipelineStage(model, p, pp, torch.device("cpu"), group=mesh.get_group("pp"),
                          input_args=torch.empty(BATCH, D_IN if first else D_HID, requires_grad=not first),
                          output_args=torch.empty(BATCH, D_OUT if last else D_HID, requires_grad=True))
    schedule = Schedule1F1B(stage, n_microbatches=MICRO, loss_fn=F.mse_loss)
    opt.zero_grad()
    losses: list[torch.Tensor] = []
    schedule.step(*([x] if first else []), target=y if last else None, losses=losses if last else None)
    for param in model.parameters():
        if bug != "no_dp_allreduce":
            group = mesh.get_group("pp" if bug == "wrong_group" else "dp")
            dist.all_reduce(param.grad, op=dist.ReduceOp.AVG, group=group)
    opt.step()
    return torch.stack(losses).mean() if last else None


BUGS = {"no_dp_allreduce": "the gradients are not averaged over the replicas",
        "wrong_group": "the gradients are averaged over the pipeline group instead of the replicas (its "
                       "members' gradients differ in shape: refused at capture)"}


def make_case(bug: str | None = None):
    """The case; with ``bug`` (one of ``BUGS``) the ranks run the buggy step."""
    if bug not in (None, *BUGS):
        raise ValueError(f"unknown bug {bug!r}")

    def step(model, opt, x=None, y=None):
        return train_step(model, opt, x, y, bug)
    return pipeline_case("pipeline_dp_user" + (f"_{bug}" if bug else ""), stage_on_mesh, sgd, step, STAGES,
                         {"x": (DP * MICRO * BATCH, D_IN), "y": (DP * MICRO * BATCH, D_OUT)}, labels=("y",),
                         spec_step=lambda model, opt, x=None, y=None: train_step(model, opt, x, y), dp=DP,
                         micro=MICRO)

