"""No proof from impossible assumptions (DESIGN.md rule 4; issue 12, item 4).

Partial operations (division, reciprocal, log, sqrt, rsqrt) carry side conditions. A proof may
assume only the spec's, after they are shown satisfiable; the impl's must follow from them. Each
attack must not verify (either engine), and the control's certificate with the attack's graphs
put in must be REJECTed by replay. A property test then builds random small graphs with partial
operations and checks that whole-graph and per-operator evidence decide each claim alike.
"""

from __future__ import annotations

import random

import pytest

from certificates import chain, refinement
from certificates.chain import witnessed
from certificates.errors import Rejected, Unsupported
from certificates.graph import parse_graph
from certificates.limits import Limits
from verifier.ir import GraphBuilder

import forge
from forge import Pair

ZERO = "zero"  # relu(w) - relu(-w) - w: zero for every w, not in normal form


def _term(g: GraphBuilder, kind: str, w: str, p: str) -> str:
    """A tensor of ``w``'s shape: ZERO, ``exp(w)``, ``w*w + 1``, ``-(w*w + 1)`` or ``w`` itself."""
    if kind == ZERO:
        a = g.node("aten.relu.default", [w], f"{p}a")
        b = g.node("aten.relu.default", [g.node("aten.neg.default", [w], f"{p}n")], f"{p}b")
        return g.node("aten.sub.Tensor", [g.node("aten.sub.Tensor", [a, b], f"{p}c"), w], f"{p}d")
    if kind == "exp":
        return g.node("aten.exp.default", [w], f"{p}e")
    if kind in ("square+1", "-(square+1)"):
        s = g.node("aten.add.Scalar", [g.node("aten.mul.Tensor", [w, w], f"{p}s")], f"{p}s1", other=1)
        return s if kind == "square+1" else g.node("aten.neg.default", [s], f"{p}ns")
    return w


def _graph(name: str, x: str, w: str, out: str, build) -> dict:
    g = GraphBuilder(name)
    g.input(x, [2], "activation")
    g.input(w, [2], "parameter")
    g.node("aten.clone.default", [build(g, x, w)], out, name="out")
    g.output(out)
    return g.build()


def _pair(spec, impl) -> Pair:
    return (_graph("spec", "X", "W", "Y", spec), _graph("impl", "x", "w", "y", impl),
            {"X": ["x"], "W": ["w"]}, {"Y": ["y"]})


def _plus_recip(kind: str):
    """x + 1/t."""
    return lambda g, x, w: g.node("aten.add.Tensor", [x, g.node("aten.reciprocal.default",
                                                                [_term(g, kind, w, "t")], "r")], "o")


def _plus(kind: str):
    """x + t."""
    return lambda g, x, w: g.node("aten.add.Tensor", [x, _term(g, kind, w, "t")], "o")


def _times_ratio(kind: str):
    """x * (t / t): the quotient cancels in the normal form; the side condition stays."""
    def build(g, x, w):
        t = _term(g, kind, w, "t")
        return g.node("aten.mul.Tensor", [x, g.node("aten.div.Tensor", [t, t], "q")], "o")
    return build


def _plus_zero_log(kind: str):
    """x + 0 * log(t): the product vanishes in the normal form; the side condition stays."""
    def build(g, x, w):
        lg = g.node("aten.log.default", [_term(g, kind, w, "t")], "l")
        return g.node("aten.add.Tensor", [x, g.node("aten.mul.Scalar", [lg], "z", other=0)], "o")
    return build


def _times_recip_product(g, x, w):
    """x * (w * (1/w)): defined where the spec ``X * (W/W)`` is."""
    q = g.node("aten.mul.Tensor", [w, g.node("aten.reciprocal.default", [w], "r")], "q")
    return g.node("aten.mul.Tensor", [x, q], "o")


def _copy(g, x, w):
    return x


ATTACKS: dict[str, tuple] = {  # name: (bug, control)
    "x + 1/(relu(w) - relu(-w) - w) (issue 12)": (
        lambda: _pair(_copy, _plus_recip(ZERO)), lambda: _pair(_copy, _plus(ZERO))),
    "x * (d/d) with d zero everywhere": (
        lambda: _pair(_copy, _times_ratio(ZERO)), lambda: _pair(_copy, _times_ratio("exp"))),
    "x + 0 * log(-(w*w + 1))": (
        lambda: _pair(_copy, _plus_zero_log("-(square+1)")), lambda: _pair(_copy, _plus_zero_log("square+1"))),
    "impl divides by w, the spec does not": (
        lambda: _pair(_copy, _times_ratio("w")), lambda: _pair(_times_ratio("w"), _times_recip_product)),
    "spec defined nowhere (its own side conditions are unsatisfiable)": (
        lambda: _pair(_times_ratio(ZERO), _times_ratio(ZERO)),
        lambda: _pair(_times_ratio("square+1"), _times_ratio("square+1"))),
}


