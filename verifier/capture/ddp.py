"""``DistributedDataParallel`` while captured: its C++ reducer is invisible to tracing (and its hooks sit
on the original parameters, not on the ones capture substitutes), so it is replaced by what DDP's
documentation says it computes. A forward run with gradient sync on (outside ``no_sync()``) makes the
backward that follows replace each parameter's accumulated gradient by its mean over the DDP process
group (all-reduce sum, then divide by the group's size), once the parameter's gradient is accumulated.
Bucketing does not change these values. Refused: buffers that DDP would broadcast, ``comm hooks``
(user-registered), and parameters DDP would skip (``find_unused_parameters``)."""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from .convert import CaptureError

NOTE = ("DistributedDataParallel: each gradient's all-reduce (mean over the DDP group) after a synced "
        "backward, as documented; the C++ reducer itself is not traced")


def _forward(self: DistributedDataParallel, *args, **kwargs):
    if self.broadcast_buffers and any(True for _ in self.module.buffers()):
        raise CaptureError("DistributedDataParallel with broadcast_buffers=True and module buffers: the "
                           "buffer broadcast is not modelled (pass broadcast_buffers=False)")
    if getattr(self, "_comm_hooks", None) or self.find_unused_parameters:
        raise CaptureError("DistributedDataParallel with a comm hook or find_unused_parameters: not modelled")
    out = self.module(*args, **kwargs)
    if torch.is_grad_enabled() and self.require_backward_grad_sync:
        group = self.process_group
        size = dist.get_world_size(group)
        for p in self.module.parameters():
            if p.requires_grad:
                _sync_once(p, group, size)
    return out


def _sync_once(p: torch.Tensor, group, size: int) -> None:
    """After ``p``'s gradient is next accumulated: ``p.grad = all_reduce(p.grad) / size``."""
    handle = None

    def hook(param: torch.Tensor) -> None:
        handle.remove()
        dist.all_reduce(param.grad, group=group)
        param.grad.div_(size)

    handle = p.register_post_accumulate_grad_hook(hook)


@contextlib.contextmanager
def documented_ddp() -> Iterator[None]:
    """DDP modules built or called meanwhile compute as documented (module docstring)."""
    saved = DistributedDataParallel.forward
    DistributedDataParallel.forward = _forward
    try:
        yield
    finally:
        DistributedDataParallel.forward = saved
