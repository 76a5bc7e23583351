"""Per-operator inference: relations found, bugs located at the right operator, certificates replayed."""

import copy
import dataclasses
import json

import pytest

from certificates.replay import replay
from test_refinement import fused_qk, reduce_scatter_case, sp_linear, vocab_parallel_embedding
from verifier import certificate
from verifier.case import Case
from verifier.refine import infer, report
from verifier.workloads import tp_mlp


def case_of(spec, impl, rin, expect) -> Case:
    return Case("t", spec.build(), impl.build(), rin, expect)


def test_tp_mlp_relations():
    inf = infer(tp_mlp(4))
    assert inf.verified and inf.steps == ["n0", "n1", "n2"]
    rel = {t: [str(e) for e in es] for t, es in inf.relation.items()}
    assert rel["H"] == ["concat(h@r0, h@r1, h@r2, h@r3, dim=1)"]
    assert rel["A"] == ["concat(a@r0, a@r1, a@r2, a@r3, dim=1)"]
    assert set(rel["Y"]) == {"y@r0", "y@r1", "y@r2", "y@r3", "sum(p@r0, p@r1, p@r2, p@r3)"}


def test_replicated_heads_in_fused_weights_per_operator(tmp_path):
    """The ranks holding one KV head's copies form a group (read off the relation's slices), so the
    per-operator engine finds ``concat(b@r0, b@r2)`` and ``concat(b@r1, b@r3)``; swapped heads are not proved."""
    inf = infer(case_of(*fused_qk()))
    assert inf.verified, inf.failure
    assert {str(e) for e in inf.relation["K"]} >= {"concat(b@r0, b@r2, dim=1)", "concat(b@r1, b@r3, dim=1)"}
    p = tmp_path / "c.json"
    p.write_text(json.dumps(certificate.per_operator_certificate(inf)))
    assert all(r.ok for r in replay(str(p)))
    assert not infer(case_of(*fused_qk(kv_rows=(1, 0, 1, 1)))).verified


def test_missing_all_reduce_fails_the_expectation():
    inf = infer(tp_mlp(2, all_reduce=False))
    assert not inf.verified and inf.failure.node is None
    assert "expectation Y = p@r0 not met" in inf.failure.message
    assert inf.failure.inputs == {"Y": ["sum(p@r0, p@r1)"]}


@pytest.mark.parametrize("w", [2, 4])
def test_sequence_parallel_gather(w):
    inf = infer(case_of(*sp_linear(w)))
    assert inf.verified
    assert [str(e) for e in inf.relation["Y"]] == [f"y@r{r}" for r in range(w)]


def test_wrong_scale_located_at_the_next_operator():
    """A stray '/ tp' after a row-parallel linear: the linear still relates (a partial sum), the
    GELU after the reduce_scatter does not; the report shows the scaling in the explored region."""
    s, g, rin, _ = reduce_scatter_case(scale=0.5)
    s.node("aten.gelu.default", ["Y"], "Z")
    s.obj["outputs"] = ["Z"]
    for r in range(2):
        g.node("aten.gelu.default", [f"y@r{r}"], f"z@r{r}", rank=r)
    g.obj["outputs"] = ["z@r0", "z@r1"]
    inf = infer(case_of(s, g, rin, {"Z": ["concat(z@r0, z@r1, dim=0)"]}))
    assert not inf.verified and inf.failure.node.name == "n1" and inf.steps == ["n0"]
    text = report.text(inf.failure, inf.prepared.impl)
    assert "first unrelated spec operator: 'n1' aten.gelu.default" in text
    assert "Y = sum(p@r0, p@r1)" in text and "impl nodes explored" in text
    assert "aten.mul.Tensor" in text  # the stray scaling is in the explored subgraph
    assert "digraph explored" in report.dot(inf.failure, inf.prepared.impl)


