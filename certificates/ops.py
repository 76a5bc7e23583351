"""Operator registry: shape rules and element semantics (docs/ir.md), on arrays of ``Rat`` (symbolic),
``Box`` (witnesses), floats (numeric) or ints/bools (always concrete). ``run(xs, a)``: ``a`` holds the
attributes, ``_symbolic`` and for collectives ``_group`` (global ranks in member order)."""

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .dtypes import bounds, cast, to_real
from .poly import MAX_EXPONENT, Rat, call, side_conditions, to_fraction

REQ = object()  # marks a required attribute
Shape = tuple[int, ...]


class ShapeError(ValueError):
    """Operands or attributes that do not fit the operator."""


def _fail_if(bad, msg: str) -> None:
    if bad:
        raise ShapeError(msg)


@dataclass(frozen=True)
class Op:
    target: str
    slots: tuple[str, ...]            # tensor operand names; a trailing '?' marks optional
    attrs: dict[str, Any]             # attribute name -> default (REQ if required)
    shape: Callable[..., list[Shape]]
    run: Callable[..., list[np.ndarray]]
    variadic: bool = False            # one slot taking any number of tensors (cat)
    collective: bool = False          # inputs/outputs one per group member
    p2p: bool = False                 # group [src, dst]: one input on src, one output on dst
    outputs: int | None = 1           # None: decided by the shape rule (split, chunk)


REGISTRY: dict[str, Op] = {}


def op(targets: str, slots: str = "self", attrs: dict | None = None, **kw) -> Callable:
    """Register ``run(xs, a) -> outputs`` under every name in ``targets``; kw: ``shape``, ``outputs``..."""
    def deco(run: Callable) -> Callable:
        names = targets.split()
        o = Op(names[0], tuple(slots.split()), attrs or {}, run=run, **kw)
        for n in names:
            REGISTRY[n] = o
        return run
    return deco


# Ops that only move or copy elements: an integer result lies within its inputs' ranges.
MOVES = {"clone", "alias", "detach", "lift_fresh_copy", "contiguous", "_to_copy", "view", "_unsafe_view",
         "reshape", "permute", "transpose", "t", "expand", "unsqueeze", "squeeze", "slice", "select", "cat",
         "split", "split_with_sizes", "chunk", "narrow", "wait_tensor", "all_gather_into_tensor",
         "broadcast", "all_to_all_single", "send_recv"}


# ---------------------------------------------------------------- helpers

def is_sym(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == object


def _dim(d: int, n: int) -> int:
    _fail_if(not isinstance(d, int) or not -max(n, 1) <= d < max(n, 1), f"dim {d} out of range for rank {n}")
    return d % max(n, 1)


def _dims(ds, n: int) -> list[int]:
    ds = [ds] if isinstance(ds, int) else list(ds or [])
    out = [_dim(d, n) for d in ds]
    _fail_if(len(set(out)) != len(out), f"repeated dim in {ds}")
    return out


def _bcast(*shapes: Shape) -> Shape:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(f"shapes {' and '.join(map(str, shapes))} do not broadcast") from None


def _ranks(shapes, *ranks):
    for s, r in zip(shapes, ranks):
        _fail_if(len(s) != r, f"expected rank {r}, got shape {s}")
    return shapes


def _sizes(size, numel: int) -> Shape:
    size = list(size)
    _fail_if(size.count(-1) > 1 or any(not isinstance(s, int) or s < -1 for s in size), f"bad size {size}")
    if -1 in size:
        rest = math.prod(s for s in size if s != -1)
        _fail_if(rest == 0 or numel % rest, f"cannot view {numel} elements as {size}")
        size[size.index(-1)] = numel // rest
    _fail_if(math.prod(size) != numel, f"cannot view {numel} elements as {size}")
    return tuple(size)


def _scalar(v):
    """An attribute scalar as an exact rational (ints and bools stay ints)."""
    _fail_if(not isinstance(v, (bool, int, float)), f"expected a number, got {v!r}")
    return int(v) if isinstance(v, (bool, int)) else to_fraction(v)


def _lift(a: np.ndarray, c):
    """A scalar attribute in the element type of ``a``."""
    return c if is_sym(a) or isinstance(c, int) else float(c)


def _map(name: str, num: Callable) -> Callable[[np.ndarray], np.ndarray]:
    sym = np.frompyfunc(lambda v: call(name, v), 1, 1)
    return lambda a: sym(a) if is_sym(a) else num(a.astype(float))


_exp, _log, _sqrt, _tanh = _map("exp", np.exp), _map("log", np.log), _map("sqrt", np.sqrt), _map("tanh", np.tanh)
_sigmoid = _map("sigmoid", lambda a: 1.0 / (1.0 + np.exp(-a)))
_erf = np.vectorize(math.erf, otypes=[float])
_gelu = _map("gelu", lambda a: 0.5 * a * (1.0 + _erf(a / math.sqrt(2.0))))
_gelu_tanh = _map("gelu_tanh", lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3))))
_relu_sym = np.frompyfunc(lambda v: call("max", v, 0), 1, 1)


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if is_sym(np.asarray(a)) or is_sym(np.asarray(b)):  # 0-d arithmetic may leave a bare Rat
        return np.frompyfunc(lambda x, y: call("max", x, y), 2, 1)(a, b)
    return np.maximum(a, b)


