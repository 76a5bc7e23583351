"""Stages held by congruence (certificates/stages.py ``congruent``; agda/Composition/Congruence.agda).

A stage holds without evaluation when each goal names an impl tensor made by the spec node's operator, with its
attributes, in the same output place, from tensors the hypotheses equate to the spec node's inputs in their places.
Each attack below breaks one of those conditions on a false program; the checker must decide that stage (and
refute it), and the certificate forged with honest keys is REJECTed.
"""

import pytest

from certificates.graph import parse_graph
from certificates.refinement import parse_relation
from certificates.ops import REGISTRY
from certificates.stages import TOTAL, held
from verifier.case import Case
from verifier.certificate import artifact
from verifier.ir import GraphBuilder
from verifier.stages.certificate import staged_certificate
from verifier.stages.run import verify_staged

from test_shape_reduction import _replay, rekeyed, stages_of


def _pair(spec_node: tuple, impl_node: tuple, dtype: str = "float32") -> Case:
    """Spec ``Y = op(A, B)`` and an impl ``y = op'(a, b)`` on two replicas; ``*_node``: (target, inputs, attrs)."""
    s = GraphBuilder("spec", 1)
    for t in ("A", "B"):
        s.input(t, [4, 6], "activation")
    target, ins, kw = spec_node
    s.node(target, ins, ["Y", "Z"] if "split" in target else "Y", name="op", **kw)
    s.output(*(["Y", "Z"] if "split" in target else ["Y"]))
    g = GraphBuilder("impl", 2)
    outs = []
    for r in (0, 1):
        for t in ("a", "b"):
            g.input(f"{t}@r{r}", [4, 6], "activation", rank=r, dtype=dtype)
        target, ins, kw = impl_node[:3]
        mine = [f"y@r{r}", f"z@r{r}"] if "split" in target else [f"y@r{r}"]
        made = mine[::-1] if impl_node[3:] else mine   # a fourth entry: the outputs in the other order
        g.node(target, [f"{t}@r{r}" for t in ins], made if len(made) > 1 else made[0], rank=r, name=f"op@r{r}", **kw)
        outs += mine
    g.output(*outs)
    expect = {"Y": ["y@r0", "y@r1"], **({"Z": ["z@r0", "z@r1"]} if "split" in target else {})}
    return Case("pair", s.build(), g.build(), {"A": ["a@r0", "a@r1"], "B": ["b@r0", "b@r1"]}, expect)


SUB = ("aten.sub.Tensor", ["A", "B"], {})
SPLIT = ("aten.split_with_sizes.default", ["A"], {"split_sizes": [2, 2], "dim": 0})
ATTACKS = {   # name: (spec node, the impl's node, its dtype)
    "operands swapped": (SUB, ("aten.sub.Tensor", ["b", "a"], {}), "float32"),
    "another attribute": (SUB, ("aten.sub.Tensor", ["a", "b"], {"alpha": 2}), "float32"),
    "another operator": (SUB, ("aten.add.Tensor", ["a", "b"], {}), "float32"),
    "outputs swapped": (SPLIT, ("aten.split_with_sizes.default", ["a"], {"split_sizes": [2, 2], "dim": 0}, "swap"),
                        "float32"),
}


def _forged(spec_node: tuple, impl_node: tuple, dtype: str) -> tuple[Case, dict]:
    """The bug's case, and the certificate of its correct twin (same names) with the bug's impl in place, every
    stage proving itself under honest keys."""
    good, bug = _pair(spec_node, (spec_node[0], [t.lower() for t in spec_node[1]], spec_node[2])), \
        _pair(spec_node, impl_node, dtype)
    cert = staged_certificate(verify_staged(good))
    cert["subject"]["artifacts"][1] = artifact("impl", bug.impl)
    if "Z" in bug.expect:   # the split's outputs by name, as a congruence blind to their places would read them
        cert["evidence"]["pair"]["relation"].update(Y=["y@r0", "y@r1"], Z=["z@r0", "z@r1"])
    return bug, rekeyed(cert, bug)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_near_congruence_is_decided_and_its_forged_certificate_rejected(name, tmp_path):
    bug, cert = _forged(*ATTACKS[name])
    assert not verify_staged(bug).verified
    spec, at = stages_of(bug, cert["evidence"]["pair"]["relation"])
    assert at("op")[0] == "reduced"
    ok, why = _replay(cert, tmp_path)
    assert not ok and "stage #0 (op)" in why, why


