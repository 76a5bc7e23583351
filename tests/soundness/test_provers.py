"""Which claim kinds trust an SMT solver: refinement and training-refinement claims take z3 and cvc5 (``smt.py``,
registered by their entries); staged and template claims hold by equal normal forms alone, even in a process where a
refinement claim registered the solvers first (template: ``solve.provers(())``; staged: ``refinement.check`` without a
solver). ``relu(x) - relu(-x) = x`` is the control: its
normal forms differ (two ``max`` atoms), z3 proves it."""

import pytest

from certificates import refinement_kind, solve, stages, wiring  # noqa: F401 (refinement_kind registers smt)
from certificates.limits import Limits
from certificates.obligations import decide
from certificates.refinement import check
from certificates.solve import PROVERS, provers
from verifier.ir import GraphBuilder, parsed

pytest.importorskip("z3")


def _obligation():
    s = GraphBuilder("spec")
    s.input("X", [3], "activation")
    s.node("aten.clone.default", ["X"], "Y")
    s.output("Y")
    i = GraphBuilder("impl")
    i.input("x", [3], "activation")
    i.node("aten.relu.default", ["x"], "a")
    i.node("aten.neg.default", ["x"], "n")
    i.node("aten.relu.default", ["n"], "b")
    i.node("aten.sub.Tensor", ["a", "b"], "y")
    i.output("y")
    return parsed(s.build(), "spec", Limits()), parsed(i.build(), "impl", Limits()), {"X": ["x"]}, {"Y": ["y"]}


def _relations(ls, li, rin, rout):
    from certificates.refinement import parse_relation
    return ls, li, parse_relation(rin, ls, li, "in", True), parse_relation(rout, ls, li, "out", False)


def test_refinement_claims_prove_it_with_z3():
    ls, li, rin, rout = _relations(*_obligation())
    assert refinement_kind.smt in PROVERS
    out = check(ls, li, rin, rout, Limits(), solver=solve)   # as their chain decides (``solver``: solve.py)
    assert all(o.holds for o in out) and out[0].methods.get("z3") == 3, out
    assert not decide(ls, li, rin, rout, Limits())[0].holds   # without a solver: normal forms alone, as staged


def test_staged_claims_do_not_though_a_refinement_claim_registered_z3():
    ls, li, rin, rout = _relations(*_obligation())
    out = stages.decide(ls, li, rin, rout, Limits())
    assert not out[0].holds and "not proved" in out[0].failure
    assert refinement_kind.smt in PROVERS   # registered, and still not used by the stage


def test_template_blocks_are_checked_without_solvers(monkeypatch):
    """``wiring.replay_template`` replays its blocks inside ``provers(())``: what each block's check sees."""
    seen = []
    monkeypatch.setattr(wiring, "replay_refinement", lambda *a, **k: seen.append(list(PROVERS)) or "ok")
    monkeypatch.setattr(wiring, "graph_artifact", lambda *a, **k: None)
    monkeypatch.setattr(wiring, "check_interface", lambda *a: (_ for _ in ()).throw(RuntimeError("stop")))
    blocks = {k: {"kind": "refinement"} for k in ("fwd", "bwd", "loss", "sgd")}
    claim = {"blocks": blocks, "dims": dict.fromkeys(wiring.DIMS, 1)}
    with pytest.raises(RuntimeError, match="stop"):
        wiring.replay_template(claim, {"blocks": {k: {} for k in blocks}}, {}, "c", Limits())
    assert seen == [[]] * 4 and refinement_kind.smt in PROVERS


def test_provers_restores_on_error():
    before = list(PROVERS)
    with pytest.raises(RuntimeError):
        with provers(()):
            raise RuntimeError
    assert PROVERS == before
