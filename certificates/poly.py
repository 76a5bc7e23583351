"""Exact normal form over the rationals with opaque atoms.

A value is a ratio ``Rat(n, d)`` of polynomials: ``{(mono, expo): Q}`` (``Q``: gmpy2's ``mpq``, else ``Fraction``), a
monomial (sorted ``(atom, power)`` pairs) times ``exp(expo)``, ``expo`` a polynomial key (``()``: no exp factor), so
``exp(a) * exp(b) = exp(a + b)`` by construction. Other functions (tanh, sqrt, max...) are atoms named by the canonical
text of their normalized arguments. Values are equal when ``n1*d2 - n2*d1`` normalizes to zero (sound where d != 0)."""

import hashlib
import math
import numbers
from contextlib import contextmanager
from fractions import Fraction

from functools import lru_cache
from typing import Callable, Iterator

from .errors import LimitExceeded, Unsupported, fail_if

try:  # exact rationals in C, an order of magnitude faster; same values as Fraction
    from gmpy2 import mpq as Q
except ImportError:  # pragma: no cover
    Q = Fraction

Mono = tuple  # tuple[tuple[str, int], ...]
ONE_KEY = ((), ())   # a term key: (Mono, expo poly key)
MAX_TERMS = 50_000
LAZY_LONG, LAZY_SHORT = 16, 4   # Poly.add: a sum of these sizes is built lazily
MAX_EXPONENT = 64   # |k| of a power of a symbolic value (each step is one product)

# Atom name -> (function, argument values); variables are atoms absent from this table.
ATOMS: dict[str, tuple[str, tuple["Rat", ...]]] = {}

# Side conditions of partial operations: (kind, value) with kind "!=0" (a divisor), ">0" (a log
# argument) or ">=0" (a sqrt argument); recorded while ``side_conditions`` collects.
Cond = tuple[str, "Rat"]
_SIDE: list[Cond] | None = None


@contextmanager
def side_conditions(collect: bool | None = True) -> Iterator[list[Cond]]:
    """Collect the side condition of each partial operation on a non-constant value (constants out of domain raise);
    ``collect`` False: none meanwhile (shown apart, ``ops._rstd``), None: as before."""
    global _SIDE
    saved, _SIDE = _SIDE, [] if collect else _SIDE if collect is None else None
    try:
        yield _SIDE
    finally:
        _SIDE = saved


def to_fraction(x):
    """Exact rational (``Q``) of a Python/numpy number; floats by their shortest decimal text."""
    if isinstance(x, Q):
        return x
    if isinstance(x, (bool, numbers.Integral, Fraction)) or getattr(getattr(x, "dtype", None), "kind", "f") in "biu":
        return Q(x if isinstance(x, Fraction) else int(x))   # numpy integers exactly, never through float
    f = float(x)
    fail_if(not math.isfinite(f), Unsupported, f"non-finite constant {f}")
    return Q(int(f)) if f == int(f) and abs(f) < 2**53 else Q(Fraction(repr(f)))


def _is_array(o) -> bool:
    """A numpy array (0-d included): its own reflected operator then maps ``Rat`` over elements."""
    return type(o) is not Rat and hasattr(o, "ndim") and not isinstance(o, numbers.Number)


def _operator(op: Callable) -> Callable:
    """The operator ``op(self, Rat.of(o))``; ``NotImplemented`` for an array ``o`` (``_is_array``)."""
    return lambda self, o: NotImplemented if _is_array(o) else op(self, Rat.of(o))


class Expo(tuple):
    """An exponent key with its hash cached (term keys hash in O(1)); equal, ordered, hashed as the tuple."""

    def __init__(self, key: tuple) -> None:
        self.h = tuple.__hash__(self)

    def __hash__(self) -> int:
        return self.h

    def __reduce__(self):  # never carry a hash over to another process
        return intern_expo, (tuple(self),)


_EXPOS: dict[tuple, Expo] = {}