def _concrete(fn, x, y):
    if is_sym(np.asarray(x)) or is_sym(np.asarray(y)):
        raise ShapeError("comparison of real-valued (symbolic) data is not supported")
    return fn(x, y)


# ---------------------------------------------------------------- matrix products

def _mm_shape(shapes, a, rank: int = 2):
    x, y = _ranks(shapes[-2:], rank, rank)
    _fail_if(x[:-2] != y[:-2] or x[-1] != y[-2], f"matrix product of {x} and {y}: dims differ")
    out = x[:-1] + y[-1:]
    _fail_if(len(shapes) == 3 and _bcast(shapes[0], out) != out, f"addmm bias {shapes[0]} does not broadcast to {out}")
    return [out]


def _matmul_shape(shapes, a):
    x, y = shapes
    _fail_if(not x or not y, "matmul of a 0-d tensor")
    xs, ys = (1,) + x if len(x) == 1 else x, y + (1,) if len(y) == 1 else y
    _fail_if(xs[-1] != ys[-2], f"matmul of {x} and {y}: inner dims differ")
    out = _bcast(xs[:-2], ys[:-2]) + (xs[-2], ys[-1])
    if len(x) == 1:
        out = out[:-2] + out[-1:]
    return [out[:-1] if len(y) == 1 else out]


def _linear_shape(shapes, a):
    x, w = shapes[0], shapes[1]
    _fail_if(len(w) != 2 or not x or x[-1] != w[1], f"linear of input {x} and weight {w}")
    out = x[:-1] + (w[0],)
    if len(shapes) > 2 and shapes[2] is not None and _bcast(shapes[2], out) != out:
        raise ShapeError(f"linear bias {shapes[2]} does not fit {out}")
    return [out]


def _linear(xs, a):
    y = xs[0] @ xs[1].T
    return [y + xs[2] if len(xs) > 2 and xs[2] is not None else y]


op("aten.mm.default", "self mat2", shape=_mm_shape)(lambda xs, a: [xs[0] @ xs[1]])
op("aten.bmm.default", "self mat2", shape=lambda s, a: _mm_shape(s, a, 3))(lambda xs, a: [xs[0] @ xs[1]])
op("aten.matmul.default", "self other", shape=_matmul_shape)(lambda xs, a: [np.asarray(xs[0] @ xs[1])])
op("aten.addmm.default", "self mat1 mat2", {"beta": 1, "alpha": 1}, shape=_mm_shape)(
    lambda xs, a: [_lift(xs[0], _scalar(a["beta"])) * xs[0] + _lift(xs[1], _scalar(a["alpha"])) * (xs[1] @ xs[2])])
op("aten.linear.default", "input weight bias?", shape=_linear_shape)(_linear)


# ---------------------------------------------------------------- elementwise

def _integral(v) -> bool:
    return v is None or isinstance(v, (bool, int)) or isinstance(v, np.ndarray) and v.dtype.kind in "iub"


def _binary(targets: str, fn: Callable, alpha: bool = False, rsub: bool = False, arith: str = "") -> None:
    """``arith``: "ring" (+ - *: integers stay integers unless a real takes part) or "div" (true division)."""
    @op(targets, "self other?", {"other": None, **({"alpha": 1} if alpha else {})},
        shape=lambda s, a: [_bcast(*s)] if len(s) == 2 else [s[0]])
    def run(xs, a):
        if a["_symbolic"] and (arith == "div" or arith and not all(map(_integral, [*xs, a["other"], a.get("alpha")]))):
            xs = [to_real(v, "float64", True) if _integral(v) else v for v in xs]  # exact reals, not float64
        x = xs[0]
        _fail_if(len(xs) < 2 and a.get("other") is None, "needs a tensor or a scalar 'other'")
        o = xs[1] if len(xs) == 2 else _lift(x, _scalar(a["other"]))
        if alpha and a["alpha"] != 1:  # alpha scales the subtrahend: self for rsub, other otherwise
            k = _lift(x, _scalar(a["alpha"]))
            x, o = (x * k, o) if rsub else (x, o * k)
        return [np.asarray(fn(x, o))]


