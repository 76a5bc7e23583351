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
from certificates.limits import Limits
from certificates.stages import constants, evident, held
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
    assert evident(spec, node, {}) == (miss is None) and how == "congruence" + " (evident)" * (miss is None)
    assert all(o.assumed == (miss is not None) for o in held(ls, rout, how != "congruence"))


@pytest.mark.parametrize("k, total", [(2, True), (3, True), (0, True), (2.0, True), (-1, False), (0.5, False),
                                      (float("inf"), False), (True, False)])
def test_a_power_is_evident_for_a_natural_exponent(k, total):
    s = GraphBuilder("spec", 1)
    s.input("X", [4], "activation")
    s.node("aten.pow.Tensor_Scalar", ["X"], "Y", name="op", exponent=k)
    s.output("Y")
    spec = parse_graph(s.build(), "spec")
    assert evident(spec, spec.nodes[0], {}) == total


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


def _replicated(build) -> Case:
    """``build(b, name)`` adds the same nodes to a spec and to a one-rank impl (lower-case names), from input ``X``
    / ``x`` [2, 3]; every stage is then held by congruence, so only what it assumes decides the claim."""
    s, g = GraphBuilder("spec", 1), GraphBuilder("impl", 1)
    s.input("X", [2, 3], "activation")
    g.input("x", [2, 3], "activation")
    build(s, str.upper)
    build(g, str.lower)
    s.output("Y")
    g.output("y")
    return Case("r", s.build(), g.build(), {"X": ["x"]}, {"Y": ["y"]})


def _masked_softmax(mask: list, exp_first: bool = True):
    """``Y = where(M, exp(X), 0) / sum(...)`` with ``M`` built in the graph from positions: ``arange(2)[:, None] >=
    arange(3)`` (causal), or ``>`` where ``mask`` is "none" (its first row all false)."""
    def build(b, n):
        p = b.node("aten.arange.default", [], n("p"), name="p", end=3, out_dtype="int64")
        q = b.node("aten.arange.default", [], n("q"), name="q", end=2, out_dtype="int64")
        qq = b.node("aten.unsqueeze.default", [q], n("qq"), name="qq", dim=1)
        m = b.node("aten.ge.Tensor" if mask == "causal" else "aten.gt.Tensor", [qq, p], n("m"), name="m",
                   out_dtype="bool")
        e = b.node("aten.exp.default", [n("X")], n("e"), name="e")
        z = b.node("aten.full.default", [], n("z"), name="z", size=[2, 3], fill_value=0, out_dtype="float32")
        w = b.node("aten.where.self", [m, e, z] if exp_first else [m, z, e], n("w"), name="w", out_dtype="float32")
        s = b.node("aten.sum.dim_IntList", [w], n("s"), name="s", dim=[-1], keepdim=True)
        b.node("aten.div.Tensor", [w, s], n("Y"), name="div")
    return _replicated(build)


@pytest.mark.parametrize("mask, exp_first, shown", [("causal", True, True), ("none", True, False),
                                                    ("causal", False, False)],
                         ids=["causal mask", "a row all masked", "exponentials where the mask is false"])
def test_a_masked_softmax_divides_by_a_positive_sum_only_where_every_row_has_a_true(mask, exp_first, shown):
    """SDPA's masked softmax divides by ``sum(where(mask, exp(x), 0))``: > 0 when the mask, built in the graph and
    evaluated at full size (``stages.constants``), has a true in every row. A row all false, or the exponentials on
    the false side (here every row still has one, so the claim holds, shown defined at a point instead), assume."""
    case = _masked_softmax(mask, exp_first)
    spec = parse_graph(case.spec, "spec")
    how, _ = stages_of(case, {t: [t.lower()] for t in spec.tensors})[1]("div")
    assert how == "congruence" + " (evident)" * shown


def test_a_certificate_over_a_mask_with_a_row_all_false_is_rejected(tmp_path):
    """The causal claim's certificate carried over to the mask ``>`` (its first row all false: 0 / 0 there, the spec
    defined nowhere), every stage proving itself with honest keys: the division assumes, and the spec is not shown
    defined, so the replay REJECTs."""
    res = verify_staged(_masked_softmax("causal"))
    assert res.verified, res.failure
    cert, bad = staged_certificate(res), _masked_softmax("none")
    cert["subject"]["artifacts"] = [artifact("spec", bad.spec), artifact("impl", bad.impl)]
    cert["evidence"]["r"]["relation"] = {t: [t.lower()] for t in bad.spec["tensors"] if t != "X"}
    ok, why = _replay(rekeyed(cert, bad), tmp_path)
    assert not ok and "not shown defined" in why, why
    ok, why = _replay(rekeyed(staged_certificate(res), _masked_softmax("causal")), tmp_path)
    assert ok, why


