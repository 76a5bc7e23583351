"""Rows indexed by integer values, reduced with the values (certificates/shapes.py ``indexed``;
agda/ShapeReduction/Indexed.agda).

A table's rows (a vocabulary) are reduced together with the token ids that address them, when every value reaching
them is a lookup, a shift by or a comparison with a multiple of the block, a choice or a move, and the block keeps
as many rows as the stage has integer elements, plus 2. Each attack below is false at full size: either it is true
at a block too small for its values (the bound), or it reads the values by an operator the theorem does not cover
(the class must then stay at full size).
"""

import dataclasses

import pytest

from certificates import shapes
from certificates.graph import parse_graph
from certificates.refinement import parse_relation
from verifier.case import Case
from verifier.ir import GraphBuilder
from verifier.stages.run import verify_staged

from test_shape_reduction import _replay, forge


def _lookup(V: int, impl_ids, S: int = 2, H: int = 2, **table) -> Case:
    """Spec ``Y = W[ids]``; impl ``y = W[f(ids)]`` with ``f`` built by ``impl_ids(b, "ids") -> name``."""
    s, g = GraphBuilder("spec", 1), GraphBuilder("impl", 1)
    for b, ids in ((s, "ids"), (g, "ids")):
        b.input("W", [V, H], "parameter", **table)
        b.input("ids", [S], "index", dtype="int64", range=(0, V))
    s.node("aten.embedding.default", ["W", "ids"], "Y", out_dtype=table.get("dtype"))
    g.node("aten.embedding.default", ["W", impl_ids(g, "ids")], "y", out_dtype=table.get("dtype"))
    s.output("Y")
    g.output("y")
    return Case("lookup", s.build(), g.build(), {"W": ["W"], "ids": ["ids"]}, {"Y": ["y"]})


def _first_block_to_zero(G: int):
    """``where(ids < G, 0, ids)``: right only where a block has one row (every id below G is 0)."""
    def build(b, ids):
        b.node("aten.lt.Scalar", [ids], "low", other=G, out_dtype="bool")
        b.node("aten.full.default", [], "zero", size=[], fill_value=0, dtype="int64", out_dtype="int64")
        return b.node("aten.where.self", ["low", "zero", ids], "ids2", out_dtype="int64")
    return build


def test_a_block_keeps_a_row_for_every_value(tmp_path):
    """At blocks of one row (vocabulary 2, G = 1) ``where(ids < G, 0, ids)`` is the identity; at G = 16 it is not.
    The block must keep a row per integer element, plus the row read and 0: the certificate forged from the small
    run is REJECTed (with ``need`` left out of ``shapes.solve`` the checker reduced G = 16 to one row and ACCEPTed it:
    mutation-checked)."""
    full, small = _lookup(32, _first_block_to_zero(16)), _lookup(2, _first_block_to_zero(1))
    assert not verify_staged(full).verified
    ok, why = _replay(forge(full, small), tmp_path)
    assert not ok and "differ" in why, why


def _classes(case: Case, rangeless: str | None = None) -> tuple[dict, dict]:
    """The divisors ``shapes.solve`` gives each axis of ``case``'s one stage-like obligation (the whole graphs);
    ``rangeless``: an impl input without a range (as a stage's intermediate input can be)."""
    spec, impl = parse_graph(case.spec, "spec"), parse_graph(case.impl, "impl")
    if rangeless:
        impl.tensors[rangeless] = dataclasses.replace(impl.tensors[rangeless], range=None)
    rels = {"input": parse_relation(case.input_relation, spec, impl, "in", False),   # as an evidence relation
            "output": parse_relation(case.expect, spec, impl, "out", False)}
    C = shapes.constraints(spec, impl, rels)
    cls = C.divisor_classes()
    shapes.indexed(C, cls, (("spec", spec), ("impl", impl)), rels)
    return shapes.solve(C), C


def _unary(target: str, out_dtype: str = "int64", **kw):
    return lambda b, ids: b.node(target, [ids], "ids2", out_dtype=out_dtype, **kw)


def _two_values(target: str):
    def build(b, ids):
        b.node("aten.add.Scalar", [ids], "ids1", other=0, out_dtype="int64")
        return b.node(target, [ids, "ids1"], "ids2", out_dtype="int64")
    return build


def _through_bool(b, ids):   # ids < 16 compared with ids >= 0: a value meets another value
    b.node("aten.lt.Tensor", [ids, ids], "same", out_dtype="bool")
    b.node("aten.full.default", [], "zero", size=[], fill_value=0, dtype="int64", out_dtype="int64")
    return b.node("aten.where.self", ["same", "zero", ids], "ids2", out_dtype="int64")