_binary("aten.add.Tensor aten.add.Scalar", lambda x, y: x + y, alpha=True, arith="ring")
_binary("aten.sub.Tensor aten.sub.Scalar", lambda x, y: x - y, alpha=True, arith="ring")
_binary("aten.rsub.Scalar aten.rsub.Tensor", lambda x, y: y - x, alpha=True, rsub=True, arith="ring")
_binary("aten.mul.Tensor aten.mul.Scalar", lambda x, y: x * y, arith="ring")
_binary("aten.div.Tensor aten.div.Scalar", lambda x, y: x / y, arith="div")
_binary("aten.maximum.default", _maximum)
for _n, _f in {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
               "eq": np.equal, "ne": np.not_equal}.items():
    _binary(f"aten.{_n}.Tensor aten.{_n}.Scalar", lambda x, y, f=_f: _concrete(f, x, y))
for _t in ("logical_or.default", "logical_and.default", "bitwise_or.Tensor", "bitwise_and.Tensor"):  # bitwise: of ints
    _binary(f"aten.{_t}", lambda x, y, f=getattr(np, _t.split(".")[0]): _concrete(f, x, y))


def _unary(targets: str, fn: Callable, attrs: dict | None = None) -> None:
    op(targets, "self", attrs, shape=lambda s, a: [s[0]])(lambda xs, a: [np.asarray(fn(xs[0], a))])


def _pow(x, a):
    e = a["exponent"]
    if e in (0.5, -0.5):
        return _sqrt(x) if e > 0 else 1 / _sqrt(x)
    _fail_if(not isinstance(e, (int, float)) or int(e) != e, f"pow with exponent {e!r} is not supported")
    _fail_if(is_sym(x) and abs(e) > MAX_EXPONENT, f"pow exponent {e!r} exceeds the bound {MAX_EXPONENT}")
    return x ** int(e) if not is_sym(x) else np.frompyfunc(lambda v: v ** int(e), 1, 1)(x)


# cos and sin: for captured rotary embeddings (their atoms' numeric meaning is in poly.NUMERIC)
for _n, _f in {"neg": lambda x: -x, "exp": _exp, "log": _log, "sqrt": _sqrt, "rsqrt": lambda x: 1 / _sqrt(x),
               "reciprocal": lambda x: 1 / x, "tanh": _tanh, "sigmoid": _sigmoid, "silu": lambda x: x * _sigmoid(x),
               "relu": lambda x: _relu_sym(x) if is_sym(x) else np.maximum(x, 0.0),
               "cos": _map("cos", np.cos), "sin": _map("sin", np.sin)}.items():
    _unary(f"aten.{_n}.default", lambda x, a, f=_f: f(x))
_unary("aten.gelu.default", lambda x, a: (_gelu_tanh if a["approximate"] == "tanh" else _gelu)(x),
       {"approximate": "none"})
_unary("aten.logical_not.default", lambda x, a: _concrete(lambda p, q: np.logical_not(p), x, x))
_unary("aten.clone.default aten.alias.default aten.detach.default aten.lift_fresh_copy.default "
       "aten.contiguous.default _c10d_functional.wait_tensor.default", lambda x, a: x)
# Casts: exact for every dtype or refused (certificates/dtypes.py); no dtype: a copy.
_unary("aten._to_copy.default", lambda x, a: x if a["dtype"] is None else cast(x, a["dtype"], a["_symbolic"]),
       {"dtype": None})
_unary("prims.convert_element_type.default", lambda x, a: cast(x, a["dtype"], a["_symbolic"]), {"dtype": REQ})
_unary("aten.pow.Tensor_Scalar", _pow, {"exponent": REQ})


def _where(c, x, y):
    _fail_if(is_sym(c), "where() on a real-valued (symbolic) condition is not supported")
    return np.asarray(np.where(c.astype(bool), x, y), dtype=object if is_sym(x) or is_sym(y) else None)


op("aten.where.self", "condition self other", shape=lambda s, a: [_bcast(*s)])(lambda xs, a: [_where(*xs)])
op("aten.masked_fill.Scalar", "self mask", {"value": REQ}, shape=lambda s, a: [_bcast(*s)])(
    lambda xs, a: [_where(xs[1], _lift(xs[0], _scalar(a["value"])), xs[0])])


