"""Mutants of real user training steps: every all-reduce of a captured impl graph dropped, every
point-to-point message lost, every scalar constant doubled, one at a time. The verifier may prove a mutant only where it computes the
same function: a VERIFIED mutant must also agree with the spec on every random run (at every
magnitude of ``direct.SCALES``); otherwise the verifier accepted a wrong program. Most mutants are
wrong, and those must be declined (the kill rate is asserted per example)."""

from __future__ import annotations

import copy
import dataclasses
import multiprocessing as mp
import os
import sys

import pytest

from certificates.errors import LimitExceeded
from certificates.limits import Limits
from verifier import direct
from verifier.capture.case import capture_case
from verifier.refine import infer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))

ARITH = ("aten.mul.", "aten.div.", "aten.add.", "aten.sub.")
SECONDS = 10.0   # per mutant


def mutants(impl: dict):
    """``(what, mutated impl graph)``: each all-reduce made the identity, each point-to-point message
    lost (zeros received), each scalar constant doubled."""
    for i, n in enumerate(impl["nodes"]):
        if n["target"] == "_c10d_functional.all_reduce.default":
            g = copy.deepcopy(impl)
            g["nodes"][i:i + 1] = [{"name": f"{n['name']}_dropped{k}", "target": "aten.clone.default", "rank": r,
                                    "inputs": [x], "outputs": [y]}
                                   for k, (r, x, y) in enumerate(zip(n["group"], n["inputs"], n["outputs"]))]
            yield f"drop {n['name']}", g
        if n["target"] == "c10d.send_recv.default":   # the message is lost: the receiver gets zeros
            g, out = copy.deepcopy(impl), n["outputs"][0]
            g["nodes"][i] = {"name": f"{n['name']}_lost", "target": "aten.zeros.default", "rank": n["group"][1],
                             "inputs": [], "outputs": [out], "attrs": {"size": impl["tensors"][out]["shape"]}}
            yield f"drop {n['name']} (lost)", g
        other = n.get("attrs", {}).get("other")
        if n["target"].startswith(ARITH) and type(other) in (int, float):
            g = copy.deepcopy(impl)
            g["nodes"][i]["attrs"]["other"] = other * 2 if other else 1
            yield f"{n['name']}: other {other} -> {g['nodes'][i]['attrs']['other']}", g


SLOW = pytest.mark.slow


def _verify(case, conn) -> None:
    try:   # a wrong program may grow large normal forms: past the limit it is declined (LIMIT)
        inf = infer(case, limits=Limits(seconds=SECONDS))
    except LimitExceeded:
        inf = None
    if inf is None or not inf.verified:
        conn.send(None)
    else:
        cx = direct.refute(inf.prepared, 0, Limits())
        conn.send("agrees" if cx is None else str(cx))


def _decide(case) -> str | None:
    """None: declined (not VERIFIED, or past ``2 * SECONDS`` in a forked run: a solver call is not
    interruptible); else whether the VERIFIED mutant agrees with the spec on random runs."""
    parent, child = mp.get_context("fork").Pipe()
    p = mp.get_context("fork").Process(target=_verify, args=(case, child))
    p.start()
    out = parent.recv() if parent.poll(2 * SECONDS) else None
    p.kill()
    p.join()
    return out


@pytest.mark.parametrize("example,kinds", [("ddp_module_user", "drop"), ("pipeline_1f1b_user", "drop"),
                                           pytest.param("ddp_adamw_user", "drop other", marks=SLOW),
                                           pytest.param("ddp_module_user", "drop other", marks=SLOW),
                                           pytest.param("pipeline_1f1b_user", "drop other", marks=SLOW)])
def test_a_verified_mutant_computes_what_the_spec_computes(example, kinds):
    """The mutants of ``kinds`` (CI: the dropped all-reduces, seconds in all; the slow run also every
    doubled constant: about 19 minutes for each DDP example, 38 in all on 2 cores)."""
    case = capture_case(__import__(example).make_case())
    found = [(what, g) for what, g in mutants(case.impl) if what.split()[0] in kinds.split()
             or ": other" in what and "other" in kinds]
    assert len(found) >= 4, len(found)
    killed, proved = 0, []
    for what, impl in found:
        verdict = _decide(dataclasses.replace(case, impl=impl))
        if verdict is None:
            killed += 1
            continue
        assert verdict == "agrees", f"{example}: mutant '{what}' VERIFIED but differs: {verdict}"
        proved.append(what)
    # the mutants proved are the ones that change nothing observable (e.g. a constant of a dead value)
    assert killed >= len(found) // 2, (killed, len(found), proved)
