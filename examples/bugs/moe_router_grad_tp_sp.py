"""Bug class 8 (ENTANGLE appendix A, bug 8): the MoE router's weight gradient is not
all-reduced when tensor and sequence parallelism are both enabled.

Model: a mixture of experts with a softmax router on tokens ``x [S, D]``:
``gates = softmax(x @ wr^T)``, expert ``e`` computes ``gelu(x @ w1[e]^T) @ w2[e]^T``, the
output is ``sum_e gates[:, e] * expert_e(x)`` (dense gating: every expert weighted).

Tensor + sequence parallel (world W, Megatron style): every rank holds ``S/W`` tokens;
the experts are tensor-parallel (``all_gather`` of the sequence, ``w1`` column-parallel,
``w2`` row-parallel, ``reduce_scatter`` back to the sequence shard); the router is
replicated and runs on the rank's own tokens, so each rank's router gradient covers only
its tokens. Parameters used on sequence shards are registered for a gradient all-reduce
over the TP group when gradients are finalized; here that registration is a custom
autograd Function on the parameter (identity forward, all_reduce backward).

Bug (Megatron-LM: the router weight not marked as sequence-parallel with TP+SP): the
router's gradient is not all-reduced. The computation is still correct and pvcert finds
``grad.router = sum(grad.router@r0, grad.router@r1)``, but the user expects every rank
to hold the full router gradient, as the optimizer of a replicated parameter assumes: the
expectation fails and the report shows the partial sum found instead.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from verifier.train.mappings import copy_to_tp, gather_from_sp, reduce_scatter_to_sp
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard

S, D, H, E, W = 4, 2, 4, 2, 2     # tokens, model dim, expert hidden dim, experts, ranks


class MoE(nn.Module):
    def __init__(self, d: int, hidden: int, experts: int):
        super().__init__()
        self.router = nn.Parameter(torch.randn(experts, d) * 0.5)
        self.w1 = nn.Parameter(torch.randn(experts, hidden, d) * 0.5)
        self.w2 = nn.Parameter(torch.randn(experts, d, hidden) * 0.5)

    def expert(self, x, e):
        return F.linear(F.gelu(F.linear(x, self.w1[e])), self.w2[e])

    def route(self, x):
        return torch.softmax(F.linear(x, self.router), dim=-1)

    def forward(self, x):
        gates = self.route(x)
        out = 0
        for e in range(self.w1.shape[0]):
            out = out + gates[:, e:e + 1] * self.expert(x, e)
        return out


class TPSPMoE(MoE):
    def __init__(self, d: int, hidden: int, experts: int, world: int, buggy: bool = False):
        super().__init__(d, hidden // world, experts)
        self.buggy = buggy

    def expert(self, x, e):
        h = F.gelu(F.linear(gather_from_sp(x), self.w1[e]))      # column-parallel on all tokens
        return reduce_scatter_to_sp(F.linear(h, self.w2[e]))      # row-parallel, back to the shard

    def route(self, x):
        router = self.router if self.buggy else copy_to_tp(self.router)   # bug: grad not all-reduced
        return torch.softmax(F.linear(x, router), dim=-1)


def make_case(buggy: bool = False) -> CaptureCase:
    return CaptureCase(
        name="moe_router_grad_tp_sp" + ("_buggy" if buggy else ""),
        spec=lambda: MoE(D, H, E),
        impl=lambda rank, world: TPSPMoE(D, H, E, world, buggy),
        world_size=W,
        inputs={"x": (S, D)},
        impl_inputs={"x": (S // W, D)},
        backward=True,
        input_relation={
            "x": shard("x", dim=0), "d_out": shard("d_out", dim=0),
            "router": replicate("router"), "w1": shard("w1", dim=1), "w2": shard("w2", dim=2),
        },
        expect={
            "out": shard("out", dim=0),
            "grad.x": shard("grad.x", dim=0),
            "grad.router": replicate("grad.router"),     # every rank holds the full gradient
            "grad.w1": shard("grad.w1", dim=1),
            "grad.w2": shard("grad.w2", dim=2),
        },
    )