def intern_expo(key: tuple) -> tuple:
    """The interned exponent for the polynomial key ``key`` (``()`` for zero)."""
    return key if not key or type(key) is Expo else _EXPOS.get(key) or _EXPOS.setdefault(key, Expo(key))


@lru_cache(maxsize=1 << 17)
def _mono_mul(a: Mono, b: Mono) -> Mono:
    if not a or not b or a[-1][0] < b[0][0]:  # sorted and disjoint: concatenate
        return a + b
    if b[-1][0] < a[0][0]:
        return b + a
    d = dict(a)
    for v, p in b:
        d[v] = d.get(v, 0) + p
    return tuple(sorted((v, p) for v, p in d.items() if p))


@lru_cache(maxsize=1 << 17)
def _expo_add(a: tuple, b: tuple) -> tuple:
    return intern_expo(a or b if not a or not b else Poly(dict(a)).add(Poly(dict(b))).key())


def _accumulate(d: dict, k, c) -> None:
    """``d[k] += c``, dropping a zero coefficient (a new key keeps the object ``c``: shared, not copied)."""
    if v := (d[k] + c if k in d else c):
        d[k] = v
    else:
        d.pop(k, None)


class Poly:
    """Sparse polynomial: ``{term key: Q}`` with no zero coefficients. A long plus a short one
    is lazy (``_up``: ``base`` plus the first ``n`` entries of a shared append-only ``log`` of short
    operands), replayed by ``t`` into eager ``add``'s own dict: a dot product costs O(n), not O(n^2)."""

    __slots__ = ("_t", "_k", "_up")

    def __init__(self, t: dict | None = None, up: tuple | None = None) -> None:
        self._t: dict | None = {} if t is None and up is None else t   # None while lazy (``up``)
        self._k: tuple | None = None
        self._up: tuple | None = up

    @property
    def t(self) -> dict:
        if self._up is not None:
            self._force()
        return self._t

    def _force(self) -> None:
        """Replay the log: per addition ``len << 2 | negated << 1 | left operand``, then its terms."""
        base, log, n = self._up
        d, i = dict(base._t), 0
        while i < n:
            h = log[i]
            m, neg, j, i = h >> 2, h & 2, i + 1, i + 1 + 2 * (h >> 2)
            b = ((log[j], log[j + 1]),) if m == 1 else zip(log[j:i:2], log[j + 1:i:2])   # distinct keys
            if (len(d) <= m) if h & 1 else (not neg and m > len(d)):   # eager add copies the other side
                d, b = dict(b), d.items()
            for k, c in b:
                _accumulate(d, k, -c if neg else c)
        self._t, self._up = d, None

    @staticmethod
    def const(c) -> "Poly":
        return Poly({ONE_KEY: c} if (c := to_fraction(c)) else {})

    @staticmethod
    def atom(name: str) -> "Poly":
        return Poly({(((name, 1),), ()): Q(1)})

    def key(self) -> tuple:
        if self._k is None:
            self._k = tuple(sorted(self.t.items()))
        return self._k

    def is_zero(self) -> bool:
        return not self.t

    def constant(self):   # the constant term of a constant polynomial, else None
        return (self.t.get(ONE_KEY) if len(self.t) == 1 else None) if self.t else Q(0)

    def add(self, o: "Poly", sign: int = 1) -> "Poly":
        for long, short, left in ((self, o, 0), (o, self, 1)):
            if short._up is None and len(short._t) <= LAZY_SHORT and (sign == 1 or not left) \
                    and (long._up is not None or len(long._t) >= LAZY_LONG):
                base, log, n = long._up or (long, [], 0)
                log = log if len(log) == n else log[:n]   # a shared prefix: extend a copy
                log.append(len(short._t) << 2 | (sign != 1) << 1 | left)
                for kc in short._t.items():
                    log.extend(kc)
                return Poly(None, (base, log, len(log)))
        a, b = self.t, o.t
        if sign == 1 and len(b) > len(a):  # copy the larger, walk the smaller
            a, b = b, a
        d = dict(a)
        for k, c in b.items():
            _accumulate(d, k, c if sign == 1 else -c)
        return Poly(d)

    def scale(self, c) -> "Poly":
        return Poly({k: v * c for k, v in self.t.items()}) if c else Poly()

    def mul(self, o: "Poly") -> "Poly":
        if len(t := self.t) == 1 == len(u := o.t) and ONE_KEY not in t and ONE_KEY not in u:  # x * y
            ((m1, e1), c1), ((m2, e2), c2) = *t.items(), *u.items()
            return Poly({(_mono_mul(m1, m2), _expo_add(e1, e2)): c2 if c1 == 1 else c1 * c2})
        for a, b in ((self, o), (o, self)):
            if (c := a.constant()) is not None:
                return b.scale(c) if c != 1 else b
        if len(self.t) == 1 or len(o.t) == 1:  # by one term: distinct terms stay distinct
            a, b = (self, o) if len(o.t) == 1 else (o, self)
            ((m2, e2), c2), = b.t.items()
            return Poly({(_mono_mul(m1, m2), _expo_add(e1, e2)): c1 * c2 for (m1, e1), c1 in a.t.items()})
        if len(self.t) * len(o.t) > 4 * MAX_TERMS:
            raise LimitExceeded(f"polynomial product of {len(self.t)} x {len(o.t)} terms")
        d: dict = {}
        for (m1, e1), c1 in self.t.items():
            for (m2, e2), c2 in o.t.items():
                _accumulate(d, (_mono_mul(m1, m2), _expo_add(e1, e2)), c1 * c2)
        if len(d) > MAX_TERMS:
            raise LimitExceeded(f"polynomial with {len(d)} terms exceeds {MAX_TERMS}")
        return Poly(d)

    def atoms(self) -> set[str]:
        out: set[str] = set()
        for (m, e), _ in self.t.items():
            out.update(v for v, _ in m)
            if e:
                out |= Poly(dict(e)).atoms()
        return out

    def value(self, env: Callable[[str], float | Fraction]):
        total = 0
        for (m, e), c in self.t.items():
            term = math.prod((env(v) ** p for v, p in m), start=c if not e else float(c))
            if e:
                term = float(term) * math.exp(float(Poly(dict(e)).value(env)))
            total = total + term
        return total

    def __str__(self) -> str:
        return self.text(str)

    def text(self, name: Callable[[str], str]) -> str:
        """The canonical text with every variable or atom ``v`` written ``name(v)``."""
        parts, expo = [], getattr(name, "expo", None) or _expo_text
        for (m, e), c in self._k or sorted(self.t.items()):   # not kept: a long form is printed once
            s = "*".join([name(v) if p == 1 else f"{name(v)}^{p}" for v, p in m])
            s = (f"{s}*exp({expo(e, name)})" if s else f"exp({expo(e, name)})") if e else s
            parts.append(s if c == 1 and s else f"{c}*{s}" if s else str(c))
        return " + ".join(parts) or "0"


