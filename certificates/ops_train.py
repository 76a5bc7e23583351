"""Training operators kept whole by capture, in the style of ``ops.py`` (semantics: docs/ir.md): training-mode
batch normalization and its backward (no running statistics), and MoE routing (``pvcert.route``)."""

import numpy as np

from .ops import REQ, _fail_if, _lift, _scalar, _sqrt, is_sym, op
from .poly import NUMERIC, call, to_fraction


def _channel_sum(v: np.ndarray) -> np.ndarray:   # of v [N, C, *]: [C]
    return np.sum(v, axis=tuple(i for i in range(v.ndim) if i != 1))


def _chan(v: np.ndarray, nd: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast against ``[N, C, *]``."""
    return v.reshape((1, -1) + (1,) * (nd - 2))


def _shapes(shapes, a, grad: bool):
    shapes = list(shapes) + [None] * (7 - len(shapes))      # trailing optional operands may be left out
    x = shapes[1] if grad else shapes[0]
    c = (x[1],) if len(x) >= 2 else None
    _fail_if(c is None, f"batch_norm input needs [N, C, ...], got {x}")
    _fail_if(shapes[3:5] != [None, None], "running statistics are not supported (track_running_stats=False)")
    _fail_if(not (a["train"] if grad else a["training"]) or (grad and list(a["output_mask"]) != [True] * 3),
             "only training-mode batch_norm (backward: every gradient) is supported")
    _fail_if(grad and (shapes[0] != x or shapes[5] != c or shapes[6] != c),
             f"batch_norm backward: grad {shapes[0]}, saved {shapes[5]}/{shapes[6]} vs input {x}")
    ws = shapes[2:3] if grad else shapes[1:3]   # backward: its weight; forward: weight and bias
    _fail_if(any(w is not None and w != c for w in ws), f"batch_norm weight {ws} vs {c} channels")
    return [x, c, c]


def _forward(xs, a):
    x, w, b = (list(xs) + [None] * 3)[:3]
    inv_n = _lift(x, to_fraction(1) / (x.size // x.shape[1]))
    mean = _channel_sum(x) * inv_n
    c = x - _chan(mean, x.ndim)
    rstd = 1 / _sqrt(_channel_sum(c * c) * inv_n + _lift(x, _scalar(a["eps"])))
    y = c * _chan(rstd, x.ndim)
    y = y if w is None else y * _chan(w, x.ndim)
    return [y if b is None else y + _chan(b, x.ndim), mean, rstd]


def _backward(xs, a):
    g, x, w, mean, rstd, nd = xs[0], xs[1], xs[2], xs[5], xs[6], xs[1].ndim
    inv_n = _lift(x, to_fraction(1) / (x.size // x.shape[1]))
    xhat = (x - _chan(mean, nd)) * _chan(rstd, nd)
    gb, gw = _channel_sum(g), _channel_sum(g * xhat)
    scale = _chan(rstd if w is None else rstd * w, nd)
    return [scale * (g - _chan(gb * inv_n, nd) - xhat * _chan(gw * inv_n, nd)), gw, gb]   # input's, weight's, bias's


op("aten.native_batch_norm.default", "input weight? bias? running_mean? running_var?",
   {"training": REQ, "momentum": REQ, "eps": REQ}, shape=lambda s, a: _shapes(s, a, False), outputs=3)(_forward)
op("aten.native_batch_norm_backward.default",
   "grad_out input weight? running_mean? running_var? save_mean? save_invstd?",
   {"train": REQ, "eps": REQ, "output_mask": REQ}, shape=lambda s, a: _shapes(s, a, True), outputs=3)(_backward)


def route(s: np.ndarray, k: int, cap: int, nodes: int, limit: int) -> np.ndarray:
    """The dispatch of one group's float scores ``[T, E]``: ``[T, E, C]`` of 0/1."""
    t_n, e_n = s.shape
    out, used, block = np.zeros((t_n, e_n, cap)), [0] * e_n, e_n // nodes
    for t in range(t_n):
        best = sorted(range(nodes), key=lambda b: (-max(s[t, b * block:(b + 1) * block]), b))[:limit]
        allowed = [e for b in sorted(best) for e in range(b * block, (b + 1) * block)]
        for e in sorted(allowed, key=lambda e: (-s[t, e], e))[:k]:
            if used[e] < cap:
                out[t, e, used[e]] = 1.0
                used[e] += 1
    return out


def _route_shape(shapes, a):
    (g, t, e), k, n, lim = (tuple(shapes[0]) + (0, 0, 0))[:3], a["k"], a["nodes"], a["limit"]
    _fail_if(len(shapes[0]) != 3 or not (0 < n and e % n == 0 and 0 < lim <= n and 0 < k <= lim * (e // n))
             or a["capacity"] < 1, f"route of scores {shapes[0]}: needs [G, T, E], E divisible by nodes {n}, "
             f"1 <= limit {lim} <= nodes, 1 <= k {k} <= limit * E / nodes, capacity >= 1")
    return [(g, t, e, a["capacity"])]


def _route(xs, a):
    s, args = xs[0], (a["k"], a["capacity"], a["nodes"], a["limit"])
    if not is_sym(s):
        return [np.stack([route(sg.astype(float), *args) for sg in s])]
    g_n, t_n, e_n = s.shape
    out = np.empty((g_n, t_n, e_n, a["capacity"]), dtype=object)
    for ix in np.ndindex(*out.shape):
        name = "route_k{}_c{}_n{}_l{}_e{}_at_{}_{}_{}".format(*args, e_n, *ix[1:])
        NUMERIC.setdefault(name, lambda *v, ix=ix: route(np.reshape(v, (t_n, e_n)), *args)[ix[1:]])
        out[ix] = call(name, *s[ix[0]].ravel())
    return [out]


op("pvcert.route.default", "scores", {"k": REQ, "capacity": REQ, "nodes": 1, "limit": 1}, shape=_route_shape)(_route)
