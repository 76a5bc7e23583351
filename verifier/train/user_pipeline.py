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
from .user import step_call


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
                  seed: int = 0) -> CaptureCase:
    """The case: ``step`` on ``world`` pipeline stages against ``spec_step`` (default ``step``) on
    one device; every ``batch`` tensor whole on the stage that reads it (``labels``: the last)."""
    if world < 2:
        raise ValueError(f"{name}: a pipeline needs at least 2 stages, got {world}")
    if missing := set(labels) - set(batch):
        raise ValueError(f"{name}: labels {sorted(missing)} are not batch tensors")
    whole, held = _held(stage, world)
    last = world - 1
    on = {k: (last if k in labels else 0) for k in batch}
    return CaptureCase(
        name=name, world_size=world, inputs=dict(batch), seed=seed, spec_distributed=True, context=static_vote,
        spec=lambda: (stage(0, 1), step_call(spec_step or step, optimizer)),
        impl=lambda r, w: (stage(r, w), step_call(step, optimizer, loss=r == last)),
        impl_inputs=lambda r: {k: s for k, s in batch.items() if on[k] == r},
        input_relation={**{p: [f"{p}@r{r}" for r in range(world) if p in held[r]] for p in whole},
                        **{k: [f"{k}@r{on[k]}"] for k in batch}},
        expect={**{f"new.{p}": [f"new.{p}@r{r}" for r in range(world) if p in held[r]] for p in whole},
                "loss": [f"loss@r{last}"]},
        output_names=[f"new.{p}" for p in whole] + ["loss"],
        impl_output_names=lambda r: [f"new.{p}" for p in held[r]] + (["loss"] if r == last else []))
