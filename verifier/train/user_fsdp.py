"""An FSDP2 training step written by the user (docs/training.md, "An FSDP2 step").

``fsdp_case`` captures the user's ``step(model, opt, **batch) -> loss`` on every rank under the
fake process group, the model built by the user's ``build()`` (``fully_shard`` applied as users
do), each rank with its slice of the batch; the spec is the same ``build()`` and ``step`` at world
size 1 on the whole batch. FSDP2 runs as written (its hooks all-gather the parameters, reduce-scatter
the gradients, the optimizer steps on the sharded parameters), with its buffers made functional
for the trace (``verifier.capture.fsdp``).

The lineage is derived: parameters and the updated parameters from their DTensor placements
(``Shard(0)`` over the ranks: a concatenation on dim 0), batch tensors concatenated over the ranks
along ``batch_dim``, the loss the mean of the ranks' losses (each a mean over its samples).
"""

from __future__ import annotations

from typing import Callable

import torch

from verifier.capture.case import CaptureCase
from verifier.capture.convert import ir_name
from verifier.capture.dist import fake_world
from verifier.capture.fsdp import functional_fsdp
from verifier.train.user import step_call


def fsdp_call(step: Callable, optimizer: Callable) -> Callable:
    """``call(model, **batch)`` for capture: the user's step over the FSDP2 model, returning the
    sharded parameters after it and its loss."""
    inner = step_call(step, optimizer)

    def call(model: torch.nn.Module, **batch) -> list[torch.Tensor]:
        with functional_fsdp(model):
            return inner(model, **batch)
    return call


def fsdp_case(name: str, build: Callable[[], torch.nn.Module], optimizer: Callable, step: Callable,
              world: int, batch: dict[str, tuple[int, ...]], batch_dim: int = 0, seed: int = 0) -> CaptureCase:
    """The case: ``step`` over ``build()`` on ``world`` ranks (each its ``1/world`` of every
    ``batch`` tensor along ``batch_dim``) against the same at world size 1."""
    with fake_world(0, 1):   # fully_shard needs a process group; the names do not depend on it
        names = [ir_name(k) for k, _ in build().named_parameters()]
    ranks = range(world)
    local = {}
    for k, shape in batch.items():
        if shape[batch_dim] % world:
            raise ValueError(f"{name}: batch dim {batch_dim} of '{k}' ({shape[batch_dim]}) does not split "
                             f"over {world} ranks")
        local[k] = tuple(shape[:batch_dim]) + (shape[batch_dim] // world,) + tuple(shape[batch_dim + 1:])
    built = lambda *_: (build(), fsdp_call(step, optimizer))   # noqa: E731 (spec and every rank alike)
    return CaptureCase(
        name=name, spec=built, impl=built, world_size=world, inputs=dict(batch), impl_inputs=local,
        input_relation={k: [f"concat({', '.join(f'{k}@r{r}' for r in ranks)}, dim={batch_dim})"] for k in batch},
        expect={"loss": [f"mean({', '.join(f'loss@r{r}' for r in ranks)})"]},
        output_names=[f"new.{p}" for p in names] + ["loss"], seed=seed, spec_distributed=True)
