"""Forward ATen operators of captured real models, in the style of ``ops.py`` (semantics: docs/ir.md).
Exact over symbolic reals: ``abs``/``clamp`` by ``max``, ``sgn`` and softplus's threshold by ``step``;
orders of real values (``max.dim`` indices), randomness and uninitialized values are refused."""

import math

import numpy as np

from .dtypes import cast
from .ops import (REQ, _CREATE, _dim, _exp, _fail_if, _full, _integral, _lift, _log, _maximum,
                  _red_dims, _red_shape, _scalar, _sigmoid, _slice_index, _slice_shape, _bcast, is_sym, op)
from .ops_grad import _same2, _step
from .ops_index import _index_shape, _ints
from .poly import Rat, call, to_fraction

_MAX = np.frompyfunc(lambda u, v: call("max", u, v), 2, 1)


def _ew(targets: str, fn, attrs: dict | None = None) -> None:
    op(targets, "self", attrs, shape=lambda s, a: [s[0]])(lambda xs, a: [np.asarray(fn(xs[0], a))])


def _clamp(x, a):
    lo, hi = a["min"], a["max"]
    _fail_if(lo is None and hi is None, "clamp needs 'min' or 'max'")
    _fail_if(_integral(x) and not all(v is None or type(v) is int and 0 <= v <= 127 for v in (lo, hi)),
             "clamp of an integer tensor by a bound outside [0, 127] (torch converts it to the dtype) is not supported")
    x = x if lo is None else _maximum(x, _lift(x, _scalar(lo)))
    c = None if hi is None else _lift(x, _scalar(hi))
    return x if c is None else -_maximum(-x, -c) if is_sym(x) else np.minimum(x, c)


def _real(x):
    _fail_if(_integral(x), "an integer tensor here is not supported (cast it to a float first)")
    return x


def _softplus(x, a, grad=None):
    """x if beta*x > threshold else log(1 + exp(beta*x)) / beta; the gradient ``grad`` times its derivative."""
    b, t = _lift(_real(x), _scalar(a["beta"])), _lift(x, _scalar(a["threshold"]))
    _fail_if(b == 0, "softplus with beta 0 is not finite")
    s, bx = (_step(x * b - t) if is_sym(x) else (x * b > t).astype(float)), x * b
    if grad is not None:
        return grad * (s + (1 - s) * _sigmoid(bx))
    return s * x + (1 - s) * (_log(1 + _exp(bx)) / b if is_sym(x) else np.log1p(np.exp(np.minimum(bx, t))) / b)


_ew("aten.abs.default", lambda x, a: _maximum(x, -x) if is_sym(x) else np.abs(x))
_ew("aten.sgn.default aten.sign.default",
    lambda x, a: _step(x) - _step(-x) if is_sym(x) else x if x.dtype == bool else np.sign(x))
_ew("aten.clamp.default aten.clamp_min.default aten.clamp_max.default", _clamp, {"min": None, "max": None})
_ew("aten.log1p.default", lambda x, a: _log(1 + x) if is_sym(x) else np.log1p(_real(x)))
_ew("aten.softplus.default", _softplus, {"beta": 1, "threshold": 20})
op("aten.softplus_backward.default", "grad_output self", {"beta": REQ, "threshold": REQ}, shape=_same2)(
    lambda xs, a: [_softplus(xs[1], a, xs[0])])
_ew("aten.bitwise_not.default", lambda x, a: ~x if x.dtype.kind in "iub" else _fail_if(True, "bitwise_not of reals"))


def _tri(x, a, lower: bool):
    _fail_if(x.ndim < 2, f"tril/triu of a tensor of rank {x.ndim}")
    keep = np.tri(*x.shape[-2:], k=a["diagonal"] - (not lower), dtype=bool)
    return np.where(keep if lower else ~keep, x, np.full((), Rat.of(0), dtype=object) if is_sym(x) else x.dtype.type(0))


