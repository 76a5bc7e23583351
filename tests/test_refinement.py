"""Whole-graph refinement on hand-built Megatron-style graphs: proofs and real bug classes."""

import pytest

from certificates import refinement
from certificates.errors import Malformed, Unsupported
from certificates.graph import parse_graph
from verifier import direct
from verifier.case import Case
from verifier.ir import GraphBuilder
from verifier.verdict import Undecided

AR = "_c10d_functional.all_reduce.default"
AG = "_c10d_functional.all_gather_into_tensor.default"
RS = "_c10d_functional.reduce_scatter_tensor.default"


def run(spec, impl, rin, expect):
    r = direct.verify(Case("t", spec.build(), impl.build(), rin, expect))
    return r


def sp_linear(w: int, collective: str = AG):
    """Sequence parallel: gather the sequence shards, then a replicated linear."""
    s = GraphBuilder("linear")
    s.input("X", [2 * w, 3], "activation")
    s.input("A", [2, 3], "parameter")
    s.node("aten.linear.default", ["X", "A"], "Y")
    s.output("Y")
    g = GraphBuilder("sp_linear", w)
    for r in range(w):
        g.input(f"x@r{r}", [2, 3], "activation", rank=r)
        g.input(f"a@r{r}", [2, 3], "parameter", rank=r)
    g.node(collective, [f"x@r{r}" for r in range(w)], [f"xf@r{r}" for r in range(w)], group=list(range(w)))
    for r in range(w):
        g.node("aten.linear.default", [f"xf@r{r}", f"a@r{r}"], f"y@r{r}", rank=r)
        g.output(f"y@r{r}")
    rin = {"X": [f"concat({', '.join(f'x@r{r}' for r in range(w))}, dim=0)"], "A": [f"a@r{r}" for r in range(w)]}
    return s, g, rin, {"Y": [f"y@r{r}" for r in range(w)]}


@pytest.mark.parametrize("w", [2, 4])
def test_sequence_parallel_all_gather(w):
    r = run(*sp_linear(w))
    assert r.verified, [o.failure for o in r.outcomes]
    assert sum(o.elements for o in r.outcomes) == w * (2 * w * 2)


def test_all_reduce_instead_of_all_gather_is_rejected():
    s, g, rin, expect = sp_linear(2)
    g.obj["nodes"][0]["target"] = AR          # sums the shards instead of concatenating
    for r in range(2):
        g.obj["tensors"][f"xf@r{r}"]["shape"] = [2, 3]
        g.obj["tensors"][f"y@r{r}"]["shape"] = [2, 2]
    with pytest.raises(Malformed, match=r"has shape \[2, 2\], 'Y' has \[4, 2\]"):
        run(s, g, rin, expect)


def reduce_scatter_case(scale: float | None = None):
    """Row-parallel linear followed by reduce_scatter (Megatron SP); optional stray scaling."""
    s = GraphBuilder("linear")
    s.input("X", [4, 4], "activation")
    s.input("W", [3, 4], "parameter")
    s.node("aten.linear.default", ["X", "W"], "Y")
    s.output("Y")
    g = GraphBuilder("rp_rs", 2)
    for r in range(2):
        g.input(f"x@r{r}", [4, 2], "activation", rank=r)
        g.input(f"w@r{r}", [3, 2], "parameter", rank=r)
        g.node("aten.linear.default", [f"x@r{r}", f"w@r{r}"], f"p@r{r}", rank=r)
        if scale is not None:
            g.node("aten.mul.Tensor", [f"p@r{r}"], f"q@r{r}", rank=r, other=scale)
    src = "q" if scale is not None else "p"
    g.node(RS, [f"{src}@r0", f"{src}@r1"], ["y@r0", "y@r1"], group=[0, 1])
    g.output("y@r0", "y@r1")
    rin = {"X": ["concat(x@r0, x@r1, dim=1)"], "W": ["concat(w@r0, w@r1, dim=1)"]}
    return s, g, rin, {"Y": ["concat(y@r0, y@r1, dim=0)"]}


def test_reduce_scatter_proved_and_wrong_scale_rejected():
    assert run(*reduce_scatter_case()).verified
    r = run(*reduce_scatter_case(scale=0.5))  # a stray "/ tp": not clean, and wrong
    assert not r.verified and "Y[" in str(r.counterexample)


def test_partial_input_relation():
    s = GraphBuilder("id")
    s.input("G", [2, 2], "gradient")
    s.node("aten.mul.Tensor", ["G"], "H", other=2.0)
    s.output("H")
    g = GraphBuilder("ar", 2)
    for r in range(2):
        g.input(f"g@r{r}", [2, 2], "gradient", rank=r)
    g.node(AR, ["g@r0", "g@r1"], ["s@r0", "s@r1"], group=[0, 1])
    for r in range(2):
        g.node("aten.add.Tensor", [f"s@r{r}", f"s@r{r}"], f"h@r{r}", rank=r)
    r = run(s, g, {"G": ["sum(g@r0, g@r1)"]}, {"H": ["h@r0", "h@r1"]})
    assert r.verified