# ---------------------------------------------------------------- reductions

def _red_dims(a, n: int) -> list[int]:
    return _dims(a.get("dim"), n) if a.get("dim") not in (None, []) else list(range(n))


def _red_shape(shapes, a):
    s, dims = shapes[0], _red_dims(a, len(shapes[0]))
    if a.get("keepdim", False):
        return [tuple(1 if i in dims else n for i, n in enumerate(s))]
    return [tuple(n for i, n in enumerate(s) if i not in dims)]


def _mean(x, axes, keepdims: bool = True):
    return np.sum(x, axis=axes, keepdims=keepdims) * _lift(x, to_fraction(1) / math.prod(x.shape[d] for d in axes))


def _reduce(x, a, how: Callable):
    dims = tuple(_red_dims(a, x.ndim)[:x.ndim])  # dim 0 or -1 of a 0-d tensor: it reduces to itself, as in ATen
    return np.asarray(how(x, dims, keepdims=a.get("keepdim", False)))


for _t, _how in (("aten.sum.dim_IntList aten.sum.default", np.sum), ("aten.mean.dim aten.mean.default", _mean)):
    op(_t, "self", {"dim": None, "keepdim": False, "dtype": None}, shape=_red_shape)(
        lambda xs, a, how=_how: [_reduce(xs[0], a, how)])


def _softmax(x, d, log: bool):
    if not is_sym(x):  # the same function over the reals; keeps float exp from underflowing
        x = x - np.max(x, axis=d, keepdims=True)
    e = _exp(x)
    s = np.sum(e, axis=d, keepdims=True)
    return x - _log(s) if log else e / s


def _along_dim(shapes, a):
    _dim(a["dim"], len(shapes[0]))
    return [shapes[0]]


for _t, _log_sm in (("aten._softmax.default aten.softmax.int", False),
                    ("aten._log_softmax.default aten.log_softmax.int", True)):
    op(_t, "self", {"dim": REQ, "half_to_float": False, "dtype": None}, shape=_along_dim)(
        lambda xs, a, log=_log_sm: [_softmax(xs[0], _dim(a["dim"], xs[0].ndim), log)])


# ---------------------------------------------------------------- views and layout

def _view_shape(shapes, a):
    return [_sizes(a.get("size", a.get("shape")), math.prod(shapes[0]))]


for _t, _key in (("aten.view.default aten._unsafe_view.default", "size"), ("aten.reshape.default", "shape")):
    op(_t, "self", {_key: REQ}, shape=_view_shape)(lambda xs, a, k=_key: [xs[0].reshape(_sizes(a[k], xs[0].size))])


def _permute(targets: str, attrs: dict | None, perm: Callable) -> None:
    """A permutation of axes ``perm(a, rank)``: shape rule and run."""
    op(targets, "self", attrs, shape=lambda s, a: [tuple(s[0][i] for i in perm(a, len(s[0])))])(
        lambda xs, a: [np.transpose(xs[0], perm(a, xs[0].ndim))])


def _perm(a, n):
    p = _dims(a["dims"], n)
    _fail_if(len(p) != n, f"permutation {a['dims']} of rank {n}")
    return p


def _swap(a, n):
    p = list(range(n))
    i, j = _dim(a["dim0"], n), _dim(a["dim1"], n)
    p[i], p[j] = p[j], p[i]
    return p


def _reverse(a, n):
    _fail_if(n > 2, f"t() of rank {n}")
    return list(range(n))[::-1]


_permute("aten.permute.default", {"dims": REQ}, _perm)
_permute("aten.transpose.int", {"dim0": REQ, "dim1": REQ}, _swap)
_permute("aten.t.default", None, _reverse)


def _expand_shape(shapes, a):
    s, size = shapes[0], list(a["size"])
    _fail_if(len(size) < len(s), f"expand {s} to fewer dims {size}")
    pad = (1,) * (len(size) - len(s)) + tuple(s)
    out = tuple(p if n == -1 else n for p, n in zip(pad, size))
    _fail_if(any(p != 1 and p != n for p, n in zip(pad, out)), f"cannot expand {s} to {size}")
    return [out]


def _squeeze_dims(s, a):
    dims = _dims(a["dim"], len(s)) if a.get("dim") is not None else list(range(len(s)))
    return [d for d in dims if s[d] == 1]


op("aten.expand.default", "self", {"size": REQ, "implicit": False}, shape=_expand_shape)(
    lambda xs, a: [np.broadcast_to(xs[0], _expand_shape([xs[0].shape], a)[0]).copy()])
