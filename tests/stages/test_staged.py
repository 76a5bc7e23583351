"""Staged runs: reduced inference, one proof per class of identical stages, executors, certificates."""

import dataclasses
import json

import pytest

from certificates.replay import replay
from conftest import run_pvcert
from verifier import workloads
from verifier.case import Case
from verifier.certificate import write
from verifier.ir import GraphBuilder
from verifier.stages.certificate import staged_certificate
from verifier.stages.run import summary, verify_staged


def mlp_chain(layers: int = 3, world: int = 2, tokens: int = 4, dim: int = 8, hidden: int = 16,
              all_reduce: bool = True) -> Case:
    """``layers`` tensor-parallel MLPs in a row: every layer's stages are the first layer's, renamed."""
    s, g, ranks = GraphBuilder("mlp_chain", 1), GraphBuilder("tp_mlp_chain", world), range(world)
    s.input("X0", [tokens, dim], "activation")
    xs = [g.input(f"x0@r{r}", [tokens, dim], "activation", rank=r) for r in ranks]
    rel = {"X0": xs}
    for k in range(layers):
        s.input(f"W1_{k}", [hidden, dim], "parameter")
        s.input(f"W2_{k}", [dim, hidden], "parameter")
        s.node("aten.linear.default", [f"X{k}", f"W1_{k}"], f"H{k}")
        s.node("aten.gelu.default", [f"H{k}"], f"A{k}")
        s.node("aten.linear.default", [f"A{k}", f"W2_{k}"], f"X{k + 1}")
        for r in ranks:
            g.input(f"w1_{k}@r{r}", [hidden // world, dim], "parameter", rank=r)
            g.input(f"w2_{k}@r{r}", [dim, hidden // world], "parameter", rank=r)
            g.node("aten.linear.default", [f"x{k}@r{r}", f"w1_{k}@r{r}"], f"h{k}@r{r}", rank=r)
            g.node("aten.gelu.default", [f"h{k}@r{r}"], f"a{k}@r{r}", rank=r)
            g.node("aten.linear.default", [f"a{k}@r{r}", f"w2_{k}@r{r}"], f"p{k}@r{r}", rank=r)
        outs = [f"x{k + 1}@r{r}" for r in ranks]
        if all_reduce or k < layers - 1:
            g.node("_c10d_functional.all_reduce.default", [f"p{k}@r{r}" for r in ranks], outs,
                   group=list(ranks), reduce_op="sum", name=f"all_reduce_{k}")
        else:
            outs = [f"p{k}@r{r}" for r in ranks]
        rel[f"W1_{k}"] = [f"concat({', '.join(f'w1_{k}@r{r}' for r in ranks)}, dim=0)"]
        rel[f"W2_{k}"] = [f"concat({', '.join(f'w2_{k}@r{r}' for r in ranks)}, dim=1)"]
    s.output(f"X{layers}")
    g.output(*outs)
    return Case("tp_mlp_chain", s.build(), g.build(), rel, {f"X{layers}": outs})


def _replay(res, tmp_path) -> list:
    path = str(tmp_path / "staged.cert.json")
    write(staged_certificate(res), path)
    return replay(path)


def test_identical_layers_are_proved_once_and_replayed(tmp_path):
    seen = []
    res = verify_staged(mlp_chain(3), progress=lambda phase, k, n: seen.append((phase, k, n)))
    assert res.verified and not res.fallback
    # 3 layers x 3 operators + the expectations; layer 0's first matmul reads the replicated
    # input, layers 1 and 2 theirs the all-reduced copies and the partial sum (a partial sum
    # found first sends the step to the full search, which finds the copies too), so their
    # steps are alike; every axis is reduced (the contracted ones at two divisors), so the
    # last layer's steps are alike too: 5 classes, the rest matched
    assert len(res.stages) == 10 and res.classes == 5
    assert [s.rep for s in res.stages] == [0, 1, 2, 3, 1, 2, 3, 1, 2, 9]
    assert {p for p, _, _ in seen} == {"infer", "prove"} and seen[-1] == ("prove", 5, 5)
    [claim] = _replay(res, tmp_path)
    assert claim.ok and "10 stages, 5 proved, 5 matched" in claim.detail, claim.detail
    assert summary(res)["volume"][1] < summary(res)["volume"][0] / 1.4


def test_process_pool_gives_the_same_stages_and_verdicts():
    one, two = verify_staged(mlp_chain(2), jobs=1), verify_staged(mlp_chain(2), jobs=2)
    assert two.verified
    assert [(s.key, s.rep, [o.elements for o in s.outcomes]) for s in one.stages] == \
           [(s.key, s.rep, [o.elements for o in s.outcomes]) for s in two.stages]


def test_without_reduction_the_full_shapes_are_checked(tmp_path):
    res = verify_staged(workloads.tp_mlp(), reduce=False)
    assert res.verified and res.reduction is None
    [claim] = _replay(res, tmp_path)
    assert claim.ok, claim.detail


def test_a_bug_falls_back_to_the_sequential_engine_and_is_reported():
    res = verify_staged(mlp_chain(2, all_reduce=False))
    assert not res.verified and res.fallback and res.stages == []
    assert "expectation X2" in res.inference.failure.message
    with pytest.raises(ValueError):
        staged_certificate(res)


def test_checker_alone_accepts_the_certificate(tmp_path):
    path = tmp_path / "c.json"
    write(staged_certificate(verify_staged(mlp_chain(2))), str(path))
    r = run_pvcert("replay", str(path))
    assert r.returncode == 0 and "ACCEPT" in r.stdout, r.stdout + r.stderr
    assert json.loads(path.read_text())["claims"][0]["kind"] == "staged-refinement"


def test_dask_cluster_on_loopback():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=True) as cluster:
        res = verify_staged(mlp_chain(2), executor=cluster.scheduler_address.replace("tcp://", "dask://"))
    assert res.verified and res.classes == 5   # two layers: their steps alike
    with pytest.raises(ValueError, match="only dask"):
        verify_staged(mlp_chain(1), executor="ray://x")


@pytest.fixture(scope="module")
def gpt_case():
    pytest.importorskip("torch")
    from examples.cases import gpt_tp_sp
    from verifier.capture.case import capture_case
    return capture_case(gpt_tp_sp.make_case(1, 2))


def test_bundled_gpt_block_staged_and_replayed(gpt_case, tmp_path):
    res = verify_staged(gpt_case)
    assert res.verified and res.classes < len(res.stages)
    [claim] = _replay(res, tmp_path)
    assert claim.ok, claim.detail


@pytest.mark.slow
def test_gpt_block_at_four_times_the_sizes_keeps_its_mixed_axes(tmp_path):
    """Tokens and features are normalized by the layer norms (on sequence shards) and summed into their weight
    gradients: inference reduces them anyway, and each stage keeps them full where it mixes them (docs/stages.md)."""
    pytest.importorskip("torch")
    from examples.cases import gpt_tp_sp
    from examples.models.gpt import GPT
    from verifier.capture.case import capture_case
    s, d, heads, f = 8, 8, 2, 16
    c = dataclasses.replace(gpt_tp_sp.make_case(1, 2), name="gpt_x4", spec=lambda: GPT(1, d, heads, f),
                            impl=lambda rank, w: GPT(1, d, heads, f, w), inputs={"x": (s, d)},
                            impl_inputs={"x": (s // 2, d)})
    res = verify_staged(capture_case(c), jobs=2)
    assert res.verified and res.reduction.volume[1] < res.reduction.volume[0] and res.reduction.relaxed
    [claim] = _replay(res, tmp_path)
    assert claim.ok, claim.detail


def test_certificate_matches_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from referencing import Registry, Resource

    from conftest import ROOT
    schemas = [json.load(open(f"{ROOT}/certificates/schema/{n}-v1.json")) for n in ("graph", "certificate")]
    registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in schemas])
    jsonschema.Draft202012Validator(schemas[1], registry=registry).validate(
        staged_certificate(verify_staged(mlp_chain(2))))


def test_cli_staged_verify_and_replay(tmp_path):
    """`pvcert verify --staged --jobs 2 --emit-cert` on the bundled JSON case, then replay."""
    cert = tmp_path / "staged.json"
    r = run_pvcert("verify", "examples/tp_mlp/case.json", "--staged", "--jobs", "2", "--emit-cert", str(cert))
    assert r.returncode == 0 and "VERIFIED" in r.stdout and "stages in" in r.stdout, r.stdout + r.stderr
    r = run_pvcert("replay", str(cert))
    assert r.returncode == 0 and "staged-refinement" in r.stdout, r.stdout + r.stderr


def test_a_certificate_is_written_only_if_replayed_within_the_given_limit(tmp_path):
    """``pvcert verify --emit-cert`` replays the certificate before writing it, within the run's ``--timeout``
    (a TP8 GPTModel's replay takes longer than the replay's default 600 s)."""
    from certificates.errors import Rejected
    from certificates.limits import Limits

    cert, path = staged_certificate(verify_staged(mlp_chain(2))), tmp_path / "c.json"
    with pytest.raises(Rejected, match="not written.*time limit"):
        write(cert, str(path), Limits(seconds=1e-9))
    assert not path.exists() and not (tmp_path / "c.json.unchecked").exists()
    write(cert, str(path), Limits(seconds=60))
    assert replay(str(path))[0].ok