def _relate_lower(cert: dict, bug: Pair) -> dict:
    """The control's certificate with the bug's graphs in place; per-operator evidence relates each
    spec tensor to the impl tensor of the same name, lower-cased, or to ``y``."""
    cert = forge.embed(cert, bug[0], bug[1])
    impl_tensors = bug[1]["tensors"]
    evidence = next(iter(cert["evidence"].values()))
    if "relation" in evidence:
        evidence["relation"] = {t: [t.lower() if t.lower() in impl_tensors else "y"] for t in bug[0]["tensors"]
                                if t not in bug[0]["inputs"]}
        evidence["steps"] = [n["name"] for n in bug[0]["nodes"]]
    return cert


@pytest.mark.parametrize("form", forge.FORMS)
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_definedness_attack_is_refused_and_its_certificate_rejected(name, form, tmp_path):
    bug, ok = ATTACKS[name]
    forge.attack(bug(), ok(), form, tmp_path, _relate_lower)


# ---------------------------------------------------------------- property: one claim, one answer

UNARY = ("aten.exp.default", "aten.neg.default", "aten.relu.default", "aten.log.default", "aten.sqrt.default",
         "aten.reciprocal.default", "aten.rsqrt.default")
BINARY = ("aten.add.Tensor", "aten.mul.Tensor", "aten.div.Tensor", "aten.sub.Tensor")
GUARDS = ("none", "none", "exp", "square+1", ZERO, "own")


def _random_claim(rng: random.Random) -> tuple[dict, dict, dict]:
    """A random spec of 2-4 operators over X, W (partial ones included), an impl computing the
    same with some results multiplied by ``t/t`` for a guard ``t``, and the relation between them."""
    s, g = GraphBuilder("spec"), GraphBuilder("impl")
    for b, (x, w) in ((s, ("X", "W")), (g, ("x", "w"))):
        b.input(x, [2], "activation")
        b.input(w, [2], "parameter")
    spec_names, impl_names, relation = ["X", "W"], ["x", "w"], {}
    if rng.random() < 0.15:  # log(W) and log(-W) side by side: each defined somewhere, both nowhere
        for b, w, p in ((s, "W", "C"), (g, "w", "c")):
            b.node("aten.log.default", [w], f"{p}0", name=f"{p}l0")
            b.node("aten.log.default", [b.node("aten.neg.default", [w], f"{p}1", name=f"{p}n")], f"{p}2",
                   name=f"{p}l2")
        relation.update({"C0": ["c0"], "C1": ["c1"], "C2": ["c2"]})
    for i in range(rng.randint(2, 4)):
        if rng.random() < 0.5:
            target, k = rng.choice(UNARY), [rng.randrange(len(spec_names))]
        else:
            target, k = rng.choice(BINARY), [rng.randrange(len(spec_names)) for _ in (0, 1)]
        out = s.node(target, [spec_names[j] for j in k], f"S{i}", name=f"s{i}")
        raw = g.node(target, [impl_names[j] for j in k], f"r{i}", name=f"i{i}")
        guard = rng.choice(GUARDS)
        if guard == "own":  # the node's own divisor (or nothing to guard)
            guard = "own" if target in ("aten.div.Tensor", "aten.reciprocal.default") else "none"
        if guard == "none":
            res = raw
        else:
            base = impl_names[k[-1]] if guard == "own" else impl_names[1]
            t = _term(g, guard if guard != "own" else "w", base, f"g{i}")
            res = g.node("aten.mul.Tensor", [raw, g.node("aten.div.Tensor", [t, t], f"q{i}")], f"p{i}")
        spec_names.append(out)
        impl_names.append(res)
        relation[out] = [res]
    s.output(spec_names[-1])
    g.output(impl_names[-1])
    return s.build(), g.build(), relation


def _decide(spec, impl, rin, rout, evidence) -> bool:
    """The checker's replay of one evidence form: accepted or not."""
    try:
        if evidence["method"] == "whole-graph":
            chain._whole_graph(spec, impl, rin, rout, evidence, "claim", Limits())
        else:
            chain._per_operator(spec, impl, rin, rout, evidence, "claim", Limits())
    except (Rejected, Unsupported):
        return False
    return True


