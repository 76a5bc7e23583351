"""Positions and masks a model builds inside its graph (transformers' causal masks and rotary positions): ``arange``,
``cumsum``, ``index``; trusted by refinement and staged claims (semantics: docs/ir.md)."""

import math

import numpy as np

from .dtypes import bounds, cast
from .ops import INT_DTYPES, REQ, _along_dim, _bcast, _dim, _fail_if, is_sym, op

def _arange_n(a) -> int:
    s, e, st = a["start"], a["end"], a["step"]
    _fail_if(not all(type(v) is int for v in (s, e, st)) or st == 0 or (e - s) * st < 0,
             f"arange({s}, {e}, {st}): only integer bounds with a step toward the end are supported")
    n = -(-(e - s) // st)
    lo, hi = bounds(a["dtype"]) if a["dtype"] in INT_DTYPES[:-1] else (-math.inf, math.inf)
    _fail_if(n and not lo <= min(s, s + (n - 1) * st) <= max(s, s + (n - 1) * st) <= hi, f"arange beyond {a['dtype']}")
    return n


op("aten.arange.start aten.arange.start_step aten.arange.default", "", {"start": 0, "end": REQ, "step": 1,
   "dtype": None}, shape=lambda s, a: [(_arange_n(a),)])(
    lambda xs, a: [a["start"] + a["step"] * np.arange(_arange_n(a), dtype=np.int64)])


def _index_shape(s, a):
    _fail_if(len(s) < 2 or len(s) - 1 > len(s[0]), f"index of {s[0]} by {len(s) - 1} index tensors")
    return [_bcast(*s[1:]) + tuple(s[0][len(s) - 1:])]


def _ints(t, what: str, lo: int, hi: int):
    _fail_if(is_sym(t) or t.dtype.kind not in "iu", f"{what} indices must be integer tensors")
    _fail_if(t.size and (t.min() < lo or t.max() >= hi), f"{what} index out of range [{lo}, {hi})")
    return t


op("aten.index.Tensor", "self+indices", shape=_index_shape, variadic=True)(
    lambda xs, a: [xs[0][tuple(_ints(t, "index", -n, n) for t, n in zip(xs[1:], xs[0].shape))]])


op("aten.cumsum.default", "self", {"dim": REQ, "dtype": None}, shape=_along_dim)(lambda xs, a: [np.cumsum(
    (x := xs[0] if a["dtype"] is None else cast(xs[0], a["dtype"], a["_symbolic"])).reshape(x.shape or (1,)),
    axis=_dim(a["dim"], x.ndim)).reshape(x.shape)])
