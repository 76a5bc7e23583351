"""Blocks of a templated training plan, each an ordinary refinement claim.

A block is one piece of the sequential step (spec, one device) against its TP group's
programs (impl, ``tp`` ranks, TP collectives inside), captured at small shapes with the
existing machinery and verified by the per-operator engine:

* ``fwd``  a Llama layer's forward for one micro-batch: ``h, cos, sin, <params> -> out``;
* ``bwd``  its backward (recomputing the forward): ``h, g, cos, sin, <params> -> g_in, grad.<p>``;
* ``loss`` the last stage's head: ``h, y -> loss = sum((h - y)^2), g = d loss / d h``
  (unscaled: the schedule's loss event carries the scale);
* ``sgd``  the optimizer on a shard: ``<p>, grad.<p> -> new.<p> = p - lr * grad.<p>``.

The parameters are layer 0's (``layers.0.q`` ...): every layer of the model is an
instance of the same block with its own parameters. Relations: activations and
cotangents replicated over the TP ranks (``h = h@r0 = h@r1 ...``), parameters,
their gradients and updates as in the reference parallelizer (``concat`` over TP on
the split dim, or replicated).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from certificates.solve import provers
from verifier.capture.case import CaptureCase, capture_case
from verifier.capture.trace import InputSpec
from .models import ModelConfig, Par, layer, llama_params, local_shape

BLOCKS = ("fwd", "bwd", "loss", "sgd")


def param_table(c: ModelConfig) -> dict[str, tuple[tuple[int, ...], Any]]:
    return llama_params(c, 0)


def _rep(name: str, tp: int) -> list[str]:
    return [f"{name}@r{j}" for j in range(tp)]


def param_relation(name: str, split, tp: int, prefix: str = "") -> list[str]:
    """A parameter (or its gradient / update, ``prefix``) over the TP ranks."""
    n = prefix + name
    if split is None or tp == 1:
        return _rep(n, tp) if split is None else [f"{n}@r0"]
    return [f"concat({', '.join(f'{n}@r{j}' for j in range(tp))}, dim={split[1]})"]


class _Block:
    """A module whose call runs one block on keyword inputs (for capture)."""

    def __init__(self, kind: str, c: ModelConfig, par: Par, lr: float, names: list[str]) -> None:
        import torch

        class M(torch.nn.Module):
            pass

        self.module = M()
        self.module.block = (kind, c, par, lr, names)

    @staticmethod
    def call(module, **inp):
        import torch

        kind, c, par, lr, names = module.block
        if kind == "fwd":
            return {"out": layer(inp, 0, inp["h"], inp["cos"], inp["sin"], c, par)}
        if kind == "bwd":
            with torch.enable_grad():
                p = {n: inp[n].detach().requires_grad_(True) for n in names}
                h = inp["h"].detach().requires_grad_(True)
                out = layer(p, 0, h, inp["cos"], inp["sin"], c, par)
                gs = torch.autograd.grad(out, [h] + [p[n] for n in names], inp["g"])
            res = {"g_in": gs[0].detach()}
            res.update({"grad." + n: g.detach() for n, g in zip(names, gs[1:])})
            return res
        if kind == "loss":
            with torch.enable_grad():
                h = inp["h"].detach().requires_grad_(True)
                loss = (h - inp["y"]).pow(2).sum()
                (g,) = torch.autograd.grad(loss, [h])
            return {"loss": loss.detach(), "g": g.detach()}
        return {"new." + n: inp[n] - lr * inp["grad." + n] for n in names}


def _inputs(kind: str, c: ModelConfig, par: Par, batch: int) -> dict[str, InputSpec]:
    act = (batch, c.seq, c.hidden)
    table = param_table(c)
    params = {n: InputSpec(local_shape(s, sp, par), role="parameter") for n, (s, sp) in table.items()}
    if kind in ("fwd", "bwd"):
        ins = {"h": InputSpec(act), **({"g": InputSpec(act)} if kind == "bwd" else {}),
               "cos": InputSpec((c.seq, c.head_dim), role="buffer"),
               "sin": InputSpec((c.seq, c.head_dim), role="buffer")}
        ins.update(params)
        return ins
    if kind == "loss":
        return {"h": InputSpec(act), "y": InputSpec(act, role="label")}
    ins = dict(params)
    ins.update({"grad." + n: InputSpec(s.shape, role="gradient") for n, s in params.items()})
    return ins


def _outputs(kind: str, names: list[str]) -> list[str]:
    return {"fwd": ["out"], "bwd": ["g_in"] + ["grad." + n for n in names], "loss": ["loss", "g"],
            "sgd": ["new." + n for n in names]}[kind]


def relations(kind: str, c: ModelConfig, tp: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The input and output relations a block's claim must state (the checker rebuilds them)."""
    table = param_table(c)
    rin: dict[str, list[str]] = {}
    rout: dict[str, list[str]] = {}
    if kind in ("fwd", "bwd"):
        for n in ("h", "g", "cos", "sin") if kind == "bwd" else ("h", "cos", "sin"):
            rin[n] = _rep(n, tp)
        rin.update({n: param_relation(n, sp, tp) for n, (_, sp) in table.items()})
        if kind == "fwd":
            rout["out"] = _rep("out", tp)
        else:
            rout["g_in"] = _rep("g_in", tp)
            rout.update({"grad." + n: param_relation(n, sp, tp, "grad.") for n, (_, sp) in table.items()})
    elif kind == "loss":
        rin = {"h": _rep("h", tp), "y": _rep("y", tp)}
        rout = {"loss": _rep("loss", tp), "g": _rep("g", tp)}
    else:
        rin.update({n: param_relation(n, sp, tp) for n, (_, sp) in table.items()})
        rin.update({"grad." + n: param_relation(n, sp, tp, "grad.") for n, (_, sp) in table.items()})
        rout.update({"new." + n: param_relation(n, sp, tp, "new.") for n, (_, sp) in table.items()})
    return rin, rout


