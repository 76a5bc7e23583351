"""Shape reduction: the checker's divisors (certificates/shapes.py ``solve``) and the engine's reduction of a
whole case for inference (verifier/stages/reduce.py)."""

import dataclasses
from fractions import Fraction

import pytest

from certificates import shapes
from certificates.limits import Limits
from verifier import direct, workloads
from verifier.case import Case
from verifier.ir import GraphBuilder
from verifier.stages.reduce import _consistent, reduce_case
from verifier.stages.run import verify_staged

from test_staged import mlp_chain


def _parsed(case: Case):
    r = direct.prepare(case, Limits())
    return r, {"input": r.inputs, "output": r.expect}


def _solved(case: Case, extra: dict | None = None) -> tuple:
    r, rels = _parsed(case)
    C = shapes.constraints(r.spec, r.impl, {**rels, **(extra or {})})
    return C, shapes.solve(C)


def test_tp_mlp_reduces_every_axis_and_its_summed_ones_at_two_divisors():
    case = workloads.tp_mlp(world=2, tokens=4, dim=8, hidden=16)
    red = reduce_case(case)
    got = {(a[0], a[1], a[2]): red.sizes[tuple(a)] for c in red.classes for a in c["axes"]}
    second = {(a[0], a[1], a[2]): c.get("second") for c in red.classes for a in c["axes"]}
    assert got[("spec", "X", 0)] == (4, 2) and got[("spec", "W2", 0)] == (8, 2)  # tokens, output features
    assert got[("impl", "w2@r0", 0)] == (8, 2) and second[("spec", "X", 0)] is None
    # contracted: summed, checked again one scale down (1 block of 2 where the gcd 8 leaves 2): 2 of 16, 1 per shard
    assert got[("spec", "W1", 0)] == (16, 4) and second[("spec", "W1", 0)] == 8
    assert 16 // second[("spec", "W1", 0)] == 2 and 8 // second[("spec", "W1", 0)] == 1
    # the input features (8) would reduce to 2 as the tokens do: halved once instead, so that inference by value
    # cannot take one axis for the other (``_distinct``); a summed class, it has no second divisor then
    assert got[("spec", "X", 1)] == (8, 4) and second[("spec", "X", 1)] is None
    assert red.kept == [] and red.volume[1] < red.volume[0] / 8
    assert red.case.input_relation["W1"] == ["concat(w1@r0, w1@r1, dim=0)"]
    assert verify_staged(case).verified


def _mean_case(divide_by: int) -> Case:
    """Spec: the mean over 8 rows; impl: a sum divided by a constant (8 is right, 4 is a bug)."""
    s = GraphBuilder("mean", 1)
    s.input("X", [8, 4], "activation")
    s.node("aten.mean.dim", ["X"], "Y", dim=[0])
    s.output("Y")
    g = GraphBuilder("sum_div", 1)
    g.input("x", [8, 4], "activation")
    g.node("aten.sum.dim_IntList", ["x"], "t", dim=[0])
    g.node("aten.div.Tensor", ["t"], "y", other=divide_by)
    g.output("y")
    return Case("mean", s.build(), g.build(), {"X": ["x"]}, {"Y": ["y"]})


def test_a_size_that_enters_a_value_keeps_full_size():
    """Halving the rows would make ``sum / 4`` equal the mean: the mean's axis is pinned. Inference by value may
    halve them (a mixed axis); the checker decides the stage at full size."""
    bug = _mean_case(4)
    assert any(["spec", "X", 0] in c["axes"] for c in reduce_case(bug).classes)
    assert not verify_staged(bug).verified and verify_staged(_mean_case(8)).verified
    C, div = _solved(bug)
    assert div[("spec", "X", 0)] == (1, 0) and "enters the mean" in C.pins[("spec", "X", 0)]


def _slice_case(start: int, end: int) -> Case:
    s = GraphBuilder("spec", 1)
    s.input("X", [8, 2], "activation")
    s.node("aten.slice.Tensor", ["X"], "Y", dim=0, start=start, end=end)
    s.output("Y")
    g = GraphBuilder("impl", 1)
    g.input("x", [8, 2], "activation")
    g.node("aten.slice.Tensor", ["x"], "y", dim=0, start=start, end=end)
    g.output("y")
    return Case("slice", s.build(), g.build(), {"X": ["x"]}, {"Y": ["y"]})


def test_offsets_scale_with_their_axis_or_keep_it_full():
    red = reduce_case(_slice_case(4, 8))  # gcd(8, 4, 4) = 4, the 4 sliced rows keep 2: divisor 2
    node = red.case.impl["nodes"][0]
    assert (node["attrs"]["start"], node["attrs"]["end"]) == (2, 4) and red.case.impl["tensors"]["x"]["shape"] == [4, 2]
    assert reduce_case(_slice_case(3, 7)).classes == []  # an offset of 3 rows cannot be scaled
    assert _solved(_slice_case(3, 7))[1][("impl", "x", 0)][0] == 1


def test_a_relations_offsets_scale_with_their_axis_too():
    """A relation term's slices are cut along the axis like an operator's: a piece of 3 of 8 rows cannot be
    divided by 2, and the relation found (at full size in the certificate) is checked alike."""
    case = dataclasses.replace(_slice_case(0, 8), expect={"Y": ["concat(slice(y, dim=0, start=0, end=3), "
                                                              "slice(y, dim=0, start=3, end=8), dim=0)"]})
    assert _solved(case)[1][("spec", "X", 0)][0] == 1 and reduce_case(case).classes == []