def test_expectation_mismatch_reports_what_was_found():
    inf = infer(case_of(*reduce_scatter_case(scale=0.5)))
    assert not inf.verified and inf.failure.node is None
    assert inf.failure.inputs == {"Y": ["sum(p@r0, p@r1)"]}
    assert infer(case_of(*reduce_scatter_case())).verified


def test_vocab_parallel_embedding_and_its_bug():
    assert infer(case_of(*vocab_parallel_embedding())).verified
    bad = infer(case_of(*vocab_parallel_embedding(check_upper=False)))
    assert not bad.verified and "impl fails on random inputs" in bad.failure.message


def test_repeated_layers_are_solved_once():
    """Two identical TP MLP blocks in sequence: the second block's obligations are reused."""
    from verifier.ir import GraphBuilder

    s = GraphBuilder("mlp2")
    s.input("X", [2, 4], "activation")
    g = GraphBuilder("tp_mlp2", 2)
    for r in range(2):
        g.input(f"x@r{r}", [2, 4], "activation", rank=r)
    rin, prev_s, prev_i = {"X": ["x@r0", "x@r1"]}, "X", ["x@r0", "x@r1"]
    for layer in range(2):
        W1, W2 = s.input(f"W1_{layer}", [8, 4], "parameter"), s.input(f"W2_{layer}", [4, 8], "parameter")
        s.node("aten.linear.default", [prev_s, W1], f"H{layer}")
        s.node("aten.gelu.default", [f"H{layer}"], f"A{layer}")
        s.node("aten.linear.default", [f"A{layer}", W2], f"Y{layer}")
        for r in range(2):
            w1 = g.input(f"w1_{layer}@r{r}", [4, 4], "parameter", rank=r)
            w2 = g.input(f"w2_{layer}@r{r}", [4, 4], "parameter", rank=r)
            g.node("aten.linear.default", [prev_i[r], w1], f"h{layer}@r{r}", rank=r)
            g.node("aten.gelu.default", [f"h{layer}@r{r}"], f"a{layer}@r{r}", rank=r)
            g.node("aten.linear.default", [f"a{layer}@r{r}", w2], f"p{layer}@r{r}", rank=r)
        g.node("_c10d_functional.all_reduce.default", [f"p{layer}@r{r}" for r in range(2)],
               [f"y{layer}@r{r}" for r in range(2)], group=[0, 1])
        rin[f"W1_{layer}"] = [f"concat(w1_{layer}@r0, w1_{layer}@r1, dim=0)"]
        rin[f"W2_{layer}"] = [f"concat(w2_{layer}@r0, w2_{layer}@r1, dim=1)"]
        prev_s, prev_i = f"Y{layer}", [f"y{layer}@r{r}" for r in range(2)]
    s.output("Y1")
    g.output("y1@r0", "y1@r1")
    inf = infer(case_of(s, g, rin, {"Y1": ["y1@r0", "y1@r1"]}))
    assert inf.verified and inf.reused >= 2, (inf.obligations, inf.reused)


@pytest.fixture(scope="module")
def per_op_cert(tmp_path_factory):
    inf = infer(tp_mlp(2))
    path = tmp_path_factory.mktemp("c") / "c.json"
    certificate.write(certificate.per_operator_certificate(inf), str(path))
    return json.loads(path.read_text())


def outcome(c, tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(c))
    results = replay(str(p))
    return all(r.ok for r in results), " ".join(r.detail for r in results)


def ev(c):
    return c["evidence"][c["claims"][0]["id"]]


TAMPER = {
    "relation entry wrong": (lambda c: ev(c)["relation"].update(H=["concat(h@r1, h@r0, dim=1)"]), "step 'n0'"),
    "relation incomplete": (lambda c: ev(c)["relation"].pop("A"), "no clean expression for 'A'"),
    "step missing": (lambda c: ev(c)["steps"].pop(), "missing 'n2'"),
    "steps out of order": (lambda c: ev(c)["steps"].reverse(), "before the step that produces it"),
    "wrong partial sum": (lambda c: ev(c)["relation"].update(Y=["sum(p@r0, p@r0)"]), "step 'n2'"),
    "expectation changed": (lambda c: c["claims"][0]["output_relation"].update(Y=["p@r1"]), "expectation not met"),
}