def vocab_parallel_embedding(check_upper: bool = True):
    """Megatron's VocabParallelEmbedding: mask out-of-shard ids, look up, all_reduce."""
    V, D, T = 4, 2, 2
    s = GraphBuilder("embedding")
    s.input("E", [V, D], "parameter")
    s.input("I", [T], "index", dtype="int64", range=(0, V))
    s.node("aten.embedding.default", ["E", "I"], "Y")
    s.output("Y")
    g = GraphBuilder("vocab_parallel_embedding", 2)
    for r in range(2):
        lo, hi = r * V // 2, (r + 1) * V // 2
        e, i = g.input(f"e@r{r}", [V // 2, D], "parameter", rank=r), \
            g.input(f"i@r{r}", [T], "index", dtype="int64", rank=r, range=(0, V))
        g.node("aten.lt.Scalar", [i], f"below@r{r}", rank=r, other=lo, out_dtype="bool")
        if check_upper:
            g.node("aten.ge.Scalar", [i], f"above@r{r}", rank=r, other=hi, out_dtype="bool")
            g.node("aten.bitwise_or.Tensor", [f"below@r{r}", f"above@r{r}"], f"mask@r{r}", rank=r)
        else:  # the bug: ids past the shard are not masked
            g.node("aten.clone.default", [f"below@r{r}"], f"mask@r{r}", rank=r)
        g.node("aten.sub.Tensor", [i], f"local@r{r}", rank=r, other=lo)
        g.node("aten.masked_fill.Scalar", [f"local@r{r}", f"mask@r{r}"], f"safe@r{r}", rank=r, value=0)
        g.node("aten.embedding.default", [e, f"safe@r{r}"], f"rows@r{r}", rank=r)
        g.node("aten.unsqueeze.default", [f"mask@r{r}"], f"m2@r{r}", rank=r, dim=-1)
        g.node("aten.masked_fill.Scalar", [f"rows@r{r}", f"m2@r{r}"], f"part@r{r}", rank=r, value=0.0)
    g.node(AR, ["part@r0", "part@r1"], ["y@r0", "y@r1"], group=[0, 1])
    g.output("y@r0", "y@r1")
    rin = {"E": ["concat(e@r0, e@r1, dim=0)"], "I": ["i@r0", "i@r1"]}
    return s, g, rin, {"Y": ["y@r0", "y@r1"]}


def test_vocab_parallel_embedding_decides_ids_by_cases():
    r = run(*vocab_parallel_embedding())
    assert r.verified
    # each of 2 positions' id in one of 2 shards: 4 cases (the enumeration had 4 ids ^ 2 = 16), 4 elements each
    assert {o.elements for o in r.outcomes} == {4 * 4}


def test_vocab_parallel_embedding_unmasked_upper_bound_rejected():
    s, g, rin, expect = vocab_parallel_embedding(check_upper=False)
    spec, impl = parse_graph(s.build(), "s"), parse_graph(g.build(), "g")
    outs = refinement.check(spec, impl, refinement.parse_relation(rin, spec, impl, "r", True),
                            refinement.parse_relation(expect, spec, impl, "e", False))
    assert not outs[0].holds and "integer inputs" in outs[0].failure


def test_softmax_over_unsharded_dim_and_layernorm():
    s = GraphBuilder("attn_probs")
    s.input("X", [4, 3], "activation")
    s.node("aten._softmax.default", ["X"], "P", dim=1, half_to_float=False)
    s.node("aten.native_layer_norm.default", ["P", None, None], ["L", "mu", "rs"], normalized_shape=[3], eps=1e-5)
    s.output("L")
    g = GraphBuilder("attn_probs_tp", 2)
    for r in range(2):
        g.input(f"x@r{r}", [2, 3], "activation", rank=r)
        g.node("aten._softmax.default", [f"x@r{r}"], f"p@r{r}", rank=r, dim=-1, half_to_float=False)
        g.node("aten.native_layer_norm.default", [f"p@r{r}", None, None], [f"l@r{r}", f"m@r{r}", f"s@r{r}"],
               rank=r, normalized_shape=[3], eps=1e-5)
    r = run(s, g, {"X": ["concat(x@r0, x@r1, dim=0)"]}, {"L": ["concat(l@r0, l@r1, dim=0)"]})
    assert r.verified


def test_softmax_over_sharded_dim_is_rejected():
    s = GraphBuilder("softmax")
    s.input("X", [2, 4], "activation")
    s.node("aten._softmax.default", ["X"], "P", dim=1, half_to_float=False)
    s.output("P")
    g = GraphBuilder("softmax_local", 2)
    for r in range(2):
        g.input(f"x@r{r}", [2, 2], "activation", rank=r)
        g.node("aten._softmax.default", [f"x@r{r}"], f"p@r{r}", rank=r, dim=1, half_to_float=False)
    r = run(s, g, {"X": ["concat(x@r0, x@r1, dim=1)"]}, {"P": ["concat(p@r0, p@r1, dim=1)"]})
    assert not r.verified and str(r.counterexample).startswith("P[")


def test_relation_that_constrains_an_element_twice_is_unsupported():
    s, g, rin, expect = sp_linear(2)
    rin = dict(rin, A=["a@r0", "scale(a@r0, num=2, den=1)"])   # A = a and A = 2a: only a = 0
    with pytest.raises(Unsupported, match="constrains a@r0 element 0 twice"):
        run(s, g, rin, expect)


def test_an_equation_repeating_the_same_elements_is_no_constraint():
    """``A = a@r0`` twice says nothing more than once: the per-operator engine (and its replay) leave the
    repeat out, and the engine's random inputs satisfy every equation; whole-graph evidence, whose
    instantiation is strict, still refuses it."""
    from verifier.refine import infer

    s, g, rin, expect = sp_linear(2)
    rin = dict(rin, A=["a@r0", "a@r0", "a@r1"])
    assert infer(Case("t", s.build(), g.build(), rin, expect)).verified
    with pytest.raises(Unsupported, match="twice"):
        run(s, g, rin, expect)


def test_relation_errors_are_malformed():
    s, g, rin, expect = sp_linear(2)
    for bad, msg in [({**rin, "Z": ["x@r0"]}, "'Z' is not a tensor of spec graph"),
                     ({**rin, "A": ["y@r0"]}, "'y@r0' is not an input of impl graph"),
                     ({**rin, "A": ["concat(a@r0, a@r1, dim=0)"]}, r"has shape \[4, 3\], 'A' has \[2, 3\]"),
                     ({**rin, "A": ["slice(a@r0, dim=0, start=0, end=9)"]}, "out of range")]:
        with pytest.raises(Malformed, match=msg):
            run(s, g, bad, expect)
    with pytest.raises(Undecided, match=r"no relation for spec input\(s\) A"):   # UNKNOWN, exit 4
        run(s, g, {"X": rin["X"]}, expect)


def fused_qk(kv_rows=(1, 1, 1, 1)):
    """Four TP ranks, each with a fused [q; k] weight: one q head per rank, the two k heads each
    replicated on two ranks (grouped-query attention with more ranks than KV heads). ``kv_rows``:
    the row of its fused weight each rank takes k from (1 is right)."""
    s = GraphBuilder("qk")
    s.input("X", [2, 4], "activation")
    s.input("WQ", [4, 4], "parameter")
    s.input("WK", [2, 4], "parameter")
    s.node("aten.linear.default", ["X", "WQ"], "Q")
    s.node("aten.linear.default", ["X", "WK"], "K")
    s.output("Q")
    s.output("K")
    g = GraphBuilder("fused_qk", 4)
    for r in range(4):
        g.input(f"x@r{r}", [2, 4], "activation", rank=r)
        g.input(f"w@r{r}", [2, 4], "parameter", rank=r)
        g.node("aten.linear.default", [f"x@r{r}", f"w@r{r}"], f"qk@r{r}", rank=r)
        parts = [f"a@r{r}", f"b@r{r}"] if kv_rows[r] == 1 else [f"b@r{r}", f"a@r{r}"]
        g.node("aten.split.Tensor", [f"qk@r{r}"], parts, rank=r, split_size=1, dim=1)
        g.output(f"a@r{r}")
        g.output(f"b@r{r}")
    q, k = ("a", "b")
    sl = lambda r, lo: f"slice(w@r{r}, dim=0, start={lo}, end={lo + 1})"   # noqa: E731
    rin = {"X": [f"x@r{r}" for r in range(4)], "WQ": [f"concat({', '.join(sl(r, 0) for r in range(4))}, dim=0)"],
           "WK": [f"concat({sl(0, 1)}, {sl(2, 1)}, dim=0)", f"concat({sl(1, 1)}, {sl(3, 1)}, dim=0)"]}
    expect = {"Q": [f"concat({', '.join(f'{q}@r{r}' for r in range(4))}, dim=1)"],
              "K": [f"concat({k}@r0, {k}@r2, dim=1)", f"concat({k}@r1, {k}@r3, dim=1)"]}
    return s, g, rin, expect


def test_replicated_heads_in_a_fused_weight():
    """A KV head replicated on two ranks, inside fused weights whose other rows another input
    reads: the copies bind (only the elements a relation reads are taken; it used to say
    'constrains w@r1 element 4 twice')."""
    r = run(*fused_qk())
    assert r.verified, [o.failure for o in r.outcomes]


def test_replicated_head_taken_from_the_wrong_rows_is_refuted():
    s, g, rin, expect = fused_qk(kv_rows=(1, 0, 1, 1))   # rank 1 swaps its q and k heads
    r = run(s, g, rin, expect)
    assert not r.verified and r.counterexample is not None
