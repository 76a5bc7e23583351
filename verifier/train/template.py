"""Templated training plans: blocks verified once, a schedule template checked by its wiring.

A flat plan captures every rank (a 70B-shaped plan would be ~10^8 device ops). A
template instead holds (docs/templates.md):

* **blocks** (``template_blocks.py``): a layer's forward, its backward, the head + loss,
  SGD on a shard, each an ordinary refinement claim (sequential block vs its TP group's
  programs at the real TP degree, small shapes), verified by the per-operator engine;
* **a schedule**: per pipeline stage, the ordered events of rank ``(d, t, p)`` with loops
  over micro-batches and layers, peers and groups as formulas in ``d t p m l j``;
* **the wiring check** (``certificates/wiring.py``, the checker's own code): every rank
  runs abstractly, blocks must get the inputs their claims assume, sends and receives
  must pair up, no deadlock, every shard updated once from the full gradient at the
  sequential step's scale.

``python -m verifier.train.template CASE.py [--emit-cert c.json] [--mutation NAME]``
(``CASE.py`` defines ``make_template() -> TemplateCase``); ``pvcert replay c.json``.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from certificates import FORMAT, VERSION
from certificates.errors import CheckError, Malformed
from certificates.limits import Limits
from certificates.graph import CORE, parse_graph, require_families
from certificates.wiring import check_dims, check_gradients, check_schedule, check_sizes


@dataclass(frozen=True)
class TemplateCase:
    """A plan in template form: parallel degrees, and the sizes its blocks are captured and checked at
    (the claim states exactly these: ``hidden`` None is ``2 * max(2, tp)``, two per head)."""

    name: str
    layers: int
    dp: int
    tp: int
    pp: int
    micro_batches: int
    seq: int = 2            # the sequence length of the step and of its blocks
    hidden: int | None = None   # and hidden size
    batch: int = 1          # samples per micro-batch per DP replica
    lr: float = 0.1
    user: Any = None        # the user's layer, loss and optimizer (user_template.UserBlocks): the blocks' code

    def dims(self) -> dict[str, int]:
        return {"L": self.layers, "dp": self.dp, "tp": self.tp, "pp": self.pp, "M": self.micro_batches,
                "B": self.batch, "S": self.seq, "H": self.hidden or 2 * max(2, self.tp)}


def _stage_body(first: bool, last: bool) -> list[dict]:
    lo, hi = "p*L//pp", "(p+1)*L//pp"
    fwd: list[dict] = [{"do": "input", "data": "x", "micro": "m", "replica": "d", "out": ["a", lo, "m"]} if first
                       else {"do": "recv", "peer": ["d", "t", "p-1"], "reg": ["a", lo, "m"]},
                       {"do": "for", "var": "l", "from": lo, "to": hi,
                        "body": [{"do": "fwd", "layer": "l", "in": ["a", "l", "m"], "out": ["a", "l+1", "m"]}]}]
    if last:
        fwd += [{"do": "input", "data": "y", "micro": "m", "replica": "d", "out": ["y", "m"]},
                {"do": "loss", "in": ["a", "L", "m"], "label": ["y", "m"], "scale": ["1", "M*dp*B*S*H"],
                 "out": ["ga", "L", "m"], "loss": ["ls", "m"]},
                {"do": "acc", "into": ["LS"], "from": ["ls", "m"]}]
    else:
        fwd.append({"do": "send", "peer": ["d", "t", "p+1"], "reg": ["a", hi, "m"]})
    bwd: list[dict] = [] if last else [{"do": "recv", "peer": ["d", "t", "p+1"], "reg": ["ga", hi, "m"]}]
    bwd.append({"do": "for", "var": "l", "from": lo, "to": hi, "rev": True, "body": [
        {"do": "bwd", "layer": "l", "in": ["a", "l", "m"], "seed": ["ga", "l+1", "m"], "out": ["ga", "l", "m"],
         "grad": ["g", "l", "m"]},
        {"do": "acc", "into": ["G", "l"], "from": ["g", "l", "m"]}]})
    if not first:
        bwd.append({"do": "send", "peer": ["d", "t", "p-1"], "reg": ["ga", lo, "m"]})
    body = [{"do": "params", "from": lo, "to": hi},
            {"do": "for", "var": "m", "from": "0", "to": "M", "body": fwd},
            {"do": "for", "var": "m", "from": "0", "to": "M", "body": bwd},
            {"do": "for", "var": "l", "from": lo, "to": hi, "body": [
                {"do": "all_reduce", "reg": ["G", "l"], "group": ["j", "t", "p"], "size": "dp"}]},
            {"do": "for", "var": "l", "from": lo, "to": hi, "body": [
                {"do": "opt", "layer": "l", "grad": ["G", "l"]}]}]
    if last:
        body += [{"do": "all_reduce", "reg": ["LS"], "group": ["j", "t", "p"], "size": "dp"},
                 {"do": "metric", "reg": ["LS"]}]
    return body


def schedule(tc: TemplateCase) -> dict:
    """The GPipe schedule template (forward of every micro-batch, then backward, then DP sync and SGD).
    Stage ``p`` holds layers ``p*L//pp .. (p+1)*L//pp`` (uneven when pp does not divide L)."""
    if tc.layers < tc.pp:
        raise ValueError(f"{tc.layers} layers over {tc.pp} stages: a stage without layers")
    if tc.pp == 1:
        programs = [{"stages": ["0", "1"], "body": _stage_body(True, True)}]
    else:
        programs = [{"stages": ["0", "1"], "body": _stage_body(True, False)}]
        if tc.pp > 2:
            programs.append({"stages": ["1", "pp-1"], "body": _stage_body(False, False)})
        programs.append({"stages": ["pp-1", "pp"], "body": _stage_body(False, True)})
    return {"dims": tc.dims(), "tp_group": ["d", "j", "p"], "programs": programs}