op("aten.unsqueeze.default", "self", {"dim": REQ},
   shape=lambda s, a: [s[0][:_dim(a["dim"], len(s[0]) + 1)] + (1,) + s[0][_dim(a["dim"], len(s[0]) + 1):]])(
    lambda xs, a: [np.expand_dims(xs[0], _dim(a["dim"], xs[0].ndim + 1))])
op("aten.squeeze.dim aten.squeeze.dims aten.squeeze.default", "self", {"dim": None},
   shape=lambda s, a: [tuple(n for i, n in enumerate(s[0]) if i not in _squeeze_dims(s[0], a))])(
    lambda xs, a: [np.squeeze(xs[0], tuple(_squeeze_dims(xs[0].shape, a)))])


def _slice_index(s, a):
    d, step = _dim(a["dim"], len(s)), a.get("step", 1)
    _fail_if(not isinstance(step, int) or step < 1, f"slice step {step!r}")
    idx = [slice(None)] * len(s)
    idx[d] = slice(a.get("start"), a.get("end"), step)
    return tuple(idx)


def _slice_shape(shapes, a):
    return [np.empty(shapes[0], dtype=np.int8)[_slice_index(shapes[0], a)].shape]


def _narrow(a):
    return {"dim": a["dim"], "start": a["start"], "end": a["start"] + a["length"], "step": 1}


def _narrow_shape(shapes, a):
    d = _dim(a["dim"], len(shapes[0]))
    if a["start"] < 0 or a["length"] < 0 or a["start"] + a["length"] > shapes[0][d]:
        raise ShapeError(f"narrow of {a['length']} at {a['start']} out of range on dim {d} of {shapes[0]}")
    return _slice_shape(shapes, _narrow(a))


def _select_shape(shapes, a):
    s, d = shapes[0], _dim(a["dim"], len(shapes[0]))
    _fail_if(not -s[d] <= a["index"] < s[d], f"index {a['index']} out of range on dim {d} of {s}")
    return [s[:d] + s[d + 1:]]


op("aten.slice.Tensor", "self", {"dim": 0, "start": None, "end": None, "step": 1}, shape=_slice_shape)(
    lambda xs, a: [xs[0][_slice_index(xs[0].shape, a)]])
op("aten.narrow.default", "self", {"dim": REQ, "start": REQ, "length": REQ}, shape=_narrow_shape)(
    lambda xs, a: [xs[0][_slice_index(xs[0].shape, _narrow(a))]])
op("aten.select.int", "self", {"dim": REQ, "index": REQ}, shape=_select_shape)(
    lambda xs, a: [np.take(xs[0], a["index"], axis=_dim(a["dim"], xs[0].ndim))])


def _cat_shape(shapes, a):
    shapes = [s for s in shapes if s != (0,)] or shapes  # legacy empty tensors are skipped, as in ATen
    _fail_if(not shapes, "cat of no tensors")
    d = _dim(a["dim"], len(shapes[0]))
    for s in shapes:
        if len(s) != len(shapes[0]) or any(x != y for i, (x, y) in enumerate(zip(s, shapes[0])) if i != d):
            raise ShapeError(f"cat of {shapes} along dim {d}")
    return [shapes[0][:d] + (sum(s[d] for s in shapes),) + shapes[0][d + 1:]]


def _cat(xs, a):
    xs = [x for x in xs if x.shape != (0,)] or xs  # legacy empty tensors, as in the shape rule
    return [np.concatenate(xs, axis=_dim(a["dim"], xs[0].ndim))]


op("aten.cat.default", "tensors", {"dim": 0}, shape=_cat_shape, variadic=True)(_cat)