def block_case(kind: str, c: ModelConfig, tp: int, lr: float = 0.1, batch: int = 1,
               rope_not_sliced: bool = False) -> CaptureCase:
    """The capture case of one block (``rope_not_sliced``: a faulty TP program, for the demo)."""
    import torch.distributed as dist

    names = list(param_table(c))
    rin, rout = relations(kind, c, tp)

    def impl(rank: int, world: int):
        group = dist.new_group(list(range(world))) if world > 1 else None
        par = Par(tp, group)
        if rope_not_sliced:   # every rank rotates with the whole table: wrong only with sharded sequences
            par = Par(tp, group, sp=True, rope="sharded", rope_offset=0)
        b = _Block(kind, c, par, lr, names)
        return b.module, _Block.call

    def spec():
        b = _Block(kind, c, Par(), lr, names)
        return b.module, _Block.call

    return CaptureCase(f"{kind}_tp{tp}", spec, impl, tp, _inputs(kind, c, Par(), batch), rin, rout,
                       impl_inputs=_inputs(kind, c, Par(tp), batch), output_names=_outputs(kind, names))


@dataclass
class BlockResult:
    kind: str
    claim: dict            # the refinement claim (artifact ids "<kind>.spec", "<kind>.impl")
    evidence: dict
    artifacts: list[dict]
    capture_s: float
    verify_s: float
    spec_ops: int
    impl_ops: int
    failure: str | None = None
    prepared: Any = None   # on failure: the captured block (``direct.Result``) for a counterexample search


def verify_block(kind: str, c: ModelConfig, tp: int, lr: float = 0.1, rope_not_sliced: bool = False,
                 seed: int = 0, batch: int = 1) -> BlockResult:
    """The reference parallelizer's block ``kind``, verified (``verify_captured``)."""
    return verify_captured(kind, block_case(kind, c, tp, lr, batch, rope_not_sliced), seed)


def verify_captured(kind: str, cc: CaptureCase, seed: int = 0) -> BlockResult:
    """Capture a block's case, verify it per operator, and return its claim, evidence and artifacts."""
    from verifier import certificate
    from verifier.refine import infer, report

    t0 = time.perf_counter()
    case = capture_case(cc)
    t1 = time.perf_counter()
    with provers(()):   # as the checker's template claims: no SMT solver (certificates/wiring.py)
        inf = infer(case, seed=seed)
    t2 = time.perf_counter()
    res = BlockResult(kind, {}, {}, [], t1 - t0, t2 - t1, len(case.spec["nodes"]), len(case.impl["nodes"]))
    if not inf.verified:
        res.failure, res.prepared = report.text(inf.failure, inf.prepared.impl).splitlines()[0], inf.prepared
        return res
    cert = certificate.per_operator_certificate(inf)
    claim = dict(cert["claims"][0])
    claim.update(id=kind, spec=f"{kind}.spec", impl=f"{kind}.impl")
    res.claim, res.evidence = claim, cert["evidence"][case.name]
    for a in cert["subject"]["artifacts"]:
        res.artifacts.append({**a, "id": f"{kind}.{a['id']}"})
    return res
