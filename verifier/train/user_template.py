"""Templated plans whose blocks are the user's own code (issue 16, docs/templates.md).

The user gives the pieces a framework would run at scale, written as usual (no pvcert code
inside): ``setup(tp)``, one decoder layer split over a 1-D TP mesh (``parallelize_module``) when
``tp > 1``, called ``layer(h, cos, sin)``; ``loss(h, y)``; ``optimizer(params)``. The four blocks
of the template are captured from that code, each at the real TP degree against the same code
at ``tp = 1`` (the spec):

* ``fwd``: ``layer(h, cos, sin)``; ``bwd``: autograd through it, seeded with ``g``
  (``g_in`` = the gradient of ``h``, ``grad.<p>`` of every parameter);
* ``loss``: ``loss(h, y)`` and its gradient ``g`` with respect to ``h``;
* ``sgd``: the user's optimizer, built on the parameters, stepped once with gradients
  ``grad.<p>`` (its first step, as the template's reference step states).

The lineage is derived from the DTensor placements (parameters, their gradients and updates:
``concat`` over the TP ranks on the sharded dim, or replicated); activations, cotangents, the
rotary tables and labels are replicated over the TP ranks, as the schedule assumes. The schedule
is the template's (GPipe over ``pp`` stages, DP all-reduce, one optimizer step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from verifier.capture.case import CaptureCase
from verifier.capture.convert import ir_name
from verifier.capture.dist import fake_world
from verifier.capture.relations import placements_relation
from verifier.capture.trace import InputSpec

from .template import TemplateCase


@dataclass(frozen=True)
class UserBlocks:
    """The user's code: ``setup(tp) -> layer``, ``loss(h, y)``, ``optimizer(params)``;
    ``rope_dim``: the last size of the rotary tables ``cos``/``sin`` ``[S, rope_dim]``."""

    setup: Callable[[int], torch.nn.Module]
    loss: Callable
    optimizer: Callable
    rope_dim: int


def user_template(name: str, user: UserBlocks, *, layers: int, dp: int, tp: int, pp: int, micro_batches: int,
                  seq: int, hidden: int, batch: int = 1) -> TemplateCase:
    """The plan of ``layers`` copies of the user's layer on a ``dp x tp x pp`` grid."""
    return TemplateCase(name, layers, dp, tp, pp, micro_batches, seq=seq, hidden=hidden, batch=batch, user=user)


def _params(user: UserBlocks, tp: int) -> list[tuple[str, tuple[int, ...], tuple[int, ...], Callable]]:
    """Per parameter of rank 0's layer: IR name, global and local shape, and ``rel(prefix)``: the relation
    of ``<prefix><name>`` (the parameter, its gradient, its update) from its placements (replicated when
    it is not a DTensor)."""
    from torch.distributed.tensor import DTensor

    with fake_world(0, tp):
        layer = user.setup(tp)
        out = []
        for k, p in layer.named_parameters():
            n = ir_name(k)
            if isinstance(p, DTensor):
                pl, mesh = p.placements, p.device_mesh.mesh.tolist()
                out.append((n, tuple(p.shape), tuple(p.to_local().shape),
                            lambda pre, n=n, pl=pl, mesh=mesh: placements_relation(pre + n, pl, mesh)))
            else:
                out.append((n, tuple(p.shape), tuple(p.shape),
                            lambda pre, n=n: [f"{pre}{n}@r{j}" for j in range(tp)]))
    return out


def _fwd(m, h, cos, sin):
    return [m(h, cos, sin)]


def _bwd(m, h, g, cos, sin):
    with torch.enable_grad():
        ps = list(m.parameters())
        for p in ps:
            p.requires_grad_(True)   # as nn.Parameter has it (capture passes plain tensors)
        h = h.detach().requires_grad_(True)
        gs = torch.autograd.grad(m(h, cos, sin), [h] + ps, g)
    return [x.detach() for x in gs]


def _local_grad(p, g):
    """``g`` as the gradient of ``p``: a DTensor of ``p``'s placements around this rank's part."""
    from torch.distributed.tensor import DTensor

    if not isinstance(p, DTensor):
        return g
    return DTensor.from_local(g, p.device_mesh, p.placements, run_check=False, shape=p.shape, stride=p.stride())


def block_cases(tc: TemplateCase) -> dict[str, CaptureCase]:
    """The capture cases of the four blocks, at the template's sizes and TP degree."""
    user, tp = tc.user, tc.tp
    d = tc.dims()
    act, table = (d["B"], d["S"], d["H"]), (d["S"], user.rope_dim)
    params = _params(user, tp)
    names = [n for n, *_ in params]

    def rep(*ns: str) -> dict[str, list[str]]:
        return {n: [f"{n}@r{j}" for j in range(tp)] for n in ns}

    def loss_call(m, h, y):
        with torch.enable_grad():
            h = h.detach().requires_grad_(True)
            value = user.loss(h, y)
            (g,) = torch.autograd.grad(value, [h])
        return [value.detach(), g.detach()]

    def sgd_call(m, **grads):
        named = list(m.named_parameters())
        for k, p in named:
            p.grad = _local_grad(p, grads[f"grad.{ir_name(k)}"])
        user.optimizer([p for _, p in named]).step()
        return [p.detach() for _, p in named]

    def case(kind: str, call: Callable, inputs: dict, rin: dict, expect: dict, outs: list[str],
             impl_inputs: dict | None = None, layer: bool = True) -> CaptureCase:
        build = (lambda t: (user.setup(t), call)) if layer else (lambda t: (torch.nn.Module(), call))
        return CaptureCase(f"{kind}_tp{tp}", lambda: build(1), lambda rank, world: build(tp), tp, inputs, rin,
                           expect, impl_inputs=impl_inputs, output_names=outs, spec_distributed=True)

    rot = {"cos": InputSpec(table, role="buffer"), "sin": InputSpec(table, role="buffer")}
    def lineage(pre: str) -> dict[str, list[str]]:
        return {pre + n: rel(pre) for n, _, _, rel in params}

    return {
        "fwd": case("fwd", _fwd, {"h": InputSpec(act), **rot}, {**rep("h", "cos", "sin"), **lineage("")},
                    rep("out"), ["out"]),
        "bwd": case("bwd", _bwd, {"h": InputSpec(act), "g": InputSpec(act), **rot},
                    {**rep("h", "g", "cos", "sin"), **lineage("")}, {**rep("g_in"), **lineage("grad.")},
                    ["g_in"] + [f"grad.{n}" for n in names]),
        "loss": case("loss", loss_call, {"h": InputSpec(act), "y": InputSpec(act, role="label")}, rep("h", "y"),
                     rep("loss", "g"), ["loss", "g"], layer=False),
        "sgd": case("sgd", sgd_call, {f"grad.{n}": InputSpec(s, role="gradient") for n, s, _, _ in params},
                    {**lineage(""), **lineage("grad.")}, lineage("new."), [f"new.{n}" for n in names],
                    impl_inputs={f"grad.{n}": InputSpec(ls, role="gradient") for n, _, ls, _ in params}),
    }