def test_per_operator_certificate_replays(per_op_cert, tmp_path):
    ok, detail = outcome(per_op_cert, tmp_path)
    assert ok and "3 steps" in detail


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_per_operator_tampering_rejected(name, per_op_cert, tmp_path):
    c = copy.deepcopy(per_op_cert)
    edit, fragment = TAMPER[name]
    edit(c)
    ok, detail = outcome(c, tmp_path)
    assert not ok and fragment in detail, detail


def test_claim_must_relate_every_spec_output(per_op_cert, tmp_path):
    c = copy.deepcopy(per_op_cert)
    c["claims"][0]["output_relation"] = {}
    ok, detail = outcome(c, tmp_path)
    assert not ok and "does not relate spec output 'Y'" in detail


def test_outputs_without_expectation_are_claimed_as_found():
    case = tp_mlp(2)
    case.expect = {}
    inf = infer(case)
    cert = certificate.per_operator_certificate(inf)
    assert set(cert["claims"][0]["output_relation"]["Y"]) == {"y@r0", "y@r1", "sum(p@r0, p@r1)"}


def test_replicated_output_on_eight_ranks():
    """Every rank's copy and the partial sum are kept (no cap on candidates)."""
    inf = infer(tp_mlp(8, hidden=16))
    assert inf.verified and len(inf.relation["Y"]) == 9


def test_frontier_tensor_recomputed_by_a_collective_in_the_cone(per_op_cert, tmp_path):
    """Y related only to y@r0, expected on y@r1: the all_reduce producing y@r1 also produces y@r0,
    so that hypothesis cannot be used; replay rejects cleanly instead of crashing."""
    c = copy.deepcopy(per_op_cert)
    ev(c)["relation"]["Y"] = ["y@r0"]
    c["claims"][0]["output_relation"] = {"Y": ["y@r1"]}
    ok, detail = outcome(c, tmp_path)
    assert not ok and "cone recomputes" in detail, detail


def _lookup_case(index_op: str, lo: int, hi: int) -> Case:
    """Embedding rows picked by an intermediate index tensor L = index_op(I)."""
    from verifier.ir import GraphBuilder

    graphs = []
    for name, (e, i, l, y) in (("lookup", ("E", "I", "L", "Y")), ("lookup_impl", ("e", "i", "l", "y"))):
        g = GraphBuilder(name)
        g.input(e, [4, 2], "parameter")
        g.input(i, [2], "index", dtype="int64", range=(lo, hi))
        if index_op == "sub":
            g.node("aten.sub.Tensor", [i], l, other=2)
        else:
            g.node("aten.mul.Tensor", [i, i], l)
        g.node("aten.embedding.default", [e, l], y)
        g.output(y)
        graphs.append(g)
    return case_of(*graphs, {"E": ["e"], "I": ["i"]}, {"Y": ["y"]})


def test_intermediate_index_gets_its_interval_from_the_input_range():
    """L = I - 2 with I in [2, 4): the step of the lookup enumerates l over [0, 2)."""
    inf = infer(_lookup_case("sub", 2, 4))
    assert inf.verified, inf.failure and inf.failure.message


def test_integer_tensor_without_range_is_not_enumerated_partially():
    """L = I * I has no interval rule. With I in [0, 2) the step enumerates L over the values it
    takes (``chain.reachable_ranges``: 4 assignments of I); without that hull (more assignments than
    the limit), the step fails rather than being checked on a guess."""
    from certificates.chain import Chain, integer_ranges

    def intervals_only(spec, impl, limits):
        chain = Chain(spec, impl, limits)
        chain.ranges = integer_ranges(impl)
        return chain

    assert infer(_lookup_case("mul", 0, 2)).verified
    inf = infer(_lookup_case("mul", 0, 2), chain=intervals_only)
    assert not inf.verified and inf.failure.node.name == "n1"
    assert "no declared range" in " ".join(sum(inf.failure.tried.values(), []))


