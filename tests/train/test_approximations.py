"""Declared approximations (local batch norm): semantics, the spec rewrite, certificates, tampering."""

import copy
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from certificates import approx  # noqa: E402
from certificates.errors import Malformed  # noqa: E402
from certificates.graph import evaluate, parse_graph  # noqa: E402
from certificates.ops import lookup  # noqa: E402
from certificates.replay import replay  # noqa: E402
from examples.train.bn_plan import make_case  # noqa: E402
from verifier.train import plan  # noqa: E402

EPS = 1e-5


def _bn_graph(n: int = 4, c: int = 3, s: int = 2) -> dict:
    """y = batch_norm(x); (gx, gw, gb) = its backward for seed gy: one rank, as capture writes it."""
    def f32(*shape, role=None):
        return {"shape": list(shape), "dtype": "float32", "rank": 0, **({"role": role} if role else {})}

    return {"format": "pvcert-graph", "version": 1, "name": "bn", "world_size": 1,
            "inputs": ["x", "w", "b", "gy"], "outputs": ["y", "gx", "gw", "gb"],
            "tensors": {"x": f32(n, c, s, role="activation"), "w": f32(c, role="parameter"),
                        "b": f32(c, role="parameter"), "gy": f32(n, c, s, role="gradient"), "y": f32(n, c, s),
                        "mean": f32(c), "rstd": f32(c), "gx": f32(n, c, s), "gw": f32(c), "gb": f32(c)},
            "nodes": [{"name": "bn", "target": approx.FWD, "inputs": ["x", "w", "b"], "outputs": ["y", "mean", "rstd"],
                       "attrs": {"training": True, "momentum": 0.1, "eps": EPS}, "rank": 0},
                      {"name": "bnb", "target": approx.BWD, "inputs": ["gy", "x", "w", None, None, "mean", "rstd"],
                       "outputs": ["gx", "gw", "gb"],
                       "attrs": {"train": True, "eps": EPS, "output_mask": [True, True, True]}, "rank": 0}]}


def _torch_bn(x, w, b, gy, groups: int):
    x, w, b = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, w, b))
    y = torch.cat([torch.nn.functional.batch_norm(p, None, None, w, b, training=True, eps=EPS)
                   for p in x.chunk(groups)])
    gx, gw, gb = torch.autograd.grad(y, (x, w, b), torch.tensor(gy, dtype=torch.float64))
    return [t.detach().numpy() for t in (y, gx, gw, gb)]


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_batch_norm_semantics_and_rewrite_match_torch(groups):
    rng = np.random.default_rng(groups)
    g = _bn_graph()
    vals = {"x": rng.normal(size=(4, 3, 2)), "w": rng.normal(size=3), "b": rng.normal(size=3),
            "gy": rng.normal(size=(4, 3, 2))}
    if groups > 1:
        g = approx.apply(g, [{"rule": "local-batch-norm", "node": "bn", "groups": groups}], "test")
    out = evaluate(parse_graph(g, "test"), vals, False)
    for name, want in zip(("y", "gx", "gw", "gb"), _torch_bn(vals["x"], vals["w"], vals["b"], vals["gy"], groups)):
        np.testing.assert_allclose(np.asarray(out[name], dtype=float), want, rtol=1e-9, atol=1e-9, err_msg=name)


def test_rewrite_leaves_its_input_alone_and_refuses_bad_declarations():
    g = _bn_graph()
    before = copy.deepcopy(g)
    approx.apply(g, [{"rule": "local-batch-norm", "node": "bn", "groups": 2}], "t")
    assert g == before
    bad = [({"rule": "local-batch-norm", "node": "bnb", "groups": 2}, "no single"),
           ({"rule": "local-batch-norm", "node": "bn", "groups": 3}, "not divisible"),
           ({"rule": "local-batch-norm", "node": "bn", "groups": 1}, ">= 2"),
           ({"rule": "local-batch-norm", "node": "bn", "groups": True}, ">= 2"),
           ({"rule": "sync-free-routing", "node": "bn", "groups": 2}, "expected"),
           ({"rule": "local-batch-norm", "node": "bn", "groups": 2, "extra": 1}, "expected")]
    for decl, why in bad:
        with pytest.raises(Malformed, match=why):
            approx.apply(g, [decl], "t")
    with pytest.raises(Malformed, match="must be a list"):
        approx.apply(g, {"rule": "local-batch-norm"}, "t")
    g["outputs"].append("mean")
    with pytest.raises(Malformed, match="graph outputs"):
        approx.apply(g, [{"rule": "local-batch-norm", "node": "bn", "groups": 2}], "t")
    assert lookup(approx.FWD) is not None and lookup(approx.BWD) is not None


@pytest.fixture(scope="module")
def bn_cert(tmp_path_factory):
    from verifier.cli import main

    tmp = tmp_path_factory.mktemp("bn")
    cap = plan.plan_case(make_case(dp=2, tp=2, micro_batches=2))
    assert [a["groups"] for a in cap.case.approximations] == [2] * 4    # 2 layers x 2 micro-batches
    path, cert = tmp / "case.json", tmp / "cert.json"
    plan.write_case(cap.case, str(path))
    assert main(["verify", str(path), "--emit-cert", str(cert)]) == 0
    exact = tmp / "exact.json"
    plan.write_case(plan.plan_case(make_case(dp=2, tp=2, micro_batches=2, approximate=False)).case, str(exact))
    return json.loads(cert.read_text()), exact


def test_local_batch_norm_plan_verifies_under_the_declared_approximation(bn_cert, tmp_path):
    cert, _ = bn_cert
    claim = cert["claims"][0]
    assert claim["approximations"] and all(a["rule"] == "local-batch-norm" for a in claim["approximations"])
    p = tmp_path / "c.json"
    p.write_text(json.dumps(cert))
    [res] = replay(str(p))
    assert res.ok and "assuming local-batch-norm (2 groups) at 4 nodes" in res.detail


def test_without_the_approximation_the_plan_is_rejected_at_the_batch_norm(bn_cert, capsys):
    from verifier.cli import main

    _, exact = bn_cert
    assert main(["verify", str(exact)]) == 1
    out = capsys.readouterr().out
    assert "first unrelated spec operator" in out and "native_batch_norm" in out


@pytest.mark.parametrize("tamper", ["drop", "groups", "node", "one"])
def test_tampered_approximations_are_rejected(bn_cert, tmp_path, tamper):
    cert = copy.deepcopy(bn_cert[0])
    claim = cert["claims"][0]
    if tamper == "drop":         # claim the exact step: the obligations at the batch norms fail
        del claim["approximations"]
    elif tamper == "groups":     # 4 groups of one sample each: other statistics
        claim["approximations"][0]["groups"] = 4
    elif tamper == "node":
        claim["approximations"][0]["node"] = "mm"
    else:                        # one batch norm left exact
        claim["approximations"].pop()
    p = tmp_path / "c.json"
    p.write_text(json.dumps(cert))
    try:   # the evidence names tensors of the rewritten spec: a changed rewrite may not even parse
        results = replay(str(p))
    except Malformed as e:
        assert tamper != "node" or "no single" in str(e)
        return
    assert tamper != "node" and not results[0].ok, results[0].detail


def test_staged_verification_refuses_approximations(tmp_path, capsys):
    from verifier.cli import main

    assert main(["verify", "examples/train/bn_plan.py", "--staged"]) == 2
    assert "not supported with --staged" in capsys.readouterr().err
