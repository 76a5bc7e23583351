"""Summed axes at two divisors (docs/stages.md, "Summed axes"; agda/ShapeReduction/Summed.agda).

A summed or contracted axis is reduced only if every stage that sums over it is affine in its sums
(``certificates.shapes.affine``) and holds at two reduced sizes. Each attack below is false at full size and
holds at one reduced size; each is not verified, and its certificate, forged with honest keys, is REJECTed.
"""

from certificates import shapes
from certificates.graph import parse_graph
from verifier import workloads
from verifier.case import Case
from verifier.ir import GraphBuilder
from verifier.stages.certificate import staged_certificate
from verifier.stages.run import verify_staged

from test_shape_reduction import _replay, forge, newton_trap, stages_of


def offset_trap(n: int) -> Case:
    """``sum(X)`` against ``sum(x + 1/2) - 1``: affine in the sum, equal at length 2 only."""
    s = GraphBuilder("sum", 1)
    s.input("X", [3, n], "activation")
    s.node("aten.sum.dim_IntList", ["X"], "Y", dim=[1])
    s.output("Y")
    g = GraphBuilder("sum_shifted", 1)
    g.input("x", [3, n], "activation")
    g.node("aten.add.Tensor", ["x"], "t", other=0.5)
    g.node("aten.sum.dim_IntList", ["t"], "s", dim=[1])
    g.node("aten.sub.Tensor", ["s"], "y", other=1)
    g.output("y")
    return Case("offset_trap", s.build(), g.build(), {"X": ["x"]}, {"Y": ["y"]})


