"""A user's own 2-stage pipeline step, 1F1B over 4 micro-batches: through
``torch.distributed.pipelining`` (examples/train/pipeline_user.py) and hand-written with
``batch_isend_irecv`` (examples/train/pipeline_1f1b_user.py). Both verify and replay; each planted
bug is declined at the operator where it shows (REFUTED by an executed run) or refused at capture
with its reason, and its program put into the control's certificate is REJECTed by replay."""

from __future__ import annotations

import os
import sys

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

from certificates.errors import Malformed
from certificates.limits import Limits
from verifier import certificate, direct
from verifier.capture.api import capture_spmd
from verifier.capture.case import capture_case
from verifier.capture.convert import CaptureError
from verifier.capture.pipelining import static_vote
from verifier.refine import infer
from verifier.train.user_pipeline import pipeline_case

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "train"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "soundness"))
import forge  # noqa: E402
import pipeline_1f1b_user as by_hand  # noqa: E402
import pipeline_user as library  # noqa: E402

EXAMPLES = {"library": library, "by_hand": by_hand}


@pytest.fixture(scope="module")
def controls():
    out = {}
    for kind, ex in EXAMPLES.items():
        case = capture_case(ex.make_case())
        inf = infer(case)
        assert inf.verified, inf.failure and inf.failure.message
        out[kind] = case, certificate.per_operator_certificate(inf)
    return out


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_pipeline_step_verifies_and_replays(kind, controls, tmp_path):
    """Lineage derived from the stages' parameter names; 4 activations forward, 4 gradients back."""
    case, cert = controls[kind]
    assert case.input_relation == {"l1.weight": ["l1.weight@r0"], "l1.bias": ["l1.bias@r0"],
                                   "l2.weight": ["l2.weight@r1"], "l2.bias": ["l2.bias@r1"],
                                   "x": ["x@r0"], "y": ["y@r1"]}
    assert case.expect["new.l2.weight"] == ["new.l2.weight@r1"] and case.expect["loss"] == ["loss@r1"]
    p2p = [n["group"] for n in case.impl["nodes"] if n["target"] == "c10d.send_recv.default"]
    assert sorted(p2p) == [[0, 1]] * 4 + [[1, 0]] * 4
    ok, why = forge.verdict(cert, tmp_path)
    assert ok, why


def test_gpipe_schedule_verifies():
    """The same step with ``ScheduleGPipe`` (all forwards, then all backwards)."""
    def step(model, opt, x=None, y=None):
        return library.train_step(model, opt, x, y, schedule_class=ScheduleGPipe)

    case = capture_case(pipeline_case("gpipe_user", library.stage_model, library.sgd, step, 2,
                                      {"x": (8, 4), "y": (8, 2)}))
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message
    assert sum(n["target"] == "c10d.send_recv.default" for n in case.impl["nodes"]) == 8


class _Deep(nn.Module):
    """Layers ``layers.<i>`` (Linear + tanh); a stage keeps its own layer, the spec all four."""

    def __init__(self, layers) -> None:
        super().__init__()
        self.layers = nn.ModuleDict({str(i): nn.Linear(3, 3) for i in layers})

    def forward(self, x):
        for layer in self.layers.values():
            x = torch.tanh(layer(x))
        return x


def _deep_step(model, opt, x=None, y=None):
    rank, world = dist.get_rank(), dist.get_world_size()
    first, last = rank == 0, rank == world - 1
    stage = PipelineStage(model, rank, world, torch.device("cpu"),
                          input_args=torch.empty(2, 3, requires_grad=not first),
                          output_args=torch.empty(2, 3, requires_grad=True))
    losses: list[torch.Tensor] = []
    opt.zero_grad()
    Schedule1F1B(stage, n_microbatches=4, loss_fn=torch.nn.functional.mse_loss).step(
        *([x] if first else []), target=y if last else None, losses=losses if last else None)
    opt.step()
    return torch.stack(losses).mean() if last else None


def test_four_stage_schedule_verifies():
    """Middle stages receive and send both ways; the lineage follows ``layers.<i>`` to rank i."""
    case = capture_case(pipeline_case("deep", lambda r, w: _Deep(range(4) if w == 1 else [r]), library.sgd,
                                      _deep_step, 4, {"x": (8, 3), "y": (8, 3)}))
    assert case.expect["new.layers.2.weight"] == ["new.layers.2.weight@r2"] and case.expect["loss"] == ["loss@r3"]
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message