def test_reuse_never_applies_to_a_different_statement():
    """A cached proof is reused only for the same obligation modulo renaming."""
    from certificates import terms
    from certificates.chain import Chain

    inf = infer(tp_mlp(2))
    r = inf.prepared
    chain = Chain(r.spec, r.impl, __import__("certificates.limits", fromlist=["Limits"]).Limits())
    n0 = r.spec.nodes[0]
    good = {"H": [terms.parse("concat(h@r0, h@r1, dim=1)")]}
    bad = {"H": [terms.parse("concat(h@r1, h@r0, dim=1)")]}
    assert all(o.holds for o in chain.prove(inf.relation, n0, good))
    assert not any(o.holds for o in chain.prove(inf.relation, n0, bad))
    assert chain.reused == 0
    assert all(o.holds for o in chain.prove(inf.relation, n0, good)) and chain.reused == 1


def test_per_operator_certificate_fuzz_never_crashes(per_op_cert, tmp_path):
    """Deterministic random edits of a per-operator certificate: a clean verdict or error, never an
    internal failure, and never an accepted change to the claim or the graphs."""
    from certificates.errors import CheckError
    from conftest import mutations

    mutants = [0, -1, 3, 2.5, "", "n9", "y@r0", "sum(p@r0, p@r1)", None, [], {}, True]
    for i, (path, c) in enumerate(mutations(per_op_cert, 7, 150, mutants)):
        p = tmp_path / f"m{i}.json"
        p.write_text(json.dumps(c))
        try:
            ok = all(r.ok for r in replay(str(p)))
        except CheckError:
            continue
        if ok:
            assert c["claims"] == per_op_cert["claims"], path
            assert c["subject"] == per_op_cert["subject"], path


# --- caches of the engine (verifier/refine/fast.py, guesses.Twin, verifier/ir.parsed) --------------

def _layers(n: int, scale=(2.0,), clone: bool = True):
    """``n`` alike layers ``H_{k+1} = gelu(H_k) * s_k`` on 2 ranks (rows sharded); the impl
    copies its input first (``clone``), so the gelu's readers are not the related tensors."""
    from verifier.ir import GraphBuilder
    s = GraphBuilder("layers")
    s.input("H0", [4, 2], "activation")
    g = GraphBuilder("layers_impl", 2)
    for r in range(2):
        g.input(f"h0@r{r}", [2, 2], "activation", rank=r)
    for k in range(n):
        sk = scale[k % len(scale)]
        s.node("aten.gelu.default", [f"H{k}"], f"A{k}")
        s.node("aten.mul.Scalar", [f"A{k}"], f"H{k + 1}", other=sk)
        for r in range(2):
            src = f"h{k}@r{r}"
            if clone:
                src = g.node("aten.clone.default", [src], f"c{k}@r{r}", rank=r, name=f"clone{k}@r{r}")
            g.node("aten.gelu.default", [src], f"a{k}@r{r}", rank=r, name=f"gelu{k}@r{r}")
            g.node("aten.mul.Scalar", [f"a{k}@r{r}"], f"h{k + 1}@r{r}", rank=r, other=sk, name=f"mul{k}@r{r}")
    s.output(f"H{n}")
    g.output(f"h{n}@r0", f"h{n}@r1")
    return case_of(s, g, {"H0": ["concat(h0@r0, h0@r1, dim=0)"]}, {f"H{n}": [f"concat(h{n}@r0, h{n}@r1, dim=0)"]})