REFUSED = {"a product": _unary("aten.mul.Scalar", other=1),
           "a reversal": _unary("aten.rsub.Scalar", other=31),
           "a shift by alpha 2": _unary("aten.sub.Scalar", other=0, alpha=2),
           "a sum of two values": _two_values("aten.add.Tensor"),
           "a comparison of two values": _through_bool}


@pytest.mark.parametrize("why", list(REFUSED))
def test_a_value_read_otherwise_keeps_its_rows(why):
    """A value multiplied, reversed (``31 - ids`` maps offsets to others), shifted with alpha, added to or compared
    with another value: ``indexed`` leaves the table's rows at full size (no theorem covers them)."""
    div, C = _classes(_lookup(32, REFUSED[why]))
    assert div[("spec", "W", 0)][0] == 1 and ("spec", "W", 0) in C.pins


def test_a_shift_by_a_constant_off_the_block_or_a_clamp_keeps_full_size():
    """``ids - 3`` is natural, but 3 is a constant of the class: the block is gcd(32, 3) = 1, nothing to reduce; a
    clamp (its bounds single rows out) is no operator of the rule."""
    assert _classes(_lookup(32, _unary("aten.sub.Scalar", other=0)))[0][("spec", "W", 0)][0] > 1   # the control
    assert _classes(_lookup(32, _unary("aten.sub.Scalar", other=3)))[0][("spec", "W", 0)][0] == 1
    clamp = _lookup(32, lambda b, ids: b.node("aten.clamp.default", [ids], "ids2", min=0, max=31, out_dtype="int64"))
    assert _classes(clamp)[0][("spec", "W", 0)][0] == 1


def test_a_value_made_real_keeps_full_size():
    """``W[ids] + float(ids)``: the id's offset enters a real value (not natural); a value made real back into an
    index is no value the rule follows either."""
    def build(b, ids):
        b.node("aten._to_copy.default", [ids], "f", out_dtype="float32", dtype="float32")
        b.node("aten.unsqueeze.default", ["f"], "f2", dim=1)
        b.node("aten.embedding.default", ["W", ids], "e")
        return b.node("aten.add.Tensor", ["e", "f2"], "y0")
    s = _lookup(32, lambda b, ids: ids)
    real = _lookup(32, lambda b, ids: b.node("aten._to_copy.default", [
        b.node("aten._to_copy.default", [ids], "f", out_dtype="float32", dtype="float32")], "ids2",
        out_dtype="int64", dtype="int64"))
    assert _classes(s)[0][("spec", "W", 0)][0] > 1 and _classes(real)[0][("spec", "W", 0)][0] == 1
    g = GraphBuilder("impl", 1)
    g.input("W", [32, 2], "parameter")
    g.input("ids", [2], "index", dtype="int64", range=(0, 32))
    g.output(build(g, "ids"))
    mixed = Case("mixed", s.spec, g.build(), s.input_relation, {"Y": ["y0"]})
    assert _classes(mixed)[0][("spec", "W", 0)][0] == 1


def test_a_table_of_integers_keeps_full_size():
    """Integer rows looked up become values with offsets of their own: refused."""
    assert _classes(_lookup(32, lambda b, ids: ids))[0][("spec", "W", 0)][0] > 1
    ints = _lookup(32, lambda b, ids: ids, dtype="int64", range=(0, 32))
    assert _classes(ints)[0][("spec", "W", 0)][0] == 1


def _backward(V: int, S: int = 3, H: int = 2, padding_idx: int = -1, freq: bool = False, rel: str = "ids") -> Case:
    """Spec and impl ``embedding_dense_backward(G, ids, V)`` alike (a replicated lookup's gradient)."""
    s, g = GraphBuilder("spec", 1), GraphBuilder("impl", 1)
    for b in (s, g):
        b.input("G", [S, H], "activation")
        b.input("ids", [S], "index", dtype="int64", range=(0, V))
        b.node("aten.embedding_dense_backward.default", ["G", "ids"], "Y", num_weights=V, padding_idx=padding_idx,
               scale_grad_by_freq=freq)
        b.output("Y")
    return Case("bwd", s.build(), g.build(), {"G": ["G"], "ids": [rel]}, {"Y": ["Y"]})


@pytest.mark.parametrize("kw, reduced", [({}, True), ({"padding_idx": 0}, False), ({"freq": True}, False)],
                         ids=["plain", "a padding row", "scaled by frequency"])
def test_a_gradient_with_a_padding_row_or_frequencies_keeps_full_size(kw, reduced):
    """Row ``padding_idx`` gets no gradient (a row singled out by its place) and frequencies count equal ids: both
    refused; the plain gradient reduces, keeping 3 + 3 ids + 2 rows per block at least."""
    div, C = _classes(_backward(64, **kw))
    d = div[("spec", "Y", 0)][0]
    assert (d > 1) == reduced
    if reduced:
        assert 64 // d >= 3 + 3 + 2