def test_first_step_needs_no_zero_grad():
    """A first step has no gradients yet: without ``opt.zero_grad()`` it verifies too (capture's
    probe run used to leave gradients on the parameters, read as tensor constants)."""
    def step(model, opt, x=None, y=None):
        losses = []
        rank, world = dist.get_rank(), dist.get_world_size()
        stage = PipelineStage(model, rank, world, torch.device("cpu"),
                              input_args=torch.empty(2, 4 if rank == 0 else 3, requires_grad=rank > 0),
                              output_args=torch.empty(2, 2 if rank == world - 1 else 3, requires_grad=True))
        Schedule1F1B(stage, n_microbatches=4, loss_fn=torch.nn.functional.mse_loss).step(
            *([x] if rank == 0 else []), target=y, losses=losses if y is not None else None)
        opt.step()
        return torch.stack(losses).mean() if losses else None

    inf = infer(capture_case(pipeline_case("no_zero_grad", library.stage_model, library.sgd, step, 2,
                                           {"x": (8, 4), "y": (8, 2)})))
    assert inf.verified, inf.failure and inf.failure.message


BUG_AT = {("library", "scale"): "aten.add.Tensor", ("library", "stale"): "aten.mm.default",
          ("by_hand", "order"): "aten.mse_loss.default", ("by_hand", "lifo"): "aten.mul.Tensor",
          ("by_hand", "drop"): "aten.mm.default",
          ("by_hand", "scale"): "aten.add.Tensor", ("by_hand", "stale"): "aten.add.Tensor"}


@pytest.mark.parametrize("kind,bug", sorted(BUG_AT))
def test_planted_bug_is_refuted_at_the_operator(kind, bug, controls, tmp_path):
    case = capture_case(EXAMPLES[kind].make_case(bug))
    inf = infer(case)
    assert not inf.verified and inf.failure.node is not None
    assert inf.failure.node.target == BUG_AT[(kind, bug)]
    assert direct.refute(inf.prepared, 0, Limits()) is not None
    ok, why = forge.verdict(forge.embed(controls[kind][1], case.spec, case.impl), tmp_path)
    assert not ok, why


def test_send_to_itself_is_refused():
    """The wrong peer (stage 0 sends its activations to itself) is refused at capture, with the line."""
    with pytest.raises(Malformed, match="a send names the rank itself as its peer"):
        capture_case(by_hand.make_case("peer"))
    assert set(BUG_AT) | {("by_hand", "peer")} == {(k, b) for k, ex in EXAMPLES.items() for b in ex.BUGS}


class _Stage(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(2, 2))

    def forward(self, x):
        return x @ self.w


def _lonely_send(rank, world):
    def call(mod, x):
        if rank == 0:
            dist.isend(x @ mod.w, dst=1).wait()
        return x * 1
    return _Stage(), call


def test_unreceived_send_is_reported():
    with pytest.raises(CaptureError, match="rank 0 sends to rank 1 .* a message that rank never receives"):
        capture_spmd("lonely", _lonely_send, 2, {"x": (2, 2)})


def _dynamic_stage(rank, world):
    def call(mod, x):
        stage = PipelineStage(mod, rank, world, torch.device("cpu"))   # no input_args / output_args
        with torch.enable_grad():
            Schedule1F1B(stage, n_microbatches=2, loss_fn=torch.nn.functional.mse_loss).step(
                *([x] if rank == 0 else []), target=x if rank == 1 else None)
        return x * 1
    return _Stage(), call


def test_pipelining_dynamic_metadata_is_refused():
    """Without static shapes the schedule would exchange pickled metadata: refused with the fix."""
    with static_vote(), pytest.raises(CaptureError, match="stage 0 infers its tensor metadata at run time"):
        capture_spmd("dynamic", _dynamic_stage, 2, {"x": (4, 2)})


def test_stages_must_partition_the_model():
    def renamed(rank, world):
        model = library.stage_model(rank, world)
        if world > 1 and rank == 1:
            model.head, model.l2 = model.l2, None
        return model

    with pytest.raises(ValueError, match=r"stage 1 holds \['head.bias', 'head.weight'\]"):
        pipeline_case("bad", renamed, library.sgd, library.train_step, 2, {"x": (8, 4), "y": (8, 2)})
    with pytest.raises(ValueError, match="no stage holds"):
        pipeline_case("bad", lambda r, w: library.stage_model(0, w), library.sgd, library.train_step, 2,
                      {"x": (8, 4), "y": (8, 2)})


