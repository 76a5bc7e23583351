"""Bug class 2 (ENTANGLE appendix A, bug 2): the MoE auxiliary (load-balancing) loss is
not divided by the tensor-parallel size.

Model: an input projection ``h = x @ w_in^T`` feeding an MoE router; the layer's
output is the router's load-balancing loss
``aux = coeff * E * sum_e(f[e] * mean_t(softmax(h @ w_router^T)[t, e]))``, where
``f[e]`` is the fraction of the batch's tokens dispatched to expert ``e`` (computed by
the top-k outside the captured layer: an input, the same on every rank).

Tensor + sequence parallel (world W = TP size): every rank holds ``S/W`` tokens,
projects them with the replicated ``w_in``, and gathers the sequence (``all_gather``
forward, ``reduce_scatter`` backward) for the router, which is replicated: every TP
rank computes the same aux loss on the whole sequence. Each rank's loss is divided by
``W`` and the per-rank losses are summed (``all_reduce`` forward, identity backward),
so the reported loss is the aux loss and the ``reduce_scatter`` of the backward, which
sums the W identical router gradients, yields the right input gradient.

Bug: the ``1/W`` is missing. The loss is W times too large and so is every gradient
after the ``reduce_scatter``: pvcert relates those gradients by scaled relations
(``grad.w_in = mean(grad.w_in@r0, grad.w_in@r1)``) and rejects the expectation of the
loss (``aux_loss = aux_loss@r0``: 1 vs 2, the reported loss is W times the spec's).

Formulation: the loss is a 1-element tensor and the token mean is a matmul with a
``1/S`` row. The usual ``(f * probs.mean(0)).sum()`` (``reductions="mean"``, with a
``[1]`` result; a 0-dim loss crashes pvcert) is rejected at the same expectation
(tests/test_bug_suite.py).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from verifier.train.mappings import gather_from_sp, reduce_from_tp
from verifier.capture.case import CaptureCase
from verifier.capture.relations import partial, replicate, shard

S, D, E, W = 4, 2, 2, 2     # tokens, hidden, experts, TP ranks
COEFF = 0.01


def load_balancing_loss(h, w_router, f, reductions: str = "matmul"):
    """The loss, ``[1]`` (see the module docstring for the two formulations)."""
    probs = torch.softmax(h @ w_router.t(), dim=-1)          # [S, E]
    if reductions == "mean":                                 # the usual formulation
        return COEFF * E * (f * probs.mean(dim=0)).sum(dim=0, keepdim=True)
    s = probs.shape[0]
    mean = torch.full((1, s), 1.0 / s) @ probs                # [1, E]: mean over the tokens
    return COEFF * E * (mean @ f.unsqueeze(1)).reshape(1)


class RouterAuxLoss(nn.Module):
    def __init__(self, d: int, experts: int, reductions: str = "matmul"):
        super().__init__()
        self.reductions = reductions
        self.w_in = nn.Parameter(torch.randn(d, d) * 0.5)
        self.w_router = nn.Parameter(torch.randn(experts, d) * 0.5)

    def forward(self, x, f):
        return load_balancing_loss(x @ self.w_in.t(), self.w_router, f, self.reductions)


class TPRouterAuxLoss(RouterAuxLoss):
    def __init__(self, d: int, experts: int, world: int, buggy: bool = False, reductions: str = "matmul"):
        super().__init__(d, experts, reductions)
        self.world, self.buggy = world, buggy

    def forward(self, x, f):
        h = gather_from_sp(x @ self.w_in.t())                  # [S, D] on every TP rank
        aux = load_balancing_loss(h, self.w_router, f, self.reductions)   # computed redundantly
        if not self.buggy:
            aux = aux / self.world                            # the missing factor in the bug
        return reduce_from_tp(aux)


def make_case(buggy: bool = False, reductions: str = "matmul") -> CaptureCase:
    return CaptureCase(
        name="moe_aux_loss_tp" + ("_buggy" if buggy else ""),
        spec=lambda: RouterAuxLoss(D, E, reductions),
        impl=lambda rank, world: TPRouterAuxLoss(D, E, world, buggy, reductions),
        world_size=W,
        inputs={"x": (S, D), "f": (E,)},
        impl_inputs={"x": (S // W, D), "f": (E,)},
        backward=True,
        output_names=["aux_loss"],
        input_relation={
            "x": shard("x", dim=0), "f": replicate("f"), "d_aux_loss": replicate("d_aux_loss"),
            "w_in": replicate("w_in"), "w_router": replicate("w_router"),
        },
        expect={
            "aux_loss": replicate("aux_loss"),
            "grad.x": shard("grad.x", dim=0),
            "grad.w_in": partial("grad.w_in"),          # summed by the SP gradient all-reduce
            "grad.w_router": partial("grad.w_router"),
        },
    )