def test_the_bound_counts_the_values_at_their_largest_reduced_size():
    """The values' axis (positions, summed into the gradient) is checked at two scales; the block holds the larger."""
    div, C = _classes(_backward(1024, S=1024))
    d_rows, (d_pos, second) = div[("spec", "Y", 0)][0], div[("spec", "ids", 0)]
    assert second and 1024 // d_rows >= 2 * int(1024 // second) + 2


def _vocab_parallel(V: int, bug: str | None = None, S: int = 3, H: int = 2) -> Case:
    """A vocabulary-parallel lookup on 2 ranks (each rank masks the ids outside its shard, reads its rows, zeroes
    the masked rows' results; their sum is the lookup) and its weight gradient; ``bug`` "unmasked": rank 1 keeps the
    masked rows' results."""
    s = GraphBuilder("spec", 1)
    s.input("W", [V, H], "parameter")
    s.input("ids", [S], "index", dtype="int64", range=(0, V))
    s.input("G", [S, H], "activation")
    s.node("aten.embedding.default", ["W", "ids"], "Y")
    s.node("aten.embedding_dense_backward.default", ["G", "ids"], "GW", num_weights=V, padding_idx=-1,
           scale_grad_by_freq=False)
    s.output("Y", "GW")
    g = GraphBuilder("impl", 2)
    for r in (0, 1):
        lo, hi, n = r * V // 2, (r + 1) * V // 2, lambda t: f"{t}@r{r}"
        g.input(n("W"), [V // 2, H], "parameter", rank=r)
        g.input(n("ids"), [S], "index", dtype="int64", range=(0, V), rank=r)
        g.input(n("G"), [S, H], "activation", rank=r)
        g.node("aten.lt.Scalar", [n("ids")], n("below"), other=lo, out_dtype="bool", rank=r)
        g.node("aten.ge.Scalar", [n("ids")], n("above"), other=hi, out_dtype="bool", rank=r)
        g.node("aten.bitwise_or.Tensor", [n("below"), n("above")], n("out"), out_dtype="bool", rank=r)
        g.node("aten.sub.Scalar", [n("ids")], n("local"), other=lo, out_dtype="int64", rank=r)
        g.node("aten.full.default", [], n("zero"), size=[], fill_value=0, dtype="int64", out_dtype="int64", rank=r)
        g.node("aten.where.self", [n("out"), n("zero"), n("local")], n("idx"), out_dtype="int64", rank=r)
        g.node("aten.embedding.default", [n("W"), n("idx")], n("e"), rank=r)
        g.node("aten.unsqueeze.default", [n("out")], n("out2"), dim=1, out_dtype="bool", rank=r)
        g.node("aten.full.default", [], n("zf"), size=[], fill_value=0.0, out_dtype="float32", rank=r)
        g.node("aten.where.self", [n("out2"), n("zf"), n("e")], n("y"), out_dtype="float32", rank=r)
        if bug == "unmasked" and r == 1:
            g.node("aten.clone.default", [n("e")], n("y2"), rank=r)
        g.node("aten.where.self", [n("out2"), n("zf"), n("G")], n("gm"), out_dtype="float32", rank=r)
        g.node("aten.embedding_dense_backward.default", [n("gm"), n("idx")], n("gw"), num_weights=V // 2,
               padding_idx=-1, scale_grad_by_freq=False, rank=r)
    y1 = "y2@r1" if bug == "unmasked" else "y@r1"
    g.output("y@r0", y1, "gw@r0", "gw@r1")
    return Case("vocab_parallel", s.build(), g.build(),
                {"W": ["concat(W@r0, W@r1, dim=0)"], "ids": ["ids@r0", "ids@r1"], "G": ["G@r0", "G@r1"]},
                {"Y": [f"sum(y@r0, {y1})"], "GW": ["concat(gw@r0, gw@r1, dim=0)"]})


def test_a_vocabulary_parallel_lookup_verifies_with_its_rows_reduced(tmp_path):
    from verifier.stages.certificate import staged_certificate
    res = verify_staged(_vocab_parallel(4096))
    assert res.verified, res.failure
    ok, why = _replay(staged_certificate(res), tmp_path)
    assert ok, why
    assert res.reduction.sizes[("spec", "W", 0)][1] < 4096


def test_an_unmasked_rank_is_not_verified_with_its_rows_reduced():
    """Rank 1 keeps the results of the ids outside its shard (its row 0): wrong at every size, the reduced one too."""
    assert not verify_staged(_vocab_parallel(4096, "unmasked")).verified


def test_a_value_related_by_a_sum_keeps_full_size():
    """The ids as partial sums over ranks (``sum(a, b)``; an input relation may not, an evidence relation could):
    a sum of two values is not natural; moves are."""
    def case(rel: str) -> Case:
        s, g = GraphBuilder("spec", 1), GraphBuilder("impl", 1)
        for b in (s, g):
            b.input("W", [32, 2], "parameter")
        s.input("ids", [2], "index", dtype="int64", range=(0, 32))
        g.input("a", [2], "index", dtype="int64", range=(0, 32))
        if "b" in rel:
            g.input("b", [2], "index", dtype="int64", range=(0, 32))
        s.node("aten.embedding.default", ["W", "ids"], "Y")
        g.node("aten.embedding.default", ["W", "a"], "y")
        s.output("Y")
        g.output("y")
        return Case("rel", s.build(), g.build(), {"W": ["W"], "ids": [rel]}, {"Y": ["y"]})
    assert _classes(case("a"))[0][("spec", "W", 0)][0] > 1
    assert _classes(case("sum(a, b)"))[0][("spec", "W", 0)][0] == 1


def test_a_value_without_a_range_or_rows_summed_keep_full_size():
    """A value without a range (its bounds unknown, so not scaled), or a table whose rows are also summed (a sum over
    all rows is no lookup): refused."""
    plain = _lookup(32, lambda b, ids: ids)
    assert _classes(plain)[0][("spec", "W", 0)][0] > 1 and _classes(plain, "ids")[0][("spec", "W", 0)][0] == 1
    s, g = GraphBuilder("spec", 1), GraphBuilder("impl", 1)
    for b, low in ((s, str.upper), (g, str.lower)):
        b.input("W", [32, 2], "parameter")
        b.input("ids", [2], "index", dtype="int64", range=(0, 32))
        b.node("aten.embedding.default", ["W", "ids"], "e")
        b.node("aten.sum.dim_IntList", ["W"], "s", dim=[0], keepdim=True)
        b.node("aten.add.Tensor", ["e", "s"], low("y"))
        b.output(low("y"))
    summed = Case("summed", s.build(), g.build(), {"W": ["W"], "ids": ["ids"]}, {"Y": ["y"]})
    assert _classes(summed)[0][("spec", "W", 0)][0] == 1


def test_a_value_chosen_against_integers_of_no_source_keeps_full_size():
    """``where(ids < 16, ids, arange(2))``: the positions are integers no range or constant of the class describes
    (their offsets are not renumbered with the rows): refused, as a ``full`` of 0 is not."""
    def choice(other):
        def build(b, ids):
            b.node("aten.lt.Scalar", [ids], "low", other=16, out_dtype="bool")
            o = other(b)
            return b.node("aten.where.self", ["low", ids, o], "ids2", out_dtype="int64")
        return build
    zero = choice(lambda b: b.node("aten.full.default", [], "o", size=[], fill_value=0, dtype="int64",
                                   out_dtype="int64"))
    ar = choice(lambda b: b.node("aten.arange.default", [], "o", end=2, out_dtype="int64"))
    assert _classes(_lookup(32, zero))[0][("spec", "W", 0)][0] > 1
    assert _classes(_lookup(32, ar))[0][("spec", "W", 0)][0] == 1


def test_the_bound_counts_an_impl_value_once_only_where_it_equals_a_spec_value():
    """Replicated ids (``ids@r0``, ``ids@r1``, each named once in the relation) equal the spec's in every order of
    the hypotheses: counted once. Named twice (a second spec input equal to the same ids), one equation may be left
    out and the values are free: counted."""
    full = _vocab_parallel(4096)
    C = _classes(full)[1]
    [least] = C.least.values()
    assert least == [("spec", "ids")]
    twice = Case(full.name, full.spec, full.impl, {**full.input_relation, "G": ["G@r0", "G@r1"]}, full.expect)
    rel = dict(twice.input_relation)
    s = dict(full.spec, inputs=full.spec["inputs"] + ["ids2"],
             tensors={**full.spec["tensors"], "ids2": dict(full.spec["tensors"]["ids"])})
    rel["ids2"] = ["ids@r0"]
    C = _classes(Case(full.name, s, full.impl, rel, full.expect))[1]
    assert ("impl", "ids@r0") in [x for xs in C.least.values() for x in xs]


@pytest.mark.parametrize("k", [16, 15.5, 16.0, True], ids=["16", "15.5", "16.0", "True"])
def test_a_constant_that_is_not_an_integer_keeps_full_size(k):
    """``ids < 15.5`` is ``ids <= 15``: a bound no block boundary is (and 16.0 or True are not the integers the rule
    scales): refused; ``ids < 16`` reduces."""
    div, _ = _classes(_lookup(32, _first_block_to_zero(k)))
    assert (div[("spec", "W", 0)][0] > 1) == (k == 16 and type(k) is int)