ONE_P = Poly.const(1)
_expo_text = lru_cache(maxsize=1 << 16)(lambda e, name: Poly(dict(e)).text(name))   # softmax outputs share exponents


def _min_mono(monos: list[Mono]) -> Mono:
    """The largest monomial dividing all of ``monos``."""
    common = dict(monos[0])
    for m in monos[1:]:
        md = dict(m)
        common = {v: min(p, md[v]) for v, p in common.items() if v in md}
    return tuple(sorted((v, p) for v, p in common.items() if p > 0))


@lru_cache(maxsize=1 << 16)
def _neg_expo(e: tuple) -> tuple:
    return intern_expo(Poly(dict(e)).scale(Q(-1)).key())


class Rat:
    """A normalized ratio of polynomials; supports Python arithmetic with numbers."""

    __slots__ = ("n", "d", "_s")

    def __init__(self, n: Poly, d: Poly = ONE_P) -> None:
        if d.is_zero():
            raise ZeroDivisionError("division by a value that normalizes to zero")
        c = 1 if d is ONE_P or n.is_zero() else d.constant()
        if c is not None:
            self.n, self.d = (n if c == 1 else n.scale(1 / c)), ONE_P
            return
        if len(d.t) == 1:  # a single term: divide it out as far as exactness allows
            (m, e), c = next(iter(d.t.items()))
            n = n.mul(Poly({((), _neg_expo(e)): 1 / c}))
            g = _min_mono([m] + [k[0] for k in n.t])
            if g:
                inverse = tuple((v, -p) for v, p in g)   # 1/g: g divides each monomial, so _mono_mul merges
                n = Poly({(_mono_mul(k[0], inverse), k[1]): v for k, v in n.t.items()})
                m = _mono_mul(m, inverse)
            d = Poly({(m, ()): Q(1)}) if m else ONE_P
        else:
            lead = d.t[min(d.t)]  # the first term in key() order
            if lead != 1:
                n, d = n.scale(1 / lead), d.scale(1 / lead)
        if n.t == d.t:
            n, d = ONE_P, ONE_P
        self.n, self.d = n, d

    @staticmethod
    def of(x) -> "Rat":
        return x if isinstance(x, Rat) else Rat(Poly.const(x))

    @staticmethod
    def var(name: str) -> "Rat":
        return Rat(Poly.atom(name))

    def constant(self):
        return self.n.constant() if self.d is ONE_P or self.d.constant() == 1 else None

    def is_zero(self) -> bool:
        return self.n.is_zero()

    @_operator
    def __add__(self, o: "Rat") -> "Rat":
        if z := [b for a, b in ((self, o), (o, self)) if a.n._up is None and not a.n._t]:   # 0 + b = b; a lazy
            return z[0]   # sum is not forced here (a dot product stays O(n))
        if self.d is o.d or self.d.t == o.d.t:
            return Rat(self.n.add(o.n), self.d)
        return Rat(self.n.mul(o.d).add(o.n.mul(self.d)), self.d.mul(o.d))

    __radd__ = __add__

    def __neg__(self) -> "Rat":
        return Rat(self.n.scale(Q(-1)), self.d)

    __sub__ = _operator(lambda self, o: self + (-o))
    __rsub__ = _operator(lambda self, o: o + (-self))

    @_operator
    def __mul__(self, o: "Rat") -> "Rat":
        return Rat(self.n.mul(o.n), self.d if o.d is ONE_P else self.d.mul(o.d))

    __rmul__ = __mul__

    @_operator
    def __truediv__(self, o: "Rat") -> "Rat":
        fail_if(o.n.is_zero(), ZeroDivisionError, "division by zero")
        _domain(o, "!=0", "division")
        return Rat(self.n.mul(o.d), self.d.mul(o.n))

    __rtruediv__ = _operator(lambda self, o: o / self)

    def __pow__(self, k: int) -> "Rat":
        fail_if(int(k) != k, Unsupported, f"non-integer power {k}")
        k = int(k)
        fail_if(abs(k) > MAX_EXPONENT, LimitExceeded, f"power {k} of a symbolic value exceeds the bound {MAX_EXPONENT}")
        return math.prod([self if k >= 0 else Rat.of(1) / self] * abs(k), start=Rat.of(1))

    def equals(self, o: "Rat") -> bool:
        if self.d.t == o.d.t:  # equal dicts: equal keys, without sorting
            return self.n.t == o.n.t
        return self.n.mul(o.d).add(o.n.mul(self.d), -1).is_zero()

    def atoms(self) -> set[str]:
        return self.n.atoms() | self.d.atoms()

    def value(self, env: Callable[[str], float | Fraction]):
        return self.n.value(env) / self.d.value(env)

    def __str__(self) -> str:   # kept: a running max's arguments are named again at every step
        self._s = getattr(self, "_s", None) or self.text(str)
        return self._s

    def text(self, name: Callable[[str], str]) -> str:
        n = self.n.text(name)
        return n if self.d.constant() == 1 else f"({n})/({self.d.text(name)})"

    __repr__ = __str__


