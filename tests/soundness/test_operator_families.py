"""Each kind of claim trusts the operator families it imports, and refuses the others.

Staged and template claims trust ``ops.py`` and ``ops_grad.py`` only (``certificates.graph.CORE``;
docs/architecture.md): a graph with an operator of ``ops_aten.py`` or ``ops_train.py`` is refused
by their checkers even in a process where those modules are loaded (this one: the engine loads
every family), and by the engine before it proves anything. Refinement claims trust those and
``ops_aten.py``; training-refinement claims (approximations, batch norm, MoE routing) those and
``ops_train.py``: the engine picks the kind, a forger who changes it is refused.
"""

from __future__ import annotations

import copy
import json

import pytest

from certificates.errors import Unsupported
from certificates.graph import CORE, parse_graph, require_families
from certificates.limits import canonical_bytes
from certificates.replay import replay
from conftest import ROOT, run_pvcert
from verifier.ir import GraphBuilder


def _abs_case(tmp_path, target: str = "aten.abs.default", **attrs) -> str:
    """``y = abs(x)`` (``abs``: an ops_aten operator; or ``target``) on one rank against the same on two."""
    s = GraphBuilder("abs")
    s.input("X", [2, 2], "activation")
    s.node(target, ["X"], "Y", attrs=attrs)
    s.output("Y")
    g = GraphBuilder("abs_tp", 2)
    for r in range(2):
        g.input(f"x@r{r}", [2, 2], "activation", rank=r)
        g.node(target, [f"x@r{r}"], f"y@r{r}", rank=r, attrs=attrs)
        g.output(f"y@r{r}")
    (tmp_path / "spec.json").write_text(json.dumps(s.build()))
    (tmp_path / "impl.json").write_text(json.dumps(g.build()))
    case = {"format": "pvcert-case", "version": 1, "name": "abs", "spec": "spec.json", "impl": "impl.json",
            "input_relation": {"X": ["x@r0", "x@r1"]}, "expect": {"Y": ["y@r0", "y@r1"]}}
    (tmp_path / "case.json").write_text(json.dumps(case))
    return str(tmp_path / "case.json")


def test_staged_refuses_operators_it_does_not_trust_and_refinement_accepts_them(tmp_path):
    case = _abs_case(tmp_path)
    r = run_pvcert("verify", case, "--staged")
    assert r.returncode == 4 and "UNKNOWN" in r.stdout and "aten.abs.default" in r.stdout, r.stdout + r.stderr
    cert = tmp_path / "c.json"
    r = run_pvcert("verify", case, "--emit-cert", str(cert))
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    assert all(x.ok for x in replay(str(cert)))


def _rehash(cert: dict) -> dict:
    """The forger recomputes every artifact's sha256."""
    import hashlib

    for a in cert["subject"]["artifacts"]:
        if "embedded" in a:
            a["sha256"] = hashlib.sha256(canonical_bytes(a["embedded"])).hexdigest()
    return cert


def _staged_cert(tmp_path) -> dict:
    cert = tmp_path / "staged.json"
    r = run_pvcert("verify", f"{ROOT}/examples/tp_mlp/case.json", "--staged", "--emit-cert", str(cert))
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(cert.read_text())


def test_forged_staged_certificate_with_an_untrusted_operator_rejected(tmp_path):
    cert = _staged_cert(tmp_path)
    assert all(x.ok for x in replay(str(tmp_path / "staged.json")))
    bad = copy.deepcopy(cert)
    spec = next(a["embedded"] for a in bad["subject"]["artifacts"] if a["id"] == bad["claims"][0]["spec"])
    node = next(n for n in spec["nodes"] if n["target"] == "aten.gelu.default")
    node["target"], node["attrs"] = "aten.abs.default", {}
    (tmp_path / "bad.json").write_text(json.dumps(_rehash(bad)))
    rs = replay(str(tmp_path / "bad.json"))
    assert not any(x.ok for x in rs)
    assert "aten.abs.default: not an operator this kind of claim trusts" in rs[0].detail, rs[0].detail


@pytest.mark.parametrize("target", ["aten.abs.default", "aten.native_batch_norm.default", "pvcert.route.default"])
def test_core_excludes_the_real_model_and_training_families(target):
    from certificates.ops import REGISTRY

    assert REGISTRY[target].run.__module__.rsplit(".", 1)[-1] not in CORE


