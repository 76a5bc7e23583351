"""A user's tensor + data parallel step (DTensor over a 2-D ``(dp, tp)`` mesh), captured as it runs.

``tp_dp_case`` captures ``step(model, opt, mesh, **batch) -> loss`` on every rank of a
``dp x tp`` world under the fake process group, and once at world size 1: the spec is the same
code. ``setup(dp, tp) -> (model, mesh)`` is the user's launcher code: it builds the mesh
(``init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))``, ranks laid out row-major)
and the model, parallelized over ``mesh["tp"]`` when ``tp > 1``. The captured outputs are the
parameters after the step (``new.<name>``) and the loss, as for DDP (``user.step_call``).

The lineage is derived, not written: parameters and updated parameters from their DTensor
placements (``Capture.relations``, every tp group's copy), batch tensors concatenated over the
dp ranks along ``batch_dim`` and replicated over tp, and the loss the mean of the dp replicas'
losses (each one a mean over its samples).
"""

from __future__ import annotations

from typing import Callable

from verifier.capture.case import CaptureCase
from verifier.capture.convert import ir_name
from verifier.capture.dist import fake_world
from verifier.train.user import _local, step_call


def _layout(dp: int, tp: int) -> list[list[int]]:
    """``init_device_mesh``'s global ranks of a ``(dp, tp)`` mesh: row ``d`` is dp replica ``d``."""
    return [[d * tp + t for t in range(tp)] for d in range(dp)]


def _built(setup: Callable, step: Callable, optimizer: Callable, dp: int, tp: int):
    model, mesh = setup(dp, tp)
    if mesh.mesh_dim_names != ("dp", "tp") or mesh.mesh.tolist() != _layout(dp, tp):
        raise ValueError(f"setup({dp}, {tp}) must return a row-major mesh named ('dp', 'tp') of shape "
                         f"({dp}, {tp}), got {mesh.mesh_dim_names} {mesh.mesh.tolist()}")
    return model, step_call(lambda m, opt, **batch: step(m, opt, mesh, **batch), optimizer)


def tp_dp_case(name: str, setup: Callable, optimizer: Callable, step: Callable, dp: int, tp: int,
               batch: dict[str, tuple[int, ...]], batch_dim: int = 0, seed: int = 0) -> CaptureCase:
    """The case: ``step`` on ``dp * tp`` ranks (dp replica ``d`` gets the ``d``-th ``1/dp`` of
    every ``batch`` tensor along ``batch_dim``, every tp rank of it the same) against ``step``
    on one device (``setup(1, 1)``)."""
    with fake_world(0, 1):   # the world-size-1 model, for its parameter names
        names = [ir_name(k) for k, _ in setup(1, 1)[0].named_parameters()]
    cols = [[row[t] for row in _layout(dp, tp)] for t in range(tp)]   # the dp group of each tp rank
    local = {k: _local(tuple(s), batch_dim, dp, name) for k, s in batch.items()}
    return CaptureCase(
        name=name, spec=lambda: _built(setup, step, optimizer, 1, 1),
        impl=lambda rank, world: _built(setup, step, optimizer, dp, tp),
        world_size=dp * tp, inputs=dict(batch), impl_inputs=local,
        input_relation={k: [f"concat({', '.join(f'{k}@r{r}' for r in col)}, dim={batch_dim})" for col in cols]
                        for k in batch},
        expect={"loss": [f"mean({', '.join(f'loss@r{r}' for r in col)})" for col in cols]},
        output_names=[f"new.{p}" for p in names] + ["loss"], seed=seed, spec_distributed=True)

