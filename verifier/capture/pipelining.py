"""``torch.distributed.pipelining`` under capture: the schedules' warm-up vote decided locally.

A schedule's first ``step`` runs a vote (``_PipelineSchedule._warmup_p2p``): the stages pass the
product of their "my tensor metadata is static" flags down the pipeline and back with
``dist.send``/``dist.recv``, and every rank branches on ``result.item()``. Under capture the
received value is symbolic (``.item()`` is data-dependent, refused), and under the fake backend no
value arrives at all, so the vote would fall to dynamic inference, which exchanges pickled
metadata (``recv_object_list``).

``static_vote()`` replaces the vote while active: a rank whose ``PipelineStage``s all carry
complete static metadata (``input_args``/``output_args``) takes STATIC without communicating, and
a stage that would vote dynamic is refused. Every rank is captured under this rule, so a capture
that succeeds had every stage vote static: the real vote's product is STATIC as well, and the
captured program is the one that runs. The vote carries no tensor the step computes with.
"""

from __future__ import annotations

import contextlib

from .convert import CaptureError


@contextlib.contextmanager
def static_vote():
    """Decide the pipelining schedules' warm-up vote without communication (module docstring)."""
    from torch.distributed.pipelining import schedules
    from torch.distributed.pipelining._utils import InferenceMode
    from torch.distributed.pipelining.stage import PipelineStage

    original = schedules._PipelineSchedule._warmup_p2p

    def vote(self, stages, has_backward: bool, p2p_done: bool) -> None:
        if not all(isinstance(s, PipelineStage) for s in stages):   # no vote: neighbour warm-up only
            return original(self, stages, has_backward, p2p_done)
        for s in stages:
            if InferenceMode.needs_dynamic(s._user_meta, has_backward):
                raise CaptureError(f"torch.distributed.pipelining: stage {s.stage_index} infers its tensor "
                                   "metadata at run time (pickled objects over recv_object_list, which capture "
                                   "cannot carry): give PipelineStage input_args and output_args")
            s._inference_mode = InferenceMode.STATIC

    schedules._PipelineSchedule._warmup_p2p = vote
    try:
        yield
    finally:
        schedules._PipelineSchedule._warmup_p2p = original
