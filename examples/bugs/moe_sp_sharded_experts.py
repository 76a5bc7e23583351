"""Bug class 4 (ENTANGLE appendix A, bug 4 and section 2.2): MoE expert weights sharded
instead of replicated under sequence parallelism.

Model: a dense-dispatch mixture of experts on tokens ``x [S, D]``: expert ``e`` computes
``gelu(x @ w1[e]) @ w2[e]`` and the output is ``sum_e gates[:, e] * expert_e(x)``, with
the router's gate weights ``gates [S, E]`` given (top-k outside the captured layer).

Sequence parallel (world W): every rank holds ``S/W`` tokens and their gates and runs
every expert on them, so the expert weights must be replicated (their gradients are then
partial sums over the sequence shards, reduced by the SP gradient all-reduce).

Bug (a configuration left over from tensor-parallel experts): the expert weights are
still sharded along the hidden dimension (``w1[e]`` by columns, ``w2[e]`` by rows) and
no collective is added. Every shape still fits (``x_r @ w1_r @ w2_r`` is ``[S/W, D]``), so
the model trains, but it never computes the off-diagonal blocks ``x_1 @ w1_2`` and
``x_2 @ w1_1``. The input relation states the real layout of the buggy weights
(sharded); pvcert stops at the first expert matmul ``x @ w1[0]``.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from verifier.capture.case import CaptureCase
from verifier.capture.relations import partial, replicate, shard

S, D, H, E, W = 4, 2, 2, 2, 2     # tokens, model dim, expert hidden dim, experts, ranks


class MoE(nn.Module):
    """``hidden``: this module's share of every expert's hidden dimension."""

    def __init__(self, d: int, hidden: int, experts: int):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(experts, d, hidden) * 0.5)
        self.w2 = nn.Parameter(torch.randn(experts, hidden, d) * 0.5)

    def forward(self, x, gates):
        out = 0
        for e in range(self.w1.shape[0]):
            y = F.gelu(x @ self.w1[e]) @ self.w2[e]
            out = out + gates[:, e:e + 1] * y
        return out


def make_case(buggy: bool = False) -> CaptureCase:
    # correct: every rank holds the whole experts; buggy: the hidden dim is split W ways
    impl_hidden = H // W if buggy else H
    experts = ({"w1": shard("w1", dim=2), "w2": shard("w2", dim=1)} if buggy else
               {"w1": replicate("w1"), "w2": replicate("w2")})
    return CaptureCase(
        name="moe_sp_sharded_experts" + ("_buggy" if buggy else ""),
        spec=lambda: MoE(D, H, E),
        impl=lambda rank, world: MoE(D, impl_hidden, E),
        world_size=W,
        inputs={"x": (S, D), "gates": (S, E)},
        impl_inputs={"x": (S // W, D), "gates": (S // W, E)},
        backward=True,
        input_relation={"x": shard("x", dim=0), "gates": shard("gates", dim=0),
                        "d_out": shard("d_out", dim=0), **experts},
        expect={
            "out": shard("out", dim=0),
            "grad.x": shard("grad.x", dim=0),
            "grad.gates": shard("grad.gates", dim=0),
            # summed over the sequence shards (buggy: laid out like its weights)
            "grad.w1": shard("grad.w1", dim=2) if buggy else partial("grad.w1"),
            "grad.w2": shard("grad.w2", dim=1) if buggy else partial("grad.w2"),
        },
    )
