"""Side conditions shown by their form (certificates/stages.py ``evident``; agda/Composition/Positivity.agda ``rms``).

A stage held by congruence on a partial operator assumes the spec node defined, and the claim then needs the whole
spec shown defined at full size. Two forms need no assumption: ``x^k`` with k in N, and an RMS norm's
``rsqrt(m + eps)`` with ``m`` a mean or sum of ``x^2`` over a nonempty axis and ``eps > 0``. Each near miss below
must still assume; and since whether a stage is evident depends on nodes outside its local obligation, a stage
whose local obligation equals an evident one's must not be matched to it (its key says which it is).
"""

import copy

import pytest

from certificates.graph import parse_graph
from certificates.stages import evident, held
from verifier.case import Case
from verifier.certificate import artifact
from verifier.ir import GraphBuilder
from verifier.stages.certificate import staged_certificate
from verifier.stages.run import verify_staged

from test_shape_reduction import _replay, rekeyed, stages_of

RMS = dict(square=("aten.pow.Tensor_Scalar", dict(exponent=2)), mean=("aten.mean.dim", dict(dim=[-1], keepdim=True)),
           add=("aten.add.Tensor", dict(other=1e-6, alpha=1)))


def _norms(*chains: dict) -> Case:
    """Spec ``Y_i = rsqrt(add(mean(square(X))))`` for each chain (its nodes' targets and attributes), on one replica."""
    s, g = GraphBuilder("spec", 1), GraphBuilder("impl", 1)
    s.input("X", [4, 3], "activation")
    g.input("x", [4, 3], "activation")
    for i, chain in enumerate(chains):
        for b, t, low in ((s, "X", str.upper), (g, "x", str.lower)):
            for step in ("square", "mean", "add"):
                target, kw = chain[step]
                t = b.node(target, [t], low(f"{step}{i}"), name=f"{step}{i}", **kw)
            b.node("aten.rsqrt.default", [t], low(f"y{i}"), name=f"rsqrt{i}")
    s.output(*[f"Y{i}" for i in range(len(chains))])
    g.output(*[f"y{i}" for i in range(len(chains))])
    return Case("norms", s.build(), g.build(), {"X": ["x"]}, {f"Y{i}": [f"y{i}"] for i in range(len(chains))})


MISSES = {"eps 0": dict(add=("aten.add.Tensor", dict(other=0, alpha=1))),
          "eps < 0": dict(add=("aten.add.Tensor", dict(other=-1e-6, alpha=1))),
          "alpha < 0": dict(add=("aten.add.Tensor", dict(other=1e-6, alpha=-1))),
          "a cube": dict(square=("aten.pow.Tensor_Scalar", dict(exponent=3))),
          "a square root": dict(square=("aten.pow.Tensor_Scalar", dict(exponent=0.5))),
          "a difference": dict(add=("aten.sub.Tensor", dict(other=1e-6, alpha=1))),
          "a max": dict(mean=("aten.amax.default", dict(dim=[-1], keepdim=True)))}


@pytest.mark.parametrize("miss", [None, *MISSES], ids=["rms", *MISSES])
def test_only_an_rms_norm_is_evident(miss):
    case = _norms({**RMS, **MISSES.get(miss, {})})
    spec = parse_graph(case.spec, "spec")
    node = spec.nodes[spec.position["rsqrt0"]]
    how, [(ls, _, _, rout)] = stages_of(case, {t: [t.lower()] for t in spec.tensors})[1]("rsqrt0")
    assert evident(spec, node) == (miss is None) and how == "congruence" + " (evident)" * (miss is None)
    assert all(o.assumed == (miss is not None) for o in held(ls, rout, how != "congruence"))


@pytest.mark.parametrize("k, total", [(2, True), (3, True), (0, True), (2.0, True), (-1, False), (0.5, False),
                                      (float("inf"), False), (True, False)])
