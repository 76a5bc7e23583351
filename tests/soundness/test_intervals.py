"""Integers on intervals (certificates/intervals.py): a vocabulary-parallel lookup at a real vocabulary is decided by
a few cases (the shards an id falls in), and every way to get a shard boundary, a row or a width wrong is found."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from certificates import intervals, refinement
from certificates.graph import parse_graph
from certificates.limits import Limits
from certificates.poly import Rat
from certificates.refinement import parse_relation
from certificates.solve import evaluate
from verifier.ir import GraphBuilder

D = 2


def _lookup(V: int, W: int, T: int, shift: int = 0, edge: int = 0, fill: int = 0, dtype: str = "int64",
            zero: bool = True):
    """Spec ``embedding(E, ids)``; impl: rank r holds rows [r V/W, (r+1) V/W), looks up the ids in its range
    (others read row ``fill`` and are zeroed unless not ``zero``) and all-reduces. ``shift``, ``edge``: bugs in
    the local row and range."""
    s, i = GraphBuilder("s"), GraphBuilder("i", W)
    E, ids = s.input("E", [V, D], "parameter"), s.input("ids", [T], "index", dtype=dtype, range=(0, V))
    s.output(s.node("aten.embedding.default", [E, ids], "out", out_dtype="float32"))
    per, parts = V // W, []
    for r in range(W):
        e = i.input(f"e@r{r}", [per, D], "parameter", rank=r)
        x = i.input(f"ids@r{r}", [T], "index", dtype=dtype, rank=r, range=(0, V))
        lt = i.node("aten.lt.Scalar", [x], f"lt@r{r}", rank=r, out_dtype="bool", attrs={"other": r * per})
        ge = i.node("aten.ge.Scalar", [x], f"ge@r{r}", rank=r, out_dtype="bool", attrs={"other": (r + 1) * per + edge})
        out = i.node("aten.bitwise_or.Tensor", [lt, ge], f"or@r{r}", rank=r, out_dtype="bool")
        loc = i.node("aten.sub.Tensor", [x], f"sub@r{r}", rank=r, out_dtype=dtype,
                     attrs={"other": r * per - shift, "alpha": 1})
        loc = i.node("aten.masked_fill.Scalar", [loc, out], f"mf@r{r}", rank=r, out_dtype=dtype, attrs={"value": fill})
        row = i.node("aten.embedding.default", [e, loc], f"emb@r{r}", rank=r, out_dtype="float32")
        m = i.node("aten.unsqueeze.default", [out], f"u@r{r}", rank=r, out_dtype="bool", attrs={"dim": -1})
        parts.append(i.node("aten.masked_fill.Scalar", [row, m], f"z@r{r}", rank=r, out_dtype="float32",
                            attrs={"value": 0.0}) if zero else row)
    outs = i.node("_c10d_functional.all_reduce.default", parts, [f"o@r{r}" for r in range(W)], group=list(range(W)),
                  out_dtype="float32", attrs={"reduce_op": "sum"})
    i.output(*outs)
    spec, impl = parse_graph(s.build(), "s"), parse_graph(i.build(), "i")
    rin = parse_relation({"E": [f"concat({', '.join(f'e@r{r}' for r in range(W))}, dim=0)"],
                          "ids": [f"ids@r{r}" for r in range(W)]}, spec, impl, "rel", True)
    rout = parse_relation({"out": list(outs)}, spec, impl, "out", False)
    return spec, impl, rin, rout


@pytest.mark.parametrize("W", [2, 8])
def test_a_real_vocabulary_is_decided_by_its_shards(W):
    """32,768 rows, two ids: W^2 cases, not 32,768^2 assignments."""
    t0 = time.perf_counter()
    out = refinement.check(*_lookup(32768, W, 2))
    assert all(o.holds for o in out), out[0].failure
    assert time.perf_counter() - t0 < 60


@pytest.mark.parametrize("bug", [dict(shift=1), dict(edge=1), dict(edge=-1), dict(zero=False)])
def test_a_wrong_row_or_shard_boundary_is_found(bug):
    """Off by one in the local row, in the end of a shard (an id read by two ranks, or by none), or the rows of
    masked ids kept: each refuted at its case; a row past the shard is an impl failure."""
    out = refinement.check(*_lookup(64, 2, 1, **bug))
    assert not out[0].holds, bug


def test_a_masked_id_may_read_any_row():
    """The row masked ids read is zeroed after: reading row 1 instead of 0 is not a bug."""
    assert all(o.holds for o in refinement.check(*_lookup(64, 2, 1, fill=1)))


def test_every_case_is_decided():
    """The cases cover the range: a bug at one id per shard (its last, which no rank reads) is found at that id."""
    out = refinement.check(*_lookup(4096, 4, 1, edge=-1))
    assert not out[0].holds and "{'ids@r0[0]': 1023}" in out[0].failure


def test_a_value_that_may_wrap_is_refused():
    """int8 ids shifted past 127 are not modelled symbolically: never accepted, at most decided by enumeration."""
    spec, impl, rin, rout = _lookup(128, 2, 1, shift=-100, dtype="int8")
    out = refinement.check(spec, impl, rin, rout, Limits(max_assignments=64))
    assert not out[0].holds


def test_a_value_that_may_wrap_past_the_top_is_refused():
    """int8 ids in [0, 128) plus 100 wrap for ids >= 28 (to negative values, so ``< 100``): the impl reads row 0 there.
    Taken as ``v + 100`` without the wrap, the mask would be false everywhere and the lookup equal to the spec's."""
    s, i = GraphBuilder("s"), GraphBuilder("i")
    for g, sfx in ((s, ""), (i, "@r0")):
        E = g.input(f"E{sfx}", [128, D], "parameter")
        x = g.input(f"ids{sfx}", [1], "index", dtype="int8", range=(0, 128))
        if sfx:
            y = g.node("aten.add.Scalar", [x], "up", out_dtype="int8", attrs={"other": 100})
            m = g.node("aten.lt.Scalar", [y], "m", out_dtype="bool", attrs={"other": 100})
            x = g.node("aten.masked_fill.Scalar", [x, m], "x0", out_dtype="int8", attrs={"value": 0})
        g.output(g.node("aten.embedding.default", [E, x], f"out{sfx}", out_dtype="float32"))
    spec, impl = parse_graph(s.build(), "s"), parse_graph(i.build(), "i")
    rin = parse_relation({"E": ["E@r0"], "ids": ["ids@r0"]}, spec, impl, "rel", True)
    rout = parse_relation({"out": ["out@r0"]}, spec, impl, "out", False)
    out = refinement.check(spec, impl, rin, rout, Limits(max_assignments=512))
    assert not out[0].holds and "ids@r0[0]" in out[0].failure, out[0].failure