def _split_sizes(s, a) -> list[int]:
    d = _dim(a["dim"], len(s))
    if "split_sizes" in a:
        sizes = list(a["split_sizes"])
    else:
        _fail_if("chunks" in a and (not isinstance(a["chunks"], int) or a["chunks"] < 1), f"chunks {a.get('chunks')!r}")
        if "chunks" in a and s[d] == 0:  # ATen: that many empty chunks
            return [0] * a["chunks"]
        n = a["split_size"] if "split_size" in a else -(-s[d] // a["chunks"])
        _fail_if(not isinstance(n, int) or n < 1, f"split size {n!r}")
        sizes = [min(n, s[d] - i) for i in range(0, s[d], n)] or [0]
    if sum(sizes) != s[d] or any(not isinstance(x, int) or x < 0 for x in sizes):
        raise ShapeError(f"split sizes {sizes} do not cover dim {d} of {s}")
    return sizes


def _split_shape(shapes, a):
    s, d = shapes[0], _dim(a["dim"], len(shapes[0]))
    return [s[:d] + (n,) + s[d + 1:] for n in _split_sizes(s, a)]


def _split(xs, a):
    cuts = np.cumsum(_split_sizes(xs[0].shape, a))[:-1]
    return list(np.split(xs[0], cuts, axis=_dim(a["dim"], xs[0].ndim)))


for _t, _key in (("aten.split.Tensor", "split_size"), ("aten.split_with_sizes.default", "split_sizes"),
                 ("aten.chunk.default", "chunks")):
    op(_t, "self", {_key: REQ, "dim": 0}, shape=_split_shape, outputs=None)(_split)


def _pad_widths(s, a):
    pad = list(a["pad"])
    if len(pad) % 2 or len(pad) // 2 > len(s) or any(not isinstance(p, int) for p in pad):
        raise ShapeError(f"pad {pad} for shape {s}")
    widths = [(0, 0)] * (len(s) - len(pad) // 2) + [(pad[i], pad[i + 1]) for i in range(0, len(pad), 2)][::-1]
    _fail_if(any(lo < 0 or hi < 0 for lo, hi in widths), "negative padding is not supported")
    return widths


def _padded(s, a) -> Shape:
    return tuple(n + lo + hi for n, (lo, hi) in zip(s, _pad_widths(s, a)))


def _pad(xs, a):
    x = xs[0]
    out = np.full(_padded(x.shape, a), _lift(x, _scalar(a["value"])), dtype=x.dtype)
    out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, _pad_widths(x.shape, a)))] = x
    return [out]


op("aten.constant_pad_nd.default", "self", {"pad": REQ, "value": 0}, shape=lambda s, a: [_padded(s[0], a)])(_pad)


# ---------------------------------------------------------------- lookups and creation

def _embedding(xs, a):
    w, idx = xs
    _fail_if(is_sym(idx) or idx.dtype.kind not in "iu", "embedding indices must be integer tensors")
    _fail_if(idx.size and (idx.min() < 0 or idx.max() >= w.shape[0]), f"embedding index out of range [0, {w.shape[0]})")
    return [w[idx]]


op("aten.embedding.default", "weight indices", {"padding_idx": -1, "scale_grad_by_freq": False, "sparse": False},
   shape=lambda s, a: [tuple(s[1]) + tuple(_ranks(s[:1], 2)[0][1:])])(_embedding)

INT_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "bool")


def _constant(shape, value, sym: bool) -> np.ndarray:
    return np.full(shape, Rat.of(value) if sym else float(value), dtype=object if sym else float)


def _full(size, value, a):
    """A constant tensor: concrete for integer dtypes, else in the evaluation's element type."""
    if a.get("dtype") == "bool":
        return [np.full(tuple(size), value != 0, dtype=bool)]
    if a.get("dtype") in INT_DTYPES:  # truncated toward zero; torch refuses values beyond the dtype
        _fail_if(not bounds(a["dtype"])[0] <= int(value) <= bounds(a["dtype"])[1],
                 f"fill value {value} does not fit {a['dtype']}")
        return [np.full(tuple(size), int(value), dtype=np.int64)]
    return [_constant(tuple(size), value, a["_symbolic"])]


_CREATE = {"shape": lambda s, a: [tuple(a["size"])]}
op("aten.full.default", "", {"size": REQ, "fill_value": REQ, "dtype": None}, **_CREATE)(
    lambda xs, a: _full(a["size"], _scalar(a["fill_value"]), a))
op("aten.zeros.default", "", {"size": REQ, "dtype": None}, **_CREATE)(lambda xs, a: _full(a["size"], 0, a))
op("aten.ones.default", "", {"size": REQ, "dtype": None}, **_CREATE)(lambda xs, a: _full(a["size"], 1, a))


# ---------------------------------------------------------------- normalization

def _norm_axes(s, a) -> tuple[int, ...]:
    ns = tuple(a["normalized_shape"])
    _fail_if(not ns or tuple(s[len(s) - len(ns):]) != ns, f"normalized_shape {list(ns)} does not end shape {s}")
    return tuple(range(len(s) - len(ns), len(s)))


def _affine(y, xs):
    if len(xs) > 1 and xs[1] is not None:
        y = y * xs[1]
    if len(xs) > 2 and xs[2] is not None:
        y = y + xs[2]
    return y


def _rstd(x, squares, ax, eps):
    """``1 / sqrt(mean(squares) + eps)``: > 0 where eps > 0 (agda Positivity.rms), so no side condition is recorded."""
    with side_conditions(None if _scalar(eps) <= 0 else False):
        return 1 / _sqrt(_mean(squares, ax) + _lift(x, _scalar(eps)))


