"""The claim is what was checked: integer ranges are declared on the spec and carried to the impl.

Attacks: an impl that declares a narrower range of token ids than the spec (its lookup is right
only there), and ids replicated on two ranks that declare different ranges (per-operator and
whole-graph evidence used to decide that claim differently). Neither engine may verify them, and
a certificate the engine writes for them (with the range rule switched off, as an engine without it
would) must not replay. A property test compares both evidence forms on random small integer cases.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random

import pytest

from certificates import cli as checker_cli, refinement
from certificates.errors import CheckError, Malformed
from certificates.limits import canonical_bytes
from verifier import certificate, direct
from verifier.case import Case
from verifier.ir import GraphBuilder
from verifier.refine import infer
from verifier.stages.certificate import staged_certificate
from verifier.stages.run import verify_staged

V, D, T = 4, 2, 2
AR = "_c10d_functional.all_reduce.default"


def _spec() -> dict:
    s = GraphBuilder("embed")
    s.input("ids", [T], "index", dtype="int64", range=(0, V))
    s.input("W", [V, D], "parameter")
    s.node("aten.embedding.default", ["W", "ids"], "out")
    s.output("out")
    return s.build()


def _lookup(g: GraphBuilder, r: int, zero: bool = False) -> str:
    """Rank ``r``'s masked lookup into its rows [2r, 2r+2) of the table (all zeros if ``zero``)."""
    lo = 2 * r
    g.node("aten.lt.Scalar", [f"ids@r{r}"], f"below@r{r}", rank=r, out_dtype="bool", other=lo)
    g.node("aten.ge.Scalar", [f"ids@r{r}"], f"above@r{r}", rank=r, out_dtype="bool", other=lo + 2)
    g.node("aten.logical_or.default", [f"below@r{r}", f"above@r{r}"], f"oob@r{r}", rank=r)
    g.node("aten.sub.Scalar", [f"ids@r{r}"], f"local@r{r}", rank=r, other=lo)
    g.node("aten.masked_fill.Scalar", [f"local@r{r}", f"oob@r{r}"], f"safe@r{r}", rank=r, value=0)
    g.node("aten.embedding.default", [f"w@r{r}", f"safe@r{r}"], f"e@r{r}", rank=r)
    g.node("aten.unsqueeze.default", [f"oob@r{r}"], f"m@r{r}", rank=r, dim=-1)
    g.node("aten.masked_fill.Scalar", [f"e@r{r}", f"m@r{r}"], f"p@r{r}", rank=r, value=0.0)
    if zero:
        g.node("aten.mul.Scalar", [f"p@r{r}"], f"z@r{r}", rank=r, other=0.0)
        return f"z@r{r}"
    return f"p@r{r}"


def _impl(ranges: tuple, zero_rank1: bool = False, ranks: int = 2) -> dict:
    """Vocab-parallel embedding: each rank looks up its rows, an all-reduce sums the parts."""
    g = GraphBuilder("embed_tp", 2)
    for r in range(2):
        g.input(f"w@r{r}", [2, D], "parameter", rank=r)
    for r in range(ranks):
        g.input(f"ids@r{r}", [T], "index", dtype="int64", rank=r, range=ranges[r])
    if ranks == 1:  # the rank-0 lookup alone: right exactly for ids in [0, 2)
        g.node("aten.clone.default", [_lookup(g, 0)], "out@r0", rank=0)
    else:
        parts = [_lookup(g, r, zero=zero_rank1 and r == 1) for r in range(2)]
        g.node(AR, parts, ["out@r0", "out@r1"], group=[0, 1], reduce_op="sum", name="ar")
    g.output("out@r0")
    return g.build()


def _case(impl: dict, ranks: int = 2) -> Case:
    rin = {"ids": [f"ids@r{r}" for r in range(ranks)], "W": ["concat(w@r0, w@r1, dim=0)"]}
    return Case("embed", _spec(), copy.deepcopy(impl), rin, {"out": ["out@r0"]})