@pytest.mark.parametrize("seed", [4, 7])
def test_whole_graph_and_per_operator_evidence_decide_alike(seed):
    """120 random claims with partial operations: both evidence forms accept or both reject,
    and both accept and reject some."""
    rng, verdicts = random.Random(seed), []
    for _ in range(120):
        s, g, relation = _random_claim(rng)
        spec, impl = parse_graph(s, "spec"), parse_graph(g, "impl")
        rin = refinement.parse_relation({"X": ["x"], "W": ["w"]}, spec, impl, "in", True)
        last = spec.outputs[0]
        rout = refinement.parse_relation({last: relation[last]}, spec, impl, "out", False)
        try:
            outcomes = refinement.check(spec, impl, rin, rout, defined=witnessed)   # as verifier/direct.py
        except Unsupported:
            outcomes = None
        whole = {"method": "whole-graph",
                 "obligations": [{"spec": o.spec, "expr": o.expr, "elements": o.elements} for o in outcomes or []]}
        per_op = {"method": "per-operator", "steps": [n.name for n in spec.nodes],
                  "relation": {t: es for t, es in relation.items()}}
        a = outcomes is not None and _decide(spec, impl, rin, rout, whole)
        b = _decide(spec, impl, rin, rout, per_op)
        assert a == b, (s["nodes"], g["nodes"], a, b)
        verdicts.append(a)
    assert 10 <= sum(verdicts) <= 110, sum(verdicts)


def _forge_staged(cert: dict, bug: Pair) -> dict:
    """The control's staged certificate rebuilt for ``bug`` (unreduced) with the checker's own functions:
    what an attacker can compute, stage keys and element counts included."""
    from certificates import obligations
    from certificates.refinement import parse_relation
    from certificates.stages import constants, key, stage

    cert = _relate_lower(cert, bug)
    evidence = next(iter(cert["evidence"].values()))
    spec, impl = parse_graph(bug[0], "spec"), parse_graph(bug[1], "impl")
    rel = {**parse_relation(bug[2], spec, impl, "in", True),
           **parse_relation(evidence["relation"], spec, impl, "found", False)}
    goal_all = parse_relation(bug[3], spec, impl, "out", False)
    stages, ranges = [], obligations.integer_ranges(impl)
    for i, node in enumerate(list(spec.nodes) + [None]):
        how, obls = stage(spec, impl, rel, goal_all, node and node.name, ranges, "forge", Limits(), constants(spec, Limits()))
        outs = [o for ob in obls for o in obligations.decide(*ob, Limits())] if how == "reduced" else []
        assert all(o.holds for o in outs)   # each stage on its own holds: only the whole spec is undefined
        stages.append({"op": node.name if node else None, "proved_by": i, "key": key(how, obls),
                       "elements": sum(o.elements for o in outs), "methods": {}})
    evidence["stages"] = stages
    return cert


def test_staged_claims_need_the_spec_defined_somewhere(tmp_path):
    """A staged claim whose stages each hold under the spec's local conditions, where those conditions
    hold nowhere together, is REJECTed by replay."""
    from verifier.stages.certificate import staged_certificate
    from verifier.stages.run import verify_staged

    bug, ok = ATTACKS["spec defined nowhere (its own side conditions are unsatisfiable)"]
    assert not verify_staged(forge.case(bug()), reduce=False).verified
    good = verify_staged(forge.case(ok()), reduce=False)
    assert good.verified
    cert = staged_certificate(good)
    assert all(x.ok for x in forge.replayed(cert, tmp_path / "good.json"))
    control = forge.replayed(_forge_staged(cert, ok()), tmp_path / "control.json")
    assert all(x.ok for x in control)   # the forger's method itself works
    results = forge.replayed(_forge_staged(cert, bug()), tmp_path / "forged.json")
    assert not all(x.ok for x in results), [x.detail for x in results]
    assert "defined" in results[0].detail, results[0].detail


def test_only_evidently_positive_divisors_go_unrecorded():
    """``poly._domain`` records no side condition for a value that is evidently > 0 (positive terms of even powers
    and exponentials, one without powers); every value below can be 0 or negative somewhere and is recorded."""
    from certificates.poly import Rat, apply, side_conditions
    x, y = Rat.var("x"), Rat.var("y")
    positive = [x * x + 1, apply("exp", x) + apply("exp", y), apply("exp", x) * (y * y) + apply("exp", y) + 2,
                (x * x * y * y + 3) / (apply("exp", y) + x ** 4)]
    not_evident = [x * x + y * y, apply("exp", x) - 1, x + 1, x * x * y + 1, 1 - x * x, x * x - 2 * x * y + y * y + 1,
                   (x * x + 1) / (x + 2)]
    for v, recorded in [(v, False) for v in positive] + [(v, True) for v in not_evident]:
        with side_conditions() as side:
            Rat.of(1) / v
        assert bool(side) == recorded, v