def test_interleaved_schedule_verifies_and_its_bug_is_refuted(tmp_path):
    """``ScheduleInterleaved1F1B``: 4 virtual stages on 2 ranks (each rank's two stages read the
    tensors they isend before the wait); a stage module holding the whole model is REFUTED."""
    import pipeline_interleaved_user as interleaved

    inf = infer(capture_case(interleaved.make_case()))
    assert inf.verified, inf.failure and inf.failure.message
    ok, why = forge.verdict(certificate.per_operator_certificate(inf), tmp_path)
    assert ok, why
    bug = capture_case(interleaved.make_case("whole_model_chunks"))
    assert not infer(bug).verified
    assert direct.refute(direct.prepare(bug, Limits()), 0, Limits()) is not None


def test_interleaved_zero_bubble_schedule_verifies():
    """``ScheduleInterleavedZeroBubble`` splits each backward into input and weight gradients and
    detaches the stage output it has sent (autograd metadata: allowed before the send's wait)."""
    import pipeline_interleaved_user as interleaved
    from torch.distributed.pipelining import ScheduleInterleavedZeroBubble

    inf = infer(capture_case(interleaved.make_case(schedule_class=ScheduleInterleavedZeroBubble)))
    assert inf.verified, inf.failure and inf.failure.message


def _real_interleaved(rank: int, world: int, init: str, data: dict, start: dict, bug, out) -> None:
    """Rank ``rank`` of the interleaved example run for real (gloo): its updated parameters."""
    import pipeline_interleaved_user as interleaved

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    model = interleaved.stage_model(rank, world)
    model.load_state_dict({k: v for k, v in start.items() if k in dict(model.named_parameters())}, strict=False)
    interleaved.train_step(model, interleaved.sgd(list(model.parameters())), data["x"] if rank == 0 else None,
                           data["y"] if rank == world - 1 else None, bug)
    out.put({k: p.detach().double().numpy().copy() for k, p in model.named_parameters()})
    dist.destroy_process_group()


@pytest.mark.slow
def test_interleaved_verdicts_match_a_real_run(tmp_path):
    """On 2 gloo processes the interleaved step updates every parameter exactly as the spec's step does
    (VERIFIED), and the planted bug does not (REFUTED)."""
    import numpy as np
    import torch.multiprocessing as mp

    import pipeline_interleaved_user as interleaved

    torch.manual_seed(0)
    data = {"x": torch.randn(8, 3), "y": torch.randn(8, 3)}
    full = interleaved.Net()
    start = {k: p.detach().clone() for k, p in full.named_parameters()}
    interleaved.spec_step(full, interleaved.sgd(list(full.parameters())), data["x"], data["y"])
    ctx = mp.get_context("spawn")
    for bug in (None, "whole_model_chunks"):
        q = ctx.Queue()
        procs = [ctx.Process(target=_real_interleaved, args=(r, 2, f"file://{tmp_path}/init{bug}", data, start, bug, q))
                 for r in range(2)]
        for p in procs:
            p.start()
        got = {k: v for _ in range(2) for k, v in q.get(timeout=120).items()}
        for p in procs:
            p.join(timeout=60)
        same = all(np.allclose(got[k], p.detach().double().numpy(), atol=1e-6) for k, p in full.named_parameters())
        assert same == (bug is None), bug


@pytest.mark.parametrize("bug", [None, "no_dp_allreduce"])
def test_pipeline_times_data_parallel(bug, tmp_path):
    """2 stages x 2 replicas (a row-major (dp, pp) mesh): the spec's micro-batch m is every replica's
    micro-batch m; VERIFIED and replayed, and the missing gradient average REFUTED."""
    import pipeline_dp_user as pdp

    if bug is None:   # averaging over the pipeline group: its members' gradients differ in shape
        with pytest.raises(Malformed, match="group members disagree on shape"):
            capture_case(pdp.make_case("wrong_group"))
    case = capture_case(pdp.make_case(bug))
    assert case.input_relation["l1.weight"] == ["l1.weight@r0", "l1.weight@r2"]
    assert case.expect["loss"] == ["mean(loss@r1, loss@r3)"]
    inf = infer(case)
    if bug is None:
        assert inf.verified, inf.failure and inf.failure.message
        ok, why = forge.verdict(certificate.per_operator_certificate(inf), tmp_path)
        assert ok, why
    else:
        assert not inf.verified
        assert direct.refute(direct.prepare(case, Limits()), 0, Limits()) is not None