def test_the_same_operator_on_the_same_values_is_held_by_congruence(tmp_path):
    """The control: replicas computing the spec's own node; and with another dtype, decided instead."""
    case = _pair(SUB, ("aten.sub.Tensor", ["a", "b"], {}))
    res = verify_staged(case)
    assert res.verified and stages_of(case, {"Y": ["y@r0", "y@r1"]})[1]("op")[0] == "congruence"
    ok, why = _replay(staged_certificate(res), tmp_path)
    assert ok and "by congruence" in why, why
    other = _pair(SUB, ("aten.sub.Tensor", ["a", "b"], {}), "float64")
    assert stages_of(other, {"Y": ["y@r0", "y@r1"]})[1]("op")[0] == "reduced"


def test_total_operators_are_exactly_these_targets():
    """``TOTAL`` names ops by their short name: every registered target it admits is listed here, defined at every
    float input, so an op added later under one of those names fails this test until it is read too."""
    from certificates import ops_aten, ops_grad, ops_train  # noqa: F401 (every family registered)
    admitted = {t for t in REGISTRY if t.split(".")[1] in TOTAL}
    assert admitted == {
        "_c10d_functional.wait_tensor.default", "aten._log_softmax.default", "aten._softmax.default",
        "aten._softmax_backward_data.default", "aten._unsafe_view.default", "aten.add.Scalar", "aten.add.Tensor",
        "aten.addmm.default", "aten.alias.default", "aten.bmm.default", "aten.cat.default", "aten.clone.default",
        "aten.contiguous.default", "aten.cos.default", "aten.detach.default", "aten.exp.default", "aten.expand.default",
        "aten.gelu.default", "aten.gelu_backward.default", "aten.layer_norm.default", "aten.lift_fresh_copy.default",
        "aten.linear.default", "aten.log_softmax.int", "aten.matmul.default", "aten.mean.default", "aten.mean.dim",
        "aten.mm.default", "aten.mul.Scalar", "aten.mul.Tensor", "aten.native_layer_norm.default",
        "aten.native_layer_norm_backward.default", "aten.neg.default", "aten.permute.default", "aten.relu.default",
        "aten.reshape.default", "aten.rms_norm.default", "aten.rsub.Scalar", "aten.rsub.Tensor",
        "aten.sigmoid.default", "aten.silu.default", "aten.sin.default", "aten.silu_backward.default", "aten.slice.Tensor",
        "aten.softmax.int", "aten.split.Tensor", "aten.split_with_sizes.default", "aten.squeeze.default",
        "aten.squeeze.dim", "aten.squeeze.dims", "aten.sub.Scalar", "aten.sub.Tensor", "aten.sum.default",
        "aten.sum.dim_IntList", "aten.t.default", "aten.tanh.default", "aten.threshold_backward.default",
        "aten.transpose.int", "aten.unsqueeze.default", "aten.view.default"}


@pytest.mark.parametrize("eps, assumed", [(1e-5, False), (0.0, True), (-1.0, True)])
def test_a_layer_norm_is_total_only_with_a_positive_eps(eps, assumed):
    """``rsqrt(var + eps)``: var >= 0, so eps > 0 makes it defined everywhere; eps <= 0 does not."""
    s = GraphBuilder("spec", 1)
    s.input("A", [4, 6], "activation")
    s.node("aten.native_layer_norm.default", ["A"], ["Y", "M", "R"], name="op", normalized_shape=[6], eps=eps)
    s.output("Y")
    g = GraphBuilder("impl", 1)
    g.input("a", [4, 6], "activation")
    g.node("aten.native_layer_norm.default", ["a"], ["y", "m", "r"], name="op@r0", normalized_shape=[6], eps=eps)
    g.output("y")
    case = Case("ln", s.build(), g.build(), {"A": ["a"]}, {"Y": ["y"]})
    how, [(ls, _, _, rout)] = stages_of(case, {"Y": ["y"], "M": ["m"], "R": ["r"]})[1]("op")
    assert how == "congruence" and all(o.assumed == assumed for o in held(ls, rout))


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("ids, assumed", [((0, 6), False), ((2, 6), False), ((0, 7), True), ((-1, 6), True),
                                           (None, True)])