def test_an_operation_without_a_rule_is_split_to_points():
    """ids * 1 (no rule for mul) halves the case down to single ids: still decided, still correct."""
    s, i = GraphBuilder("s"), GraphBuilder("i")
    for g, sfx in ((s, ""), (i, "@r0")):
        E = g.input(f"E{sfx}", [8, D], "parameter")
        x = g.input(f"ids{sfx}", [1], "index", dtype="int64", range=(0, 8))
        y = g.node("aten.mul.Scalar", [x], f"m{sfx}", out_dtype="int64", attrs={"other": 1})
        g.output(g.node("aten.embedding.default", [E, y if sfx else x], f"out{sfx}", out_dtype="float32"))
    spec, impl = parse_graph(s.build(), "s"), parse_graph(i.build(), "i")
    rin = parse_relation({"E": ["E@r0"], "ids": ["ids@r0"]}, spec, impl, "rel", True)
    rout = parse_relation({"out": ["out@r0"]}, spec, impl, "out", False)
    assert all(o.holds for o in refinement.check(spec, impl, rin, rout))
    with pytest.raises(Exception, match="cases of integer inputs"):
        refinement.check(spec, impl, rin, rout, Limits(max_assignments=4))


def _scatter_rows(V: int, pad: tuple[int, int] = (-1, -1), swap: bool = False):
    """Spec ``embedding_dense_backward(g, ids, V)`` against the same op in the impl, at two positions; ``pad`` the
    padding rows (spec, impl), ``swap``: the impl adds each position's gradient at the other position's id."""
    s, i = GraphBuilder("s"), GraphBuilder("i")
    for g, sfx, p in ((s, "", pad[0]), (i, "@r0", pad[1])):
        gr = g.input(f"g{sfx}", [2, D], "gradient")
        x = g.input(f"ids{sfx}", [2], "index", dtype="int64", range=(0, V))
        if sfx and swap:
            ends = [g.node("aten.slice.Tensor", [x], f"x{k}", out_dtype="int64",
                           attrs={"dim": 0, "start": k, "end": k + 1, "step": 1}) for k in (1, 0)]
            x = g.node("aten.cat.default", ends, "swapped", out_dtype="int64", attrs={"dim": 0})
        g.output(g.node("aten.embedding_dense_backward.default", [gr, x], f"out{sfx}", out_dtype="float32",
                        attrs={"num_weights": V, "padding_idx": p, "scale_grad_by_freq": False}))
    spec, impl = parse_graph(s.build(), "s"), parse_graph(i.build(), "i")
    rin = parse_relation({"g": ["g@r0"], "ids": ["ids@r0"]}, spec, impl, "rel", True)
    return spec, impl, rin, parse_relation({"out": ["out@r0"]}, spec, impl, "out", False)


