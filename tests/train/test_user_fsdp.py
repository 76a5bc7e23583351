"""A user's own FSDP2 training step (examples/train/fsdp2_user.py): ``fully_shard`` per layer and on
the root, AdamW, world 2, against the same code at world 1. It verifies and replays with the
lineage derived from FSDP2's DTensor placements; each planted bug is REFUTED at the operator where
it shows, and its program put into the control's certificate is REJECTed by replay."""

from __future__ import annotations

import os
import sys

import pytest
import torch
import torch.distributed as dist

from certificates.limits import Limits
from verifier import certificate, direct
from verifier.capture.case import capture_case
from verifier.capture.convert import CaptureError
from verifier.capture.dist import fake_world
from verifier.capture.fsdp import functional_fsdp
from verifier.refine import infer
from verifier.train.user_fsdp import fsdp_case

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "soundness"))
import forge  # noqa: E402
import fsdp2_user as example  # noqa: E402

PARAMS = ("l1.weight", "l1.bias", "l2.weight", "l2.bias")


@pytest.fixture(scope="module")
def control():
    declared = example.make_case()
    case = capture_case(declared)
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message
    return declared, case, inf, certificate.per_operator_certificate(inf)


def test_user_fsdp_step_verifies_and_replays(control, tmp_path):
    declared, case, inf, cert = control
    assert set(declared.input_relation) == {"x", "y"} and set(declared.expect) == {"loss"}
    for p in PARAMS:   # the parameters' lineage comes from FSDP2's Shard(0) placements
        assert case.input_relation[p] == [f"concat({p}@r0, {p}@r1, dim=0)"]
        assert case.expect[f"new.{p}"] == [f"concat(new.{p}@r0, new.{p}@r1, dim=0)"]
    assert case.expect["loss"] == ["mean(loss@r0, loss@r1)"]
    collectives = [n for n in case.impl["nodes"] if "group" in n]
    assert {n["target"] for n in collectives} == {"_c10d_functional.all_gather_into_tensor.default",
                                                  "_c10d_functional.reduce_scatter_tensor.default"}
    assert {n["attrs"]["reduce_op"] for n in collectives if "reduce_scatter" in n["target"]} == {"avg"}
    assert not any("range" in t for t in case.spec["tensors"].values())
    ok, why = forge.verdict(cert, tmp_path)
    assert ok, why


def test_documented_commands(tmp_path):
    """``pvcert verify examples/train/fsdp2_user.py --emit-cert`` then ``pvcert replay`` (docs/training.md)."""
    from conftest import run_pvcert

    cert = tmp_path / "cert.json"
    v = run_pvcert("verify", "examples/train/fsdp2_user.py", "--emit-cert", str(cert), timeout=300)
    assert v.returncode == 0 and "VERIFIED fsdp2_user" in v.stdout, v.stdout + v.stderr
    r = run_pvcert("replay", str(cert), timeout=300)
    assert r.returncode == 0 and "ACCEPT" in r.stdout, r.stdout + r.stderr


BUG_AT = {"no_scale": "aten.sub.Tensor", "local_grads": "aten.sub.Tensor", "wrong_shard": "aten.addmm.default"}


@pytest.mark.parametrize("bug", sorted(example.BUGS))
def test_planted_bug_is_refuted_at_the_operator(bug, control, tmp_path):
    """A summed (not averaged) or local gradient stops at Adam's first moment update (``g - m``);
    a wrongly gathered parameter at the first layer's ``addmm``. Each is REFUTED by an executed
    run, and its program in the control's certificate is REJECTed."""
    case = capture_case(example.make_case(bug))
    inf = infer(case)
    assert not inf.verified and inf.failure.node is not None
    assert inf.failure.node.target == BUG_AT[bug]
    assert direct.refute(inf.prepared, 0, Limits()) is not None
    _, _, _, cert = control
    ok, why = forge.verdict(forge.embed(cert, case.spec, case.impl), tmp_path)
    assert not ok, why


def test_accumulated_micro_batches_verify():
    """FSDP2's accumulation (``set_requires_gradient_sync(False)`` but for the last micro-batch):
    the gradients are reduce-scattered once, after the last backward, and the step verifies."""
    case = capture_case(example.make_accumulate_case())
    collectives = [n["target"].split(".")[1] for n in case.impl["nodes"] if "group" in n]
    assert collectives.count("reduce_scatter_tensor") == len(PARAMS)
    assert collectives.count("all_gather_into_tensor") == 4 * len(PARAMS)   # forward and backward, 2 micro-batches
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message