def test_a_lookup_is_total_only_where_its_declared_indices_are_rows(backward, ids, assumed):
    """``embedding`` and its backward read row ``i`` for each index: defined at every input exactly when the declared
    range of the indices lies in the rows. Beyond them (or indices made in the graph, with no range): assumed."""
    graphs = []
    for name, sfx in (("spec", ""), ("impl", "@r0")):
        g = GraphBuilder(name, 1)
        w = g.input(f"W{sfx}", [4, 3] if backward else [6, 3], "activation")
        if ids is None:
            j = g.input(f"J{sfx}", [4], "index", dtype="int64", range=(0, 6))
            i = g.node("aten.sub.Scalar", [j], f"I{sfx}", out_dtype="int64", name=f"s{sfx}", attrs={"other": 0})
        else:
            i = g.input(f"I{sfx}", [4], "index", dtype="int64", range=ids)
        g.output(g.node("aten.embedding_dense_backward.default" if backward else "aten.embedding.default",
                        [w, i], f"Y{sfx}", name=f"op{sfx}", out_dtype="float32",
                        attrs={"num_weights": 6} if backward else {}))
        graphs.append(g.build())
    inputs = {"W": ["W@r0"], **({"J": ["J@r0"]} if ids is None else {"I": ["I@r0"]})}
    case = Case("lookup", graphs[0], graphs[1], inputs, {"Y": ["Y@r0"]})
    evidence = {"Y": ["Y@r0"], **({"I": ["I@r0"]} if ids is None else {})}
    how, [(ls, _, _, rout)] = stages_of(case, evidence)[1]("op")
    assert how == "congruence" and all(o.assumed == assumed for o in held(ls, rout))


def test_a_partial_operator_held_by_congruence_needs_the_spec_defined(tmp_path):
    """``reciprocal`` on replicas: held by congruence where the spec is defined, so replay shows it defined."""
    s = GraphBuilder("spec", 1)
    s.input("A", [4], "activation")
    s.node("aten.reciprocal.default", ["A"], "Y", name="op")
    s.output("Y")
    g = GraphBuilder("impl", 1)
    g.input("a", [4], "activation")
    g.node("aten.reciprocal.default", ["a"], "y", name="op@r0")
    g.output("y")
    case = Case("recip", s.build(), g.build(), {"A": ["a"]}, {"Y": ["y"]})
    res = verify_staged(case)
    how, [(ls, _, _, rout)] = stages_of(case, {"Y": ["y"]})[1]("op")
    assert res.verified and how == "congruence" and all(o.assumed for o in held(ls, rout))   # so shown defined
    ok, why = _replay(staged_certificate(res), tmp_path)
    assert ok and "by congruence" in why, why


def _softmax_pieces(dim: int, order: tuple = (0, 1)) -> Case:
    """Spec ``softmax(X, dim)``, X's rows or columns on two ranks, each rank's softmax of its piece; the goal is the
    ranks' results concatenated along the pieces' axis 0 (``order``: in which order)."""
    s = GraphBuilder("spec", 1)
    s.input("X", [4, 6], "activation")
    s.node("aten._softmax.default", ["X"], "Y", name="op", dim=dim, half_to_float=False)
    s.output("Y")
    g = GraphBuilder("impl", 2)
    for r in (0, 1):
        g.input(f"x@r{r}", [2, 6], "activation", rank=r)
        g.node("aten._softmax.default", [f"x@r{r}"], f"y@r{r}", rank=r, name=f"op@r{r}", dim=dim, half_to_float=False)
    g.output("y@r0", "y@r1")
    goal = f"concat(y@r{order[0]}, y@r{order[1]}, dim=0)"
    return Case("pieces", s.build(), g.build(), {"X": ["concat(x@r0, x@r1, dim=0)"]}, {"Y": [goal]})