@pytest.mark.parametrize("node, ok", [(("aten.full.default", [], dict(size=[2, 3], fill_value=2.0)), True),
                                      (("aten.full.default", [], dict(size=[2, 3], fill_value=float("inf"))), False),
                                      (("aten.div.Scalar", ["X"], dict(other=4)), True),
                                      (("aten.div.Scalar", ["X"], dict(other=0)), False),
                                      (("aten.div.Scalar", ["X"], dict(other=-4)), False),
                                      (("aten.constant_pad_nd.default", ["X"], dict(pad=[1, 0], value=0)), True),
                                      (("aten.constant_pad_nd.default", ["X"], dict(pad=[1, 0], value=float("nan"))),
                                       False),
                                      (("aten.index.Tensor", ["X", "I"], {}), False),
                                      (("aten.arange.default", [], dict(end=3, out_dtype="int64")), True)],
                         ids=["full 2", "full inf", "div by 4", "div by 0", "div by -4", "pad by 0", "pad by nan",
                              "index out of range", "positions"])
def test_constants_and_their_near_misses(node, ok):
    """A finite ``full`` or padding, a division by a constant > 0, a node made from no input that evaluates: evident;
    an infinite or NaN constant, a divisor 0 or < 0 (defined, but not shown so here), an input-free index out of
    range (it fails to evaluate, so it is not ``known``): not; positions (``arange``, evaluated): evident."""
    target, ins, kw = node
    s = GraphBuilder("spec", 1)
    s.input("X", [2, 3], "activation")
    if "I" in ins:   # positions 0..3 index X's 2 rows: out of range
        s.node("aten.arange.default", [], "I", name="i", end=4, out_dtype="int64")
    s.node(target, ins, "Y", name="op", **kw)
    s.output("Y")
    spec = parse_graph(s.build(), "spec")
    assert evident(spec, spec.nodes[-1], constants(spec, Limits())) == ok


@pytest.mark.parametrize("target, kw, out", [("aten.mean.dim", dict(dim=[-1], keepdim=True), "Y"),
                                             ("aten.native_layer_norm.default", dict(normalized_shape=[0], eps=1e-5),
                                              ["Y", "M", "R"]),
                                             ("aten.rms_norm.default", dict(normalized_shape=[0], eps=1e-5), "Y")],
                         ids=["mean", "layer norm", "rms norm"])
def test_a_mean_over_an_empty_axis_is_not_total(target, kw, out, tmp_path):
    """A mean (or a norm) over an empty axis divides by 0: the spec is defined nowhere. Held by congruence it must
    assume the node defined, so the claim needs the spec shown defined, which fails: the certificate of the same
    claim on a nonempty axis, carried over with honest keys, is REJECTed (with the node taken as total it was a
    proof under an impossible assumption: ACCEPTed)."""
    def case(n: int) -> Case:
        s, g = GraphBuilder("spec", 1), GraphBuilder("impl", 1)
        for b, low in ((s, str.upper), (g, str.lower)):
            b.input(low("X"), [2, n], "activation")
            b.node(target, [low("X")], [low(o) for o in out] if isinstance(out, list) else low(out), name="op",
                   **{k: [n] if k == "normalized_shape" else v for k, v in kw.items()})
        s.output("Y")
        g.output("y")
        return Case("e", s.build(), g.build(), {"X": ["x"]}, {"Y": ["y"]})
    empty = case(0)
    spec = parse_graph(empty.spec, "spec")
    how, [(ls, _, _, rout)] = stages_of(empty, {t: [t.lower()] for t in spec.tensors})[1]("op")
    assert how == "congruence" and all(o.assumed for o in held(ls, rout))
    res = verify_staged(case(3))
    assert res.verified, res.failure
    cert = staged_certificate(res)
    cert["subject"]["artifacts"] = [artifact("spec", empty.spec), artifact("impl", empty.impl)]
    ok, why = _replay(rekeyed(cert, empty), tmp_path)
    assert not ok and "not shown defined" in why, why