def test_world_independent_mistakes_are_in_the_spec_too():
    """The spec is the user's own step at world size 1: a mistake that does not depend on the world
    size (the optimizer stepping before ``backward``) is in both, and the claim (the distributed
    step equals the single-device one) holds."""
    def early(model, opt, x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.step()
        loss.backward()
        return loss.detach()

    case = capture_case(fsdp_case("early_step", example.build, example.adamw, early, 2,
                                  {"x": (4, 4), "y": (4, 2)}))
    assert infer(case).verified


def test_unsupported_sharding_is_refused():
    """A parameter sharded on another dim than 0 is refused by name, never captured approximately."""
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import Shard

    with fake_world(0, 2):
        model = example.MLP()
        fully_shard(model, shard_placement_fn=lambda p: Shard(1) if p.dim() == 2 else None)
        with pytest.raises(CaptureError, match="sharded on dim 1"):
            with functional_fsdp(model):
                pass


def test_premul_sum_is_a_scaled_sum():
    """FSDP2's custom divide factor (``PREMUL_SUM(f)``) is captured as ``f * x`` summed."""
    from verifier.capture.dist import _premul

    x = torch.arange(4.0)
    value, op = _premul(x, dist._make_nccl_premul_sum(0.25))
    assert op == dist.ReduceOp.SUM and torch.equal(value, x * 0.25)
    value, op = _premul(x, dist.ReduceOp.AVG)
    assert op == dist.ReduceOp.AVG and value is x


def _real_fsdp(rank: int, world: int, init: str, data: dict, bugs: list, out) -> None:
    """Rank ``rank`` of the user's program run for real (gloo), per variant: its new shards and loss."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))
    import fsdp2_user

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    for bug in bugs:
        torch.manual_seed(0)
        model = fsdp2_user.build(None if bug == "accumulate" else bug)
        step, dim = (fsdp2_user.accumulate_step, 1) if bug == "accumulate" else (fsdp2_user.train_step, 0)
        x, y = (data[k + ("m" if bug == "accumulate" else "")].chunk(world, dim)[rank] for k in "xy")
        loss = step(model, fsdp2_user.adamw(model.parameters()), x, y)
        out.put((bug, rank, {k: p.to_local().detach().double().numpy().copy() for k, p in model.named_parameters()},
                 loss.item()))   # numpy: pickled by value (a tensor would be shared with an exiting process)
    dist.destroy_process_group()


@pytest.mark.slow
def test_captured_graphs_compute_what_fsdp2_computes(tmp_path):
    """The captured graphs (the functional FSDP2 of verifier/capture/fsdp.py), run by the checker's
    semantics, give the new shards and losses that FSDP2 itself gives on 2 gloo processes, and the
    spec what it gives on 1, for the control, the planted bugs and the accumulated micro-batches
    (float32 runs: 1e-6)."""
    import numpy as np
    import torch.multiprocessing as mp

    from certificates.graph import evaluate, parse_graph

    torch.manual_seed(0)
    full = {k: p.detach().clone() for k, p in example.MLP().named_parameters()}
    data = {"x": torch.randn(4, 4), "y": torch.randn(4, 2), "xm": torch.randn(2, 4, 4), "ym": torch.randn(2, 4, 2)}
    bugs = [None, "local_grads", "wrong_shard", "accumulate"]   # gloo has no PREMUL_SUM (no_scale)
    ctx, results = mp.get_context("spawn"), {}
    for world in (2, 1):
        q = ctx.Queue()
        procs = [ctx.Process(target=_real_fsdp, args=(r, world, f"file://{tmp_path}/init{world}", data,
                                                      bugs if world == 2 else [None, "accumulate"], q))
                 for r in range(world)]
        for p in procs:
            p.start()
        for _ in range(world * (len(bugs) if world == 2 else 2)):
            bug, rank, params, loss = q.get(timeout=120)
            results[world, bug, rank] = params, loss
        for p in procs:
            p.join(timeout=60)
    cases = {bug: capture_case(example.make_accumulate_case() if bug == "accumulate" else example.make_case(bug))
             for bug in bugs}
    for (world, bug, rank), (params, loss) in results.items():
        case = cases[bug]
        graph, at = (case.impl, f"@r{rank}") if world == 2 else (case.spec, "")
        batch = {k: data[k + "m"] if bug == "accumulate" else data[k] for k in "xy"}
        dims = {**{k: 0 for k in full}, **{k: 1 if bug == "accumulate" else 0 for k in batch}}
        env = {k + (f"@r{r}" if world == 2 else ""): v.chunk(world, dims[k])[r].double().numpy()
               for k, v in {**full, **batch}.items() for r in range(world)}
        vals = evaluate(parse_graph(graph, "captured"), env, symbolic=False)
        for k, v in params.items():
            assert np.allclose(vals[f"new.{k}{at}"], v, atol=1e-6), (world, bug, k)
        assert abs(float(vals[f"loss{at}"]) - loss) < 1e-6, (world, bug)
