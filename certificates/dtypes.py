"""Exact dtype semantics: casts, integer wrap-around and the declared dtype of every result.

Integers are exact two's-complement values of their width and booleans are numpy booleans;
both are always concrete (the checker enumerates integer inputs). Floats are reals: a float
result is never rounded, so a claim is "over the reals", and where float16/bfloat16 occur
(``low_precision``) their rounding is not modelled either. The one rounding modelled is that
of a concrete integer converted to a float dtype (nearest, ties to even), so that integer
chains through floats keep torch's values; beyond the largest finite value it is refused.
Anything that is not exact for its dtype is refused (``DtypeError``).
"""

from __future__ import annotations

import math

import numpy as np

from .poly import Rat

INT_BITS = {"int8": (8, True), "uint8": (8, False), "int16": (16, True), "int32": (32, True), "int64": (64, True)}
# Significand bits (with the implicit one) and the largest finite value.
FLOATS = {"float16": (11, (2**11 - 1) * 2**5), "bfloat16": (8, (2**8 - 1) * 2**120),
          "float32": (24, (2**24 - 1) * 2**104), "float64": (53, (2**53 - 1) * 2**971)}
LOW_PRECISION = ("bfloat16", "float16")


class DtypeError(ValueError):
    """A value that cannot be represented exactly in its dtype (or a conversion that is not modelled)."""


def bounds(dtype: str) -> tuple[int, int]:
    """Smallest and largest value of an integer dtype (bool: 0 and 1)."""
    if dtype == "bool":
        return 0, 1
    bits, signed = INT_BITS[dtype]
    return (-(1 << bits - 1), (1 << bits - 1) - 1) if signed else (0, (1 << bits) - 1)


def low_precision(*graphs) -> list[str]:
    """The float dtypes of ``graphs``' tensors whose rounding is not modelled (float16, bfloat16)."""
    return sorted({t.dtype for g in graphs for t in g.tensors.values()} & set(LOW_PRECISION))


def wrap(v: np.ndarray, dtype: str) -> np.ndarray:
    """Integers modulo 2^width into ``dtype``'s range (torch's wrap-around). Exact for results
    of + - * and sums (a ring homomorphism); every node's result is wrapped, so comparisons,
    divisions and lookups see the wrapped values, as in torch."""
    v = np.asarray(v).astype(np.int64)  # int64 arithmetic already wraps modulo 2^64
    bits, _ = INT_BITS[dtype]
    if bits == 64:
        return v
    lo = bounds(dtype)[0]
    return (v - lo) % (1 << bits) + lo


def _round(v: int, p: int) -> int:
    """``v`` rounded to ``p`` significant bits, to nearest, ties to even."""
    a = abs(v)
    s = a.bit_length() - p
    if s <= 0:
        return v
    q, r = divmod(a, 1 << s)
    if r > 1 << s - 1 or (r == 1 << s - 1 and q & 1):
        q += 1
    return (q << s) if v >= 0 else -(q << s)


def to_real(v: np.ndarray, dtype: str, symbolic: bool) -> np.ndarray:
    """Integers or booleans as values of float ``dtype`` (rounded to its precision)."""
    p, top = FLOATS[dtype]
    vals = [_round(int(x), p) for x in v.ravel()]
    if any(abs(x) > top for x in vals):
        raise DtypeError(f"an integer beyond the range of {dtype} (it would be infinite)")
    out = np.empty(len(vals), dtype=object if symbolic else float)
    out[:] = [Rat.of(x) for x in vals] if symbolic else [float(x) for x in vals]
    return out.reshape(v.shape)


def _exact(x, dtype: str):
    """The exact value of a real element converted to ``dtype``: concrete only."""
    if isinstance(x, Rat):
        c = x.constant()
        if c is None:
            raise DtypeError(f"cast of a real-valued (symbolic) value to {dtype} is not supported: "
                             "truncation is not polynomial")
        return c
    if not math.isfinite(float(x)):
        raise DtypeError(f"cast of {float(x)} to {dtype}")
    return float(x)


def cast(x: np.ndarray, dtype: str, symbolic: bool) -> np.ndarray:
    """``x.to(dtype)`` exactly: reals to integers truncate toward zero (concrete values only,
    within the dtype's range: torch's result is undefined outside it), anything to bool is
    ``!= 0``, booleans are 0/1, integers wrap; reals stay reals (over the reals)."""
    if dtype not in FLOATS and dtype not in INT_BITS and dtype != "bool":
        raise DtypeError(f"unknown dtype {dtype!r}")
    k = x.dtype.kind
    if dtype in FLOATS:
        return to_real(x, dtype, symbolic) if k in "iub" else x
    if k in "iub":
        return np.asarray(x != 0) if dtype == "bool" else wrap(x, dtype)
    vals = [_exact(v, dtype) for v in x.ravel()]
    if dtype == "bool":
        return np.array([v != 0 for v in vals], dtype=bool).reshape(x.shape)
    lo, hi = bounds(dtype)
    ints = [int(v) for v in vals]  # int() truncates toward zero (floats and rationals)
    bad = [v for v, i in zip(vals, ints) if not lo <= i <= hi]
    if bad:
        raise DtypeError(f"cast of {bad[0]} to {dtype}: out of range, torch's result is undefined")
    return np.array(ints, dtype=np.int64).reshape(x.shape)


def fit(v: np.ndarray, dtype: str, symbolic: bool) -> np.ndarray:
    """A node's result in its declared ``dtype``: integers wrap to the width, integers and
    booleans declared float become reals; a real declared integer or bool, or an integer
    declared bool, is refused (only a cast converts those)."""
    k = v.dtype.kind
    if dtype == "bool" or dtype in INT_BITS:
        if k not in ("b" if dtype == "bool" else "iu"):
            what = {"b": "boolean", "i": "integer", "u": "integer"}.get(k, "real-valued")
            raise DtypeError(f"a {what} result declared {dtype} (only a cast converts it)")
        return v if dtype == "bool" else wrap(v, dtype)
    return to_real(v, dtype, symbolic) if k in "iub" else v
