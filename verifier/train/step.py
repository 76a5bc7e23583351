"""One training iteration as a PyTorch program: the sequential step and each rank's part.

``run_step(inputs, role)`` is a full iteration: forward over ``M`` micro-batches
(``x [M, N, S, D]``, micro-batch ``m`` = ``x[m]``), a sum-of-squares loss scaled by
``1 / (M * elements of the global micro-batch)``, backward with ``torch.autograd.grad``
per micro-batch, gradient accumulation in micro-batch order, gradient synchronization,
the global gradient norm (``sqrt`` of the sum of squares), and an optimizer step (SGD,
or Adam with its moments as inputs and outputs). The sequential step is ``run_step``
with the trivial ``Role`` (one program holding every layer, no communication); a
parallel plan gives each rank its own ``Role`` (verifier/train/plan.py), which adds
pipeline send/recv, TP/SP/EP regions and the DP reductions.

The loss is scaled by the global element count (not a local mean followed by a
``1/dp`` average of gradients) so that every intermediate tensor of a rank is a clean
expression (slices, sums over ranks) of the sequential step's tensors: a scale factor
is not clean. The norm sums squares per (pipeline stage, reduction class) and adds the
class totals last; over the reals the order of a sum does not matter, and this order is
the one the plan's reductions realise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from verifier.capture.api import Capture, capture_graph
from verifier.capture.trace import InputSpec
from .models import ModelConfig, Par, layer, llama_params, local_shape


@dataclass(frozen=True)
class Optimizer:
    kind: str = "sgd"          # sgd | adam
    lr: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    @property
    def states(self) -> tuple[str, ...]:
        return ("m", "v") if self.kind == "adam" else ()

    def update(self, p, g, state: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One step (Adam at step 1: bias corrections ``1 - beta``)."""
        if self.kind == "sgd":
            return p - self.lr * g, {}
        if self.kind != "adam":
            raise ValueError(f"unknown optimizer {self.kind!r} (sgd or adam)")
        m = self.beta1 * state["m"] + (1 - self.beta1) * g
        v = self.beta2 * state["v"] + (1 - self.beta2) * g * g
        p = p - self.lr * (m / (1 - self.beta1)) / (torch.sqrt(v / (1 - self.beta2)) + self.eps)
        return p, {"m": m, "v": v}


@dataclass
class NormGroup:
    """Parameters whose squared gradients are summed together, then reduced over ``ranks``."""

    params: list[str]
    ranks: list[int] = field(default_factory=list)   # the reduction group ([] or one rank: none)
    group: Any = None                                # the process group of ``ranks`` (plans)
    sliced: dict[str, tuple[int, int]] = field(default_factory=dict)  # replicated grad: (parts, this part)


@dataclass
class Role:
    """What one program holds and does (the sequential step: everything, no communication)."""

    model: ModelConfig
    opt: Optimizer
    micro_batches: int
    layers: list[int]
    params: dict[str, tuple[int, ...]]            # local parameter shapes
    first: bool = True
    last: bool = True
    par: Par = field(default_factory=Par)
    groups: int = 1                               # MoE token groups held
    act_shape: tuple[int, ...] = ()               # [b, S, D] between pipeline stages
    prev: int | None = None                       # pipeline peers (global ranks)
    next: int | None = None
    loss_scale: float = 1.0
    loss_group: Any = None                        # loss metric all_reduce (last stage)
    grad_sync: list[tuple[list[str], str, Any]] = field(default_factory=list)  # (params, collective, group)
    reduce_after: int | None = None               # micro-batch after which grads are synced (None: last)
    zero1: tuple[int, int, Any] | None = None     # (dp, dp rank, dp group): sharded optimizer
    norm: list[list[NormGroup]] = field(default_factory=list)  # per stage, per class
    norm_pp_group: Any = None                     # all_gather of the class totals across stages
    label_order: list[int] | None = None          # micro-batch order of the labels (None: in order)
    backward_input: str = "activation"            # what a stage differentiates with respect to


def _send(t, peer) -> None:
    dist.send(t.detach().contiguous(), dst=peer)


def _recv(shape, peer):
    buf = torch.empty(shape)
    dist.recv(buf, src=peer)
    return buf