@pytest.mark.parametrize("dim, order, held_, ok", [(1, (0, 1), True, True), (0, (0, 1), False, False),
                                                   (1, (1, 0), False, False)],
                         ids=["rows, normalized along columns", "normalized along the cut", "pieces swapped"])
def test_pieces_along_a_map_axis_are_held_by_congruence(dim, order, held_, ok, tmp_path):
    """Pieces commute with an operator only along one of its map axes, in their order: a softmax normalized along
    the axis the ranks cut is decided (and refuted), so are pieces named in another order."""
    case = _softmax_pieces(dim, order)
    how = stages_of(case, case.expect)[1]("op")[0]
    assert (how == "congruence") == held_
    res = verify_staged(case)
    assert res.verified == ok
    if not ok:   # the certificate of the right program, with this goal and honest keys
        cert = staged_certificate(verify_staged(_softmax_pieces(1, (0, 1))))
        cert["subject"]["artifacts"][1] = artifact("impl", case.impl)
        cert["subject"]["artifacts"][0] = artifact("spec", case.spec)
        cert["claims"][0]["output_relation"] = case.expect
        cert["evidence"]["pieces"]["relation"] = dict(case.expect)
        got, why = _replay(rekeyed(cert, case), tmp_path)
        assert not got and "its key is not the key" not in why, why
    else:
        got, why = _replay(staged_certificate(res), tmp_path)
        assert got and "by congruence" in why, why


def test_a_cat_of_pieces_is_not_the_pieces_of_a_cat(tmp_path):
    """``cat`` ties its cut axis across operands (each piece reduced alike), but along it the result is x's rows
    then y's: cat(concat(x0, x1), concat(y0, y1)) is [x0 x1 y0 y1], not [x0 y0 x1 y1]. Operands of other lengths
    along the axis are never pieces that commute; the stage is decided and refuted."""
    s = GraphBuilder("spec", 1)
    for t in ("X", "Y"):
        s.input(t, [4, 3], "activation")
    s.node("aten.cat.default", ["X", "Y"], "Z", name="op", dim=0)
    s.output("Z")
    g = GraphBuilder("impl", 2)
    for r in (0, 1):
        for t in ("x", "y"):
            g.input(f"{t}@r{r}", [2, 3], "activation", rank=r)
        g.node("aten.cat.default", [f"x@r{r}", f"y@r{r}"], f"z@r{r}", rank=r, name=f"op@r{r}", dim=0)
    g.output("z@r0", "z@r1")
    case = Case("cat", s.build(), g.build(), {"X": ["concat(x@r0, x@r1, dim=0)"], "Y": ["concat(y@r0, y@r1, dim=0)"]},
                {"Z": ["concat(z@r0, z@r1, dim=0)"]})
    assert stages_of(case, case.expect)[1]("op")[0] == "reduced"
    assert not verify_staged(case).verified


# (target, attrs, inputs as [rows, cols] operand count, outputs): operators on [4, 6] operands, cut in pieces
OPS = [("aten.add.Tensor", {}, 2, 1), ("aten.mul.Tensor", {}, 2, 1), ("aten.sub.Tensor", {"alpha": 2}, 2, 1),
       ("aten.gelu.default", {}, 1, 1), ("aten._softmax.default", {"dim": 0, "half_to_float": False}, 1, 1),
       ("aten._softmax.default", {"dim": 1, "half_to_float": False}, 1, 1),
       ("aten._softmax_backward_data.default", {"dim": 1, "input_dtype": "float32"}, 2, 1),
       ("aten._softmax_backward_data.default", {"dim": 0, "input_dtype": "float32"}, 2, 1),
       ("aten.cat.default", {"dim": 0}, 2, 1), ("aten.cat.default", {"dim": 1}, 2, 1),
       ("aten.sum.dim_IntList", {"dim": [1], "keepdim": True}, 1, 1),
       ("aten.sum.dim_IntList", {"dim": [0], "keepdim": True}, 1, 1),
       ("aten.mean.dim", {"dim": [1], "keepdim": True}, 1, 1),
       ("aten.native_layer_norm.default", {"normalized_shape": [6], "eps": 1e-5}, 1, 3),
       ("aten.split_with_sizes.default", {"split_sizes": [2, 2], "dim": 0}, 1, 2),
       ("aten.split_with_sizes.default", {"split_sizes": [3, 3], "dim": 1}, 1, 2),
       ("aten.transpose.int", {"dim0": 0, "dim1": 1}, 1, 1)]