@pytest.mark.parametrize("case", [workloads.tp_mlp(world=2, tokens=4, dim=8, hidden=16), mlp_chain(3),
                                  _slice_case(4, 8), _slice_case(3, 7), _mean_case(8)],
                         ids=["tp_mlp", "chain", "slice", "offset", "mean"])
def test_solved_divisors_keep_every_side_condition(case):
    """``solve``'s divisors, first and second, against the side conditions stated apart (``_consistent``): one
    divisor per tie class, dividing every size and scaled constant in blocks, 2 blocks left (1 at the second), pins
    kept."""
    C, div = _solved(case)
    assert any(d > 1 for d, _ in div.values()) or case.name == "slice"
    for k in (0, 1):
        assert _consistent(C, {a: d[k] or d[0] for a, d in div.items() if a[0] != "term"}, 2 - k)
    if case.name == "mean":   # the oracle has teeth: the mean's rows halved break a pin
        assert not _consistent(C, {a: 2 if a[1] in ("X", "x") and a[2] == 0 else d[0] for a, d in div.items()
                                   if a[0] != "term"})


def test_reshape_groups_reduce_the_outer_axis_in_blocks():
    s = GraphBuilder("spec", 1)
    s.input("X", [4, 6], "activation")
    s.node("aten.view.default", ["X"], "Y", size=[24])
    s.output("Y")
    g = GraphBuilder("impl", 1)
    g.input("x", [4, 6], "activation")
    g.node("aten.view.default", ["x"], "y", size=[24])
    g.output("y")
    case = Case("view", s.build(), g.build(), {"X": ["x"]}, {"Y": ["y"]})
    red = reduce_case(case)
    # the outer axis is reduced (4 -> 2), the flat axis in blocks of 6 (24 -> 12), the inner axis keeps 6
    assert red.case.impl["nodes"][0]["attrs"]["size"] == [12] and red.case.impl["tensors"]["x"]["shape"] == [2, 6]
    div = _solved(case)[1]
    assert [div[a][0] for a in (("spec", "X", 0), ("spec", "X", 1), ("spec", "Y", 0))] == [2, 1, 2]
    assert verify_staged(case).verified


def _lookup_case(tokens: int, vocab: int) -> Case:
    gs = []
    for name in ("spec", "impl"):
        g = GraphBuilder(name, 1)
        g.input("E", [vocab, 2], "parameter")
        g.input("ids", [tokens], "index", dtype="int64", range=(0, vocab))
        g.node("aten.embedding.default", ["E", "ids"], "out")
        g.output("out")
        gs.append(g.build())
    return Case("lookup", *gs, {"E": ["E"], "ids": ["ids"]}, {"out": ["out"]})


@pytest.mark.parametrize("tokens", [2, 4, 7])
def test_the_second_run_spreads_token_ids_over_their_range(tokens):
    """Inference's second run (``spread``): one id in each n-th of the vocabulary, so no run has every id in one
    rank's shard (where that rank's partial lookup equals the whole lookup by value)."""
    r = direct.prepare(_lookup_case(tokens, 1000), Limits())
    for seed in range(20):
        ids = direct.numeric_values(r, seed, Limits(), spread=True)[1]["ids"]
        assert sorted(k for i in ids for k in range(tokens) if 1000 * k // tokens <= i < 1000 * (k + 1) // tokens) == \
            list(range(tokens))   # one in each n-th, its bounds rounded down
    if tokens == 2:   # the control: two random ids share a half of the vocabulary in some of 20 runs
        plain = [direct.numeric_values(r, s, Limits())[1]["ids"] for s in range(20)]
        assert any(len({int(i) * 2 // 1000 for i in ids}) == 1 for ids in plain)


def _square_case() -> Case:
    gs = []
    for name in ("spec", "impl"):
        g = GraphBuilder(name, 1)
        g.input("X", [8, 8], "activation")
        g.node("aten.add.Tensor", ["X", "X"], "Y")
        g.output("Y")
        gs.append(g.build())
    return Case("square", *gs, {"X": ["X"]}, {"Y": ["Y"]})


def test_two_axes_of_a_tensor_are_reduced_apart_where_that_fits():
    """Rows and columns both 2 would let inference take one for the other: one is halved once only, unless that
    puts a tensor over the element limit (then the checker's divisors, both 2)."""
    shapes_of = lambda red: sorted(red.sizes[("spec", "X", k)][1] for k in range(2))
    assert shapes_of(reduce_case(_square_case())) == [2, 4]
    assert shapes_of(reduce_case(_square_case(), Limits(max_elements=4))) == [2, 2]


def test_classes_of_different_tensors_share_a_size_unless_kept_apart_everywhere():
    """Two vectors of 8, unrelated: 2 each (no tensor holds both axes), or 2 and 4 when kept apart everywhere (the
    second attempt of ``verify_staged``)."""
    gs = []
    for name in ("spec", "impl"):
        g = GraphBuilder(name, 1)
        g.input("X", [8], "activation")
        g.input("Z", [8], "activation")
        g.node("aten.neg.default", ["X"], "Y")
        g.node("aten.neg.default", ["Z"], "W")
        g.output("Y", "W")
        gs.append(g.build())
    case = Case("two", *gs, {"X": ["X"], "Z": ["Z"]}, {"Y": ["Y"], "W": ["W"]})
    sizes = lambda red: sorted(red.sizes[("spec", t, 0)][1] for t in ("X", "Z"))
    assert sizes(reduce_case(case)) == [2, 2] and sizes(reduce_case(case, everywhere=True)) == [2, 4]
