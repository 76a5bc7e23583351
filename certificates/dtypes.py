"""Exact dtype semantics (docs/certificates.md): casts, integer wrap-around, the declared dtype of every result;
floats are reals (only an integer converted to a float is rounded); anything else inexact is refused."""

import numpy as np

from .poly import Rat

INT_BITS = {"int8": (8, True), "uint8": (8, False), "int16": (16, True), "int32": (32, True), "int64": (64, True)}
# Significand bits (with the implicit one) and the largest finite value.
FLOATS = {"float16": (11, (2**11 - 1) * 2**5), "bfloat16": (8, (2**8 - 1) * 2**120),
          "float32": (24, (2**24 - 1) * 2**104), "float64": (53, (2**53 - 1) * 2**971)}


class DtypeError(ValueError):
    """A value not exact in its dtype, or a conversion that is not modelled."""


def bounds(dtype: str) -> tuple[int, int]:
    """Smallest and largest value of an integer dtype (bool: 0 and 1)."""
    bits, signed = INT_BITS.get(dtype, (1, False))
    return (-(1 << bits - 1), (1 << bits - 1) - 1) if signed else (0, (1 << bits) - 1)


def wrap(v: np.ndarray, dtype: str) -> np.ndarray:
    """Integers modulo 2^width into ``dtype`` (torch's wrap-around). A ring homomorphism for + - *
    and sums; every result is wrapped, so comparisons and lookups see wrapped values, as in torch."""
    v, (bits, _) = np.asarray(v).astype(np.int64), INT_BITS[dtype]  # int64 arithmetic wraps already
    return v if bits == 64 else (v - bounds(dtype)[0]) % (1 << bits) + bounds(dtype)[0]


def _round(v: int, p: int) -> int:
    """``v`` rounded to ``p`` significant bits, to nearest, ties to even."""
    s = abs(v).bit_length() - p
    if s <= 0:
        return v
    q, r = divmod(abs(v), 1 << s)
    q += r > 1 << s - 1 or (r == 1 << s - 1 and q & 1)
    return (q << s) * (1 if v >= 0 else -1)


def to_real(v: np.ndarray, dtype: str, symbolic: bool) -> np.ndarray:
    """Integers or booleans as values of float ``dtype`` (rounded to its precision)."""
    p, top = FLOATS[dtype]
    vals = [_round(int(x), p) for x in v.ravel()]
    if any(abs(x) > top for x in vals):
        raise DtypeError(f"an integer beyond the range of {dtype} (it would be infinite)")
    out = np.empty(len(vals), dtype=object if symbolic else float)
    out[:] = [Rat.of(x) if symbolic else float(x) for x in vals]
    return out.reshape(v.shape)


def _exact(x, dtype: str):
    """A real element's exact value, to convert to ``dtype``: concrete values only."""
    c = x.constant() if isinstance(x, Rat) else float(x)
    if c is None or not np.isfinite(float(c)):
        raise DtypeError(f"cast of {'a real-valued (symbolic) value' if c is None else c} to {dtype} is not "
                         "supported" + (": truncation is not polynomial" if c is None else ""))
    return c


def cast(x: np.ndarray, dtype: str, symbolic: bool) -> np.ndarray:
    """``x.to(dtype)`` exactly: reals to integers truncate toward zero (concrete, within range), anything to
    bool is ``!= 0``, booleans are 0/1, integers wrap; reals stay reals."""
    if dtype not in FLOATS and dtype not in INT_BITS and dtype != "bool":
        raise DtypeError(f"unknown dtype {dtype!r}")
    if x.dtype.kind in "iub":  # integers and booleans
        return to_real(x, dtype, symbolic) if dtype in FLOATS else np.asarray(x != 0) if dtype == "bool" \
            else wrap(x, dtype)
    if dtype in FLOATS:
        return x
    vals = [_exact(v, dtype) for v in x.ravel()]
    lo, hi = bounds(dtype)
    ints = [v != 0 if dtype == "bool" else int(v) for v in vals]  # int() truncates toward zero
    bad = [v for v, i in zip(vals, ints) if not lo <= i <= hi]
    if bad:
        raise DtypeError(f"cast of {bad[0]} to {dtype}: out of range, torch's result is undefined")
    return np.array(ints, dtype=bool if dtype == "bool" else np.int64).reshape(x.shape)


def fit(v: np.ndarray, dtype: str, symbolic: bool) -> np.ndarray:
    """A node's result in its declared ``dtype``: integers wrap, integers and booleans declared float
    become reals; anything else is refused (only a cast converts it)."""
    k = v.dtype.kind
    if dtype == "bool" or dtype in INT_BITS:
        if k not in ("b" if dtype == "bool" else "iu"):
            what = {"b": "boolean", "i": "integer", "u": "integer"}.get(k, "real-valued")
            raise DtypeError(f"a {what} result declared {dtype} (only a cast converts it)")
        return v if dtype == "bool" else wrap(v, dtype)
    return to_real(v, dtype, symbolic) if k in "iub" else v