def _coll(kind: str, t, group):
    """A gradient/metric collective (sum; dim 0): ``all_reduce``, ``reduce_scatter``, ``all_gather``, ``none``."""
    if kind == "none" or group is None:
        return t
    if kind == "all_reduce":
        t = t.clone()
        dist.all_reduce(t, group=group)
        return t
    if kind == "reduce_scatter":
        w = dist.get_world_size(group)
        out = torch.empty((t.shape[0] // w,) + tuple(t.shape[1:]))
        dist.reduce_scatter_tensor(out, t.contiguous(), group=group)
        return out
    if kind == "all_gather":
        w = dist.get_world_size(group)
        out = torch.empty((w * t.shape[0],) + tuple(t.shape[1:]))
        dist.all_gather_into_tensor(out, t.contiguous(), group=group)
        return out
    raise ValueError(f"unknown collective {kind!r}")


def _forward_stage(p, h, inp, m: int, role: Role):
    c = role.model
    for i in role.layers:
        disp = inp["dispatch"][m] if "dispatch" in inp else None
        h = layer(p, i, h, inp["cos"], inp["sin"], c, role.par, disp, role.groups)
    return h


def _input_activation(inp, m: int, role: Role):
    if not role.first:
        return _recv(role.act_shape, role.prev).requires_grad_(True)
    return inp["x"][m]


def _sync(grads: dict[str, torch.Tensor], role: Role) -> dict[str, torch.Tensor]:
    out = dict(grads)
    for names, kind, group in role.grad_sync:
        for n in names:
            out[n] = _coll(kind, out[n], group)
    return out


def _square_sum(g, parts: tuple[int, int] | None):
    """Sum of squares; a gradient replicated over ``parts[0]`` ranks contributes its ``parts[1]``-th slice."""
    if parts is not None and parts[0] > 1:
        flat = g.reshape(-1)
        k = flat.shape[0] // parts[0]
        g = flat[parts[1] * k:(parts[1] + 1) * k]
    return g.pow(2).sum()


def _grad_norm(grads: dict[str, torch.Tensor], role: Role):
    totals = []
    for stage in role.norm:
        for ng in stage:
            acc = None
            for n in ng.params:
                s = _square_sum(grads[n], ng.sliced.get(n))
                acc = s if acc is None else acc + s
            if len(ng.ranks) > 1:
                acc = _coll("all_reduce", acc, ng.group)
            totals.append(acc)
    t = torch.cat([s.reshape(1) for s in totals])
    if role.norm_pp_group is not None:
        t = _coll("all_gather", t, role.norm_pp_group)
    return torch.sqrt(t.sum())


def _optimize(inp, grads, role: Role) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for n in role.params:
        p, g = inp[n], grads[n]
        state = {s: inp[f"{s}.{n}"] for s in role.opt.states}
        if role.zero1 is None:
            new, st = role.opt.update(p, g, state)
        else:
            dp, d, group = role.zero1
            k = p.shape[0] // dp
            new, st = role.opt.update(p[d * k:(d + 1) * k], g, state)
            new = _coll("all_gather", new, group)
        out["new." + n] = new
        out.update({f"new.{s}.{n}": v for s, v in st.items()})
    return out


def run_step(inp: dict[str, torch.Tensor], role: Role) -> dict[str, torch.Tensor]:
    """The iteration; returns ``new.<param>``, ``new.<state>.<param>``, ``loss`` (last stage), ``grad_norm``."""
    with torch.enable_grad():
        p = {n: inp[n].detach().requires_grad_(True) for n in role.params}
        names = list(role.params)
        saved, loss = [], None
        labels = role.label_order or list(range(role.micro_batches))
        for m in range(role.micro_batches):
            a = _input_activation(inp, m, role)
            h = _forward_stage(p, a, inp, m, role)
            if role.last:
                y = inp["y"][labels[m]]
                out = (h - y).pow(2).sum() * role.loss_scale
                loss = out if loss is None else loss + out
            else:
                _send(h, role.next)
                out = h
            saved.append((out, a))
        acc: dict[str, torch.Tensor] = {}
        for m, (out, a) in enumerate(saved):
            wrt = [p[n] for n in names] + ([a] if not role.first else [])
            seed = None if role.last else _recv(out.shape, role.next)
            gs = torch.autograd.grad(out, wrt, seed)
            if not role.first:
                _send(gs[-1] if role.backward_input == "activation" else gs[0], role.prev)
            for n, g in zip(names, gs):
                acc[n] = g if n not in acc else acc[n] + g
            if role.reduce_after == m:
                acc = _sync(acc, role)
        if role.reduce_after is None:
            acc = _sync(acc, role)
    acc = {n: g.detach() for n, g in acc.items()}
    out = _optimize(inp, acc, role)
    if role.last:
        out["loss"] = _coll("all_reduce", loss.detach(), role.loss_group)
    out["grad_norm"] = _grad_norm(acc, role)
    return out


class StepModule(torch.nn.Module):
    """A parameterless module whose call runs ``run_step`` on keyword inputs (for capture)."""

    def __init__(self, role: Role) -> None:
        super().__init__()
        self.role = role

    @staticmethod
    def call(module: StepModule, **inputs):
        return run_step(inputs, module.role)


def output_names(role: Role) -> list[str]:
    names = []
    for n in role.params:
        names.append("new." + n)
        names += [f"new.{s}.{n}" for s in role.opt.states]
    return names + (["loss"] if role.last else []) + ["grad_norm"]


def sequential_role(model: ModelConfig, opt: Optimizer, micro_batches: int, batch: int,
                    stages: list[list[int]] | None = None, groups: int = 1) -> Role:
    """The sequential step: every layer, ``batch`` samples per micro-batch. ``stages``
    groups the layers for the norm's summation order (default: one group)."""
    stages = stages or [list(range(model.layers))]
    params = {n: s for i in range(model.layers) for n, (s, _) in llama_params(model, i).items()}
    norm = []
    for st in stages:
        names = [n for i in st for n in llama_params(model, i)]
        dense = [n for n in names if not _expert(n)]
        expert = [n for n in names if _expert(n)]
        norm.append([NormGroup(dense)] + ([NormGroup(expert)] if expert else []))
    return Role(model, opt, micro_batches, list(range(model.layers)), params, groups=groups,
                loss_scale=loss_scale(micro_batches, model.seq * batch * model.hidden), norm=norm)


def _expert(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in ("w_gate", "w_up", "w_down")


def step_inputs(role: Role, batch: int) -> dict[str, InputSpec]:
    """Example inputs of a program: parameters, optimizer state, data (first/last stage), tables."""
    c, M = role.model, role.micro_batches
    seq = c.seq
    ins: dict[str, InputSpec] = {n: InputSpec(s, role="parameter") for n, s in role.params.items()}
    for n, s in role.params.items():
        shape = s if role.zero1 is None else (s[0] // role.zero1[0],) + tuple(s[1:])
        ins.update({f"{st}.{n}": InputSpec(shape, role="state", range=(0, 1) if st == "v" else None)
                    for st in role.opt.states})   # Adam's second moment is sampled in [0, 1): sqrt(v)
    if role.act_shape:          # a rank's tokens (sequence parallel: its S/tp of them)
        seq = role.act_shape[1]
    if role.first:
        ins["x"] = InputSpec((M, batch, seq, c.hidden))
    if role.last:
        ins["y"] = InputSpec((M, batch, seq, c.hidden), role="label")
    ins["cos"] = InputSpec((c.seq, c.head_dim), role="buffer")
    ins["sin"] = InputSpec((c.seq, c.head_dim), role="buffer")
    if c.kind == "moe" and not c.topk:     # routing declared, not computed
        t = c.seq * batch // role.groups
        ins["dispatch"] = InputSpec((M, role.groups, t, c.experts, c.capacity), role="mask")
    return ins


def capture_sequential(name: str, role: Role, inputs: dict[str, InputSpec]) -> Capture:
    """The sequential step captured into a one-device graph."""
    mod = StepModule(role)
    return capture_graph(name, mod, inputs, call=StepModule.call, output_names=output_names(role))


def loss_scale(micro_batches: int, global_elements: int) -> float:
    return 1.0 / (micro_batches * global_elements)


def shapes(model: ModelConfig, layers: list[int], par: Par) -> dict[str, tuple[int, ...]]:
    """Local parameter shapes of ``layers`` under ``par``."""
    return {n: local_shape(s, sp, par) for i in layers for n, (s, sp) in llama_params(model, i).items()}

