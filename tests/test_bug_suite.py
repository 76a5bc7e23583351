"""Real-world bug classes (ENTANGLE appendix A) as pairs of real PyTorch programs.

Each ``examples/bugs/<name>.py`` holds a sequential model, its distributed version and
``make_case(buggy)``. The correct version must be verified by the per-operator engine
with a certificate that replays; the buggy version must be rejected at the operator
where the bug first shows (or at the expectation, for the bugs that are a mismatch with
what the user expects), with a report that names the tensors involved.

The tests at the end check other natural formulations of the same models, which once
exposed limitations of the engine.
"""

import functools
import importlib
import os
import sys

import pytest

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # the bug programs are imported as examples.bugs.<name>
    sys.path.insert(0, ROOT)

from certificates.replay import replay  # noqa: E402
from verifier import certificate  # noqa: E402
from verifier.capture.case import capture_case  # noqa: E402
from verifier.refine import infer, report  # noqa: E402

# name -> where the buggy version must fail:
#   target:  the failing spec operator's target (None: the expectation fails)
#   inputs:  spec tensors among the failing operator's inputs
#   expect:  the spec output whose expectation fails
#   mentions: fragments the text report must contain
BUGS = {
    # 1: the RoPE backward's mul with the table rows of offset 0 (not the forward's slices)
    "rope_sp": dict(target="aten.mul.Tensor", inputs=["d_out"],
                    mentions=["slice_1 = concat(slice_1@r0, slice_1@r1, dim=0)", "cos@r1",
                              "mul_2@r1: aten.mul.Tensor [rank 1] (d_out@r1[2, 2], slice_5@r1[2, 2])"]),
    # 2: the loss, W times the spec's: every gradient is related by a scale (docs/clean-expressions.md)
    "moe_aux_loss_tp": dict(target=None, expect="aux_loss",
                            mentions=["1 vs 2", "grad.w_in = mean(grad.w_in@r0, grad.w_in@r1)"]),
    # 3: the query projection, the first operator that reads the gathered, wrongly sliced sequence
    "pad_slice_gather": dict(target="aten.mm.default", inputs=["x"],
                             mentions=["aten.constant_pad_nd.default", "_c10d_functional.all_gather_into_tensor",
                                       "slice_1@r0: aten.slice.Tensor"]),
    # 4: the first expert matmul x @ w1[0], whose weight is sharded
    "moe_sp_sharded_experts": dict(target="aten.mm.default", inputs=["x"],
                                   mentions=["select = concat(select@r0, select@r1, dim=1)",
                                             "x = concat(x@r0, x@r1, dim=0)"]),
    # 5: expectation: every rank should hold the layernorm weight gradient; found a partial sum
    "sp_layernorm_grad": dict(target=None, expect="grad.ln.weight",
                              mentions=["grad.ln.weight = sum(grad.ln.weight@r0, grad.ln.weight@r1)",
                                        "grad.ln.bias = grad.ln.bias@r0"]),
    # 6: the loss division: the mean of micro-batch means is no clean expression of the batch mean
    "grad_accum_mean": dict(target="aten.div.Tensor", outputs=["loss"],
                            mentions=["_c10d_functional.all_reduce", "loss@r0: aten.div.Tensor"]),
    # 7: the column-parallel matmul after the row-parallel linear left as a partial sum
    "row_parallel_config": dict(target="aten.mm.default", outputs=["out"],
                                mentions=["mm_1 = sum(mm_1@r0, mm_1@r1)", "t_2 = concat(t_2@r0, t_2@r1, dim=1)",
                                          "out@r1: aten.mm.default [rank 1]"]),
    # 8: expectation: every rank should hold the router weight gradient; found a partial sum
    "moe_router_grad_tp_sp": dict(target=None, expect="grad.router",
                                  mentions=["grad.router = sum(grad.router@r0, grad.router@r1)"]),
}


@functools.lru_cache(maxsize=None)
def inferred(name: str, buggy: bool, **kw):
    mod = importlib.import_module(f"examples.bugs.{name}")
    case = capture_case(mod.make_case(buggy, **kw))
    return case, infer(case)


@pytest.mark.parametrize("name", sorted(BUGS))
def test_correct_version_verified_with_certificate(name, tmp_path):
    case, inf = inferred(name, False)
    msg = inf.failure and report.text(inf.failure, inf.prepared.impl)
    assert inf.verified, msg
    assert len(inf.steps) == len(inf.prepared.spec.nodes)
    path = tmp_path / f"{name}.json"
    certificate.write(certificate.per_operator_certificate(inf), str(path))
    results = replay(str(path))
    assert results and all(r.ok for r in results), [r.detail for r in results]


@pytest.mark.parametrize("name", sorted(BUGS))
def test_buggy_version_rejected_at_the_bug(name):
    want = BUGS[name]
    _, inf = inferred(name, True)
    assert not inf.verified
    f = inf.failure
    text = report.text(f, inf.prepared.impl)
    if want["target"] is None:
        assert f.node is None and "expectation" in f.message, text
        assert f.message.startswith(f"expectation {want['expect']} = "), text
        assert "impl fails" not in f.message
    else:
        assert f.node is not None, text
        assert f.node.target == want["target"], text
        assert f"first unrelated spec operator: '{f.node.name}' {want['target']}" in text
        for t in want.get("inputs", []):
            assert t in f.node.inputs, text
        if "outputs" in want:
            assert f.node.outputs == want["outputs"], text
        assert f.explored, text
    for frag in want["mentions"]:
        assert frag in text, (frag, text)


def test_expectation_bugs_relate_the_full_gradient_when_fixed():
    """Bugs 5 and 8 fixed: every rank holds the gradient (the all-reduce is in the graph)."""
    _, ln = inferred("sp_layernorm_grad", False)
    assert "grad.ln.weight@r1" in [str(e) for e in ln.relation["grad.ln.weight"]]
    _, moe = inferred("moe_router_grad_tp_sp", False)
    assert "grad.router@r1" in [str(e) for e in moe.relation["grad.router"]]


def test_bugs_are_real():
    """Each pair differs in its implementation only: the same spec graph; other impl nodes
    or, for the sharded experts (bug 4), the same nodes on other weight shapes."""
    for name in sorted(BUGS):
        good, _ = inferred(name, False)
        bad, _ = inferred(name, True)
        assert good.spec["nodes"] == bad.spec["nodes"], name
        assert {k: v for k, v in good.impl.items() if k != "name"} != \
            {k: v for k, v in bad.impl.items() if k != "name"}, name


# --- other natural formulations of the same models, which once exposed engine limitations:
# slices of broadcast tensors as relations, 0-dim tensors with several relations, and
# concatenations of uneven shards (all fixed; these keep them fixed) ---


def test_aux_loss_with_mean_reductions_located_at_the_bug():
    _, inf = inferred("moe_aux_loss_tp", True, reductions="mean")
    assert not inf.verified and inf.failure.node is None
    assert inf.failure.message.startswith("expectation aux_loss = ")


def test_grad_accum_with_sum_reductions_verified():
    _, inf = inferred("grad_accum_mean", False, reductions="sum")
    assert inf.verified


def test_grad_accum_with_scalar_loss_verified():
    _, inf = inferred("grad_accum_mean", False, reductions="scalar")
    assert inf.verified


def test_pad_slice_with_local_queries_of_uneven_shards_verified():
    _, inf = inferred("pad_slice_gather", False, queries="local")
    assert inf.verified