def apply(fn: str, *args) -> Rat:
    """Build ``fn(args)`` in normal form: exact where a rule applies, else an atom."""
    args = tuple(Rat.of(a) for a in args)
    a = args[0]
    if fn == "exp" and a.d.constant() == 1:   # exp(0): the key ((), ()), the constant 1
        return Rat(Poly({((), intern_expo(a.n.key())): Q(1)}))
    elif fn == "log":
        _domain(a, ">0", "log")
        if a.d.constant() == 1 and len(a.n.t) == 1:
            ((mono, expo), c), = a.n.t.items()
            if c == 1 and not mono:  # log(exp(p)) = p; log(1) = 0 (expo ``()``: p = 0)
                return Rat(Poly(dict(expo)))
    elif fn == "max":
        flat = {str(y): y for x in args for y in _max_args(x)}
        if len(flat) == 1:
            return next(iter(flat.values()))
        consts = [x.constant() for x in flat.values()]
        if all(c is not None for c in consts):
            return Rat.of(max(consts))
        args = tuple(flat[k] for k in sorted(flat))
    elif fn == "sqrt":
        _domain(a, ">=0", "sqrt")
        if (c := a.constant()) is not None:
            rn, rd = math.isqrt(c.numerator), math.isqrt(c.denominator)
            if rn * rn == c.numerator and rd * rd == c.denominator:
                return Rat.of(Q(rn, rd))
    name = f"{fn}({', '.join(str(x) for x in args)})"
    name = name if len(name) <= 256 else f"{fn}#{hashlib.sha256(name.encode()).hexdigest()}"   # docs/proofs.md
    ATOMS.setdefault(name, (fn, args))
    return Rat(Poly.atom(name))


