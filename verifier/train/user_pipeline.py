"""A pipeline-parallel training step written by the user (docs/training.md, "A pipeline step").

``pipeline_case`` captures the user's ``step(model, opt, **batch) -> loss`` on every rank under
the fake process group, rank ``r`` holding stage ``r`` built by ``stage(r, world)`` (the data
inputs on the first stage, ``labels`` on the last), and the spec: ``spec_step`` (default: the
same ``step``) at world size 1 on ``stage(0, 1)``, the whole model, with the whole batch.

The lineage is derived from parameter names, never written: a rank's parameters are the spec's
parameters of the same name (its stage's modules), its updated parameters likewise, the data
inputs live on the first stage and the labels and the loss on the last. A step may use
``torch.distributed.pipelining`` (its schedules' warm-up vote is decided by
``verifier.capture.pipelining.static_vote``) or its own ``send``/``recv``.
"""

from __future__ import annotations

from typing import Callable

import torch

from verifier.capture.case import CaptureCase
from verifier.capture.convert import ir_name
from verifier.capture.dist import fake_world
from verifier.capture.pipelining import static_vote
from .user import _local, step_call


def _held(stage: Callable[[int, int], torch.nn.Module], world: int) -> tuple[list[str], list[list[str]]]:
    """The whole model's parameter names and each stage's (built as the step builds them)."""
    with fake_world(0, 1):
        whole = [ir_name(k) for k, _ in stage(0, 1).named_parameters()]
    ranks = []
    for r in range(world):
        with fake_world(r, world):
            ranks.append([ir_name(k) for k, _ in stage(r, world).named_parameters()])
    for r, names in enumerate(ranks):
        if not names or set(names) - set(whole):
            raise ValueError(f"stage {r} holds {sorted(set(names) - set(whole)) or 'no parameters'}: "
                             "a stage's parameters must be the whole model's (same module names)")
    if missing := set(whole) - {n for names in ranks for n in names}:
        raise ValueError(f"no stage holds {sorted(missing)}")
    return whole, ranks


def pipeline_case(name: str, stage: Callable[[int, int], torch.nn.Module], optimizer: Callable,
                  step: Callable, world: int, batch: dict[str, tuple[int, ...]],
                  labels: tuple[str, ...] = ("y",), spec_step: Callable | None = None,
                  seed: int = 0, dp: int = 1, micro: int = 1) -> CaptureCase:
    """The case: ``step`` on ``world`` pipeline stages against ``spec_step`` (default ``step``) on
    one device; every ``batch`` tensor whole on the stage that reads it (``labels``: the last).
    With ``dp`` replicas the world is ``dp * world`` ranks, rank ``d * world + p`` holding stage ``p``
    of replica ``d`` (``init_device_mesh``'s row-major ``(dp, pp)`` layout) and ``1/dp`` of the batch
    (dim 0): the spec's micro-batch ``m`` of ``micro`` is every replica's micro-batch ``m``, in replica
    order; parameters are replicated over the replicas, the loss is their mean."""
    if world < 2:
        raise ValueError(f"{name}: a pipeline needs at least 2 stages, got {world}")
    if missing := set(labels) - set(batch):
        raise ValueError(f"{name}: labels {sorted(missing)} are not batch tensors")
    whole, held = _held(stage, world)
    last = world - 1
    on = {k: (last if k in labels else 0) for k in batch}
    local = {k: _local(tuple(s), 0, dp, name) for k, s in batch.items()}
    ranks = lambda p: [d * world + p for d in range(dp)]   # noqa: E731  stage p of every replica
    def cat(k: str, p: int) -> str:
        if dp == 1:
            return f"{k}@r{p}"
        b = local[k][0] // micro   # rows of one micro-batch on one replica
        return "concat({}, dim=0)".format(", ".join(f"slice({k}@r{r}, dim=0, start={m * b}, end={(m + 1) * b})"
                                                    for m in range(micro) for r in ranks(p)))
    return CaptureCase(
        name=name, world_size=dp * world, inputs=dict(batch), seed=seed, spec_distributed=True, context=static_vote,
        spec=lambda: (stage(0, 1), step_call(spec_step or step, optimizer)),
        impl=lambda r, w: (stage(r % world, world), step_call(step, optimizer, loss=r % world == last)),
        impl_inputs=lambda r: {k: s for k, s in local.items() if on[k] == r % world},
        input_relation={**{p: [f"{p}@r{r}" for s in range(world) if p in held[s] for r in ranks(s)] for p in whole},
                        **{k: [cat(k, on[k])] for k in batch}},
        expect={**{f"new.{p}": [f"new.{p}@r{r}" for s in range(world) if p in held[s] for r in ranks(s)]
                   for p in whole},
                "loss": [f"mean({', '.join(f'loss@r{r}' for r in ranks(last))})" if dp > 1 else f"loss@r{last}"]},
        output_names=[f"new.{p}" for p in whole] + ["loss"],
        impl_output_names=lambda r: [f"new.{p}" for p in held[r % world]] + (["loss"] if r % world == last else []))
