"""A 2-stage pipeline training step with a hand-written 1F1B schedule (issue 16).

No pvcert code inside the step (examples/train/pipeline_user.py is the same pipeline through
``torch.distributed.pipelining``). Each rank holds its stage of ``Net`` (the other stages'
modules set to ``None``, as torchtitan's manual split does): stage 0 is ``l1`` + tanh, stage 1
is ``l2`` and the loss. Four micro-batches run one-forward-one-backward: stage 0 warms up with
one forward, then both stages alternate; activations go forward and their gradients backward
by ``batch_isend_irecv`` (``isend``/``irecv`` + ``wait``), each stage's backward is
``out.backward(grad)``, gradients accumulate over the micro-batches (loss / 4), and each stage
steps its own ``SGD(momentum=0.9)``. The spec is the same step with world size 1 (one stage
holding the whole model)::

    pvcert verify examples/train/pipeline_1f1b_user.py --emit-cert cert.json && pvcert replay cert.json

``make_case(bug)`` plants one of ``BUGS`` instead (tests/train/test_user_pipeline.py).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

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


def p2p(send: torch.Tensor | None = None, dst: int = 0, recv: torch.Tensor | None = None,
        src: int = 0) -> None:
    """Post a send and/or a receive together and wait for both."""
    ops = ([dist.P2POp(dist.isend, send, dst)] if send is not None else []) + \
          ([dist.P2POp(dist.irecv, recv, src)] if recv is not None else [])
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor | None = None,
               y: torch.Tensor | None = None, bug: str | None = None) -> torch.Tensor:
    """One 1F1B step: ``x [micro-batches, batch, D_IN]`` on the first stage, ``y`` on the last;
    returns the loss (summed over micro-batches) on the last stage (``bug``: see ``BUGS``)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    first, last = rank == 0, rank == world - 1
    prev, nxt = rank - 1, (rank if bug == "peer" else rank + 1)
    warmup = world - rank - 1
    order = [1, 0, 2, 3] if bug == "order" else list(range(MICRO))
    opt.zero_grad()
    total = torch.zeros(())
    inputs, outputs, grad = [], [], None

    def forward(m: int) -> torch.Tensor:
        nonlocal total
        if first:
            a = x[order[m]]
        else:
            a = torch.empty(BATCH, D_HID)
            p2p(recv=a, src=prev)
            a.requires_grad_(True)
        out = model(a)
        if last:
            out = F.mse_loss(out, y[m]) / (1 if bug == "scale" else MICRO)
            total = total + out.detach()
        inputs.append(a)
        outputs.append(out)
        return out

    def backward(g: torch.Tensor | None) -> torch.Tensor | None:
        k = -1 if bug == "lifo" else 0           # lifo: the newest micro-batch, not the oldest
        a, out = inputs.pop(k), outputs.pop(k)
        out.backward(g)
        return None if first else a.grad

    for m in range(warmup):                       # warm-up forwards
        p2p(send=forward(m).detach(), dst=nxt)
    for m in range(warmup, MICRO):                # steady state: one forward, one backward
        out = forward(m)
        if not last:
            grad = torch.empty_like(out)
            p2p(send=out.detach(), dst=nxt, recv=grad, src=nxt)
        g = backward(grad)
        if bug == "drop" and m == warmup:
            opt.zero_grad()                       # micro-batch 0's gradients are lost
        if not first:
            p2p(send=g, dst=prev)
    if bug == "stale":
        opt.step()                                # before the cool-down: its gradients are not in yet
    for _ in range(warmup):                       # cool-down backwards
        grad = torch.empty_like(outputs[0])
        p2p(recv=grad, src=nxt)
        backward(grad)
    if bug != "stale":
        opt.step()
    return total


BUGS = {
    "peer": "stage 0 sends its activations to itself, not to stage 1",
    "order": "stage 0 runs micro-batches 1 and 0 in swapped order: stage 1 pairs them with the wrong labels",
    "lifo": "stage 0 applies each received gradient to its newest micro-batch, not the one it belongs to",
    "drop": "zero_grad() after the first backward: micro-batch 0's gradients are dropped",
    "scale": "the micro-batch losses are not divided by 4: the accumulated gradient is 4 times the mean's",
    "stale": "the optimizer steps before the cool-down: stage 0 updates without micro-batch 3's gradient",
}


def make_case(bug: str | None = None):
    """The case; with ``bug`` the ranks run the buggy step, the spec the correct one."""
    step = train_step if bug is None else lambda model, opt, x=None, y=None: train_step(model, opt, x, y, bug)
    return pipeline_case("pipeline_1f1b_user" + (f"_{bug}" if bug else ""), stage_model, sgd, step, STAGES,
                         {"x": (MICRO, BATCH, D_IN), "y": (MICRO, BATCH, D_OUT)}, labels=("y",),
                         spec_step=train_step)