_ew("aten.tril.default", lambda x, a: _tri(x, a, True), {"diagonal": 0})
_ew("aten.triu.default", lambda x, a: _tri(x, a, False), {"diagonal": 0})


# ---------------------------------------------------------------- reductions

def _max_over(x, dims: list[int], keep: bool):
    _fail_if(x.size == 0, "max of an empty tensor")
    for d in sorted(dims if x.ndim else [], reverse=True):  # the last first: the others keep their index
        x = (_MAX.reduce if is_sym(x) else np.maximum.reduce)(x, axis=d, keepdims=keep)
    return np.asarray(x)


def _max_dim(xs, a):
    x, d = xs[0], _dim(a["dim"], xs[0].ndim)
    _fail_if(is_sym(x), "max.dim indices of real-valued (symbolic) values are not decided")
    _fail_if(x.ndim == 0 or x.size == 0, f"max.dim of shape {x.shape}")
    i = np.expand_dims(np.argmax(x, axis=d), d)  # the first maximum, as torch documents
    v = np.take_along_axis(x, i, axis=d)
    return [v, i] if a["keepdim"] else [np.squeeze(v, d), np.squeeze(i, d)]


op("aten.amax.default", "self", {"dim": [], "keepdim": False}, shape=_red_shape)(
    lambda xs, a: [_max_over(xs[0], _red_dims(a, xs[0].ndim), a["keepdim"])])
op("aten.max.dim", "self", {"dim": REQ, "keepdim": False}, outputs=2,
   shape=lambda s, a: _red_shape(s, {"dim": [_dim(a["dim"], len(s[0]))], "keepdim": a["keepdim"]}) * 2)(_max_dim)


def _var(xs, a):
    x = _real(xs[0])
    dims = tuple(_red_dims(a, x.ndim)) if x.ndim else ()
    n, c = math.prod(x.shape[d] for d in dims), 1 if a["correction"] is None else _scalar(a["correction"])
    _fail_if(n - c <= 0, f"var of {n} elements with correction {c} is not finite")
    d = x - np.sum(x, axis=dims, keepdims=True) * _lift(x, to_fraction(1) / n)
    return [np.asarray(np.sum(d * d, axis=dims, keepdims=a["keepdim"]) * _lift(x, to_fraction(1) / (n - c)))]


op("aten.var.correction", "self", {"dim": None, "correction": None, "keepdim": False}, shape=_red_shape)(_var)


def _topk(xs, a):
    x, d, k = xs[0], _dim(a["dim"], xs[0].ndim), a["k"]
    _fail_if(is_sym(x), "topk of real-valued (symbolic) values is not decided")
    _fail_if(not a["sorted"] or np.isnan(x.astype(float)).any(), "topk unsorted or of NaN: the order is not determined")
    i = np.flip(np.argsort(x, axis=d, kind="stable"), d) if a["largest"] else np.argsort(x, axis=d, kind="stable")
    v = np.take_along_axis(x, i, axis=d)
    ties = np.diff(np.take(v, range(min(k + 1, v.shape[d])), axis=d).astype(float), axis=d) == 0
    _fail_if(ties.any(), "topk with equal values among the first k + 1: torch's index order is not determined")
    return [np.take(v, range(k), axis=d), np.take(i, range(k), axis=d)]


op("aten.topk.default", "self", {"k": REQ, "dim": -1, "largest": True, "sorted": True}, outputs=2,
   shape=lambda s, a: [tuple(a["k"] if j == _dim(a["dim"], len(s[0])) else n for j, n in enumerate(s[0]))] * 2)(_topk)
op("aten.scalar_tensor.default", "", {"s": REQ, "dtype": None}, shape=lambda s, a: [()])(
    lambda xs, a: _full([], _scalar(a["s"]), a))


# ---------------------------------------------------------------- creation, scatter and gather

def _refuse(why: str):
    return lambda xs, a: _fail_if(True, why)