NARROW = _case(_impl(((0, 2),), ranks=1), ranks=1)                   # impl declares ids in [0, 2)
SPLIT = _case(_impl(((0, V), (0, 2)), zero_rank1=True))               # rank 1 declares [0, 2)
CONTROL = _case(_impl(((0, V), (0, V))))


def _replay(cert: dict, tmp_path) -> int:
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(cert))
    return checker_cli.main([str(path)])


def _without_range_rule(monkeypatch, make):
    """What an engine without the range rule writes (the rule is restored before replay)."""
    with monkeypatch.context() as m:
        m.setattr(refinement, "_check_ranges", lambda *a: None)
        return make()


@pytest.mark.parametrize("case", [NARROW, SPLIT], ids=["narrow", "two-ranks"])
def test_range_attack_is_not_verified(case):
    for engine in (direct.verify, infer, verify_staged):
        with pytest.raises(Malformed, match="range"):
            engine(copy.deepcopy(case))


def _certify(form: str, case: Case) -> dict | None:
    """The certificate the engine writes for ``case`` in evidence ``form`` (None: not proved)."""
    if form == "whole-graph":
        r = direct.verify(copy.deepcopy(case))
        return certificate.whole_graph_certificate(r) if r.verified else None
    if form == "staged":
        res = verify_staged(copy.deepcopy(case))
        return staged_certificate(res) if res.verified else None
    inf = infer(copy.deepcopy(case))
    return certificate.per_operator_certificate(inf) if inf.verified else None


@pytest.mark.parametrize("form", ["whole-graph", "per-operator", "staged"])
@pytest.mark.parametrize("case", [NARROW, SPLIT], ids=["narrow", "two-ranks"])
def test_range_attack_certificate_is_rejected(case, form, monkeypatch, tmp_path, capsys):
    cert = _without_range_rule(monkeypatch, lambda: _certify(form, case))
    if cert is None:   # that engine (without the rule) did not prove it: forge the claim by hand
        cert = _certify(form, CONTROL)
        impl = next(a for a in cert["subject"]["artifacts"] if a["id"] == "impl")
        impl["embedded"]["tensors"]["ids@r1"]["range"] = [0, 2]
        impl["sha256"] = hashlib.sha256(canonical_bytes(impl["embedded"])).hexdigest()
    assert _replay(cert, tmp_path) != 0
    assert "range" in capsys.readouterr().err


def test_control_verifies_and_replays(tmp_path):
    for form in ("whole-graph", "per-operator", "staged"):
        assert _replay(_certify(form, CONTROL), tmp_path) == 0, form


def test_unrelated_integer_impl_input_is_refused():
    impl = _impl(((0, V), (0, V)))
    impl["tensors"]["k@r0"] = {"shape": [], "dtype": "int64", "rank": 0, "role": "index", "range": [0, 1]}
    impl["inputs"].append("k@r0")
    with pytest.raises(Malformed, match="related to no spec input"):
        direct.verify(_case(impl))