def _count(monkeypatch, owner, name):
    calls = []
    orig = getattr(owner, name)

    def counted(*a, **k):
        calls.append(a)
        return orig(*a, **k)
    monkeypatch.setattr(owner, name, counted)
    return calls


def test_alike_steps_share_their_obligation(monkeypatch):
    """Layer after layer the steps are alike up to renaming: the chain decides each kind once
    and is not asked again (the engine's canonical tuple finds it); the certificate replays."""
    from certificates.chain import Chain
    asked = _count(monkeypatch, Chain, "prove")
    inf = infer(_layers(6))
    assert inf.verified and len(inf.steps) == 12
    # decided: the first gelu, the first mul, the expectation; the 10 other steps are reused
    assert inf.obligations == 3 and len(asked) == 3 and inf.reused == 10
    assert [str(e) for e in inf.relation["H6"]] == ["concat(h6@r0, h6@r1, dim=0)"]
    assert all(r.ok for r in replay(_write(certificate.per_operator_certificate(inf))))


def test_steps_differing_in_an_attribute_do_not_share():
    """The multiplications by 2 and by 3 are not the same statement: each is decided."""
    same = infer(_layers(5, scale=(2.0,)))
    other = infer(_layers(5, scale=(2.0, 3.0)))
    mixed = infer(_layers(5, scale=(2, 2.0)))      # 2 and 2.0 print differently: kept apart too
    assert same.verified and other.verified and mixed.verified
    assert other.obligations == same.obligations + 1 == mixed.obligations


def test_canonical_tuple_is_exactly_the_checker_key():
    """Equal tuples where the checker's keys are equal, different where they differ."""
    from certificates import terms
    from certificates.chain import Chain, key, obligation
    from certificates.limits import Limits
    from verifier.refine.fast import Proved, Terms

    inf = infer(_layers(4, scale=(2.0, 3.0)))
    r = inf.prepared
    chain = Chain(r.spec, r.impl, Limits())
    proved = Proved(chain, Terms())
    seen: dict = {}
    for v in r.spec.nodes:
        outs = {o: inf.relation[o] for o in v.outputs}
        mine = proved.key(inf.relation, v, outs)
        theirs = key(*obligation(r.spec, r.impl, inf.relation, v, outs, chain.ranges))
        assert seen.setdefault(mine, theirs) == theirs
    assert len(set(seen.values())) == len(seen) < len(r.spec.nodes)
    v = r.spec.nodes[0]
    wrong = {"A0": [terms.parse("concat(a0@r1, a0@r0, dim=0)")]}
    assert proved.key(inf.relation, v, wrong) != proved.key(inf.relation, v, {"A0": inf.relation["A0"]})


def test_twin_recipe_replays_the_impl_nodes(monkeypatch):
    """The gelu's relation names the clone's consumers, not the related tensors' readers: the
    first layer searches the region, later layers replay its recipe (clone, gelu per rank)."""
    from verifier.refine.candidates import Index
    searched = _count(monkeypatch, Index, "find")
    inf = infer(_layers(6))
    assert inf.verified
    # searched: the first gelu, and the last mul (a graph output: searched in full)
    assert len(searched) == 2
    assert [str(e) for e in inf.relation["A5"]] == ["concat(a5@r0, a5@r1, dim=0)"]


def test_twin_guess_differs_where_the_impl_differs():
    """Two alike steps (same signature) get the earlier one's equations renamed through its
    recipe; where the impl holds no such nodes (nothing reads the tensors), no guess."""
    from certificates.graph import parse_graph
    from verifier.refine.fast import Terms
    from verifier.refine.guesses import Twin, signature
    from verifier.refine.infer import Region

    case = _layers(3)
    inf = infer(case)
    spec, impl = parse_graph(case.spec, "spec"), parse_graph(case.impl, "impl")
    region, texts = Region(impl), Terms()
    gelu = [n for n in spec.nodes if n.target == "aten.gelu.default"]
    sig0, canon0 = signature(gelu[0], ["H0"], inf.relation, region, spec, texts)
    sig1, canon1 = signature(gelu[1], ["H1"], inf.relation, region, spec, texts)
    assert sig0 == sig1
    pattern = Twin(canon0, {"A0": inf.relation["A0"]}, region, texts)
    assert pattern.steps   # clone, gelu on each rank
    assert [str(e) for e in pattern.guess(canon1, region, texts)[0]] == ["concat(a1@r0, a1@r1, dim=0)"]
    assert pattern.guess({"h3@r0": 0, "h3@r1": 1}, region, texts) == [[]]   # the graph's outputs