def test_forged_template_block_with_an_untrusted_operator_rejected(tmp_path):
    pytest.importorskip("torch")
    from verifier.train.template import TemplateCase, verify

    res = verify(TemplateCase("t", 2, 1, 2, 1, 1))
    assert res.ok, res.reason
    bad = copy.deepcopy(res.cert)
    spec = next(a["embedded"] for a in bad["subject"]["artifacts"] if a["id"] == "fwd.spec")
    node = next(n for n in spec["nodes"] if n["target"] == "aten.neg.default")
    node["target"] = "aten.abs.default"
    (tmp_path / "bad.json").write_text(json.dumps(_rehash(bad)))
    rs = replay(str(tmp_path / "bad.json"))
    assert not rs[0].ok and "block fwd: aten.abs.default: not an operator this kind of claim" in rs[0].detail, \
        rs[0].detail


def test_require_families_passes_core_graphs_and_names_the_others():
    g = GraphBuilder("one")
    g.input("X", [2, 2], "activation")
    g.node("aten.neg.default", ["X"], "Y")
    g.output("Y")
    require_families(CORE, "g", parse_graph(g.build(), "g"))   # core operators pass
    obj = g.build()
    obj["nodes"][0]["target"] = "aten.abs.default"   # loaded in this process (the engine loads every family)
    with pytest.raises(Unsupported, match="aten.abs.default: not an operator this kind of claim trusts"):
        require_families(CORE, "g", parse_graph(g.build(), "g"), parse_graph(obj, "g"))


def _bn_case(tmp_path) -> str:
    """Training-mode batch norm (an ops_train operator) on one rank against the same on two, per replica."""
    path = _abs_case(tmp_path, "aten.neg.default")
    for f, world in (("spec.json", 1), ("impl.json", 2)):
        g = json.loads((tmp_path / f).read_text())
        for n in g["nodes"]:
            n["target"], n["attrs"] = "aten.native_batch_norm.default", {"training": True, "momentum": 0.1, "eps": 0.5}
            y, at, rank = n["outputs"][0].partition("@")
            n["outputs"] = [y + at + rank] + [f"{y}_{s}{at}{rank}" for s in ("mean", "rstd")]
            for t in n["outputs"][1:]:
                g["tensors"][t] = dict(g["tensors"][n["outputs"][0]], shape=[2])
        (tmp_path / f).write_text(json.dumps(g))
    return path


def _forged(tmp_path, case: str, change) -> list:
    cert = tmp_path / "c.json"
    r = run_pvcert("verify", case, "--emit-cert", str(cert))
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    bad = json.loads(cert.read_text())
    change(bad)
    (tmp_path / "bad.json").write_text(json.dumps(_rehash(bad)))
    return replay(str(tmp_path / "bad.json"))


def test_the_engine_picks_the_kind_and_each_kind_refuses_the_others_family(tmp_path):
    kinds = []

    def relabel(cert: dict, kind: str) -> None:
        kinds.append(cert["claims"][0]["kind"])
        cert["claims"][0]["kind"] = kind

    (tmp_path / "a").mkdir()
    rs = _forged(tmp_path / "a", _abs_case(tmp_path / "a"), lambda c: relabel(c, "training-refinement"))
    assert not rs[0].ok and "aten.abs.default: not an operator this kind of claim trusts" in rs[0].detail
    (tmp_path / "b").mkdir()
    rs = _forged(tmp_path / "b", _bn_case(tmp_path / "b"), lambda c: relabel(c, "refinement"))
    assert not rs[0].ok and "native_batch_norm.default: not an operator this kind" in rs[0].detail, rs[0].detail
    assert kinds == ["refinement", "training-refinement"]
    assert all(x.ok for x in replay(str(tmp_path / "b" / "c.json")))   # as the engine wrote it


def test_a_refinement_claim_refuses_approximations(tmp_path):
    def approximate(cert: dict) -> None:
        cert["claims"][0]["approximations"] = [{"rule": "local-batch-norm", "node": "n0", "groups": 2}]

    rs = _forged(tmp_path, _abs_case(tmp_path), approximate)
    assert not rs[0].ok and "approximations are not allowed in this claim" in rs[0].detail, rs[0].detail