# -- mutations (template form) --------------------------------------------------------------------

def _walk(body):
    for s in body:
        yield s
        if s["do"] == "for":
            yield from _walk(s["body"])


def _all(sched, pred):
    return [s for pr in sched["programs"] for s in _walk(pr["body"]) if pred(s)]


def _drop(sched, pred) -> None:
    def strip(body):
        body[:] = [s for s in body if not pred(s)]
        for s in body:
            if s["do"] == "for":
                strip(s["body"])
    for pr in sched["programs"]:
        strip(pr["body"])


def _grad_reduce(s) -> bool:
    return s["do"] == "all_reduce" and s["reg"][0] == "G"


def _early(sched) -> None:
    """The reducer runs before the last micro-batch's backward: split the backward loop at M-1."""
    for pr in sched["programs"]:
        b = pr["body"]
        i = next(k for k, s in enumerate(b) if s["do"] == "for" and s["var"] == "m" and
                 any(x["do"] == "bwd" for x in _walk(s["body"])))
        red = next(k for k, s in enumerate(b) if s["do"] == "for" and any(_grad_reduce(x) for x in _walk(s["body"])))
        head, last = copy.deepcopy(b[i]), copy.deepcopy(b[i])
        head["to"], last["from"] = "M-1", "M-1"
        b[i:i + 1] = [head, b[red], last]
        del b[red + 2]


def _peer(s, fwd_to: str, bwd_from: str) -> None:
    nxt, prv = s["peer"][2] == "p+1", s["peer"][2] == "p-1"
    if nxt:
        s["peer"][0] = fwd_to
    if prv:
        s["peer"][0] = bwd_from