def test_parsed_graph_reused_only_while_unchanged():
    """Graphs validated at capture are reused by the engine; a changed value is parsed again."""
    import copy

    from certificates.errors import LimitExceeded, Malformed
    from certificates.graph import parse_graph
    from certificates.limits import Limits
    from verifier import direct
    from verifier.ir import parsed, remember

    case = _layers(2)
    g = parse_graph(case.impl, "impl")
    remember(case.impl, g)
    assert parsed(case.impl, "impl", Limits()) is g
    assert parsed(copy.deepcopy(case.impl), "impl", Limits()) is not g
    assert direct.prepare(case, Limits()).impl is g
    fresh = direct.prepare(dataclasses.replace(case, impl=copy.deepcopy(case.impl)), Limits())
    assert fresh.impl is not g and [n.name for n in fresh.impl.nodes] == [n.name for n in g.nodes]
    with pytest.raises(LimitExceeded):   # the checker's own bound still applies
        parsed(case.impl, "impl", Limits(max_elements=0))
    case.impl["nodes"][0]["attrs"] = {"bogus": 1}   # changed in place after validation: parsed again
    with pytest.raises(Malformed, match="unknown attribute 'bogus'"):
        infer(case)


def _write(cert) -> str:
    import tempfile
    path = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False).name
    certificate.write(cert, path)
    return path


def test_a_limit_names_the_spec_operator_and_its_tensor(monkeypatch):
    """LIMIT during inference says where: the spec operator being related and its outputs."""
    import importlib
    import os as _os

    from certificates.errors import LimitExceeded
    from verifier.case import load_case

    module = importlib.import_module("verifier.refine.infer")

    def over(*args, **kw):
        raise LimitExceeded("time limit of 1 s reached")
    monkeypatch.setattr(module, "_prove", over)
    case = load_case(_os.path.join(_os.path.dirname(__file__), "..", "examples", "tp_mlp", "case.json"))
    first = case.spec["nodes"][0]
    with pytest.raises(LimitExceeded) as e:
        module.infer(case)
    assert str(e.value) == (f"time limit of 1 s reached, while relating spec operator '{first['name']}' "
                            f"({first['target']}) -> {', '.join(first['outputs'])}")


def test_an_enumeration_limit_names_the_integer_operands(monkeypatch):
    """A LIMIT at an operator with integer operands (an embedding's token ids) names them too."""
    import importlib
    import os as _os

    pytest.importorskip("torch")
    from certificates.errors import LimitExceeded
    from verifier.case import load_case

    module = importlib.import_module("verifier.refine.infer")

    def over(*args, **kw):
        raise LimitExceeded("65536 assignments of integer inputs exceed the limit of 4096")
    monkeypatch.setattr(module, "_prove", over)
    case = load_case(_os.path.join(_os.path.dirname(__file__), "..", "examples", "cases", "vocab_embedding.py"))
    with pytest.raises(LimitExceeded) as e:
        module.infer(case)
    node = next(n for n in case.spec["nodes"] if n["name"] in str(e.value))
    ints = [t for t in node["inputs"] if case.spec["tensors"][t]["dtype"] == "int64"]
    assert ints and str(e.value).endswith(f"; its integer operands: {', '.join(ints)}"), str(e.value)
