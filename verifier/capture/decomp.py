"""The decomposition table used while tracing.

Ops outside the registry are decomposed (``torch._decomp``) when their decomposition
uses registry ops only; backward ops whose decomposition would pull in ops the
checker lacks (erf, comparisons on reals, scatter) are kept and given semantics in
``certificates/ops_grad.py`` instead. The 2-norm and ``clamp`` by scalars (gradient clipping)
and ``lerp`` (Adam's moments) are written here with registry ops, as identities over the reals (tests/train/test_user_ddp.py
compares them with torch); ``_foreach_norm`` / ``_foreach_mul_`` (clipping DTensor gradients)
run one tensor at a time. Scaled-dot-product attention runs as its ops above autograd
(``AboveAutograd``), its masks without infinite values (tests/capture/test_sdpa.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch._decomp import get_decompositions
from torch.overrides import TorchFunctionMode

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


def _sdpa_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    """CPU scaled-dot-product attention ``(output, logsumexp)`` without dropout: ``softmax(q k^T * scale
    + mask) v``. A causal or boolean mask keeps the allowed positions' ``exp`` and drops the others (what
    ``-inf`` does, with no infinite value); an additive float mask is added. The same values over the reals
    (``tests/capture/test_sdpa.py`` compares them with torch); the maximum torch subtracts cancels."""
    if dropout_p:
        return NotImplemented
    s = query @ key.transpose(-2, -1) * (scale if scale is not None else query.shape[-1] ** -0.5)
    keep = None
    if is_causal:
        keep = torch.ones(query.shape[-2], key.shape[-2], dtype=torch.bool).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        keep = attn_mask if keep is None else keep & attn_mask
    elif attn_mask is not None:
        s = s + attn_mask
    e = torch.exp(s) if keep is None else torch.where(keep, torch.exp(s), torch.zeros_like(s))
    total = e.sum(-1, keepdim=True)
    return (e / total) @ value, torch.log(total).squeeze(-1).to(torch.float32)


class AboveAutograd(TorchFunctionMode):
    """While tracing, ``F.scaled_dot_product_attention`` without dropout runs as ``_sdpa_cpu``'s ops above
    autograd, so its backward is theirs (its fused backward would mask with ``-inf``); with ``enable_gqa``
    each key/value head first serves its group of query heads (``repeat_interleave``, as torch documents)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is not F.scaled_dot_product_attention:   # every other call of the trace: as it is
            return func(*args, **kwargs)
        kw = {**dict(zip(("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"), args[3:])), **kwargs}
        if kw.get("dropout_p") or kw.get("is_causal") and kw.get("attn_mask") is not None:   # torch refuses both
            return func(*args, **kwargs)
        q, k, v = args[:3]
        if kw.get("enable_gqa"):
            k, v = (t.repeat_interleave(q.shape[-3] // t.shape[-3], dim=-3) for t in (k, v))
        return _sdpa_cpu(q, k, v, 0.0, kw.get("is_causal", False), attn_mask=kw.get("attn_mask"),
                         scale=kw.get("scale"))[0]


def _safe_softmax(x, dim, dtype=None):
    """``softmax``: the "safe" variant differs only on rows that are entirely ``-inf``, which real values never are."""
    return torch.softmax(x, dim, dtype=dtype)


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
                  aten.lerp_.Scalar: _lerp_, aten.lerp_.Tensor: _lerp_,
                  aten._scaled_dot_product_flash_attention_for_cpu.default: _sdpa_cpu,
                  aten._safe_softmax.default: _safe_softmax}