_EMPTY = _refuse("the values of an uninitialized tensor (empty) are undefined; none may be read")
op("aten.empty.memory_format", "", {"size": REQ, "dtype": None}, **_CREATE)(_EMPTY)
op("aten.new_empty_strided.default", "self", {"size": REQ, "stride": REQ, "dtype": None}, **_CREATE)(_EMPTY)
op("aten.empty_like.default", "self", {"dtype": None}, shape=lambda s, a: [s[0]])(_EMPTY)


def _scatter_shape(s, a):
    d = _dim(a["dim"], len(s[0]))
    _fail_if(not len(s[0]) == len(s[1]) == len(s[2]) or any(
        i > r or i > x and k != d for k, (x, i, r) in enumerate(zip(*s))), f"scatter of {s[2]} by {s[1]} into {s[0]}")
    return [s[0]]


def _into(x, src):
    """A copy of ``x`` to write ``src`` into: both real-valued, or both of one integer/boolean kind."""
    _fail_if(x.dtype.kind != src.dtype.kind and (_integral(x) or _integral(src)), "source and self differ in dtype")
    return np.array(x, dtype=object if is_sym(x) or is_sym(src) else x.dtype)


def _scatter(xs, a):
    x, idx, src = xs
    d = _dim(a["dim"], x.ndim)
    _ints(idx, "scatter", 0, x.shape[d])
    out = _into(x, src)
    hit = set()
    for p in np.ndindex(idx.shape):
        q = p[:d] + (int(idx[p]),) + p[d + 1:]
        _fail_if(q in hit, f"scatter writes position {q} twice: torch's result is not determined")
        hit.add(q)
        out[q] = src[p]
    return [out]


def _slice_scatter_shape(s, a):
    _fail_if(tuple(s[1]) != _slice_shape(s[:1], a)[0], f"slice_scatter of {s[1]} into {s[0]}")
    return [s[0]]


def _slice_scatter(xs, a):
    _slice_scatter_shape([xs[0].shape, xs[1].shape], a)
    out = _into(*xs)
    out[_slice_index(xs[0].shape, a)] = xs[1]
    return [out]


def _index_put(xs, a):
    x, v, pos = xs[0], xs[-1], tuple(_ints(t, "index_put", -n, n) % n for t, n in zip(xs[1:-1], xs[0].shape))
    out, hit = _into(x, v), np.ravel_multi_index(np.broadcast_arrays(*pos), x.shape[:len(pos)])
    _fail_if(a["accumulate"] and out.dtype == bool, "index_put accumulating booleans")
    _fail_if(not a["accumulate"] and len(set(hit.ravel().tolist())) < hit.size,
             "index_put writes one position twice: torch's result is not determined")
    v = np.broadcast_to(v, out[pos].shape)
    if a["accumulate"]:
        np.add.at(out, pos, v)
    else:
        out[pos] = v
    return [out]


def _index_put_shape(s, a):
    _fail_if(_bcast(s[-1], t := _index_shape(s[:-1], a)[0]) != t, f"index_put of {s[-1]} into {s[0]}")
    return [s[0]]


op("aten.scatter.src", "self index src", {"dim": REQ}, shape=_scatter_shape)(_scatter)
op("aten.index_put.default", "self+indices", {"accumulate": False}, shape=_index_put_shape, variadic=True)(_index_put)
op("aten.slice_scatter.default", "self src", {"dim": 0, "start": None, "end": None, "step": 1},
   shape=_slice_scatter_shape)(_slice_scatter)


# ---------------------------------------------------------------- randomness

def _dropout(xs, a):
    _fail_if(a["p"] != 0 and a["train"] is not False, f"dropout with p={a['p']} in training is random")
    return [xs[0], np.ones(xs[0].shape, dtype=bool)]


op("aten.native_dropout.default", "input", {"p": REQ, "train": None}, outputs=2,
   shape=lambda s, a: [s[0], s[0]])(_dropout)
op("aten.bernoulli_.float aten.bernoulli.p aten.bernoulli.default", "self", {"p": 0.5},
   shape=lambda s, a: [s[0]])(_refuse("bernoulli is random: its values are not a function of its inputs"))