def _random_case(rng: random.Random) -> Case:
    """A small integer program: ids shifted, masked, looked up; the impl often fills masked ids with
    another row (the same claim exactly when no id in the range is masked)."""
    lo, hi = sorted(rng.sample(range(-2, 6), 2))
    s = GraphBuilder("spec")
    s.input("ids", [2], "index", dtype="int64", range=(lo, hi))
    s.input("W", [V, D], "parameter")
    g = GraphBuilder("impl", 2)
    g.input("w@r0", [V, D], "parameter")
    g.input("ids@r0", [2], "index", dtype="int64", range=(lo, hi))
    g.input("ids@r1", [2], "index", dtype="int64", rank=1, range=(lo, hi))
    params = [(rng.randrange(-2, 3), rng.randrange(0, V), rng.randrange(0, V + 2))]
    params.append(params[0] if rng.random() < 0.3 else (params[0][0], rng.randrange(0, V), params[0][2]))
    for (b, x), (shift, fill, k) in zip(((s, "ids"), (g, "ids@r0")), params):
        b.node("aten.sub.Scalar", [x], "a" + x[3:], other=shift)
        b.node("aten.ge.Scalar", ["a" + x[3:]], "hi" + x[3:], out_dtype="bool", other=k)
        b.node("aten.lt.Scalar", ["a" + x[3:]], "lo" + x[3:], out_dtype="bool", other=0)
        b.node("aten.logical_or.default", ["hi" + x[3:], "lo" + x[3:]], "m" + x[3:])
        b.node("aten.masked_fill.Scalar", ["a" + x[3:], "m" + x[3:]], "i" + x[3:], value=fill)
    s.node("aten.embedding.default", ["W", "i"], "out")
    s.output("out")
    g.node("aten.embedding.default", ["w@r0", "i@r0"], "out@r0")
    g.output("out@r0")
    rin = {"ids": ["ids@r0", "ids@r1"] if rng.random() < 0.5 else ["ids@r1", "ids@r0"], "W": ["w@r0"]}
    return Case("random", s.build(), g.build(), rin, {"out": ["out@r0"]})


def _run(engine, case):
    try:
        return engine(copy.deepcopy(case))
    except CheckError:   # e.g. the spec itself fails on an input in its range: nothing verified
        return None


def test_whole_graph_and_per_operator_agree_on_random_integer_cases(tmp_path):
    """Both evidence forms decide each random claim the same way, and each certificate replays.
    (The chain enumerates an integer tensor over the hull of its values, computed as whole-graph
    evidence enumerates the inputs: ``chain.reachable_ranges``.)"""
    rng, seen = random.Random(12), []
    for _ in range(40):
        case = _random_case(rng)
        whole, per_op = _run(direct.verify, case), _run(infer, case)
        verdicts = (bool(whole and whole.verified), bool(per_op and per_op.verified))
        assert verdicts[0] == verdicts[1], (verdicts, case.spec["nodes"], case.impl["nodes"])
        if verdicts[0]:
            assert _replay(certificate.per_operator_certificate(per_op), tmp_path) == 0
            assert _replay(certificate.whole_graph_certificate(whole), tmp_path) == 0
        seen.append(verdicts[0])
    assert 5 <= sum(seen) <= 35   # the generator makes both kinds