def test_a_power_is_evident_for_a_natural_exponent(k, total):
    s = GraphBuilder("spec", 1)
    s.input("X", [4], "activation")
    s.node("aten.pow.Tensor_Scalar", ["X"], "Y", name="op", exponent=k)
    s.output("Y")
    spec = parse_graph(s.build(), "spec")
    assert evident(spec, spec.nodes[0]) == total


def test_an_evident_norm_is_verified_without_the_spec_shown_defined(tmp_path, monkeypatch):
    import certificates.refinement as refinement
    import verifier.stages.run as run
    for module in (refinement, run):
        monkeypatch.setattr(module, "spec_defined", lambda *a, **k: "must not be needed")
    res = verify_staged(_norms(RMS))
    assert res.verified, res.failure
    ok, why = _replay(staged_certificate(res), tmp_path)
    assert ok, why


def test_a_stage_like_an_evident_one_is_not_matched_to_it(tmp_path):
    """Two rsqrt stages with equal local obligations: the first an RMS norm, the second ``rsqrt(m - 1e30)``, which
    no sampled input defines. A certificate of the correct spec (the second stage matched to the first) carried
    over to this spec must be REJECTed: the second stage's key is not the first's, and proved on its own it
    assumes its node defined, which the replay then fails to show."""
    good = _norms(RMS, RMS)
    res = verify_staged(good)
    assert res.verified, res.failure
    cert = staged_certificate(res)
    stages = cert["evidence"]["norms"]["stages"]
    first, second = ([i for i, st in enumerate(stages) if st["op"] == f"rsqrt{k}"][0] for k in (0, 1))
    assert stages[second]["proved_by"] == first   # matched: one obligation
    bad = _norms(RMS, {**RMS, "add": ("aten.add.Tensor", dict(other=-1e30, alpha=1))})
    forged = copy.deepcopy(cert)
    forged["subject"]["artifacts"] = [artifact("spec", bad.spec), artifact("impl", bad.impl)]
    forged["evidence"]["norms"]["relation"] = {t: [t.lower()] for t in bad.spec["tensors"] if t != "X"}
    honest = rekeyed(forged, bad)   # every stage proving itself, with the keys the checker derives
    ok, why = _replay(honest, tmp_path)
    assert not ok and "not shown defined" in why, why
    matched = copy.deepcopy(honest)   # the attack: the second norm matched to the first, as in the correct spec
    st = matched["evidence"]["norms"]["stages"]
    st[second].update(proved_by=first, key=st[first]["key"])
    ok, why = _replay(matched, tmp_path)
    assert not ok and "(rsqrt1): its key is not the key of its obligation" in why, why


@pytest.mark.parametrize("target, kw", [("aten.native_layer_norm.default", dict(normalized_shape=[3])),
                                        ("aten.rms_norm.default", dict(normalized_shape=[3]))])
@pytest.mark.parametrize("eps, recorded", [(1e-5, False), (0, True), (-1e-5, True)])
def test_a_norm_records_its_root_only_without_a_positive_eps(target, kw, eps, recorded):
    """``ops._rstd``: ``1 / sqrt(mean(squares) + eps)`` is > 0 for eps > 0 (``Positivity.rms``), so its side conditions
    go unrecorded; with eps 0 or < 0 they are recorded as before (a constant row makes the variance 0)."""
    from certificates.graph import evaluate
    from certificates.poly import Rat, side_conditions
    import numpy as np
    s = GraphBuilder("spec", 1)
    s.input("X", [2, 3], "activation")
    s.node(target, ["X"], ["Y", "M", "R"] if "layer" in target else "Y", name="op", eps=eps, **kw)
    s.output("Y")
    spec = parse_graph(s.build(), "spec")
    x = np.array([[Rat.var(f"x{i}{j}") for j in range(3)] for i in range(2)], dtype=object)
    with side_conditions() as side:
        evaluate(spec, {"X": x}, True)
    assert bool(side) == recorded