CALL: list = [apply]   # how the operators apply a function (``call``); ``box.boxes`` swaps in its enclosures


def call(fn: str, *args):
    """``fn(args)`` as the operators apply it: ``apply``, or while a witness is evaluated ``box.call``."""
    return CALL[0](fn, *args)


def _positive(p: Poly) -> bool:
    """Whether ``p > 0`` at every input, evidently: each term a positive multiple of even powers and an exponential,
    one of them without powers (a constant or a pure exponential, > 0; the others >= 0)."""
    return any(not m for m, _ in p.t) and all(c > 0 and all(k % 2 == 0 for _, k in m) for (m, _), c in p.t.items())


def _domain(a: Rat, kind: str, fn: str) -> None:
    """Record ``a``'s side condition for ``fn`` unless ``a`` is evidently positive; a constant out of domain raises."""
    c = a.constant()
    if c is None and _SIDE is not None and not (_positive(a.n) and _positive(a.d)):
        _SIDE.append((kind, a))
    elif c is not None and not (c > 0 if kind == ">0" else c >= 0 if kind == ">=0" else c != 0):
        raise ZeroDivisionError(f"{fn} of {c} is undefined")


def _max_args(x: Rat) -> tuple[Rat, ...]:
    """The arguments of ``x`` if it is exactly one ``max`` atom with coefficient 1 (flattened), else ``(x,)``."""
    if x.d.constant() == 1 and len(x.n.t) == 1:
        ((m, e), c), = x.n.t.items()
        if c == 1 and not e and len(m) == 1 and m[0][1] == 1 and ATOMS.get(m[0][0], ("",))[0] == "max":
            return ATOMS[m[0][0]][1]
    return (x,)


NUMERIC: dict[str, Callable[..., float]] = {
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "tanh": math.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))),
    "gelu_tanh": lambda x: 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    "max": lambda *xs: max(xs), "sin": math.sin, "cos": math.cos,
}