def test_verify_never_writes_a_certificate_its_checker_refuses(tmp_path, capsys):
    """The engine relates a float spec tensor to an int32 impl tensor (equal values): the checker
    refuses such a relation ("mixes integer and real tensors"), so verify must not write it."""
    from verifier.cli import main

    s = GraphBuilder("spec")
    s.input("ids", [3], "index", dtype="int64", range=(0, 4))
    s.input("W", [3], "parameter")
    s.node("aten._to_copy.default", ["ids"], "f", out_dtype="float32", dtype="float32")
    s.node("aten.mul.Tensor", ["f", "W"], "Y")
    s.output("Y")
    g = GraphBuilder("impl")
    g.input("ids@r0", [3], "index", dtype="int64", range=(0, 4))
    g.input("w@r0", [3], "parameter")
    g.node("aten._to_copy.default", ["ids@r0"], "i2@r0", out_dtype="int32", dtype="int32")
    g.node("aten._to_copy.default", ["i2@r0"], "f2@r0", out_dtype="float32", dtype="float32")
    g.node("aten.mul.Tensor", ["f2@r0", "w@r0"], "y@r0")
    g.output("y@r0")
    (tmp_path / "spec.json").write_text(json.dumps(s.build()))
    (tmp_path / "impl.json").write_text(json.dumps(g.build()))
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"format": "pvcert-case", "version": 1, "name": "mix", "spec": "spec.json",
                                "impl": "impl.json", "input_relation": {"ids": ["ids@r0"], "W": ["w@r0"]},
                                "expect": {"Y": ["y@r0"]}}))
    out = tmp_path / "cert.json"
    code = main(["verify", str(case), "--emit-cert", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and "not written" in err and not out.exists(), err
    assert not (tmp_path / "cert.json.unchecked").exists()
    assert main(["verify", str(case), "--engine", "whole-graph", "--emit-cert", str(out)]) == 0
    assert _replay(json.loads(out.read_text()), tmp_path) == 0   # the control: whole-graph evidence


def _tp_mlp(tmp_path, spec_name: str, clone: bool) -> str:
    """tp_mlp's case, with its spec file or a different spec also named ``mlp`` (an extra copy)."""
    root = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "tp_mlp")
    spec = json.load(open(os.path.join(root, "spec.json")))
    if clone:
        spec["tensors"]["Y0"] = dict(spec["tensors"]["Y"])
        spec["nodes"][-1]["outputs"] = ["Y0"]
        spec["nodes"].append({"name": "n3", "target": "aten.clone.default", "inputs": ["Y0"],
                              "outputs": ["Y"], "attrs": {}, "rank": 0})
    (tmp_path / spec_name).write_text(json.dumps(spec))
    case = json.load(open(os.path.join(root, "case.json")))
    case.update(spec=spec_name, impl=os.path.abspath(os.path.join(root, case["impl"])))
    path = tmp_path / f"case_{spec_name}"
    path.write_text(json.dumps(case))
    return str(path)


def test_replay_shows_the_claim_and_checks_the_spec(tmp_path, capsys):
    """A certificate pairing the real tp_mlp impl with another spec named 'mlp' looks different
    (the spec digest), and ``--spec`` / ``--spec-sha256`` with the auditor's spec REJECT it."""
    from verifier.cli import main

    real = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "tp_mlp", "spec.json")
    shown = {}
    for name, clone in (("spec.json", False), ("other.json", True)):
        cert = str(tmp_path / f"{name}.cert")
        assert main(["verify", _tp_mlp(tmp_path, name, clone), "--emit-cert", cert]) == 0
        capsys.readouterr()
        assert main(["replay", cert]) == 0
        shown[name] = capsys.readouterr().out
        assert "spec 'mlp' sha256" in shown[name] and "input_relation sha256" in shown[name], shown[name]
        assert "values over the reals" in shown[name]
    spec_line = {n: next(x for x in out.splitlines() if "spec 'mlp'" in x) for n, out in shown.items()}
    assert spec_line["spec.json"] != spec_line["other.json"]
    digest = hashlib.sha256(canonical_bytes(json.load(open(real)))).hexdigest()
    assert digest[:12] in spec_line["spec.json"]
    for flag in (["--spec", real], ["--spec-sha256", digest]):
        assert main(["replay", str(tmp_path / "spec.json.cert"), *flag]) == 0
        assert main(["replay", str(tmp_path / "other.json.cert"), *flag]) == 1
        assert "certifies another spec" in capsys.readouterr().out


def test_replay_says_when_low_precision_rounding_is_not_modelled(tmp_path, capsys):
    from verifier.cli import main

    path = _tp_mlp(tmp_path, "spec.json", False)
    case = json.load(open(path))
    for side in ("spec", "impl"):
        src = case[side] if os.path.isabs(case[side]) else str(tmp_path / case[side])
        g = json.load(open(src))
        for t in g["tensors"].values():
            t["dtype"] = "bfloat16"
        (tmp_path / f"bf16_{side}.json").write_text(json.dumps(g))
        case[side] = f"bf16_{side}.json"
    (tmp_path / "bf16.json").write_text(json.dumps(case))
    assert main(["verify", str(tmp_path / "bf16.json"), "--emit-cert", str(tmp_path / "c.json")]) == 0
    capsys.readouterr()
    assert main(["replay", str(tmp_path / "c.json")]) == 0
    assert "values over the reals; bfloat16 rounding not modelled" in capsys.readouterr().out
