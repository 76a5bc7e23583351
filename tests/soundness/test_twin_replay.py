"""Twin recipes (verifier/refine/guesses.replay) name every rank they can, and stay proved.

A twin's recipe is replayed node by node onto a later alike step. It used to stop at the
first node with no match (no pipeline send after the last stage) and to match two recipe
nodes to one impl node (forward and backward gathers of one weight), so a replicated tensor
was related to one rank only and three training plans stopped as UNKNOWN. Replay now goes
on past a missing node and matches each impl node once; every guess is still proved, so the
equations it adds must survive replay, and a wrong one in their place must not.
"""

from __future__ import annotations

import copy
import importlib
import json
from types import SimpleNamespace

import pytest

from certificates import terms
from certificates.replay import replay
from verifier import certificate
from verifier.refine import infer
from verifier.refine.fast import Terms
from verifier.refine.guesses import replay as replay_recipe

_infer_module = importlib.import_module("verifier.refine.infer")


class _Region:
    """``reading(t, target)`` over a handful of nodes, as ``infer.Region`` answers it."""

    def __init__(self, *nodes) -> None:
        self.nodes = nodes

    def reading(self, t: str, target: str) -> list:
        return [n for n in self.nodes if n.target == target and t in n.inputs]


def _node(name: str, target: str, ins: list[str], outs: list[str]):
    return SimpleNamespace(name=name, target=target, inputs=ins, outputs=outs, attrs={})


def _step(target: str, ins: list, outs: list[str]) -> tuple:
    return target, {}, len(ins), tuple(False for _ in ins), [(i, True, c) for i, c in enumerate(ins)], outs


def test_replay_goes_on_past_a_node_with_no_match():
    """Rank 2 has no send after the last stage; rank 3's add is still named."""
    region = _Region(_node("add@r2", "add", ["a@r2"], ["s@r2"]), _node("add@r3", "add", ["a@r3"], ["s@r3"]))
    steps = [_step("add", [0], ["x2"]), _step("send", ["x2"], ["x3"]), _step("add", [1], ["x4"])]
    env = {0: "a@r2", 1: "a@r3"}
    assert replay_recipe(steps, env, region) is False   # partial: the send is missing
    assert env["x2"] == "s@r2" and env["x4"] == "s@r3" and "x3" not in env


def test_replay_matches_each_impl_node_once():
    """Two gathers of one weight are two impl nodes, not the first one twice."""
    g1, g2 = (_node(f"g{k}", "gather", ["w@r0", "w@r1"], [f"g{k}@r0", f"g{k}@r1"]) for k in (1, 2))
    steps = [_step("gather", [0, 1], ["x2", "x3"]), _step("gather", [0, 1], ["x4", "x5"])]
    env = {0: "w@r0", 1: "w@r1"}
    assert replay_recipe(steps, env, _Region(g1, g2)) is True
    assert [env[x] for x in ("x2", "x3", "x4", "x5")] == ["g1@r0", "g1@r1", "g2@r0", "g2@r1"]


def test_equations_are_distinct_before_proof():
    """Outcomes reused by key are matched to the equations one for one: no duplicates."""
    a, b = terms.Ref("a@r0"), terms.Ref("b@r1")
    got = _infer_module._shortest({"o": [b, a, terms.Ref("a@r0"), b]}, Terms())
    assert [str(e) for e in got["o"]] == ["a@r0", "b@r1"]


def _plan(**kw):
    pytest.importorskip("torch")
    from verifier.train import plan

    tc = importlib.import_module("examples.train.llama_plan").make_case(**kw)
    return plan.plan_case(tc).case


def _replay(cert, tmp_path, name: str) -> list:
    """The checker's results for ``cert`` written as is (no engine-side check first)."""
    path = tmp_path / name
    path.write_text(json.dumps(cert))
    return replay(str(path))


@pytest.mark.slow
def test_last_stage_replicas_verify_and_a_wrong_one_is_rejected(tmp_path):
    """tp2-pp2-mb2: after the last stage's all_reduce both TP ranks hold the residual; the
    engine relates it to both (control), and a certificate naming the add's own input in
    place of rank 3's copy is rejected by replay."""
    inf = infer(_plan(dp=1, tp=2, pp=2, micro_batches=2))
    assert inf.verified, inf.failure and inf.failure.message
    cert = certificate.per_operator_certificate(inf)
    assert all(r.ok for r in _replay(cert, tmp_path, "good.json"))
    impl = inf.prepared.impl
    producer = {o: n for n in impl.nodes for o in n.outputs}
    rel = next(iter(cert["evidence"].values()))["relation"]
    # a spec tensor equal to one tensor on each of ranks 2 and 3, computed there by an add
    spec_t, wrong = next((s, (es[1], producer[es[1]].inputs[0])) for s, es in reversed(list(rel.items()))
                         if len(es) == 2 and all(e.endswith(("@r2", "@r3")) and e in producer for e in es)
                         and es[0][-3:] != es[1][-3:] and producer[es[1]].target == "aten.add.Tensor"
                         and impl.tensors[producer[es[1]].inputs[0]].shape == impl.tensors[es[1]].shape)
    bad = copy.deepcopy(cert)
    bad_rel = next(iter(bad["evidence"].values()))["relation"]
    bad_rel[spec_t] = [wrong[1] if e == wrong[0] else e for e in bad_rel[spec_t]]
    assert bad_rel[spec_t] != rel[spec_t]
    results = _replay(bad, tmp_path, "bad.json")
    assert not results[0].ok and spec_t in results[0].detail, results[0].detail


@pytest.mark.slow
def test_sharded_rope_gathers_verify_and_unsliced_rope_does_not(tmp_path):
    """tp2 sp sharded rope: every rank gathers each weight twice (forward, backward); the
    engine relates both gathers (control verifies, its certificate replays). With the rope
    table not sliced along the sequence, the more complete twins still find no proof."""
    from verifier.train import mutate, plan

    kw = dict(dp=1, tp=2, pp=1, micro_batches=2, sp=True, rope="sharded")
    inf = infer(_plan(**kw))
    assert inf.verified, inf.failure and inf.failure.message
    assert all(r.ok for r in _replay(certificate.per_operator_certificate(inf), tmp_path, "c.json"))
    tc = mutate.apply(importlib.import_module("examples.train.llama_plan").make_case(**kw), "rope_not_sliced")
    assert not infer(plan.plan_case(tc).case).verified
