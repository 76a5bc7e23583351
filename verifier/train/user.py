"""A training step written by the user, captured as it runs (docs/training.md, "Your own training step").

``ddp_case`` captures the user's ``step(model, opt, **batch) -> loss`` on every rank under the fake
process group, each rank with its slice of the batch, and once with world size 1 on the whole batch:
the spec is the same code. The step runs as written (forward, ``loss.backward()``, gradient
all-reduce, clipping, ``opt.step()``); the captured outputs are the parameters after the step
(``new.<name>``) and the returned loss. The optimizer is built from the parameters by
``optimizer(params)`` before the step (its first step: its state starts empty).

The DDP lineage is derived, not written: parameters replicated on every rank, batch tensors
concatenated over the ranks along ``batch_dim``, updated parameters expected on every rank, and
the loss expected to be the mean of the ranks' losses (each rank's loss is a mean over its samples).
"""

from __future__ import annotations

from typing import Callable

import torch

from verifier.capture.case import CaptureCase
from verifier.capture.convert import ir_name
from verifier.capture.dist import fake_world
from verifier.capture.trace import InputSpec


def step_call(step: Callable, optimizer: Callable, loss: bool = True, state: "State | None" = None) -> Callable:
    """``call(model, **batch)`` for capture: the user's step with autograd on, returning the
    parameters after it, (``state``) the optimizer's state after it, and (``loss``: where the step
    reports one) its loss. With ``state`` the optimizer resumes: its state tensors are inputs."""
    def call(model: torch.nn.Module, **batch) -> list[torch.Tensor]:
        with torch.enable_grad():
            params = list(model.parameters())
            for p in params:
                p.requires_grad_(True)   # as nn.Parameter has it (capture passes plain tensors)
                p.grad = None            # the first step has no gradient yet (capture's probe run left one)
            opt = optimizer(params)
            if state is not None:
                state.load(opt, params, batch)
            out = step(model, opt, **batch)
        after = state.after(opt, params) if state is not None else []
        return [p.detach() for p in params] + after + ([out.detach()] if loss else [])
    return call


class State:
    """An optimizer resumed after ``steps`` earlier steps: each parameter-shaped tensor of its state
    is an input ``state.<key>.<param>``; a ``step`` counter is the constant ``steps``."""

    def __init__(self, model: Callable[[], torch.nn.Module], optimizer: Callable, steps: int) -> None:
        named = list(model().named_parameters())
        opt = optimizer([p for _, p in named])
        for _, p in named:
            p.grad = torch.zeros_like(p)
        opt.step()   # fills the state: its keys and shapes
        self.steps, self.names, self.keys, self.counters = steps, [ir_name(n) for n, _ in named], [], {}
        for n, p in zip(self.names, (p for _, p in named)):
            for k, v in opt.state[p].items():
                if k == "step":   # a counter: the number of earlier steps, a constant of the graph
                    self.counters[n] = v.dtype if torch.is_tensor(v) else None
                elif not torch.is_tensor(v) or v.shape != p.shape:
                    raise ValueError(f"optimizer state '{k}' of '{n}' is not a tensor shaped like the parameter")
                else:
                    self.keys.append((n, k, tuple(v.shape), v.dtype))

    def inputs(self) -> dict[str, InputSpec]:
        return {f"state.{k}.{n}": InputSpec(s, dt, "state") for n, k, s, dt in self.keys}

    def outputs(self) -> list[str]:
        return [f"new.state.{k}.{n}" for n, k, _, _ in self.keys]

    def load(self, opt: torch.optim.Optimizer, params: list, batch: dict) -> None:
        by_name = dict(zip(self.names, params))
        for n, k, _, _ in self.keys:
            opt.state[by_name[n]][k] = batch.pop(f"state.{k}.{n}")
        for n, dt in self.counters.items():
            opt.state[by_name[n]]["step"] = float(self.steps) if dt is None else torch.tensor(float(self.steps), dtype=dt)

    def after(self, opt: torch.optim.Optimizer, params: list) -> list[torch.Tensor]:
        by_name = dict(zip(self.names, params))
        return [opt.state[by_name[n]][k].detach() for n, k, _, _ in self.keys]


def _local(shape: tuple[int, ...], dim: int, world: int, where: str) -> tuple[int, ...]:
    if shape[dim] % world:
        raise ValueError(f"{where}: batch dim {dim} of size {shape[dim]} does not split over {world} ranks")
    return shape[:dim] + (shape[dim] // world,) + shape[dim + 1:]


def ddp_case(name: str, model: Callable[[], torch.nn.Module], optimizer: Callable, step: Callable,
             world: int, batch: dict[str, tuple[int, ...]], batch_dim: int = 1, seed: int = 0,
             resume: int = 0) -> CaptureCase:
    """The case: ``step`` on ``world`` ranks (each its ``1/world`` of every ``batch`` tensor along
    ``batch_dim``) against ``step`` on one device; parameters of ``model()`` replicated. ``resume``:
    the optimizer has made that many earlier steps; its state (replicated) is an input and an output."""
    with fake_world(0, 1):   # the model may need torch.distributed (a DDP wrapper)
        names = [ir_name(k) for k, _ in model().named_parameters()]
        state = State(model, optimizer, resume) if resume else None
    held = state.inputs() if state else {}
    outs = [f"new.{p}" for p in names] + (state.outputs() if state else []) + ["loss"]
    ranks = range(world)
    local = {k: _local(tuple(s), batch_dim, world, name) for k, s in batch.items()}
    built = lambda *_: (model(), step_call(step, optimizer, state=state))   # noqa: E731 (spec and ranks alike)
    return CaptureCase(
        name=name, spec=built, impl=built, world_size=world, inputs={**batch, **held}, impl_inputs={**local, **held},
        input_relation={**{p: [f"{p}@r{r}" for r in ranks] for p in [*names, *held]},
                        **{k: [f"concat({', '.join(f'{k}@r{r}' for r in ranks)}, dim={batch_dim})"] for k in batch}},
        expect={**{o: [f"{o}@r{r}" for r in ranks] for o in outs[:-1]},
                "loss": [f"mean({', '.join(f'loss@r{r}' for r in ranks)})"]},
        output_names=outs, seed=seed, spec_distributed=True)
