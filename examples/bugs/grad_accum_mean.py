"""Bug class 6 (ENTANGLE appendix A, bug 6): gradient accumulation that averages the loss
per micro-batch instead of over all the batch's tokens.

Model: a linear regression ``pred = x @ w^T`` with a masked mean-squared error: tokens
with ``mask = 0`` (padding, ignored labels) do not count, and the loss is the mean over
the valid tokens of the whole batch: ``loss = sum_t(mask[t] * |pred[t] - y[t]|^2) /
sum_t(mask[t])``.

Gradient accumulation over M micro-batches, written as M ranks (one micro-batch each;
the accumulation sum is the sum over ranks, as data parallelism does it): each
micro-batch computes its masked squared-error sum; the correct version divides it by the
number of valid tokens of the whole batch (an all-reduce of the per-micro-batch counts,
the ``num_items_in_batch`` fix), then sums the micro-batch losses (``all_reduce``
forward, identity backward); the gradient of ``w`` is the sum of the micro-batch
gradients.

Bug: each micro-batch divides by its own number of valid tokens and the accumulated loss
is the mean of the micro-batch means (``/ M``). That equals the batch mean only when every
micro-batch has as many valid tokens; the masks are free variables here, so pvcert
stops at the division ``num / den`` of the spec, where no clean expression relates the
mean of means to the batch mean.

Formulation: the masked sum is a dot product with the mask and the loss a 1-element
tensor. The usual ``(err * mask).sum(0, keepdim=True)`` (``reductions="sum"``) makes pvcert
reject even the correct version, and 0-dim sums (``reductions="scalar"``) crash it:
engine limitations recorded as ``xfail`` tests in tests/test_bug_suite.py.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from verifier.train.mappings import _all_reduce, reduce_from_tp
from verifier.capture.case import CaptureCase
from verifier.capture.relations import partial, replicate, shard

N, D, M = 4, 2, 2     # tokens in the batch, features, micro-batches


class MaskedRegression(nn.Module):
    def __init__(self, d: int, reductions: str = "matmul"):
        super().__init__()
        self.w = nn.Parameter(torch.randn(1, d) * 0.5)
        self.reductions = reductions

    def sums(self, x, y, mask):
        """``[1]`` each: the masked squared-error sum and the number of valid tokens."""
        mask = mask.detach()
        n = x.shape[0]
        err = ((x @ self.w.t()).reshape(n) - y.detach()) ** 2                # [n]
        if self.reductions == "sum":                                        # the usual formulation
            return (err * mask).sum(dim=0, keepdim=True), mask.sum(dim=0, keepdim=True)
        if self.reductions == "scalar":                                     # 0-dim sums
            return (err * mask).sum(), mask.sum()
        # the masked sum as a dot product with the mask
        return (err.reshape(1, n) @ mask.reshape(n, 1)).reshape(1), mask.sum(dim=0, keepdim=True)

    def forward(self, x, y, mask):
        num, den = self.sums(x, y, mask)
        return num / den                                             # [1] (0-dim: "scalar")


class AccumulatedRegression(MaskedRegression):
    """One micro-batch per rank; the accumulation is the sum over ranks."""

    def __init__(self, d: int, micro_batches: int, buggy: bool = False, reductions: str = "matmul"):
        super().__init__(d, reductions)
        self.m, self.buggy = micro_batches, buggy

    def forward(self, x, y, mask):
        num, den = self.sums(x, y, mask)
        if self.buggy:
            return reduce_from_tp(num / den) / self.m                 # mean of micro-batch means
        return reduce_from_tp(num / _all_reduce(den, None))           # divide by all valid tokens


def make_case(buggy: bool = False, reductions: str = "matmul") -> CaptureCase:
    return CaptureCase(
        name="grad_accum_mean" + ("_buggy" if buggy else ""),
        spec=lambda: MaskedRegression(D, reductions),
        impl=lambda rank, world: AccumulatedRegression(D, world, buggy, reductions),
        world_size=M,
        inputs={"x": (N, D), "y": (N,), "mask": (N,)},
        impl_inputs={"x": (N // M, D), "y": (N // M,), "mask": (N // M,)},
        backward=True,
        output_names=["loss"],
        input_relation={
            "x": shard("x", dim=0), "y": shard("y", dim=0), "mask": shard("mask", dim=0),
            "d_loss": replicate("d_loss"), "w": replicate("w"),
        },
        expect={
            "loss": replicate("loss"),
            "grad.x": shard("grad.x", dim=0),
            "grad.w": partial("grad.w"),                 # the accumulated gradient
        },
    )