def _layer_norm(xs, a):
    x = xs[0]
    ax = _norm_axes(x.shape, a)
    mean = _mean(x, ax)
    c = x - mean
    rstd = _rstd(x, c * c, ax, a["eps"])
    return [_affine(c * rstd, xs), mean, rstd]


def _ln_shape(shapes, a):
    s, ax = shapes[0], _norm_axes(shapes[0], a)
    for w in shapes[1:]:
        if w is not None and tuple(w) != tuple(a["normalized_shape"]):
            raise ShapeError(f"layer_norm weight/bias {w} vs normalized_shape {a['normalized_shape']}")
    stat = tuple(1 if i in ax else n for i, n in enumerate(s))
    return [s, stat, stat]


def _rms_norm(xs, a):
    x = xs[0]
    ax = _norm_axes(x.shape, a)
    eps = a["eps"] if a["eps"] is not None else 1.1920928955078125e-07  # float32 epsilon, as torch
    return [_affine(x * _rstd(x, x * x, ax, eps), xs[:2])]


op("aten.native_layer_norm.default", "input weight? bias?", {"normalized_shape": REQ, "eps": REQ},
   shape=_ln_shape, outputs=3)(_layer_norm)
op("aten.layer_norm.default", "input weight? bias?", {"normalized_shape": REQ, "eps": 1e-5, "cudnn_enable": True},
   shape=lambda s, a: _ln_shape(s, a)[:1])(lambda xs, a: _layer_norm(xs, a)[:1])
op("aten.rms_norm.default", "input weight?", {"normalized_shape": REQ, "eps": None},
   shape=lambda s, a: _ln_shape(s, a)[:1])(_rms_norm)


# ---------------------------------------------------------------- losses

def _reduction(loss, weight, r: int):
    return loss if r == 0 else np.asarray(np.sum(loss) if r == 2 else np.sum(loss) / weight)


def _nll_shape(shapes, a):
    x, t = shapes[0], shapes[1]
    _fail_if(len(x) not in (1, 2) or tuple(t) != tuple(x[:-1]), f"nll_loss of input {x} and target {t}")
    return [tuple(t) if a["reduction"] == 0 else (), ()]


def _nll_forward(xs, a):
    logp, target = xs[0], xs[1]
    _fail_if(len(xs) > 2 and xs[2] is not None, "class weights are not supported")
    _fail_if(is_sym(target) or target.dtype.kind not in "iu", "loss targets must be integer tensors")
    _fail_if(logp.ndim not in (1, 2), f"nll_loss input of rank {logp.ndim}")
    lp, t = logp.reshape(-1, logp.shape[-1]), target.reshape(-1)
    keep = t != a["ignore_index"]
    _fail_if(np.any((t[keep] < 0) | (t[keep] >= lp.shape[1])), "loss target out of range")
    loss = _constant(t.shape, 0, is_sym(lp))
    loss[keep] = -lp[keep, t[keep]]
    w = _lift(logp, to_fraction(int(keep.sum())))
    total_weight = w if a["reduction"] or logp.ndim == 1 else _lift(logp, to_fraction(0))  # as ATen
    return [_reduction(loss.reshape(target.shape), w, a["reduction"]), np.asarray(total_weight)]


def _cross_entropy(xs, a):
    _fail_if(a["label_smoothing"], "label smoothing is not supported")
    return _nll_forward([_softmax(xs[0], xs[0].ndim - 1, True)] + list(xs[1:]), a)[:1]


def _mse(xs, a):
    d = xs[0] - xs[1]
    return [_reduction(d * d, _lift(d, d.size), a["reduction"])]


_NLL = {"reduction": 1, "ignore_index": -100}
op("aten.nll_loss_forward.default", "self target weight?", _NLL, shape=_nll_shape, outputs=2)(_nll_forward)
op("aten.cross_entropy_loss.default", "self target weight?", {**_NLL, "label_smoothing": 0.0},
   shape=lambda s, a: _nll_shape(s, a)[:1])(_cross_entropy)
op("aten.mse_loss.default", "self target", {"reduction": 1},  # operands broadcast
   shape=lambda s, a: [_bcast(*s) if a["reduction"] == 0 else _bcast(*s)[:0]])(_mse)


# ---------------------------------------------------------------- collectives
# Inputs and outputs are one tensor per member of the node's group, in group order.