MUTATIONS = {
    "drop_grad_allreduce": ("the DP gradient all_reduce is missing", lambda s: _drop(s, _grad_reduce)),
    "allreduce_as_allgather": ("the DP gradient all_reduce is an all_gather",
                               lambda s: [x.update(do="all_gather") for x in _all(s, _grad_reduce)]),
    "wrong_grad_group": ("the DP gradient all_reduce is issued on the PP group (TP group when pp == 1)",
                         lambda s: [x.update(group=["d", "t", "j"] if s["dims"]["pp"] > 1 else ["d", "j", "p"],
                                         size="pp" if s["dims"]["pp"] > 1 else "tp") for x in _all(s, _grad_reduce)]),
    "swap_pp_peer": ("pipeline peers on the next/previous stage of another DP replica",
                     lambda s: [_peer(x, "(d+1)%dp", "(d+dp-1)%dp") for x in _all(s, lambda y: "peer" in y)]),
    "loss_scale_missing_dp": ("the loss is scaled by 1/(M*B*S*H): missing 1/dp",
                              lambda s: [x["scale"].__setitem__(1, "M*B*S*H") for x in _all(s, lambda y: y["do"] == "loss")]),
    "loss_scale_missing_mb": ("the loss is not scaled by 1/M",
                              lambda s: [x["scale"].__setitem__(1, "dp*B*S*H") for x in _all(s, lambda y: y["do"] == "loss")]),
    "early_grad_reduce": ("the gradient reducer runs before the last micro-batch's backward", _early),
    "shuffled_micro_batches": ("the backward of micro-batch m uses the saved activation of micro-batch M-1-m",
                               lambda s: [x["in"].__setitem__(2, "M-1-m") for x in _all(s, lambda y: y["do"] == "bwd")]),
    "wrong_backward_input": ("a stage sends back its first layer's parameter gradient instead of its input gradient",
                             lambda s: [x.update(reg=["g", "p*L//pp", "m"]) for x in
                                        _all(s, lambda y: y["do"] == "send" and y["peer"][2] == "p-1")]),
    "wrong_pp_peer_formula": ("the backward gradient is sent two stages back ([d, t, p-2])",
                              lambda s: [x["peer"].__setitem__(2, "p-2") for x in
                                         _all(s, lambda y: y["do"] == "send" and y["peer"][2] == "p-1")]),
}


def mutate(sched: dict, name: str) -> dict:
    if name not in MUTATIONS:
        raise ValueError(f"unknown mutation {name!r} (one of {', '.join(MUTATIONS)})")
    out = copy.deepcopy(sched)
    MUTATIONS[name][1](out)
    if out == sched:
        raise ValueError(f"mutation {name} does not change this schedule")
    return out


def check_wiring(sched: dict, limits: Limits | None = None):
    """The checker's wiring check on a schedule (raises ``Rejected`` with the first fault)."""
    limits = limits or Limits()
    return check_schedule(sched, check_dims(sched, "schedule"), "schedule", limits)


# -- blocks and the certificate -------------------------------------------------------------------

def block_model(tc: TemplateCase):
    """The model the blocks are verified at: the template's own sequence and hidden size, real TP degree."""
    from .models import ModelConfig

    d, heads = tc.dims(), max(2, tc.tp)
    if d["H"] % (2 * heads) or d["S"] < 1:
        raise ValueError(f"template '{tc.name}': hidden {d['H']} must be a multiple of 2 x {heads} heads "
                         f"(rotary pairs, heads split over tp={tc.tp}), sequence {d['S']} positive")
    return ModelConfig("llama", layers=1, hidden=d["H"], heads=heads, ffn=2 * tc.tp, seq=d["S"])


@dataclass
class Verified:
    ok: bool
    reason: str
    cert: dict | None = None
    times: dict[str, float] = field(default_factory=dict)
    events: int = 0
    block: Any = None   # the block that was not proved (``template_blocks.BlockResult``)


