"""Scaled relations (``scale(t, num=, den=)``, ``mean(t1, ..., tn)``): the DDP mean convention verifies,
and every way of bending a scale is declined by the engine and REJECTed by replay.

The pair is a gradient in the DDP mean convention, in miniature: the spec differentiates a mean over
the whole batch, each rank a mean over its half, then the ranks all-reduce and divide by the world
size. The rank gradients are related to the spec's by ``mean(g@r0, g@r1)``, which only a scaled
relation states. Bugs are the same program with one constant or one collective changed.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from certificates import terms
from certificates.errors import Malformed, Unsupported
from certificates.graph import parse_graph
from certificates.refinement import check, parse_relation
from verifier.ir import GraphBuilder
from verifier.refine import infer
from verifier.stages.reduce import reduce_case

import forge
from forge import Pair

AR = "_c10d_functional.all_reduce.default"


def _ddp(local: float = 0.5, post: float = 0.5, reduce: bool = True, w: int = 2) -> Pair:
    """Spec: ``G = (X W^T / (2w))^T X`` (the gradient of a mean loss); rank ``r``: the same on its
    two rows with ``local`` in place of ``1/(2w)``, all-reduced (``reduce``) and times ``post``."""
    s = GraphBuilder("mean_grad")
    s.input("X", [2 * w, 2], "activation")
    s.input("W", [3, 2], "parameter")
    s.node("aten.linear.default", ["X", "W"], "Y")
    s.node("aten.mul.Tensor", ["Y"], "dY", other=1 / (2 * w))
    s.node("aten.t.default", ["dY"], "dYt")
    s.node("aten.mm.default", ["dYt", "X"], "G")
    s.output("G")
    g = GraphBuilder("mean_grad_dp", w)
    for r in range(w):
        g.input(f"x@r{r}", [2, 2], "activation", rank=r)
        g.input(f"w@r{r}", [3, 2], "parameter", rank=r)
        g.node("aten.linear.default", [f"x@r{r}", f"w@r{r}"], f"y@r{r}", rank=r, name=f"lin{r}")
        g.node("aten.mul.Tensor", [f"y@r{r}"], f"dy@r{r}", rank=r, name=f"dy{r}", other=local)
        g.node("aten.t.default", [f"dy@r{r}"], f"dyt@r{r}", rank=r, name=f"t{r}")
        g.node("aten.mm.default", [f"dyt@r{r}", f"x@r{r}"], f"g@r{r}", rank=r, name=f"mm{r}")
    if reduce:
        g.node(AR, [f"g@r{r}" for r in range(w)], [f"s@r{r}" for r in range(w)], group=list(range(w)),
               reduce_op="sum", name="ar")
    for r in range(w):
        g.node("aten.mul.Tensor", [f"{'s' if reduce else 'g'}@r{r}"], f"out@r{r}", rank=r, name=f"avg{r}",
               other=post)
        g.output(f"out@r{r}")
    rin = {"X": ["concat(" + ", ".join(f"x@r{r}" for r in range(w)) + ", dim=0)"],
           "W": [f"w@r{r}" for r in range(w)]}
    return s.build(), g.build(), rin, {"G": [f"out@r{r}" for r in range(w)]}


def _halved_input(rel: str, halve: bool = True, first: bool = True) -> Pair:
    """Spec ``Y = -X``; rank 1 holds ``2X`` (``rel``, the ``first`` equation of ``X`` or the second,
    says how) and halves it first where ``halve``."""
    s = GraphBuilder("neg")
    s.input("X", [2], "activation")
    s.node("aten.neg.default", ["X"], "Y")
    s.output("Y")
    g = GraphBuilder("neg_dp", 2)
    for r in range(2):
        g.input(f"x@r{r}", [2], "activation", rank=r)
    g.node("aten.neg.default", ["x@r0"], "y@r0", rank=0, name="neg0")
    src = "x@r1"
    if halve:
        g.node("aten.mul.Tensor", ["x@r1"], "h@r1", rank=1, name="half1", other=0.5)
        src = "h@r1"
    g.node("aten.neg.default", [src], "y@r1", rank=1, name="neg1")
    g.output("y@r0", "y@r1")
    return s.build(), g.build(), {"X": [rel, "x@r0"] if first else ["x@r0", rel]}, {"Y": ["y@r0", "y@r1"]}


def _bug_into(cert: dict, bug: Pair) -> dict:
    return forge.embed(cert, bug[0], bug[1])


def _retext(cert: dict, old: str, new: str) -> dict:
    text = json.dumps(cert)
    assert old in text
    return json.loads(text.replace(old, new))


def test_ddp_mean_convention_verifies_with_a_scaled_relation(tmp_path):
    inf = infer(forge.case(_ddp()))
    assert inf.verified, inf.failure and inf.failure.message
    assert "scale(concat(dy@r0, dy@r1, dim=0), num=1, den=2)" in [str(e) for e in inf.relation["dY"]]
    ok, why = forge.verdict(forge.certify(_ddp(), "per-operator"), tmp_path)
    assert ok, why


@pytest.mark.parametrize("bug", [
    dict(post=1.0),                  # missing 1/world after the all-reduce
    dict(reduce=False),              # missing gradient all-reduce
    dict(local=0.25),                # local loss divided by the global batch, then averaged again
    dict(post=0.4999999999999999),   # a constant 1/2 only to float precision: not 1/2
    dict(local=0.50000000001),       # a local factor the engine's rational guess would round to 1/2
])
@pytest.mark.parametrize("form", forge.FORMS)
def test_bent_ddp_scale_is_rejected(bug, form, tmp_path):
    forge.attack(_ddp(**bug), _ddp(), form, tmp_path, _bug_into)


def test_scaled_expectation(tmp_path):
    """The sum convention (no 1/world) meets the expectation ``G = scale(out@r0, 1/2)``; ``mean`` over the
    two equal copies is not that (it is ``2G``): the engine declines it and a forged certificate REJECTs."""
    s, g, rin, _ = _ddp(post=1.0)
    ok = (s, g, rin, {"G": ["scale(out@r0, num=1, den=2)", "mean(g@r0, g@r1)"]})
    bug = (s, g, rin, {"G": ["mean(out@r0, out@r1)"]})
    assert forge.verified(ok, "per-operator") and forge.verified(ok, "whole-graph")
    for form in forge.FORMS:
        assert not forge.verified(bug, form)
        cert = forge.certify(ok, form)
        assert forge.verdict(cert, tmp_path)[0]
        forged = _retext(cert, "scale(out@r0, num=1, den=2)", "mean(out@r0, out@r1)")
        assert not forge.verdict(forged, tmp_path)[0]


@pytest.mark.parametrize("old,new", [
    ("scale(concat(dy@r0, dy@r1, dim=0), num=1, den=2)", "concat(dy@r0, dy@r1, dim=0)"),  # factor dropped
    ("num=1, den=2)", "num=1, den=3)"),      # every 1/2 changed
    ("num=1, den=2)", "num=-1, den=2)"),     # sign flipped
    ("num=1, den=4)", "num=1, den=2)"),      # another step's factor
])
def test_tampered_scale_in_certificate_is_rejected(old, new, tmp_path):
    cert = forge.certify(_ddp(), "per-operator")
    assert forge.verdict(cert, tmp_path)[0]
    ok, why = forge.verdict(_retext(cert, old, new), tmp_path)
    assert not ok, why


@pytest.mark.parametrize("bad", ["scale(x@r0, num=0, den=1)", "scale(x@r0, num=2, den=4)",
                                 "scale(x@r0, num=1, den=0)", "scale(x@r0, num=1, den=-2)"])
def test_zero_or_non_canonical_scale_is_malformed(bad, tmp_path):
    s, g, _, expect = _halved_input("scale(x@r1, num=1, den=2)")
    spec, impl = parse_graph(s, "spec"), parse_graph(g, "impl")
    with pytest.raises(Malformed, match="lowest terms"):
        parse_relation({"X": [bad, "x@r1"]}, spec, impl, "case", inputs_only=True)
    cert = forge.certify(_halved_input("scale(x@r1, num=1, den=2)"), "per-operator")
    ok, why = forge.verdict(_retext(cert, "scale(x@r1, num=1, den=2)", bad.replace("x@r0", "x@r1")), tmp_path)
    assert not ok and "lowest terms" in why, why


@pytest.mark.parametrize("digits", [41, 5000])
def test_huge_scale_constant_is_malformed(digits, tmp_path):
    """Integers in clean expressions have at most 40 digits: a longer one is a one-line MALFORMED
    naming the column (5,000 digits once reached Python's int conversion limit inside replay)."""
    cert = forge.certify(_halved_input("scale(x@r1, num=1, den=2)"), "per-operator")
    ok, why = forge.verdict(_retext(cert, "den=2)", f"den={'9' * digits})"), tmp_path)
    assert not ok and "expected int at column" in why, why


def test_scaled_input_relation_defines_exactly(tmp_path):
    """``X = scale(x@r1, 1/2) = x@r0``: rank 1 holds 2X. Halving it first verifies; using it as X does not."""
    rel = "scale(x@r1, num=1, den=2)"
    for form in forge.FORMS:
        forge.attack(_halved_input(rel, halve=False), _halved_input(rel), form, tmp_path, _bug_into)


def test_scaled_further_input_equation_binds_exactly(tmp_path):
    """``X = x@r0 = scale(x@r1, 1/2)`` binds ``x@r1 := 2X``: the same verdicts as a first equation."""
    rel = "scale(x@r1, num=1, den=2)"
    for form in forge.FORMS:
        forge.attack(_halved_input(rel, halve=False, first=False), _halved_input(rel, first=False), form,
                     tmp_path, _bug_into)


@pytest.mark.parametrize("rel", ["reshape(scale(x@r1, num=1, den=2), shape=[2])",
                                 "permute(scale(x@r1, num=1, den=2), dims=[0])"])
def test_scale_below_a_move_is_not_bound_as_unscaled(rel, tmp_path):
    """A further equation with a scale below its top is refused (strict) or left out, never bound
    as if unscaled (that would verify the bug: rank 1 uses 2X as X)."""
    bug = _halved_input(rel, halve=False, first=False)
    spec, impl = parse_graph(bug[0], "spec"), parse_graph(bug[1], "impl")
    rin = parse_relation(bug[2], spec, impl, "case", inputs_only=True)
    rout = parse_relation(bug[3], spec, impl, "case", inputs_only=False)
    with pytest.raises(Unsupported, match="scales a part"):
        check(spec, impl, rin, rout)
    assert not any(o.holds for o in check(spec, impl, rin, rout, strict=False) if o.expr == "y@r1")
    assert not forge.verified(bug, "per-operator") and not forge.verified(bug, "whole-graph")
    cert = forge.certify(_halved_input("scale(x@r1, num=1, den=2)"), "per-operator")
    forged = forge.embed(_retext(cert, '"scale(x@r1, num=1, den=2)", "x@r0"', f'"x@r0", "{rel}"'), bug[0], bug[1])
    ok, why = forge.verdict(forged, tmp_path)
    assert not ok, why


def test_scaled_integer_relation_is_malformed():
    s = GraphBuilder("ids")
    s.input("I", [2], "index", dtype="int64", range=(0, 4))
    s.node("aten.neg.default", ["I"], "J")
    s.output("J")
    g = GraphBuilder("ids_dp", 1)
    g.input("i@r0", [2], "index", dtype="int64", range=(0, 4))
    g.node("aten.neg.default", ["i@r0"], "j@r0", name="n0")
    g.output("j@r0")
    spec, impl = parse_graph(s.build(), "spec"), parse_graph(g.build(), "impl")
    parse_relation({"I": ["i@r0"]}, spec, impl, "case", inputs_only=True)   # control
    with pytest.raises(Malformed, match="scales integer"):
        parse_relation({"I": ["scale(i@r0, num=1, den=1)"]}, spec, impl, "case", inputs_only=True)


def test_shape_reduction_refuses_scaled_relations():
    """Shape reduction does not rescale a claim's constant (a local mean's 1/2 is 1/B at another size), so a
    claim with a scaled relation is not verified stage by stage (the checker refuses it too:
    tests/soundness/test_shape_reduction.py)."""
    s, g, rin, expect = _ddp()
    with pytest.raises(Unsupported, match="verify without --staged"):   # the engine: UNKNOWN, not a crash
        reduce_case(forge.case((s, g, rin, {"G": ["mean(g@r0, g@r1)"]})))


def test_printer_is_canonical():
    for text in ["scale(x, num=-3, den=7)", "mean(a@r0, a@r1)", "scale(mean(a, b), num=1, den=2)"]:
        assert str(terms.parse(text)) == text
    assert terms.factor(terms.parse("mean(a, b, c)")) == (Fraction(1, 3), terms.parse("sum(a, b, c)"))
    assert terms.factor(terms.parse("scale(mean(a, b), num=-3, den=1)")) == (-3, terms.parse("mean(a, b)"))