def _reduce_all(xs, how: str):
    _fail_if(how not in ("sum", "avg", "max", "min"), f"reduce_op {how!r} (expected one of sum, avg, max, min)")
    if how == "min":
        return -_reduce_all([-x for x in xs], "max")
    if how == "max":
        return functools.reduce(_maximum, xs)
    out = sum(xs[1:], xs[0])
    return out * _lift(out, to_fraction(1) / len(xs)) if how == "avg" else out


def _same_shapes(shapes):
    _fail_if(any(s != shapes[0] for s in shapes), f"group members disagree on shape: {shapes}")
    return shapes[0]


def _rs_shape(s, a):
    s0 = _same_shapes(s)
    _fail_if(not s0 or s0[0] % len(s), f"reduce_scatter of {s0} over {len(s)} ranks: dim 0 does not divide")
    return [(s0[0] // len(s),) + s0[1:]] * len(s)


def _a2a_sizes(n0: int, sizes, w: int) -> list[int]:
    if sizes is None:
        _fail_if(n0 % w, f"all_to_all of dim {n0} over {w} ranks: does not divide")
        return [n0 // w] * w
    if len(sizes) != w or sum(sizes) != n0 or any(not isinstance(x, int) or x < 0 for x in sizes):
        raise ShapeError(f"split sizes {sizes} do not cover dim {n0} over {w} ranks")
    return list(sizes)


def _a2a_plan(shapes, a):
    """Per rank: the input split sizes and output split sizes of every member."""
    w = len(shapes)
    ins, outs = a["input_split_sizes"] or [None] * w, a["output_split_sizes"] or [None] * w
    _fail_if(len(ins) != w or len(outs) != w, "all_to_all split sizes need one list per group member")
    i_sz = [_a2a_sizes(s[0], ins[r], w) if s else _a2a_sizes(0, [], w) for r, s in enumerate(shapes)]
    o_sz = [[i_sz[j][r] for j in range(w)] for r in range(w)]
    for r in range(w):
        if outs[r] is not None and list(outs[r]) != o_sz[r]:
            raise ShapeError(f"output split sizes of member {r} are {outs[r]}, the inputs send {o_sz[r]}")
    return i_sz, o_sz


def _a2a_shape(shapes, a):
    if any(s[1:] != shapes[0][1:] or not s for s in shapes):
        raise ShapeError(f"all_to_all members disagree on trailing shape: {shapes}")
    return [(sum(o),) + shapes[0][1:] for o in _a2a_plan(shapes, a)[1]]


def _a2a(xs, a):
    i_sz, _ = _a2a_plan([x.shape for x in xs], a)
    parts = [np.split(x, np.cumsum(i_sz[r])[:-1], axis=0) for r, x in enumerate(xs)]
    return [np.concatenate([parts[j][r] for j in range(len(xs))], axis=0) for r in range(len(xs))]


def _src(a) -> int:
    _fail_if(a["src"] not in a["_group"], f"broadcast source {a['src']} is not in the group {a['_group']}")
    return a["_group"].index(a["src"])


def _broadcast_shape(shapes, a):
    _src(a)
    return [_same_shapes(shapes)] * len(shapes)


_COLL = {"collective": True}
op("_c10d_functional.all_reduce.default", "self", {"reduce_op": "sum"}, shape=lambda s, a: [_same_shapes(s)] * len(s), **_COLL)(
    lambda xs, a: [_reduce_all(xs, a["reduce_op"])] * len(xs))
op("_c10d_functional.all_gather_into_tensor.default", "self", {}, **_COLL,
   shape=lambda s, a: [(len(s) * _same_shapes(s)[0],) + s[0][1:]] * len(s))(
    lambda xs, a: [np.concatenate(xs, axis=0)] * len(xs))
op("_c10d_functional.reduce_scatter_tensor.default", "self", {"reduce_op": "sum"}, shape=_rs_shape, **_COLL)(
    lambda xs, a: np.split(_reduce_all(xs, a["reduce_op"]), len(xs), axis=0))
# Split sizes are given per group member (lists of lists), since each rank passes its own.
op("_c10d_functional.all_to_all_single.default", "self", {"output_split_sizes": None, "input_split_sizes": None},
   shape=_a2a_shape, outputs=None, **_COLL)(_a2a)
op("_c10d_functional.broadcast.default", "self", {"src": REQ}, shape=_broadcast_shape, **_COLL)(
    lambda xs, a: [xs[_src(a)]] * len(xs))
# Point-to-point: group [src, dst]; one input on src, one output on dst.
op("c10d.send_recv.default", "self", {}, shape=lambda s, a: [s[0]], collective=True, p2p=True)(lambda xs, a: [xs[0]])