def verify(tc: TemplateCase, mutation: str | None = None, blocks: list | None = None) -> Verified:
    """Blocks (unless given), schedule, wiring; the certificate when everything holds."""
    from verifier import __version__

    from .template_blocks import BLOCKS, verify_block

    times: dict[str, float] = {}
    sched = schedule(tc)
    if mutation:
        sched = mutate(sched, mutation)
    t0 = time.perf_counter()
    if blocks is None and tc.user is not None:
        from .template_blocks import verify_captured
        from .user_template import block_cases

        blocks = [verify_captured(k, c) for k, c in block_cases(tc).items()]
    elif blocks is None:
        blocks = [verify_block(k, block_model(tc), tc.tp, tc.lr, batch=tc.batch) for k in BLOCKS]
    times["blocks_s"] = time.perf_counter() - t0
    for b in blocks:
        times[f"{b.kind}_capture_s"], times[f"{b.kind}_verify_s"] = b.capture_s, b.verify_s
        if b.failure:
            return Verified(False, f"block {b.kind}: {b.failure}", None, times, block=b)
    t1 = time.perf_counter()
    try:
        run = check_wiring(sched)
    except CheckError as e:
        times["wiring_s"] = time.perf_counter() - t1
        return Verified(False, str(e), None, times)
    times["wiring_s"] = time.perf_counter() - t1
    try:
        check_blocks(blocks, sched["dims"])
    except CheckError as e:
        return Verified(False, str(e), None, times)
    claim = {"id": tc.name, "kind": "train-template", **sched, "blocks": {b.kind: b.claim for b in blocks}}
    cert = {"format": FORMAT, "version": VERSION,
            "header": {"tool": "pvcert", "tool_version": __version__, "engine": "template",
                       "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")},
            "subject": {"artifacts": [a for b in blocks for a in b.artifacts]},
            "claims": [claim],
            "evidence": {tc.name: {"method": "template", "events": run.events,
                                   "blocks": {b.kind: b.evidence for b in blocks}}},
            "verdict": "ACCEPT"}
    return Verified(True, f"{run.world} ranks, {run.events} events", cert, times, run.events)


def check_blocks(blocks: list, dims: dict) -> None:
    """The checker's guards on the blocks: its operator families, the claim's sizes, gradients not vanishing."""
    graphs = {b.kind: tuple(parse_graph(next(a["embedded"] for a in b.artifacts if a["id"] == f"{b.kind}.{side}"),
                                        f"block {b.kind} {side}") for side in ("spec", "impl")) for b in blocks}
    for k, pair in graphs.items():
        require_families(CORE, f"block {k}", *pair)
    check_sizes(graphs, dims)
    params = sorted(set(next(b for b in blocks if b.kind == "fwd").claim["input_relation"]) - {"h", "cos", "sin"})
    check_gradients(graphs, params, Limits())


def load_template(path: str) -> TemplateCase:
    """A template module's ``make_template()``, a ``TemplateCase``."""
    from verifier.capture.case import import_module

    mod = import_module(path)
    tc = mod.make_template() if hasattr(mod, "make_template") else None
    if not isinstance(tc, TemplateCase):
        raise ValueError(f"{path}: make_template() must give a verifier.train.template.TemplateCase")
    if tc.user is None:
        block_model(tc)     # sizes the reference blocks can be built at
    return tc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verifier.train.template", description=__doc__.splitlines()[0])
    ap.add_argument("case", nargs="?", help="a module defining make_template() -> TemplateCase")
    ap.add_argument("--emit-cert", metavar="FILE", help="write the certificate here")
    ap.add_argument("--mutation", choices=sorted(MUTATIONS), help="inject a bug into the schedule first")
    ap.add_argument("--list", action="store_true", help="list the mutations")
    a = ap.parse_args(argv)
    if a.list or not a.case:
        for k, (v, _) in MUTATIONS.items():
            print(f"{k:24} {v}")
        return 0
    try:
        tc = load_template(a.case)
        t0 = time.perf_counter()
        res = verify(tc, a.mutation)
    except (ValueError, OSError, Malformed) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    secs = time.perf_counter() - t0
    if not res.ok:   # no program was run: not a refutation (docs/exit-codes.md)
        print(f"UNKNOWN {tc.name}{'+' + a.mutation if a.mutation else ''}: {res.reason} ({secs:.2f} s)")
        return 4
    if a.emit_cert:
        with open(a.emit_cert, "w") as f:
            json.dump(res.cert, f)
        print(f"certificate written to {a.emit_cert}")
    print(f"VERIFIED {tc.name}: {res.reason}; blocks {res.times['blocks_s']:.1f} s, wiring "
          f"{res.times['wiring_s']:.1f} s ({secs:.1f} s)")
    return 0


if __name__ == "__main__":   # the package's module, not __main__: one TemplateCase class
    from verifier.train.template import main as _main

    sys.exit(_main())
