"""Bug class 5 (ENTANGLE appendix A, bug 5; bug 9 is the same class in TransformerEngine):
a layernorm weight whose gradient is not all-reduced under sequence parallelism.

Model: ``k = layer_norm(x) @ wk^T`` (a layernorm added before the key projection of an
attention layer).

Sequence + tensor parallel (world W, Megatron style): every rank holds ``S/W`` tokens and
normalizes them with the replicated layernorm weight and bias; ``all_gather`` (backward:
``reduce_scatter``) feeds the column-parallel key projection (``wk`` sharded by rows).
Each rank's layernorm gradients cover its own tokens only, so sequence-parallel
parameters are registered for a gradient all-reduce over the SP group; here that
registration is a custom autograd Function on the parameter (identity forward,
all_reduce backward), the in-graph form of the gradient hook.

Bug: the new layernorm's weight is not registered (its bias is): the graph is still a
correct computation and pvcert finds the relation ``grad.ln.weight = sum(grad.ln.weight@r0,
grad.ln.weight@r1)``, but the user expects every rank to hold the full gradient (as for
the bias): the expectation fails, and the report shows the partial sum found instead.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from verifier.train.mappings import copy_to_tp, gather_from_sp
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard

S, D, W = 4, 2, 2     # tokens, model dim, ranks


def allreduce_grad(p):
    """The parameter, with its gradient all-reduced over the SP group in the backward."""
    return copy_to_tp(p)


class NormKey(nn.Module):
    def __init__(self, d: int, world: int = 1):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        nn.init.normal_(self.ln.weight)
        nn.init.normal_(self.ln.bias)
        self.wk = nn.Parameter(torch.randn(d // world, d) * 0.5)

    def forward(self, x):
        return F.linear(self.ln(x), self.wk)


class SPNormKey(NormKey):
    def __init__(self, d: int, world: int, buggy: bool = False):
        super().__init__(d, world)
        self.buggy = buggy

    def forward(self, x):
        weight = self.ln.weight if self.buggy else allreduce_grad(self.ln.weight)   # bug: not registered
        bias = allreduce_grad(self.ln.bias)
        h = F.layer_norm(x, self.ln.normalized_shape, weight, bias, self.ln.eps)
        return F.linear(gather_from_sp(h), self.wk)


def make_case(buggy: bool = False) -> CaptureCase:
    return CaptureCase(
        name="sp_layernorm_grad" + ("_buggy" if buggy else ""),
        spec=lambda: NormKey(D),
        impl=lambda rank, world: SPNormKey(D, world, buggy),
        world_size=W,
        inputs={"x": (S, D)},
        impl_inputs={"x": (S // W, D)},
        backward=True,
        input_relation={
            "x": shard("x", dim=0), "d_out": shard("d_out", dim=1),
            "ln.weight": replicate("ln.weight"), "ln.bias": replicate("ln.bias"),
            "wk": shard("wk", dim=0),
        },
        expect={
            "out": shard("out", dim=1),
            "grad.x": shard("grad.x", dim=0),
            "grad.ln.weight": replicate("grad.ln.weight"),    # every rank holds the full gradient
            "grad.ln.bias": replicate("grad.ln.bias"),
            "grad.wk": shard("grad.wk", dim=0),
        },
    )
