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


def test_parameter_changed_before_backward_is_refused():
    """FSDP2 refills the storage a pending backward's saved tensors read; a shard changed between
    a forward and its backward (in place, or by an optimizer step) would mix values: refused."""
    def changed(model, opt, x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        with torch.no_grad():
            model.l1.weight.mul_(2.0)
        loss.backward()
        return loss.detach()

    def stepped(model, opt, x, y):   # an optimizer step between the second forward and its backward
        torch.nn.functional.mse_loss(model(x[0]), y[0]).backward()
        second = torch.nn.functional.mse_loss(model(x[1]), y[1])
        opt.step()
        loss = second + torch.nn.functional.mse_loss(model(x[1]), y[1])
        loss.backward()
        return loss.detach()

    for step, batch in ((changed, {"x": (4, 4), "y": (4, 2)}), (stepped, {"x": (2, 4, 4), "y": (2, 4, 2)})):
        with pytest.raises(Exception, match="changed between a forward and its backward"):
            capture_case(fsdp_case("changed", example.build, example.adamw, step, 2, batch,
                                   batch_dim=len(batch["x"]) - 2))


def test_premul_sum_is_a_scaled_sum():
    """FSDP2's custom divide factor (``PREMUL_SUM(f)``) is captured as ``f * x`` summed."""
    from verifier.capture.dist import _premul

    x = torch.arange(4.0)
    value, op = _premul(x, dist._make_nccl_premul_sum(0.25))
    assert op == dist.ReduceOp.SUM and torch.equal(value, x * 0.25)
    value, op = _premul(x, dist.ReduceOp.AVG)
    assert op == dist.ReduceOp.AVG and value is x


def _two_steps(model, opt, x, y):
    """Two optimizer steps in one call, one micro-batch each: the second forward gathers the
    updated shards."""
    for m in range(x.shape[0]):
        loss = torch.nn.functional.mse_loss(model(x[m]), y[m])
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.detach()


def _variant(name: str | None):
    """``(bug planted in build, step, micro-batched)`` of a variant of the user's program."""
    return {"accumulate": (None, example.accumulate_step, True), "two_steps": (None, _two_steps, True)}.get(
        name, (name, example.train_step, False))


def _real_fsdp(rank: int, world: int, init: str, data: dict, variants: list, out) -> None:
    """Rank ``rank`` of the user's program run for real (gloo), per variant: its new shards and loss."""
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    for name in variants:
        bug, step, micro = _variant(name)
        torch.manual_seed(0)
        model = example.build(bug)
        x, y = (data[k + "m" * micro].chunk(world, int(micro))[rank] for k in "xy")
        loss = step(model, example.adamw(model.parameters()), x, y)
        out.put((name, rank, {k: p.to_local().detach().double().numpy().copy() for k, p in model.named_parameters()},
                 loss.item()))   # numpy: pickled by value (a tensor would be shared with an exiting process)
    dist.destroy_process_group()


@pytest.mark.slow
def test_captured_graphs_compute_what_fsdp2_computes(tmp_path):
    """The captured graphs (the functional FSDP2 of verifier/capture/fsdp.py), run by the checker's
    semantics, give the new shards and losses that FSDP2 itself gives on 2 gloo processes, and the
    spec what it gives on 1, for the control, the planted bugs, the accumulated micro-batches and
    two steps in one call (float32 runs: 1e-6)."""
    import numpy as np
    import torch.multiprocessing as mp

    from certificates.graph import evaluate, parse_graph

    torch.manual_seed(0)
    full = {k: p.detach().clone() for k, p in example.MLP().named_parameters()}
    data = {"x": torch.randn(4, 4), "y": torch.randn(4, 2), "xm": torch.randn(2, 4, 4), "ym": torch.randn(2, 4, 2)}
    variants = {2: [None, "local_grads", "wrong_shard", "accumulate", "two_steps"],   # gloo has no PREMUL_SUM
                1: [None, "accumulate", "two_steps"]}
    ctx, results = mp.get_context("spawn"), {}
    for world, names in variants.items():
        q = ctx.Queue()
        procs = [ctx.Process(target=_real_fsdp, args=(r, world, f"file://{tmp_path}/init{world}", data, names, q))
                 for r in range(world)]
        for p in procs:
            p.start()
        for _ in range(world * len(names)):
            name, rank, params, loss = q.get(timeout=120)
            results[world, name, rank] = params, loss
        for p in procs:
            p.join(timeout=60)
    cases = {}
    for name in variants[2]:
        bug, step, micro = _variant(name)
        batch = {"x": (2, 4, 4), "y": (2, 4, 2)} if micro else {"x": (4, 4), "y": (4, 2)}
        cases[name] = capture_case(fsdp_case(str(name), lambda bug=bug: example.build(bug), example.adamw, step, 2,
                                             batch, batch_dim=int(micro)))
    for (world, name, rank), (params, loss) in results.items():
        case, micro = cases[name], _variant(name)[2]
        graph, at = (case.impl, f"@r{rank}") if world == 2 else (case.spec, "")
        env = {k + (f"@r{r}" if world == 2 else ""): v.chunk(world, int(micro and k in "xy"))[r].double().numpy()
               for k, v in {**full, **{k: data[k + "m" * micro] for k in "xy"}}.items() for r in range(world)}
        vals = evaluate(parse_graph(graph, "captured"), env, symbolic=False)
        for k, v in params.items():
            assert np.allclose(vals[f"new.{k}{at}"], v, atol=1e-6), (world, name, k)
        assert abs(float(vals[f"loss{at}"]) - loss) < 1e-6, (world, name)
