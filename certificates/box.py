"""Witness values for ``chain.witnessed``: rational intervals ``[lo, hi]``, exact at points; what is not
decided raises ``ArithmeticError`` (docs/certificates.md, "The definedness witness is exact")."""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterator

from .poly import CALL, NUMERIC, Q, Rat, apply

INCREASING = ("exp", "log", "sqrt")
SMOOTH = ("tanh", "sigmoid", "gelu", "gelu_tanh", "gelu_grad", "gelu_tanh_grad", "sin", "cos")
MARGIN, PRECISE_MARGIN = Q(1, 2**30), Q(1, 2**120)   # around float values (poly.NUMERIC), precise ones
_ON: list = [False]   # open: True, or the precise values to use (certificates/precise.py)


@contextmanager
def boxes(precise: dict | None = None) -> Iterator[None]:
    """While open, ``call`` (as ``poly.call``) encloses functions of ``Box`` values, by ``precise`` where it can."""
    saved, _ON[0], CALL[0] = _ON[0], precise or True, call
    try:
        yield
    finally:
        _ON[0], CALL[0] = saved, call if saved else apply


def _outward(q, rounding):
    """``q`` rounded (``math.floor`` or ``math.ceil``) to about 60 (precise: 200) significant bits: ends stay short."""
    scale = Q(2) ** ((200 if isinstance(_ON[0], dict) else 60) - q.numerator.bit_length() + q.denominator.bit_length())
    return Q(rounding(q * scale)) / scale


class Box:
    __slots__ = ("lo", "hi")
    ndim = 0  # a ``Rat`` constant defers to ``Box``'s reflected operators (``poly._is_array``)

    def __init__(self, lo, hi=None) -> None:
        self.lo, self.hi = (lo, lo) if hi is None or hi == lo else (_outward(lo, math.floor), _outward(hi, math.ceil))

    @staticmethod
    def of(x) -> Box:
        """``x`` (a ``Box``, a number or a constant ``Rat``) as a ``Box``."""
        if isinstance(x, Box) or (c := Rat.of(x).constant()) is not None:
            return x if isinstance(x, Box) else Box(c)
        raise ArithmeticError(f"{x} is not a constant")

    def __float__(self) -> float:
        raise ArithmeticError("a witness value converted to float")

    def __add__(self, o) -> Box:
        o = Box.of(o)
        return Box(self.lo + o.lo, self.hi + o.hi)

    def __neg__(self) -> Box:
        return Box(-self.hi, -self.lo)

    def __sub__(self, o) -> Box:
        return self + -Box.of(o)

    def __rsub__(self, o) -> Box:
        return Box.of(o) + -self

    def __mul__(self, o) -> Box:
        o = Box.of(o)
        ps = {self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi}
        return Box(min(ps), max(ps))

    def __truediv__(self, o) -> Box:
        o = Box.of(o)
        if o.lo <= 0 <= o.hi:
            raise ArithmeticError("a divisor not shown non-zero")
        return self * Box(1 / o.hi, 1 / o.lo)

    def __rtruediv__(self, o) -> Box:
        return Box.of(o) / self

    def __pow__(self, k: int) -> Box:
        p = math.prod([self if k >= 0 else 1 / self] * abs(int(k)), start=Box(Q(1)))
        return Box(max(p.lo, Q(0)), p.hi) if int(k) % 2 == 0 else p   # an even power is >= 0 (a sum of squares)

    __radd__, __rmul__ = __add__, __mul__


def call(fn: str, *args):
    """``fn(args)``: ``poly.apply``, or while ``boxes`` is open an enclosure of its value."""
    if not _ON[0]:
        return apply(fn, *args)
    xs = [Box.of(a) for a in args]
    if fn == "max":
        return Box(max(x.lo for x in xs), max(x.hi for x in xs))
    if fn == "step" or fn.startswith("route_"):   # these depend on the order of their arguments (and 0) alone
        ends = sorted(xs + [Box(Q(0))] * (fn == "step"), key=lambda x: (x.lo, x.hi))
        if any(a.hi >= b.lo and not a.lo == a.hi == b.lo == b.hi for a, b in zip(ends, ends[1:])):
            raise ArithmeticError(f"{fn} of values whose order is not decided")
        return Box(Q(NUMERIC[fn](*(x.lo for x in xs))))
    x = xs[0]
    if fn == "exp" and len(xs) == 1 and x.hi <= -2**12:   # a masked score (-10000): 0 < exp(x) <= e^-4096 < 2^-4096
        return Box(Q(0), Q(1, 2**4096))
    if len(xs) > 1 or fn not in INCREASING + SMOOTH or fn not in ("log", "sqrt") and max(abs(x.lo), abs(x.hi)) > 2**12:
        raise ArithmeticError(f"{fn} is not enclosed here")
    if fn in ("log", "sqrt") and (x.lo <= 0 if fn == "log" else x.lo < 0):
        raise ArithmeticError(f"{fn} of a value not shown in its domain")
    if x.lo == x.hi and fn in INCREASING and (c := apply(fn, x.lo).constant()) is not None:   # exp(0), sqrt(1/4)...
        return Box(c)
    w = 0 if fn in INCREASING else x.hi - x.lo
    at = (x.lo, x.hi) if fn in INCREASING else ((x.lo + x.hi) / 2,) * 2
    num = _ON[0].get(fn) if isinstance(_ON[0], dict) else None
    m = PRECISE_MARGIN if num else MARGIN
    lo, hi = (num(a) if num else Q(NUMERIC[fn](float(a))) for a in at)
    if fn == "exp" and lo > Q(1, 2**1000):   # a normal value: libm's error is relative (far below 2^-30)
        return Box(lo * (1 - m), hi * (1 + m))
    low = lo - w - m * (1 + abs(lo))
    if fn == "exp":   # underflowing, here x < -693: e^x > 4^x >= 4^floor(x) > 0
        low = max(low, Q(1, 4 ** -math.floor(x.lo)))
    return Box(low, hi + w + m * (1 + abs(hi)))

