"""The decomposition table used while tracing.

Ops outside the registry are decomposed (``torch._decomp``) when their decomposition
uses registry ops only; backward ops whose decomposition would pull in ops the
checker lacks (erf, comparisons on reals, scatter) are kept and given semantics in
``certificates/ops_grad.py`` instead.
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

DECOMPOSITIONS = get_decompositions(DECOMPOSED)
