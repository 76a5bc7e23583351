"""The decomposition table used while tracing.

Ops outside the registry are decomposed (``torch._decomp``) when their decomposition
uses registry ops only; backward ops whose decomposition would pull in ops the
checker lacks (erf, comparisons on reals, scatter) are kept and given semantics in
``certificates/ops_grad.py`` instead. The 2-norm and ``clamp`` by scalars (gradient clipping)
and ``lerp`` (Adam's moments) are written here with registry ops, as identities over the reals (tests/train/test_user_ddp.py
compares them with torch); ``_foreach_norm`` / ``_foreach_mul_`` (clipping DTensor gradients)
run one tensor at a time.
"""

from __future__ import annotations

import torch
from torch._decomp import get_decompositions

aten = torch.ops.aten

DECOMPOSED = [
    aten.tanh_backward, aten.sigmoid_backward, aten.mse_loss_backward, aten.addcmul, aten.addcdiv,
    aten.masked_fill.Tensor, aten.expand_as, aten.hardtanh, aten.leaky_relu,
    aten._log_softmax_backward_data, aten.rsub, aten.square, aten.var_mean, aten.std_mean,
    aten.native_dropout_backward, aten.linear_backward, aten.baddbmm, aten.addmv, aten.addbmm,
    aten.floor_divide, aten.diag_embed, aten.unbind, aten.flip,
]

# Optimizer steps and gradient clipping (torch.optim's single-tensor paths, clip_grad_norm_).
DECOMPOSED += [aten.addcmul_, aten.addcdiv_, aten.stack]


def _vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The 2-norm as ``sqrt(sum(x * x))`` (``|x|^2 = x * x`` over the reals); other norms are kept
    whole (and refused: the registry lacks them)."""
    if ord != 2 or dtype is not None:
        return NotImplemented
    return torch.sqrt(torch.sum(x * x) if dim is None else torch.sum(x * x, dim=dim, keepdim=keepdim))


def _clamp(x, min=None, max=None):
    """``max(x, lo) = lo + relu(x - lo)`` and ``min(x, hi) = hi - relu(hi - x)``, exact over the reals."""
    if min is not None:
        x = min + torch.relu(x - min)
    if max is not None:
        x = max - torch.relu(max - x)
    return x


def _lerp(start, end, weight):
    """``start + weight * (end - start)``: torch's two branches (by ``|weight| < 0.5``) are one value over the reals."""
    return start + weight * (end - start)


def _lerp_(start, end, weight):
    return start.copy_(_lerp(start, end, weight))


def _foreach_norm(tensors, ord=2, dtype=None):
    return [torch.linalg.vector_norm(t, ord, dtype=dtype) for t in tensors]


def _foreach_mul_(tensors, other):
    """``clip_grad_norm_``'s in-place scaling of DTensor gradients, one tensor at a time."""
    for t in tensors:
        t.mul_(other)


DECOMPOSITIONS = {**get_decompositions(DECOMPOSED), aten.linalg_vector_norm.default: _vector_norm,
                  aten._foreach_norm.Scalar: _foreach_norm, aten._foreach_mul_.Tensor: _foreach_mul_,
                  aten._foreach_mul_.Scalar: _foreach_mul_,
                  aten.clamp.default: _clamp, aten.lerp.Scalar: _lerp, aten.lerp.Tensor: _lerp,
                  aten.lerp_.Scalar: _lerp_, aten.lerp_.Tensor: _lerp_}
