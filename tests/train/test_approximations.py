"""Declared approximations (local batch norm): semantics, the spec rewrite, certificates, tampering."""

import copy
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from certificates import approx  # noqa: E402
from certificates.errors import Malformed  # noqa: E402
from certificates.graph import evaluate, parse_graph  # noqa: E402
from certificates.ops import REGISTRY as OPS  # noqa: E402
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
           ({"rule": ["local-batch-norm"], "node": "bn", "groups": 2}, "expected"),
           ({"rule": "local-batch-norm", "node": "bn", "groups": 2, "extra": 1}, "expected")]
    for decl, why in bad:
        with pytest.raises(Malformed, match=why):
            approx.apply(g, [decl], "t")
    with pytest.raises(Malformed, match="must be a list"):
        approx.apply(g, {"rule": "local-batch-norm"}, "t")
    for broken in ({**g, "tensors": []}, {**g, "nodes": [{**g["nodes"][0]}, {**g["nodes"][1], "inputs": 3}]}):
        with pytest.raises(Malformed):
            approx.apply(broken, [{"rule": "local-batch-norm", "node": "bn", "groups": 2}], "t")
    g["outputs"].append("mean")
    with pytest.raises(Malformed, match="graph outputs"):
        approx.apply(g, [{"rule": "local-batch-norm", "node": "bn", "groups": 2}], "t")
    assert approx.FWD in OPS and approx.BWD in OPS


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
    assert res.ok and "assuming local-batch-norm (groups 2) at 4 nodes" in res.detail
    _schema_valid(cert)


def _schema_valid(cert: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from test_schemas import REGISTRY, SCHEMAS

    # (per-operator evidence has no schema yet: the claims are what is checked here)
    jsonschema.Draft202012Validator(SCHEMAS["certificate"], registry=REGISTRY).validate(dict(cert, evidence={}))


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


# ---------------------------------------------------------------- node-limited routing

def test_routing_semantics_match_the_model_and_the_numeric_meaning_of_its_atoms():
    from certificates.ops_train import route
    from certificates.poly import NUMERIC, Rat
    from verifier.train.routing import route as torch_route

    rng = np.random.default_rng(0)
    for nodes, limit, k, cap in [(1, 1, 2, 1), (2, 1, 2, 2), (4, 2, 3, 1), (2, 2, 1, 3)]:
        s = rng.random((2, 5, 8))
        want = torch_route(torch.tensor(s), k, cap, nodes, limit).numpy()
        got = OPS["pvcert.route.default"].run([s], {"k": k, "capacity": cap, "nodes": nodes, "limit": limit})[0]
        np.testing.assert_array_equal(got, want)
        assert (want.sum(axis=(2, 3)) <= k).all() and (want.sum(axis=(1, 3)) <= cap).all()
        if nodes > 1:   # every token's experts lie in at most `limit` blocks
            blocks = want.sum(axis=3).reshape(2, 5, nodes, 8 // nodes).any(axis=3).sum(axis=2)
            assert (blocks <= limit).all()
    sym = np.array([[[Rat.var(f"s{t}{e}") for e in range(4)] for t in range(3)]], dtype=object)
    out = OPS["pvcert.route.default"].run([sym], {"k": 2, "capacity": 1, "nodes": 2, "limit": 1})[0]
    point = rng.random((3, 4))
    (atom,) = out[0, 1, 2, 0].atoms()   # one atom of the group's 12 scores per dispatch element
    fn = atom.split("(")[0]
    assert atom.count("s") == 12 and fn in NUMERIC
    for ix in np.ndindex(3, 4, 1):
        assert NUMERIC[str(out[(0,) + ix]).split("(")[0]](*point.ravel()) == route(point, 2, 1, 2, 1)[ix]


def test_node_limited_routing_declarations_are_checked():
    g = {"nodes": [{"name": "r", "target": approx.ROUTE, "attrs": {"k": 2, "capacity": 1}},
                   {"name": "m", "target": "aten.mul.Tensor", "attrs": {}}], "tensors": {}}
    out = approx.apply(g, [{"rule": "node-limited-routing", "node": "r", "nodes": 2, "limit": 1}], "t")
    assert out["nodes"][0]["attrs"] == {"k": 2, "capacity": 1, "nodes": 2, "limit": 1}
    assert g["nodes"][0]["attrs"] == {"k": 2, "capacity": 1}
    for decl, why in [({"node": "m", "nodes": 2, "limit": 1}, "no single"),
                      ({"node": "r", "nodes": 1, "limit": 1}, "nodes must be an integer >= 2"),
                      ({"node": "r", "nodes": 2, "limit": 0}, "limit must be an integer >= 1"),
                      ({"node": "r", "nodes": 2}, "expected")]:
        with pytest.raises(Malformed, match=why):
            approx.apply(g, [{"rule": "node-limited-routing", **decl}], "t")
    twice = [{"rule": "node-limited-routing", "node": "r", "nodes": 2, "limit": 1}] * 2
    with pytest.raises(Malformed, match="routing over all experts"):
        approx.apply(g, twice, "t")


def test_node_limited_moe_plan_verifies_only_under_the_declared_approximation(tmp_path, capsys):
    from examples.train.moe_routing_plan import make_case as moe_case
    from verifier.cli import main

    results = {}
    for approximate in (True, False):
        cap = plan.plan_case(moe_case(layers=1, micro_batches=1, approximate=approximate))
        path = tmp_path / f"case{approximate}.json"
        plan.write_case(cap.case, str(path))
        results[approximate] = main(["verify", str(path), "--emit-cert", str(tmp_path / "cert.json")])
        out = capsys.readouterr().out
        if not approximate:
            assert "first unrelated spec operator: 'route'" in out
    assert results == {True: 0, False: 1}
    cert = json.loads((tmp_path / "cert.json").read_text())
    assert [a["rule"] for a in cert["claims"][0]["approximations"]] == ["node-limited-routing"]
    [res] = replay(str(tmp_path / "cert.json"))
    assert res.ok and "node-limited-routing (nodes 2, limit 1)" in res.detail
    _schema_valid(cert)
    del cert["claims"][0]["approximations"]
    (tmp_path / "cert.json").write_text(json.dumps(cert))
    [res] = replay(str(tmp_path / "cert.json"))
    assert not res.ok
