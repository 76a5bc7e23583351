"""Values to about 2^-190 for the definedness witness of refinement claims (``box.boxes(PRECISE)``;
docs/certificates.md, "The definedness witness is exact"): ``exp``, ``log`` and ``sqrt`` are Python's ``decimal``
operations (correctly rounded) at 60 digits, the others built from them and from the Taylor series of erf (at 160
digits) and of sine and cosine (after reducing by 2 pi). Each value is within 2^-150 (1 + |v|) of the function's, so
``box.PRECISE_MARGIN`` (2^-120) encloses it; ``poly.NUMERIC``'s float functions keep ``box.MARGIN`` (2^-30)."""

import decimal
from decimal import Decimal as D

from .poly import Q

_C, _WIDE = decimal.Context(prec=60), decimal.Context(prec=160)
PI = D("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798")
_K = _C.sqrt(_C.divide(2, PI))   # sqrt(2 / pi), gelu_tanh's constant


def _erf(x: D) -> D:
    if abs(x) > 12:   # erf is within 10^-64 of its sign
        return D(1).copy_sign(x)
    x = term = total = _WIDE.plus(x)
    n = 0
    while abs(term) > D(10) ** -155:   # sum_n (-1)^n x^(2n+1) / (n! (2n+1)), terms decreasing once n > x^2
        n += 1
        term = _WIDE.divide(_WIDE.multiply(_WIDE.minus(term), _WIDE.multiply(x, x)), n)
        total = _WIDE.add(total, _WIDE.divide(term, 2 * n + 1))
    return _C.multiply(total, _C.divide(2, _C.sqrt(PI)))


def _series(r: D, k: int) -> D:
    """sin (k = 1) or cos (k = 0) of ``r`` (|r| <= pi) by its Taylor series."""
    term = total = r if k else D(1)
    n = k
    while abs(term) > D(10) ** -155:
        term = _WIDE.divide(_WIDE.multiply(_WIDE.minus(term), _WIDE.multiply(r, r)), (n + 1) * (n + 2))
        total, n = _WIDE.add(total, term), n + 2
    return +total


def _reduce(x: D) -> D:
    """``x`` minus the multiple of 2 pi nearest to it (|x| <= 4096: the error stays below 10^-95)."""
    two_pi = _WIDE.multiply(2, PI)
    return _WIDE.subtract(x, _WIDE.multiply(two_pi, _WIDE.divide(x, two_pi).to_integral_value()))


def _sigmoid(x: D) -> D:
    if abs(x) > 1000:   # within e^-1000 of 0 or 1
        return D(int(x > 0))
    return _C.divide(1, _C.add(1, _C.exp(-x)))


def _tanh(x: D) -> D:
    return _C.subtract(_C.multiply(2, _sigmoid(_C.multiply(2, x))), 1)


def _tanh_gelu(x: D) -> D:
    return _tanh(_C.multiply(_K, x + D("0.044715") * x ** 3))


_FNS = {
    "exp": _C.exp, "log": _C.ln, "sqrt": _C.sqrt, "sigmoid": _sigmoid, "tanh": _tanh,
    "gelu": lambda x: x * (1 + _erf(x / _C.sqrt(2))) / 2,
    "gelu_grad": lambda x: (1 + _erf(x / _C.sqrt(2))) / 2 + x * _C.exp(-x * x / 2) / _C.sqrt(2 * PI),
    "gelu_tanh": lambda x: x * (1 + _tanh_gelu(x)) / 2,
    "gelu_tanh_grad": lambda x: ((1 + (t := _tanh_gelu(x))) + x * (1 - t * t) * _K * (1 + 3 * D("0.044715") * x * x)) / 2,
    "sin": lambda x: _series(_reduce(x), 1), "cos": lambda x: _series(_reduce(x), 0),
}


def _value(f, q):
    x = _WIDE.divide(D(int(q.numerator)), D(int(q.denominator)))
    with decimal.localcontext(_C):   # the operators above: at 60 digits
        return Q(*f(x).as_integer_ratio())   # exact, as Fraction(f(x))


PRECISE = {fn: (lambda q, f=f: _value(f, q)) for fn, f in _FNS.items()}