def test_scattered_rows_are_decided_exactly():
    """Each position's gradient lands on the row of its own id, the padding row gets none: every row of every
    case is compared."""
    assert all(o.holds for o in refinement.check(*_scatter_rows(4096)))
    assert all(o.holds for o in refinement.check(*_scatter_rows(64, pad=(5, 5))))
    for bug in (dict(swap=True), dict(pad=(5, -1)), dict(pad=(-1, 0)), dict(pad=(5, 6))):
        out = refinement.check(*_scatter_rows(64, **bug))
        assert not out[0].holds, bug


@pytest.mark.parametrize("box, pad", [(((0, 8), (0, 8)), -1), (((0, 4), (4, 8)), -1), (((4, 8), (2, 6)), 3),
                                      (((0, 8), (0, 8)), 5)])
def test_scattered_rows_at_every_point_of_a_case(box, pad):
    """``intervals._embedding_backward`` at two symbolic ids, evaluated at every pair of their values, is the
    concrete scatter-add (a row two ids reach gets both gradients; the padding row gets none)."""
    intervals.BOX.clear()
    intervals.BOX.update({"a": box[0], "b": box[1]})
    g = np.array([[Rat.var(f"g{p}{j}") for j in range(D)] for p in range(2)], dtype=object)
    out, = intervals._embedding_backward([g, np.array([Rat.var("a"), Rat.var("b")], dtype=object)],
                                         {"num_weights": 8, "padding_idx": pad, "scale_grad_by_freq": False}, "t")
    vals = {f"g{p}{j}": 1.0 + 2 * p + 10 * j for p in range(2) for j in range(D)}
    for ia, ib in itertools.product(range(*box[0]), range(*box[1])):
        want = np.zeros((8, D))
        for p, k in enumerate((ia, ib)):
            want[k] += [vals[f"g{p}{j}"] for j in range(D)] if k != pad else 0
        got = [[evaluate(out[k, j], {**vals, "a": ia, "b": ib}) for j in range(D)] for k in range(8)]
        assert np.array_equal(np.array(got), want), (ia, ib)
