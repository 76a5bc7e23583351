"""Backward operators kept whole by capture, in the style of ``ops.py``. New atoms (numeric meaning in
``poly.NUMERIC``): ``step(v)`` (1 if v > 0 else 0), ``gelu_grad`` and ``gelu_tanh_grad``."""

import math

import numpy as np

from .ops import REQ, ShapeError, _constant, _dim, _fail_if, _lift, _map, _norm_axes, _scalar, _sigmoid, is_sym, op
from .poly import NUMERIC, to_fraction

_K = math.sqrt(2.0 / math.pi)


def _gelu_grad(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0))) + x * math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _gelu_tanh_grad(x: float) -> float:
    t = math.tanh(_K * (x + 0.044715 * x ** 3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _K * (1.0 + 3 * 0.044715 * x * x)


NUMERIC.update({"step": lambda v: 1.0 if v > 0 else 0.0, "gelu_grad": _gelu_grad, "gelu_tanh_grad": _gelu_tanh_grad})
_step = _map("step", lambda a: (a > 0).astype(float))
_dgelu = _map("gelu_grad", np.vectorize(_gelu_grad, otypes=[float]))
_dgelu_tanh = _map("gelu_tanh_grad", np.vectorize(_gelu_tanh_grad, otypes=[float]))


def _same2(shapes, a):
    _fail_if(tuple(shapes[0]) != tuple(shapes[1]), f"gradient {shapes[0]} and input {shapes[1]} differ in shape")
    return [shapes[0]]


@op("aten.threshold_backward.default", "grad_output self", {"threshold": REQ}, shape=_same2)
def _threshold_backward(xs, a):
    g, x = xs
    t = _lift(x, _scalar(a["threshold"]))
    return [g * _step(x - t)] if is_sym(x) else [np.where(x > t, g, 0.0 * g)]


op("aten.gelu_backward.default", "grad_output self", {"approximate": "none"}, shape=_same2)(
    lambda xs, a: [xs[0] * (_dgelu_tanh if a["approximate"] == "tanh" else _dgelu)(xs[1])])


@op("aten.silu_backward.default", "grad_output self", shape=_same2)
def _silu_backward(xs, a):
    g, x = xs
    s = _sigmoid(x)
    return [g * s * (1 + x * (1 - s))]


@op("aten._softmax_backward_data.default", "grad_output output", {"dim": REQ, "input_dtype": None}, shape=_same2)
def _softmax_backward(xs, a):
    g, y = xs
    return [y * (g - np.sum(g * y, axis=_dim(a["dim"], y.ndim), keepdims=True))]


def _ln_bwd_shape(shapes, a):
    g, x = shapes[0], shapes[1]
    _norm_axes(x, a)
    _fail_if(tuple(g) != tuple(x), f"layer_norm gradient {g} vs input {x}")
    ns = tuple(a["normalized_shape"])
    return [tuple(x), ns, ns]


@op("aten.native_layer_norm_backward.default", "grad_out input mean rstd weight? bias?",
    {"normalized_shape": REQ, "output_mask": [True, True, True]}, shape=_ln_bwd_shape, outputs=3)
def _layer_norm_backward(xs, a):
    g, x, mean, rstd = xs[:4]
    ax = _norm_axes(x.shape, a)
    batch = tuple(range(x.ndim - len(ax)))
    inv_n = _lift(x, to_fraction(1) / math.prod(x.shape[i] for i in ax))
    xhat = (x - mean) * rstd
    gw = g * xs[4] if len(xs) > 4 and xs[4] is not None else g
    gx = rstd * (gw - np.sum(gw, axis=ax, keepdims=True) * inv_n
                 - xhat * np.sum(gw * xhat, axis=ax, keepdims=True) * inv_n)
    return [gx, np.asarray(np.sum(g * xhat, axis=batch)), np.asarray(np.sum(g, axis=batch))]


def _emb_bwd_shape(shapes, a):
    g, idx = shapes
    if tuple(g[:len(idx)]) != tuple(idx) or len(g) != len(idx) + 1:
        raise ShapeError(f"embedding gradient {g} does not fit indices {idx}")
    return [(a["num_weights"], g[-1])]


@op("aten.embedding_dense_backward.default", "grad_output indices",
    {"num_weights": REQ, "padding_idx": -1, "scale_grad_by_freq": False}, shape=_emb_bwd_shape)
def _embedding_backward(xs, a):
    g, idx = xs
    _fail_if(is_sym(idx) or idx.dtype.kind not in "iu", "embedding indices must be integer tensors")
    _fail_if(a["scale_grad_by_freq"], "scale_grad_by_freq is not supported")
    rows = g.reshape(-1, g.shape[-1])
    out = _constant((a["num_weights"], g.shape[-1]), 0, is_sym(g))
    for i, k in enumerate(idx.reshape(-1).tolist()):
        _fail_if(not 0 <= k < a["num_weights"], f"embedding index {k} out of range [0, {a['num_weights']})")
        if k != a["padding_idx"]:
            out[k] = out[k] + rows[i]
    return [out]


def _nll_bwd_shape(shapes, a):
    x, t = shapes[1], shapes[2]
    _fail_if(len(x) not in (1, 2) or tuple(t) != tuple(x[:-1]), f"nll_loss_backward of input {x} and target {t}")
    return [tuple(x)]


@op("aten.nll_loss_backward.default", "grad_output self target weight? total_weight",
    {"reduction": 1, "ignore_index": -100}, shape=_nll_bwd_shape)
def _nll_backward(xs, a):
    g, x, t, w, tw = xs
    _fail_if(w is not None, "class weights are not supported")
    _fail_if(is_sym(t) or t.dtype.kind not in "iu", "loss targets must be integer tensors")
    out = _constant(x.shape, 0, is_sym(x) or is_sym(g)).reshape(-1, x.shape[-1])
    g0 = g.reshape(-1)
    for i, k in enumerate(t.reshape(-1).tolist()):
        if k != a["ignore_index"]:
            _fail_if(not 0 <= k < x.shape[-1], "loss target out of range")
            out[i, k] = -(g0[i] if a["reduction"] == 0 else g0[0] / tw.reshape(-1)[0] if a["reduction"] == 1
                          else g0[0])
    return [out.reshape(x.shape)]