def _random_stage(rng) -> tuple:
    """One operator on two ranks, each operand of the spec cut along ``d`` into the ranks' pieces (in a random
    order) or replicated, and a goal relating each spec result to the ranks' results concatenated along a random
    axis in a random order: a stage ``congruent`` may hold or not."""
    target, attrs, n_in, n_out = OPS[rng.randrange(len(OPS))]
    d, order = rng.randrange(2), rng.sample([0, 1], 2)
    ins = [f"A{k}" for k in range(n_in)]
    s = GraphBuilder("spec", 1)
    for t in ins:
        s.input(t, [4, 6], "activation")
    outs = [f"Y{k}" for k in range(n_out)]
    s.node(target, ins, outs if n_out > 1 else outs[0], name="op", **attrs)
    s.output(*outs)
    spec = parse_graph(s.build(), "spec")
    piece = [4 // 2, 6] if d == 0 else [4, 6 // 2]
    g = GraphBuilder("impl", 2)
    rel = {}
    for t in ins:
        cut = rng.random() < 0.8
        for r in (0, 1):
            g.input(f"{t.lower()}@r{r}", piece if cut else [4, 6], "activation", rank=r)
        rel[t] = [f"concat({t.lower()}@r{order[0]}, {t.lower()}@r{order[1]}, dim={d})" if cut else f"{t.lower()}@r0"]
    try:
        for r in (0, 1):
            mine = [f"{y.lower()}@r{r}" for y in outs]
            g.node(target, [f"{t.lower()}@r{r}" for t in ins], mine if n_out > 1 else mine[0], rank=r,
                   name=f"op@r{r}", **attrs)
        g.output(*[f"{y.lower()}@r{r}" for y in outs for r in (0, 1)])
        impl = parse_graph(g.build(), "impl")
    except Exception:   # the op does not take the pieces (a split of a cut row, say)
        return None
    e, o = rng.randrange(2), rng.sample([0, 1], 2)
    goal = {}
    for y in outs:
        text = f"concat({y.lower()}@r{o[0]}, {y.lower()}@r{o[1]}, dim={e})"
        try:
            goal.update(parse_relation({y: [text]}, spec, impl, "goal", False))
        except Exception:   # shapes that do not fit: no such claim can be written
            pass
    return spec, impl, parse_relation(rel, spec, impl, "in", True), goal


def test_congruence_never_holds_where_the_checker_decides_otherwise():
    """Random one-operator stages (elementwise, softmax and its backward along either axis, cat, split, sums, mean,
    layer norm, transpose; operands cut or replicated, pieces in either order, goals along either axis): wherever
    ``congruent`` holds the stage, deciding the same obligation element by element holds it too."""
    import random
    from certificates.limits import Limits
    from certificates.obligations import decide, obligation
    from certificates.stages import congruent
    rng, held_, tried = random.Random(0), 0, 0
    while tried < 300:
        made = _random_stage(rng)
        if made is None or not made[3]:
            continue
        spec, impl, rel, goal = made
        tried += 1
        node = spec.nodes[0]
        ls, li, rin, rout = obligation(spec, impl, rel, node, goal, {})
        if congruent(node, ls, li, rin, rout):
            held_ += 1
            assert all(o.holds for o in decide(ls, li, rin, rout, Limits())), (node.target, node.attrs, rel, goal)
    assert held_ >= 20, held_   # the property is exercised
