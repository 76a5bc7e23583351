"""The reference parallelizer: a training step split over DP x TP x PP (+ SP, EP, ZeRO-1).

``plan_case(model, ParallelConfig(...), opt)`` captures the sequential step (the spec)
and every rank's program (the impl, one multi-rank graph) and returns a ``Case`` with
the lineage of every input and output as clean expressions, ready for the
per-operator engine (``verifier.refine.infer``). Rank ``r`` has coordinates
``t = r % tp``, ``d = (r // tp) % dp``, ``s = r // (tp * dp)`` (Megatron order, TP
fastest). ``write_case`` writes the JSON case (``pvcert verify case.json``); a JSON
plan with lineage from another source is the same format (docs/training.md).

``python -m verifier.train.plan CASE.py -o case.json [--mutation NAME]`` writes the
JSON case of a case module's ``make_case()`` (a ``TrainCase``).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from certificates.errors import Malformed
from verifier.capture.case import Case
from verifier.capture.convert import CaptureError
from verifier.capture.dist import fake_world, traceable_collectives
from verifier.capture.stitch import build_graph
from verifier.capture.trace import capture_module

from .models import ModelConfig, Par, llama_params
from .step import (NormGroup, Optimizer, Role, StepModule, capture_sequential, loss_scale, output_names, shapes,
                   sequential_role, step_inputs)


@dataclass(frozen=True)
class ParallelConfig:
    dp: int = 1
    tp: int = 1
    pp: int = 1
    micro_batches: int = 1
    sp: bool = False
    ep: int = 1
    zero1: bool = False
    batch: int = 1            # samples per micro-batch per DP rank
    rope: str = "gathered"    # under SP: RoPE on the full sequence ("gathered") or on the shards ("sharded")
    route_nodes: int = 1      # computed MoE routing on the ranks: expert blocks (nodes) ...
    route_limit: int = 1      # ... of which a token may use this many (node-limited routing)

    @property
    def world(self) -> int:
        return self.dp * self.tp * self.pp

    def coords(self, r: int) -> tuple[int, int, int]:
        """``(d, t, s)`` of rank ``r``."""
        return (r // self.tp) % self.dp, r % self.tp, r // (self.tp * self.dp)

    def rank(self, d: int, t: int, s: int) -> int:
        return t + self.tp * (d + self.dp * s)


@dataclass
class Bugs:
    """Plan-level faults (verifier/train/mutate.py); the default is the correct plan."""

    grad_collective: str = "all_reduce"       # all_reduce | all_gather | none
    grad_group: str = "dp"                    # the group the DP gradient reduction is issued on
    swap_pp_peers: bool = False               # forward activations sent to the wrong stage
    loss_scale_factor: int = 1                # the loss constant times this (dp: a missing 1/dp)
    backward_input: str = "activation"        # what a stage's gradient is taken with respect to
    reduce_after: int | None = None           # micro-batch after which gradients are reduced
    label_order: list[int] | None = None
    rope_not_sliced: bool = False             # sharded RoPE: every rank uses the first S/tp table rows


@dataclass
class TrainCase:
    """A plan to verify: model, parallel configuration, optimizer, and injected faults."""

    name: str
    model: ModelConfig
    config: ParallelConfig
    opt: Optimizer = field(default_factory=Optimizer)
    bugs: Bugs = field(default_factory=Bugs)
    approximations: tuple[str, ...] = ()   # accepted spec rewrites (certificates/approx.py):
    #   "local-batch-norm", "node-limited-routing"


def check(c: ModelConfig, p: ParallelConfig) -> None:
    """Clear errors for configurations the plan (or the engine's candidate forms) cannot handle."""
    need = [(c.layers % p.pp == 0, f"layers {c.layers} divisible by pp {p.pp}"),
            (c.heads % p.tp == 0 and c.ffn % p.tp == 0, f"heads {c.heads} and ffn {c.ffn} divisible by tp {p.tp}"),
            (p.micro_batches >= 1, "micro_batches >= 1"),
            (not p.sp or (c.kind == "llama" and p.tp > 1 and c.seq % p.tp == 0),
             f"sequence parallelism: Llama layers, tp > 1, seq {c.seq} divisible by tp {p.tp}"),
            (p.rope in ("gathered", "sharded"), f"rope 'gathered' or 'sharded', not {p.rope!r}"),
            (p.ep == 1 or (c.kind == "moe" and p.ep == p.dp and c.experts % p.ep == 0),
             "expert parallelism: MoE layers, ep == dp, experts divisible by ep"),
            (not p.zero1 or (p.tp == 1 and c.kind == "llama" and c.hidden % p.dp == 0 and c.ffn % p.dp == 0),
             "ZeRO-1: tp == 1, Llama layers, hidden and ffn divisible by dp"),
            (c.kind != "bn" or not p.sp, "batch-norm layers without sequence parallelism"),
            (p.route_nodes == 1 or (c.kind == "moe" and c.topk and c.experts % p.route_nodes == 0),
             "node-limited routing: MoE layers with computed routing (topk), experts divisible by route_nodes")]
    bad = [msg for ok, msg in need if not ok]
    if bad:
        raise ValueError("unsupported plan: needs " + "; ".join(bad))


def _expert(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in ("w_gate", "w_up", "w_down")


class Groups:
    """Every process group of the plan (global rank lists), created in one order on every rank."""

    def __init__(self, p: ParallelConfig, bugs: Bugs) -> None:
        R, T, D, S = p.rank, range(p.tp), range(p.dp), range(p.pp)
        self.lists: dict[tuple, list[int]] = {}
        for d in D:
            for s in S:
                self.lists[("tp", d, s)] = [R(d, t, s) for t in T]
        for t in T:
            for s in S:
                self.lists[("dp", t, s)] = [R(d, t, s) for d in D]
        for d in D:
            for t in T:
                self.lists[("pp", d, t)] = [R(d, t, s) for s in S]
        for s in S:
            self.lists[("stage", s)] = [R(d, t, s) for d in D for t in T]
        self.made: dict[tuple, Any] = {}

    def create(self) -> None:
        import torch.distributed as dist

        seen: dict[tuple[int, ...], Any] = {}
        for k, ranks in self.lists.items():
            key = tuple(sorted(ranks))
            if len(set(key)) != len(key):
                raise ValueError(f"group {k} repeats a rank: {ranks}")
            if key not in seen:
                seen[key] = dist.new_group(list(key)) if len(key) > 1 else None
            self.made[k] = seen[key]

    def __call__(self, *key) -> Any:
        return self.made[key]


def rank_role(tc: TrainCase, r: int, g: Groups) -> Role:
    c, p, b = tc.model, tc.config, tc.bugs
    d, t, s = p.coords(r)
    per = c.layers // p.pp
    layers = list(range(s * per, (s + 1) * per))
    ls = c.seq // p.tp if p.sp else c.seq          # tokens held in the norm/residual regions
    par = Par(p.tp, g("tp", d, s), p.ep, g("dp", t, s) if p.ep > 1 else None, sp=p.sp, rope=p.rope,
              rope_offset=0 if b.rope_not_sliced else t * ls, route_nodes=p.route_nodes, route_limit=p.route_limit)
    params = shapes(c, layers, par)
    first, last = s == 0, s == p.pp - 1
    nxt, prv = (p.rank(d, t, s + 1) if not last else None), (p.rank(d, t, s - 1) if not first else None)
    # a peer of another DP replica (a TP peer holds the same activation: no bug there)
    if b.swap_pp_peers and p.pp > 1 and not last:
        nxt = p.rank((d + 1) % p.dp, t, s + 1)
    if b.swap_pp_peers and p.pp > 1 and not first:
        prv = p.rank((d - 1) % p.dp, t, s - 1)
    dense = [n for n in params if not _expert(n)]
    replicated = [n for i in layers for n, (_, sp) in llama_params(c, i).items() if sp is None]
    dp_group = {"dp": g("dp", t, s), "tp": g("tp", d, s), "pp": g("pp", d, t)}[b.grad_group]
    sync: list[tuple[list[str], str, Any]] = []
    if p.sp:   # RMSNorm weights saw this rank's tokens only: partial over TP
        sync.append(([n for n in dense if n in replicated], "all_reduce", g("tp", d, s)))
    if p.zero1:
        sync.append((dense, "reduce_scatter", dp_group))
    else:
        sync.append((dense, b.grad_collective, dp_group))
    norm_ranks = g.lists[("stage", s)] if p.zero1 else g.lists[("tp", d, s)]
    norm_group = g("stage", s) if p.zero1 else g("tp", d, s)
    norm = [NormGroup(dense, norm_ranks, norm_group, {n: (p.tp, t) for n in dense if n in replicated})]
    experts = [n for n in params if _expert(n)]
    if experts:
        norm.append(NormGroup(experts, g.lists[("stage", s)], g("stage", s), {n: (p.tp, t) for n in experts}))
    scale = loss_scale(p.micro_batches, c.seq * p.batch * p.dp * c.hidden) * b.loss_scale_factor
    loss_group = g("stage", s) if p.sp else g("dp", t, s)   # SP: the loss is partial over TP too
    return Role(c, tc.opt, p.micro_batches, layers, params, first, last, par, 1, (p.batch, ls, c.hidden),
                prv, nxt, scale, loss_group, sync, b.reduce_after,
                (p.dp, d, dp_group) if p.zero1 else None, [norm], g("pp", d, t) if p.pp > 1 else None,
                b.label_order, b.backward_input)


def _lineage(tc: TrainCase) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    c, p = tc.model, tc.config
    R, T, D, S = p.rank, range(p.tp), range(p.dp), range(p.pp)
    per = c.layers // p.pp

    def cat(names: list[str], dim: int) -> str:
        return names[0] if len(names) == 1 else f"concat({', '.join(names)}, dim={dim})"

    def param(n: str, s: int, split, state: bool = False) -> list[str]:
        if state and p.zero1:
            return [cat([f"{n}@r{R(d, 0, s)}" for d in D], 0)]
        if split is None:
            return [f"{n}@r{R(d, t, s)}" for d in D for t in T]
        if split[0] == "tp":
            return [cat([f"{n}@r{R(d, t, s)}" for t in T], split[1]) for d in D]
        return [cat([f"{n}@r{R(d, t, s)}" for d in D], 0) for t in T]   # experts over EP (= DP)

    rel: dict[str, list[str]] = {}
    exp: dict[str, list[str]] = {}
    for i in range(c.layers):
        s = i // per
        for n, (_, split) in llama_params(c, i).items():
            rel[n], exp["new." + n] = param(n, s, split), param("new." + n, s, split)
            for st in tc.opt.states:
                rel[f"{st}.{n}"] = param(f"{st}.{n}", s, split, True)
                exp[f"new.{st}.{n}"] = param(f"new.{st}.{n}", s, split, True)
    for name, s in (("x", 0), ("y", p.pp - 1)):
        if p.sp:   # [M, N, S, D]: batch over DP (dim 1), sequence over TP (dim 2)
            rel[name] = [cat([cat([f"{name}@r{R(d, t, s)}" for t in T], 2) for d in D], 1)]
        else:
            rel[name] = [cat([f"{name}@r{R(d, t, s)}" for d in D], 1) for t in T]
    everyone = [f"@r{r}" for r in range(p.world)]
    rel["cos"] = ["cos" + e for e in everyone]
    rel["sin"] = ["sin" + e for e in everyone]
    if c.kind == "moe" and not c.topk:
        rel["dispatch"] = [cat([f"dispatch@r{R(d, t, s)}" for d in D], 1) for t in T for s in S]
    exp["loss"] = [f"loss@r{R(d, t, p.pp - 1)}" for d in D for t in T]
    exp["grad_norm"] = ["grad_norm" + e for e in everyone]
    return rel, exp


def spec_role(tc: TrainCase) -> Role:
    c, p = tc.model, tc.config
    per = c.layers // p.pp
    stages = [list(range(s * per, (s + 1) * per)) for s in range(p.pp)]
    return sequential_role(c, tc.opt, p.micro_batches, p.batch * p.dp, stages, groups=p.dp if c.kind == "moe" else 1)


@dataclass
class Captured:
    case: Case
    capture_s: float
    spec_ops: int
    impl_ops: int


def plan_case(tc: TrainCase) -> Captured:
    """Capture the sequential step and every rank of the plan; the lineage relates them."""
    import time

    c, p = tc.model, tc.config
    check(c, p)
    t0 = time.perf_counter()
    role = spec_role(tc)
    spec = capture_sequential(tc.name + "_spec", role, step_inputs(role, p.batch * p.dp))
    progs = []
    for r in range(p.world):
        with fake_world(r, p.world):
            g = Groups(p, tc.bugs)
            g.create()
            rr = rank_role(tc, r, g)
            ins = step_inputs(rr, p.batch)
            with traceable_collectives():
                cap = capture_module(StepModule(rr), ins, call=StepModule.call, output_names=output_names(rr),
                                     rank=r, where=f"{tc.name} rank {r}")
            progs.append(cap.program)
    impl = build_graph(tc.name + "_impl", progs, p.world, suffix=True)
    rel, exp = _lineage(tc)
    case = Case(tc.name, spec.graph, impl, rel, exp, approximations(tc, spec.graph))
    return Captured(case, time.perf_counter() - t0, len(spec.graph["nodes"]), len(impl["nodes"]))


def approximations(tc: TrainCase, spec: dict) -> list[dict]:
    """The declared approximations, spelled out per spec node.

    ``local-batch-norm``: every training-mode batch norm of the sequential step takes its
    statistics per DP rank's samples (``dp`` groups along the batch), as DP without
    synchronized batch norm does. ``node-limited-routing``: every routing node of the
    sequential step routes as the ranks do (``route_nodes`` blocks, ``route_limit`` of
    them per token). An approximation that changes nothing (dp 1, no node limit) is left out.
    """
    p, out = tc.config, []
    unknown = set(tc.approximations) - {"local-batch-norm", "node-limited-routing"}
    if unknown:
        raise ValueError(f"unknown approximation(s) {sorted(unknown)} (known: local-batch-norm, node-limited-routing)")
    for n in spec["nodes"]:
        if n["target"] == "aten.native_batch_norm.default" and "local-batch-norm" in tc.approximations and p.dp > 1:
            out.append({"rule": "local-batch-norm", "node": n["name"], "groups": p.dp})
        if n["target"] == "pvcert.route.default" and "node-limited-routing" in tc.approximations \
                and p.route_nodes > 1:
            out.append({"rule": "node-limited-routing", "node": n["name"], "nodes": p.route_nodes,
                        "limit": p.route_limit})
    return out


def write_case(case: Case, path: str) -> None:
    """The JSON case (``pvcert-case`` v1, graphs inline)."""
    doc = {"format": "pvcert-case", "version": 1, "name": case.name, "spec": case.spec, "impl": case.impl,
           "input_relation": case.input_relation, "expect": case.expect,
           **({"approximations": case.approximations} if case.approximations else {})}
    with open(path, "w") as f:
        json.dump(doc, f)


def load_train_case(path: str) -> TrainCase:
    """A case module's ``make_case()`` (or ``CASE``), a ``TrainCase``."""
    from verifier.capture.case import import_module

    mod = import_module(path)
    tc = mod.make_case() if hasattr(mod, "make_case") else getattr(mod, "CASE", None)
    if not isinstance(tc, TrainCase):
        raise ValueError(f"{path}: make_case() / CASE must give a verifier.train.plan.TrainCase")
    return tc


def main(argv: list[str] | None = None) -> int:
    from .mutate import MUTATIONS, apply

    ap = argparse.ArgumentParser(prog="python -m verifier.train.plan", description=__doc__.splitlines()[0])
    ap.add_argument("case", help="a module defining make_case() -> TrainCase (examples/train/*.py)")
    ap.add_argument("-o", "--output", required=True, help="the JSON case to write")
    ap.add_argument("--mutation", choices=sorted(MUTATIONS), help="inject a bug first")
    a = ap.parse_args(argv)
    try:
        tc = load_train_case(a.case)
        if a.mutation:
            tc = apply(tc, a.mutation)
        cap = plan_case(tc)
    except (ValueError, CaptureError, Malformed) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    write_case(cap.case, a.output)
    print(f"{tc.name}: captured in {cap.capture_s:.2f} s: spec {cap.spec_ops} ops, impl {cap.impl_ops} ops "
          f"({tc.config.world} ranks) -> {a.output}")
    return 0


if __name__ == "__main__":   # the package's module, not __main__: one TrainCase class
    from verifier.train.plan import main as _main

    sys.exit(_main())
