"""Cases too large to decide run at full size (verifier/fullsize.py): REFUTED only with an executed
counterexample, located by value at the operator the per-operator engine names at small sizes; a
correct program keeps its LIMIT."""

import json
import os

import numpy as np
import pytest

from certificates import terms
from certificates.errors import Unsupported
from certificates.graph import GRAPH_FORMAT, GRAPH_VERSION
from certificates.limits import Limits
from verifier import direct, fullsize
from verifier.case import Case

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def big() -> Limits:
    """Room for the full sizes; its clock starts now (a module-level one would start at collection)."""
    return Limits(max_elements=1 << 24)


def _case(impl_nodes: list, rel: dict, expect: dict, n: int = 6) -> Case:
    """spec ``y = x * w`` on [n, 4]; the impl on two ranks as given."""
    spec = {"format": GRAPH_FORMAT, "version": GRAPH_VERSION, "name": "s", "world_size": 1, "inputs": ["x", "w"], "outputs": ["y"],
            "tensors": {"x": {"shape": [n, 4], "dtype": "float32", "role": "activation"},
                        "w": {"shape": [n, 4], "dtype": "float32", "role": "parameter"},
                        "y": {"shape": [n, 4], "dtype": "float32"}},
            "nodes": [{"name": "m", "target": "aten.mul.Tensor", "inputs": ["x", "w"], "outputs": ["y"], "attrs": {}}]}
    tensors = {f"{t}@r{r}": {"shape": [n // 2, 4], "dtype": "float32", "rank": r, "role": "activation"}
               for t in ("x", "w") for r in (0, 1)}
    tensors.update({f"y@r{r}": {"shape": [n // 2, 4], "dtype": "float32", "rank": r} for r in (0, 1)})
    impl = {"format": GRAPH_FORMAT, "version": GRAPH_VERSION, "name": "i", "world_size": 2, "inputs": ["x@r0", "w@r0", "x@r1", "w@r1"], "outputs": ["y@r0", "y@r1"],
            "tensors": tensors, "nodes": impl_nodes}
    return Case("t", spec, impl, rel, expect)


def _mul(r: int, a: str = "x", b: str = "w") -> dict:
    return {"name": f"m@r{r}", "target": "aten.mul.Tensor", "rank": r, "inputs": [f"{a}@r{r}", f"{b}@r{r}"],
            "outputs": [f"y@r{r}"], "attrs": {}}


SHARD = {"x": ["concat(x@r0, x@r1, dim=0)"], "w": ["concat(w@r0, w@r1, dim=0)"]}


def test_draw_satisfies_the_input_relation_and_copies_replicas():
    rel = {"x": ["concat(x@r0, x@r1, dim=0)"], "w": ["concat(w@r0, w@r1, dim=0)"]}
    r = direct.prepare(_case([_mul(0), _mul(1)], rel, {"y": ["concat(y@r0, y@r1, dim=0)"]}), big())
    spec, impl = fullsize.draw(r, 0, 1.0)
    for name, ts in rel.items():
        for t in ts:
            assert np.array_equal(terms.evaluate(terms.parse(t), impl.__getitem__), spec[name])


def test_fan_in_draw_scales_by_the_last_axis_and_satisfies_the_relation():
    """The first draw scales floats of two or more axes by 1/sqrt(their last axis), as weights are initialized
    (a deep model's activations stay near 1 instead of overflowing at magnitude 1 or vanishing at 1e-2)."""
    rel = {"x": ["concat(x@r0, x@r1, dim=0)"], "w": ["concat(w@r0, w@r1, dim=0)"]}
    r = direct.prepare(_case([_mul(0), _mul(1)], rel, {"y": ["concat(y@r0, y@r1, dim=0)"]}), big())
    assert fullsize.DRAWS[0] == fullsize.FAN_IN and fullsize.DRAWS[1:] == direct.SCALES
    spec, impl = fullsize.draw(r, 0, fullsize.FAN_IN)
    for name, ts in rel.items():
        assert np.abs(spec[name]).max() <= 0.5 < 2 * np.abs(spec[name]).max()   # last axis 4: 1/sqrt(4)
        for t in ts:
            assert np.array_equal(terms.evaluate(terms.parse(t), impl.__getitem__), spec[name])
    assert fullsize._distinct(np.arange(5)) and fullsize._distinct(np.array([3, 1, 2]))
    assert not fullsize._distinct(np.array([1, 2, 1])) and not fullsize._distinct(np.array([1, 1]))


def test_a_sum_in_the_input_relation_is_not_drawn():
    rel = {"x": ["sum(x@r0, x@r1)"], "w": ["w@r0", "w@r1"]}
    case = _case([_mul(0), _mul(1)], rel, {"y": ["sum(y@r0, y@r1)"]})
    for t in case.impl["tensors"].values():
        t["shape"] = [6, 4]
    with pytest.raises(Unsupported, match="not a move"):
        fullsize.draw(direct.prepare(case, big()), 0, 1.0)


def test_sketches_are_linear_across_ranks():
    sk, rng = fullsize.Sketches(0), np.random.default_rng(1)
    a, b = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    for axis in (0, 1):
        whole = np.concatenate([a, b], axis=axis)
        assert sk.of(whole) == pytest.approx(sk.of(a, (axis, 0, 2)) + sk.of(b, (axis, 1, 2)))
    assert sk.of(a + b) == pytest.approx(sk.of(a) + sk.of(b))
    for shape in [(3, 5), (2, 3, 4), (7,), (2, 1, 3, 2)]:   # all axes' piece sketches at once, as one by one
        v = rng.standard_normal(shape)
        whole, cats, _ = sk.pieces(v, 1, 3)
        assert whole == pytest.approx(sk.of(v))
        assert cats == pytest.approx([sk.of(v, (axis, 1, 3)) for axis in range(v.ndim)])
        assert fullsize._bounds(v) == np.abs(v).max()
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))   # [a0; b0; a1; b1] from [a0; a1] and [b0; b1]
    whole = np.concatenate([a[:2], b[:2], a[2:], b[2:]])
    assert sk.of(whole) == pytest.approx(sk.pieces(a, 0, 2)[2][0] + sk.pieces(b, 1, 2)[2][0])
    assert sk.pieces(rng.standard_normal((3, 2)), 0, 2)[2][0] is None   # an odd axis has no halves
    assert not np.isfinite(fullsize._bounds(np.array([1.0, np.nan]))) and fullsize._bounds(-np.ones(2)) == 1
    sq = rng.standard_normal((4, 4))   # one vector per (axis, length): a transpose has another sketch
    assert sk.of(sq) != pytest.approx(sk.of(sq.T))


def test_correct_program_no_counterexample_nothing_unmatched():
    r = direct.prepare(_case([_mul(0), _mul(1)], SHARD, {"y": ["concat(y@r0, y@r1, dim=0)"]}), big())
    found = fullsize.search(r, 0, big())
    assert found.counterexample is None and found.located is None and not found.unmatched
    assert found.draws == len(fullsize.DRAWS)


def test_swapped_shards_refuted_and_located():
    """Rank 1 multiplies its x by rank 0's w-shaped piece of the wrong tensor: the first (only) spec operator
    has no counterpart; the counterexample is the outputs' executed values."""
    nodes = [_mul(0), {**_mul(1, "x", "x")}]
    r = direct.prepare(_case(nodes, SHARD, {"y": ["concat(y@r0, y@r1, dim=0)"]}), big())
    found = fullsize.search(r, 0, big())
    cx = found.counterexample
    assert cx is not None and cx.output == "y" and cx.index[0] >= 3 and found.draws == 1
    assert found.located is not None and found.located.name == "m" and found.unmatched == ["y"]


def test_a_later_refuting_draw_is_run_again_with_its_sketches(monkeypatch):
    """Only the first draw is sketched on the way; a later draw that refutes is run again, sketched, and the
    location is that draw's (here the first draw is made to miss the difference)."""
    first, seen = fullsize.Compared.first, []

    def miss_first(cmp, top):
        seen.append(top)
        return None if len(seen) == 1 else first(cmp, top)
    monkeypatch.setattr(fullsize.Compared, "first", miss_first)
    r = direct.prepare(_case([_mul(0), _mul(1, "x", "x")], SHARD, {"y": ["concat(y@r0, y@r1, dim=0)"]}), big())
    found = fullsize.search(r, 0, big())
    assert len(seen) == 3 and found.draws == 2
    assert found.counterexample.scale == 1.0 and found.located.name == "m" and found.unmatched == ["y"]


@pytest.mark.parametrize("bug, operator", [(None, None), ("no_all_reduce", "add_5"), ("attention_scale", "mul")])
def test_megatron_gpt_larger(bug, operator, tmp_path, capsys):
    """megatron-core GPTModel TP2 with a 1024 x 256 embedding: a planted missing all-reduce or wrong attention scale is
    REFUTED at full size and located by value at the operator the per-operator engine names at small sizes; the
    correct model is VERIFIED (its token ids decided by cases over intervals; enumerated, they were a LIMIT)."""
    pytest.importorskip("megatron.core", reason="megatron-core is not installed")
    cli = pytest.importorskip("verifier.cli")
    big, small = tmp_path / "big.py", tmp_path / "small.py"
    big.write_text("from examples.cases import megatron_gpt\nCASE = megatron_gpt.make_case(2, "
                   f"bug={bug!r}, size=dict(vocab=1024, seq=32, hidden=256, heads=4))\n")
    code = cli.main(["verify", str(big)])
    out = capsys.readouterr().out
    if bug is None:
        assert code == 0 and "VERIFIED" in out, out
        return
    assert code == 1 and f"located by value at full size: spec operator '{operator}'" in out
    assert "counterexample (executed): out[" in out and "REFUTED" in out
    small.write_text(f"from examples.cases import megatron_gpt\nCASE = megatron_gpt.make_case(2, bug={bug!r}, "
                     "size=dict(vocab=4, seq=2, hidden=8, heads=4))\n")
    assert cli.main(["verify", str(small)]) == 1
    assert f"first unrelated spec operator: '{operator}'" in capsys.readouterr().out


def test_full_size_refutation_in_json(tmp_path, capsys):
    """``--json``: a full-size refutation is one schema-valid object (docs/schema/output-v1.json) whose result
    names the located operator with its module path, and the executed counterexample."""
    pytest.importorskip("megatron.core", reason="megatron-core is not installed")
    jsonschema = pytest.importorskip("jsonschema")
    cli = pytest.importorskip("verifier.cli")
    big = tmp_path / "big.py"
    big.write_text("from examples.cases import megatron_gpt\nCASE = megatron_gpt.make_case(2, bug='no_all_reduce', "
                   "size=dict(vocab=1024, seq=32, hidden=256, heads=4))\n")
    assert cli.main(["verify", str(big), "--json"]) == 1
    obj = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(json.load(open(os.path.join(ROOT, "docs", "schema", "output-v1.json")))).validate(obj)
    (result,) = obj["results"]
    assert result["verdict"] == "REFUTED" and result["location"]["operator"] == "add_5"
    assert result["location"]["module"] == "decoder.layers.0" and obj["counterexample"]["output"] == "out"


def test_an_input_the_sketches_cannot_carry_is_no_evidence():
    """A merged weight (every rank's rows interleaved, as vLLM's qkv) is related by slices the sketches cannot
    express, so its transpose is carried by no impl tensor although it is right: the location is not put there but
    at the first operator whose inputs are carried, here the residual add after the missing all-reduce."""
    from verifier.ir import GraphBuilder
    s = GraphBuilder("spec", 1)
    s.input("W", [6, 3], "parameter")
    s.input("X", [3], "activation")
    s.node("aten.t.default", ["W"], "T", name="t")
    s.node("aten.sum.dim_IntList", ["T"], "S", name="sum", dim=[1])
    s.node("aten.mul.Tensor", ["S", "X"], "P", name="mul")
    s.node("aten.add.Tensor", ["P", "X"], "Y", name="add")
    s.output("Y")
    g = GraphBuilder("impl", 2)
    for r in (0, 1):
        g.input(f"w@r{r}", [3, 3], "parameter", rank=r)
        g.input(f"x@r{r}", [3], "activation", rank=r)
        g.node("aten.t.default", [f"w@r{r}"], f"t@r{r}", rank=r, name=f"t@r{r}")
        g.node("aten.sum.dim_IntList", [f"t@r{r}"], f"s@r{r}", rank=r, name=f"sum@r{r}", dim=[1])
        g.node("aten.mul.Tensor", [f"s@r{r}", f"x@r{r}"], f"p@r{r}", rank=r, name=f"mul@r{r}")   # no all-reduce
        g.node("aten.add.Tensor", [f"p@r{r}", f"x@r{r}"], f"y@r{r}", rank=r, name=f"add@r{r}")
    g.output("y@r0", "y@r1")
    merged = ", ".join(f"slice(w@r{r}, dim=0, start={k}, end={k + 1})" for k in range(3) for r in (0, 1))
    case = Case("merged", s.build(), g.build(), {"W": [f"concat({merged}, dim=0)"], "X": ["x@r0", "x@r1"]},
                {"Y": ["y@r0", "y@r1"]})
    found = fullsize.search(direct.prepare(case, big()), 0, big())
    assert found.counterexample is not None and "T" in found.unmatched
    assert found.located is not None and found.located.name == "add"