def squares(n: int) -> Case:
    """``sum(X)`` against ``(s0 + s1)^2 - s0^2 - s1^2 - 2 s0 s1 + s0 + s1`` over two halves: correct at every
    length, not affine in the sums."""
    s = GraphBuilder("sum", 1)
    s.input("X", [n], "activation")
    s.node("aten.sum.default", ["X"], "Y")
    s.output("Y")
    g = GraphBuilder("squares", 1)
    for h in (0, 1):
        g.input(f"x{h}", [n // 2], "activation")
        g.node("aten.sum.default", [f"x{h}"], f"s{h}")
        g.node("aten.pow.Tensor_Scalar", [f"s{h}"], f"q{h}", exponent=2)
    g.node("aten.add.Tensor", ["s0", "s1"], "a")
    g.node("aten.pow.Tensor_Scalar", ["a"], "aa", exponent=2)
    g.node("aten.mul.Tensor", ["s0", "s1"], "m")
    g.node("aten.mul.Tensor", ["m"], "m2", other=2)
    g.node("aten.sub.Tensor", ["aa", "q0"], "d0")
    g.node("aten.sub.Tensor", ["d0", "q1"], "d1")
    g.node("aten.sub.Tensor", ["d1", "m2"], "d2")
    g.node("aten.add.Tensor", ["d2", "a"], "y")
    g.output("y")
    return Case("squares", s.build(), g.build(), {"X": ["concat(x0, x1, dim=0)"]}, {"Y": ["y"]})


def lengths(case: Case, relation: dict, op: str, tensor: str, axis: int = 0) -> list[int]:
    """The lengths of spec ``tensor``'s ``axis`` in each obligation the checker derives for the stage of ``op``."""
    return [ls.tensors[tensor].shape[axis] for ls, *_ in stages_of(case, relation)[1](op)[1]]


def test_an_offset_outside_the_sum_is_refuted_at_the_second_divisor(tmp_path):
    full = offset_trap(8)
    assert not verify_staged(full).verified
    assert lengths(full, full.expect, "n0", "X", 1) == [2, 1]   # holds at 2 elements, not at 1
    ok, why = _replay(forge(full, offset_trap(2)), tmp_path)
    assert not ok and "stage #0 (n0)" in why, why


def uneven_trap(a: int, b: int, shift: float) -> Case:
    """``sum(X)`` against the sums of ``x + 1/2`` over two pieces of lengths a and b, less ``shift``: affine in the
    sums, equal where (a + b) / 2 = shift only. Pieces of 2 and 3 blocks of gcd 4 (8 and 12): every member keeps 2
    blocks at scale 1, so the main size is scale 1 itself and ``shapes.solve``'s second size is scale 2."""
    s = GraphBuilder("sum", 1)
    s.input("X", [3, a + b], "activation")
    s.node("aten.sum.dim_IntList", ["X"], "Y", dim=[1])
    s.output("Y")
    g = GraphBuilder("sum_pieces_shifted", 1)
    for h, n in (("0", a), ("1", b)):
        g.input(f"x{h}", [3, n], "activation")
        g.node("aten.add.Tensor", [f"x{h}"], f"t{h}", other=0.5)
        g.node("aten.sum.dim_IntList", [f"t{h}"], f"s{h}", dim=[1])
    g.node("aten.add.Tensor", ["s0", "s1"], "s")
    g.node("aten.sub.Tensor", ["s"], "y", other=shift)
    g.output("y")
    return Case("uneven_trap", s.build(), g.build(), {"X": ["concat(x0, x1, dim=1)"]}, {"Y": ["y"]})


def test_a_class_at_scale_one_is_checked_again_at_scale_two(tmp_path):
    """The branch of ``solve`` where the main scale is already 1: right at 2 + 3 elements (scale 1), false at
    8 + 12; the second size, 4 + 6, refutes it, and the certificate forged from the small run is REJECTed."""
    full = uneven_trap(8, 12, 2.5)
    assert not verify_staged(full).verified
    assert lengths(full, full.expect, "n0", "X", 1) == [5, 10]
    ok, why = _replay(forge(full, uneven_trap(2, 3, 2.5)), tmp_path)
    assert not ok and "stage #0 (n0)" in why, why


def test_a_power_of_sums_in_one_stage_keeps_the_axis_full(tmp_path):
    """Correct, but not affine in its sums inside one stage: the axis is decided at full length."""
    full = squares(16)
    res = verify_staged(full)
    assert res.verified and lengths(full, full.expect, "n0", "X") == [16]
    assert _replay(staged_certificate(res), tmp_path)[0]


def test_a_summed_stage_is_decided_at_both_divisors(tmp_path):
    """A TP MLP's contracted hidden axis: its stage holds at two reduced lengths; the others at one."""
    res = verify_staged(workloads.tp_mlp(world=2, tokens=4, dim=8, hidden=16))
    cert = staged_certificate(res)
    assert _replay(cert, tmp_path)[0]
    spec, at = stages_of(res.case, {t: [str(e) for e in es] for t, es in res.relation.items()})
    counts = sorted(len(at(n.name)[1]) for n in spec.nodes)
    assert counts[0] == 1 and counts[-1] == 2


def test_a_contraction_with_a_bias_and_an_all_reduce_is_reduced_at_two_divisors(tmp_path):
    """Row-parallel linear with its bias after the all-reduce (Megatron's RowParallelLinear): the bias is
    the part free of the contracted axis that the second divisor is there for."""
    def build(world: int) -> dict:
        b = GraphBuilder(f"row_parallel_{world}", world)
        for r in range(world):
            b.input(f"a@r{r}", [4, 16 // world], "activation", rank=r)
            b.input(f"w@r{r}", [6, 16 // world], "parameter", rank=r)
            b.input(f"c@r{r}", [6], "parameter", rank=r)
            b.node("aten.linear.default", [f"a@r{r}", f"w@r{r}"], f"p@r{r}", rank=r)
        b.node("_c10d_functional.all_reduce.default", [f"p@r{r}" for r in range(world)],
               [f"q@r{r}" for r in range(world)], group=list(range(world)), reduce_op="sum", name="ar")
        for r in range(world):
            b.node("aten.add.Tensor", [f"q@r{r}", f"c@r{r}"], f"y@r{r}", rank=r)
        b.output(*[f"y@r{r}" for r in range(world)])
        return b.build()
    s = GraphBuilder("linear", 1)
    for t, shape in (("A", [4, 16]), ("W", [6, 16]), ("C", [6])):
        s.input(t, shape, "activation" if t == "A" else "parameter")
    s.node("aten.linear.default", ["A", "W", "C"], "Y")
    s.output("Y")
    case = Case("row_parallel", s.build(), build(2), {"A": ["concat(a@r0, a@r1, dim=1)"],
                "W": ["concat(w@r0, w@r1, dim=1)"], "C": ["c@r0", "c@r1"]}, {"Y": ["y@r0", "y@r1"]})
    res = verify_staged(case)
    assert res.verified
    assert lengths(case, {t: [str(e) for e in es] for t, es in res.relation.items()}, "n0", "A", 1) == [4, 2]
    ok, why = _replay(staged_certificate(res), tmp_path)
    assert ok, why


def test_the_affine_rule_names_each_way_out():
    """``shapes.affine`` on small graphs: what stays affine, and the first node that does not."""
    def graph(*nodes, dtype: str = "float32") -> tuple:
        b = GraphBuilder("g", 1)
        b.input("x", [4, 6], "activation", dtype=dtype, **({"range": (0, 3)} if dtype == "int64" else {}))
        b.input("z", [4], "activation")
        for target, ins, out, kw in nodes:
            b.node(target, ins, out, **kw)
        b.output(nodes[-1][2])
        g = parse_graph(b.build(), "g")
        C = shapes.constraints(g, g, {})
        cls = C.divisor_classes()
        return C, {a for a in C.size if a[0] == "spec" and cls[a] == cls[("spec", "x", 1)]}, g
    S = ("aten.sum.dim_IntList", ["x"], "s", {"dim": [1]})
    ok = [[S, ("aten.mul.Tensor", ["s", "z"], "y", {})],
          [S, ("aten.add.Tensor", ["s", "z"], "y", {})],
          [S, ("aten.div.Tensor", ["s", "z"], "y", {})],
          [S, ("aten.neg.default", ["s"], "y", {})],
          [("aten.exp.default", ["x"], "e", {}), ("aten.sum.dim_IntList", ["e"], "y", {"dim": [1]})]]
    bad = [([S, ("aten.mul.Tensor", ["s", "s"], "y", {})], "aten.mul.Tensor"),
           ([S, ("aten.div.Tensor", ["z", "s"], "y", {})], "aten.div.Tensor"),
           ([S, ("aten.exp.default", ["s"], "y", {})], "aten.exp.default"),
           ([("aten.sum.dim_IntList", ["x"], "s", {"dim": [1], "keepdim": True}),
             ("aten.sub.Tensor", ["x", "s"], "y", {})], "aten.sub.Tensor"),
           ([S, ("aten.add.Tensor", ["s", "z"], "t", {}), ("aten.sum.dim_IntList", ["t"], "y", {"dim": [0]}),
             ("aten.mul.Tensor", ["y", "y"], "w", {})], "'n3'"),
           ([("aten.amax.default", ["x"], "y", {"dim": [1]})], "aten.amax.default")]
    for nodes in ok:
        C, members, g = graph(*nodes)
        assert shapes.affine(C, members, ("spec", g)) is None, nodes
    for nodes, where in bad:
        C, members, g = graph(*nodes)
        why = shapes.affine(C, members, ("spec", g))
        assert why and where in why, (nodes, why)
    C, members, g = graph(S, dtype="int64")   # sums of integers wrap: not a torsion-free ring
    assert "aten.sum.dim_IntList" in shapes.affine(C, members, ("spec", g))


def test_newtons_identity_at_two_lengths_below_its_degree_is_rejected(tmp_path):
    """A plain sum against ``p1 + 24 e4`` (in power sums) holds at lengths 2 and 3: two divisors alone would
    accept it at 12; the affine rule refuses the powers of sums."""
    full = newton_trap(4, 12, "pow", "pow", False)
    ok, why = _replay(forge(full, newton_trap(4, 2, "pow", "pow", False)), tmp_path)
    assert not ok and "its key is not the key" not in why, why


def test_the_affine_ops_are_exactly_these_targets():
    """``shapes.AFFINE`` names ops by their short name: every registered target it admits is listed here, linear in
    its summed operand or a move, so an op added later under one of those names (a ``div`` with a rounding
    mode, say) fails this test until it is read and found linear too."""
    from certificates import ops_aten, ops_grad, ops_train  # noqa: F401 (every family registered)
    from certificates.ops import REGISTRY
    admitted = {t for t in REGISTRY if t.split(".")[-2:][0] in shapes.AFFINE}
    assert admitted == {
        "_c10d_functional.all_gather_into_tensor.default", "_c10d_functional.all_reduce.default",
        "_c10d_functional.reduce_scatter_tensor.default", "_c10d_functional.wait_tensor.default",
        "aten._unsafe_view.default", "aten.add.Scalar", "aten.add.Tensor", "aten.cat.default", "aten.clone.default",
        "aten.div.Scalar", "aten.div.Tensor", "aten.expand.default", "aten.mul.Scalar", "aten.mul.Tensor",
        "aten.neg.default", "aten.permute.default", "aten.reshape.default", "aten.slice.Tensor",
        "aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims", "aten.sub.Scalar", "aten.sub.Tensor",
        "aten.sum.default", "aten.sum.dim_IntList", "aten.t.default", "aten.transpose.int",
        "aten.unsqueeze.default", "aten.view.default"}


def test_newtons_identity_at_a_power_of_two_is_rejected_by_the_affine_rule_alone(tmp_path, monkeypatch):
    """The second size is one scale below the main one (``shapes.solve``): a length-16 class is checked at 2 and 1,
    both below e_4's degree, where the next divisor gave 4 and refuted the trap by value. So only the affine rule
    stands between this forged certificate and an ACCEPT: with it the replay REJECTs, without it the replay
    ACCEPTs the false claim (the program that fools the new scale rule)."""
    full = newton_trap(4, 16, "pow", "pow", False)
    ok, why = _replay(forge(full, newton_trap(4, 2, "pow", "pow", False)), tmp_path)
    assert not ok and "its key is not the key" not in why, why
    assert lengths(full, full.expect, "n0", "x") == [16]   # not affine in its sums: kept at full length
    monkeypatch.setattr(shapes, "affine", lambda *a: None)   # the affine rule off
    assert lengths(full, full.expect, "n0", "x") == [2, 1]
    ok, why = _replay(forge(full, newton_trap(4, 2, "pow", "pow", False)), tmp_path)
    assert ok, why
