"""The checker's own PTX interpreter: replay one CTA along a certified schedule (formats and semantics:
docs/kernels.md), written apart from the engine, sharing only the parser and the normal form. Integers and addresses are
concrete, floats symbolic over the reals; per byte of shared and output memory, a conflicting access by another thread
than the last writer (or a reader since) must be ordered by vector clocks joined at barriers, else a race."""

from __future__ import annotations

import gc
import hashlib
import math
import operator as opr
import random
import re
import struct
from array import array
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache

import numpy as np

from .errors import CheckError, Malformed, Rejected, Unsupported, fail_if
from .limits import Limits
from .poly import ATOMS, ONE_P, Q, Poly, Rat, _expo_add, _expo_text, _mono_mul, apply, intern_expo
from .ptx import FImm, Imm, Instr, Kernel, Mem, Pair, Reg, Sym, Vec

LN2 = apply("log", 2)
ONE = Rat.of(1)
INV_LN2 = ONE / LN2
SHARED_BASE, GLOBAL_BASE, GLOBAL_STRIDE, ALL = 0x1000, 1 << 40, 1 << 32, 0xFFFFFFFF
TABLES = 1 << 36                     # initialized .const / .global variables
LOCAL = 1 << 20                      # .local variables (one array per thread)
FLOATS = {"f16", "f32", "f64", "bf16"}
INTS = {f"{k}{n}" for k in "bsu" for n in (8, 16, 32, 64)}
LDMATRIX = {f"ldmatrix.sync.aligned.m8n8.{x}{t}.shared.b16" for x in ("x1", "x2", "x4") for t in ("", ".trans")}
MMA = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
SPACES = ("global", "shared", "param", "local", "const")
CONV = (["cvt", "f32", "f16"], ["cvt", "rn", "f16", "f32"])   # f16/f32 conversions: the identity on the reals


def over_ln2(x: Rat) -> Rat:
    """``x * INV_LN2`` (``__expf``'s first step), built at once as its normal form ``x.n / log(2)`` where that holds."""
    if x.d is not ONE_P or all(any(v == "log(2)" for v, _ in m) for m, _ in x.n.t):   # 0 too
        return x * INV_LN2
    r = Rat.__new__(Rat)
    r.n, r.d = x.n, LN2.n
    return r


FLOAT_OPS = {  # over the operands' values f
    "add": lambda f: f[0] + f[1], "sub": lambda f: f[0] - f[1],
    "mul": lambda f: over_ln2(f[0]) if f[1] is INV_LN2 else f[0] * f[1],
    "fma": lambda f: fma(*f), "mad": lambda f: fma(*f), "div": lambda f: f[0] / f[1],
    "rcp": lambda f: ONE / f[0], "neg": lambda f: -f[0], "rsqrt": lambda f: ONE / apply("sqrt", f[0]),
    "abs": lambda f: apply("max", f[0], -f[0]) if f[0].constant() is None else Rat.of(abs(f[0].constant())),
    "max": lambda f: apply("max", *f), "min": lambda f: -apply("max", *[-x for x in f]),
    "lg2": lambda f: apply("log", f[0]) * INV_LN2, "sqrt": lambda f: apply("sqrt", f[0]),
    # ex2 of n / LN2 (``__expf``): exp(n), the normal form's own
    "ex2": lambda f: apply("exp", Rat(f[0].n) if f[0].d.t == LN2.n.t else f[0] * LN2)}
PRED_OPS = {"and": lambda v: v[0] and v[1], "or": lambda v: v[0] or v[1], "xor": lambda v: v[0] != v[1],
            "not": lambda v: not v[0]}
UNARY_OPS = {  # over a, its width n and mask m
    "not": lambda a, n, m: ~a, "neg": lambda a, n, m: -a, "abs": lambda a, n, m: abs(a),
    "popc": lambda a, n, m: bin(a & m).count("1"), "clz": lambda a, n, m: n - (a & m).bit_length(),
    "brev": lambda a, n, m: int(format(a & m, f"0{n}b")[::-1], 2)}
BINARY_OPS = {"add": opr.add, "sub": opr.sub, "min": min, "max": max, "and": opr.and_, "or": opr.or_, "xor": opr.xor}
COMPARE = {"eq": opr.eq, "ne": opr.ne, "lt": opr.lt, "le": opr.le, "gt": opr.gt, "ge": opr.ge,
           "lo": opr.lt, "ls": opr.le, "hi": opr.gt, "hs": opr.ge}


@contextmanager
def no_gc():
    """Cyclic GC paused: normal forms are acyclic, and collections re-traverse a long dot product's many terms."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:   # the young generations join the oldest unscanned (a quarter of an attention replay)
            gc.freeze()
            gc.enable()
            gc.unfreeze()


class Packed(tuple):
    """Two 16-bit values in one 32-bit register or word (low half first)."""


class Ptr(int):
    """An address with its provenance: ``alloc = (name, lo, hi, memory)``, the tensor or variable it derives from, and
    ``space`` (generic, global, shared; PTX ISA 5.1, ``cvta``). Kept only as ``Replay.derive`` says; an access outside
    ``lo..hi`` or in the wrong space is rejected: no address depends on the layout."""

    def __new__(cls, v: int, alloc: tuple, space: str) -> "Ptr":
        p = super().__new__(cls, v)
        p.alloc, p.space = alloc, space
        return p

    def at(self, off: int) -> "Ptr":
        return Ptr(int(self) + off, self.alloc, self.space)


def null_test(a, b, ty: str) -> bool:
    """Whether a 64-bit ``setp.eq/ne`` tests an address in a nonempty tensor against 0: unequal in every layout."""
    a, b = (b, a) if isinstance(b, Ptr) else (a, b)
    return (bits(ty) == 64 and isinstance(a, Ptr) and type(b) is int and b == 0 and a.alloc[3] == "global"
            and a.space in ("generic", "global") and a.alloc[1] <= a <= a.alloc[2] and a.alloc[1] < a.alloc[2])


IROUND = {"rni": round, "rzi": int, "rmi": math.floor, "rpi": math.ceil}   # of a Fraction; rni: ties to even
BARRIERS = {"bar.sync", "bar.cta.sync", "barrier.sync", "barrier.sync.aligned", "barrier.cta.sync",
            "barrier.cta.sync.aligned"}


@lru_cache(maxsize=None)
def bits(t: str) -> int:
    return 1 if t == "pred" else int("".join(c for c in t if c.isdigit()) or 32)


def clamp(v: int, t: str) -> int:
    """``v`` saturated to the range of integer type ``t``."""
    n = bits(t)
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)
    return min(max(v, lo), hi)


def float_to_int(c: Fraction, mode: str, t: str) -> int:
    """``cvt.{rni,rzi,rmi,rpi}.t.fXX`` of exact ``c``: rounded (``rni``: ties to even), clamped to ``t`` (ISA)."""
    return clamp(int(IROUND[mode](Fraction(int(c.numerator), int(c.denominator)))), t)


def mul24(a: int, b: int, t: str, hi: bool) -> int:
    """``mul24.{lo,hi}.t``: bits 31..0 / 47..16 of the product of ``a``'s and ``b``'s low 24 bits (``.s32``: signed)."""
    a, b = wrap(a, "u24" if t[0] == "u" else "s24"), wrap(b, "u24" if t[0] == "u" else "s24")
    return wrap((a * b) >> 16 if hi else a * b, t)


def wrap(v: int, t: str) -> int:
    n = bits(t)
    v &= (1 << n) - 1
    return v - (1 << n) if t[0] == "s" and v >> (n - 1) else v


def float_of_bits(b: int, width: int) -> Rat:
    if width == 32 and b == 0x3FB8AA3B:
        return INV_LN2
    fmt = {16: ("<e", "<H", 0xFFFF), 32: ("<f", "<I", ALL)}.get(width, ("<d", "<Q", 2**64 - 1))
    f = struct.unpack(fmt[0], struct.pack(fmt[1], b & fmt[2]))[0]
    if f in (float("inf"), float("-inf")):
        return Inf(1 if f > 0 else -1)
    fail_if(f != f, Unsupported, f"NaN float constant {b:#x}")
    return Rat.of(Fraction(f))


class Inf:
    """+inf or -inf (``0f7F800000`` / ``0fFF800000``): moved, selected, shuffled, and taken only by ``inf_arith``'s
    exact operations; any other use (store, comparison, conversion) is refused: no NaN, no ±inf output."""

    __slots__ = ("sign",)

    def __init__(self, sign: int) -> None:
        self.sign = sign

    def __eq__(self, o) -> bool:
        return isinstance(o, Inf) and o.sign == self.sign

    def __hash__(self) -> int:
        return hash(("inf", self.sign))

    def constant(self) -> None:
        return None


class Word:
    """Integer data of width ``n``: a polynomial ``p`` with integer coefficients over the elements of ``s32`` tensors,
    modulo ``2^n``. Only moves and ``add``, ``sub``, ``neg``, ``mul.lo``, ``mad.lo`` at width ``n`` (ring operations,
    exact modulo ``2^n``) apply to it; anything else (a comparison, a shift, a division, a widening) is refused."""

    __slots__ = ("p", "n")

    def __init__(self, p: Rat, n: int) -> None:
        self.p, self.n = p, n


RING = {"add": lambda f: f[0] + f[1], "sub": lambda f: f[0] - f[1], "neg": lambda f: -f[0],
        "mul": lambda f: f[0] * f[1], "mad": lambda f: f[0] * f[1] + f[2]}


def ring(op: str, parts: list[str], vals: list, n: int) -> Word:
    """``op`` on integers and ``Word``s of width ``n``, or ValueError naming why not."""
    if op not in RING or op in ("mul", "mad") and parts[1] != "lo" or len(parts) != (3 if op in ("mul", "mad") else 2):
        raise ValueError(f"`{'.'.join(parts)}` on integer data (only add, sub, neg, mul.lo, mad.lo)")
    if any(isinstance(v, Ptr) or not isinstance(v, (int, Word)) or isinstance(v, Word) and v.n != n for v in vals):
        raise ValueError(f"`{'.'.join(parts)}` mixing integer data with an address or another width")
    return Word(RING[op]([v.p if isinstance(v, Word) else Rat.of(v) for v in vals]), n)


def word_equal(a, b) -> bool | None:
    """True: each coefficient of ``a - b`` divisible by ``2^n`` (equal everywhere); False: an input tells them apart."""
    if not (isinstance(a, Word) and isinstance(b, Word) and a.n == b.n):
        return None
    d, m = a.p - b.p, 1 << a.n
    if all(c.denominator == 1 and c.numerator % m == 0 for c in d.n.t.values()) and d.d.constant() == 1:
        return True
    for seed in range(8):
        rng = random.Random(seed)
        env = {v: rng.randrange(m) - m // 2 for v in sorted(d.atoms())}
        if d.n.value(env.__getitem__) % m and d.d.constant() == 1:
            return False
    return None


INF_MODS = {**dict.fromkeys(("add", "sub", "mul"), {"rn", "rz", "rm", "rp", "ftz"}),
            **dict.fromkeys(("max", "min", "neg"), {"ftz"}), "ex2": {"approx", "ftz"}}


def inf_arith(op: str, parts: list[str], f: list):
    """``op`` (``.f32``) on ±inf where IEEE 754 fixes it in every rounding mode: ``max``/``min``; ``±inf ± x`` (finite
    ``x``); ``neg``; ``±inf * c`` (constant ``c != 0``, or ``1/ln 2``); ``ex2(-inf) = +0``, ``ex2(+inf) = +inf``. Else
    (``inf - inf``, ``0 * inf``: NaN; a symbol's sign; ``.sat``; ``fma``) a ValueError naming why."""
    mods = parts[1:-1]
    if op not in INF_MODS or parts[-1] != "f32" or not set(mods) <= INF_MODS[op] or len(set(mods)) < len(mods):
        raise ValueError("an infinite operand (only max, min, add, sub, neg, mul and ex2 .f32 take ±inf)")
    if op in ("max", "min"):   # IEEE 754 maxNum/minNum: max's -inf (min's +inf) drops out
        ident = -1 if op == "max" else 1
        rest = [x for x in f if x != Inf(ident)]
        return Inf(-ident) if any(isinstance(x, Inf) for x in rest) else rest[0] if rest else Inf(ident)
    s = [x.sign if isinstance(x, Inf) else 0 for x in f]
    if op in ("neg", "ex2"):
        return Inf(-s[0]) if op == "neg" else Inf(1) if s[0] > 0 else Rat.of(0)
    if op in ("add", "sub"):
        b = s[1] if op == "add" else -s[1]
        fail_if(s[0] and b and s[0] != b, ValueError, "an infinite operand: inf - inf (NaN)")
        return Inf(s[0] or b)
    sign = 1
    for x in f:
        k = x.sign if isinstance(x, Inf) else 1 if (x - INV_LN2).is_zero() else x.constant()
        if k is None or k == 0:
            raise ValueError("an infinite operand times a symbolic value or zero (sign unknown, or NaN)")
        sign = sign if k > 0 else -sign
    return Inf(sign)


def typed(v, ty: str):
    """A loaded or stored value as type ``ty``: raw integers become floats (of ``ty``'s format) or wrap."""
    if type(v) is not int:
        return v
    fail_if(ty == "bf16", Unsupported, "raw bits read as bf16 (not modelled)")
    return float_of_bits(v, bits(ty)) if ty in FLOATS else wrap(v, ty)


def wmma_ok(p: list[str]) -> bool:
    return "m16n16k16" in p and "sync" in p and "aligned" in p and (
        p[2] in ("a", "b") and p[-1] == "f16" and "shared" in p if p[1] == "load" else
        p[2] == "d" and p[-1] == "f32" and "shared" in p if p[1] == "store" else
        p[1] == "mma" and p[-2:] == ["f32", "f32"])


VARS: dict[str, int] = {}     # an atom's name -> the index of its monomial ``((name, 1),)`` in NAMES (process-wide)
NAMES: list[tuple] = []
WMAX = 1 << 30                  # |coefficient| of an array term (sums of < 2^32 of them fit in int64)
ONE_Q = Q(1)


def index(m: tuple) -> int:
    """The index in ``NAMES`` of the one-atom monomial ``m``."""
    i = VARS.get(m[0][0])
    if i is None:
        i = VARS[m[0][0]] = len(NAMES)
        NAMES.append(m)
    return i


def pair_mono(x: int) -> tuple:
    """The monomial ``NAMES[i] * NAMES[j]`` of the key ``x = i << 32 | j`` (as ``_mono_mul`` builds it)."""
    u, v = NAMES[x >> 32], NAMES[x & ALL]
    return u + v if u < v else v + u if v < u else ((u[0][0], 2),)


class Dot(Rat):
    """A dot product as ``fma`` builds it: ``base + sum_t cs[t] * pair_mono(ij[t])`` (``up = (base, ij, cs)``) over
    the first ``k`` entries of append-only arrays shared with copy-on-extend (``cs`` None: every coefficient 1). Any
    other operation reads ``n``: the ordinary normal form, as the lazy log ``fma`` wrote before (kept)."""

    __slots__ = ("up", "k", "_n")

    @staticmethod
    def new(up: tuple, k: int) -> "Dot":
        d = Dot.__new__(Dot)
        d.up, d.k, d._n, d.d = up, k, None, ONE_P
        return d

    @property
    def n(self) -> Poly:
        if self._n is None:
            self._n = self.poly(True)
        return self._n

    def poly(self, share: bool) -> Poly:
        """``Poly.add``'s lazy log of these terms after the base's (``share``: on the base's log if at its end)."""
        b, ij, cs = self.up
        base, log, m = b._up or (b, [], 0)
        log = log if share and len(log) == m else log[:m]
        for t, x in enumerate(ij[:self.k]):
            log += (5, (pair_mono(x), ()), ONE_Q if cs is None else Q(cs[t]))
        p = Poly(None)
        p._t, p._up = None, (base, log, len(log))
        return p

    def text(self, name) -> str:
        """``Poly.text`` of the normal form (the lazy log's: not kept)."""
        return (self._n or self.poly(False)).text(name)


class Var(Rat):
    """An input element, as ``Rat.var`` builds it, with the index of its atom in ``NAMES`` (for ``fma``)."""

    __slots__ = ("ix",)


def var(name: str) -> Var:
    v = Var.__new__(Var)
    v.n, v.d = Poly.atom(name), ONE_P
    v.ix = index(((name, 1),))
    return v


RATS = (Rat, Dot, Var)


def fma(a: Rat, b: Rat, c: Rat) -> Rat:
    """``a * b + c`` as the operators build it, directly: for atoms ``a``, ``b`` a ``Dot``, else ``c``'s lazy log."""
    if type(a) is Var and type(b) is Var and type(c) is Dot and c.up[2] is None and len(c.up[1]) == c.k:
        c.up[1].append(a.ix << 32 | b.ix)    # the commonest case of the path below
        return Dot.new(c.up, c.k + 1)
    ta, tb = a.n._t, b.n._t      # None: a lazy sum, longer than one term; {}: zero, so a * b + c is c
    if ta == {} or tb == {}:
        return c
    if a.d is b.d is c.d is ONE_P and ta and tb and len(ta) == 1 == len(tb):
        ((m1, e1), c1), ((m2, e2), c2) = *ta.items(), *tb.items()
        w = 1 if c1 == 1 == c2 else c1 * c2
        if len(m1) == 1 == len(m2) and m1[0][1] == 1 == m2[0][1] and not e1 and not e2 \
                and (w == 1 or w.denominator == 1 and -WMAX <= w <= WMAX):
            i, j = VARS.get(m1[0][0]), VARS.get(m2[0][0])
            i, j = index(m1) if i is None else i, index(m2) if j is None else j
            if type(c) is Dot:
                up, k = c.up, c.k
                if len(up[1]) != k:     # a shared prefix: extend a copy
                    up = up[0], up[1][:k], None if up[2] is None else up[2][:k]
            else:
                up, k = (c.n, array("q"), None), 0
            up[1].append(i << 32 | j)
            if up[2] is not None:
                up[2].append(int(w))
            elif w != 1:
                up = up[0], up[1], array("q", [1]) * k
                up[2].append(int(w))
            return Dot.new(up, k + 1)
        n = c.n   # as Poly.add logs a one-term left operand (Poly.mul's one-term product)
        base, log, k = n._up or (n, [], 0)
        log = log if len(log) == k else log[:k]
        m = (m1 + m2 if m1[-1][0] < m2[0][0] else m2 + m1 if m2[-1][0] < m1[0][0] else _mono_mul(m1, m2)) \
            if m1 and m2 else m1 or m2
        log += (5, (m, _expo_add(e1, e2)), c2 if c1 == 1 else c1 * c2)
        p, r = Poly.__new__(Poly), Rat.__new__(Rat)   # no __init__: every slot is set here
        p._t, p._k, p._up, r.n, r.d = None, None, (base, log, len(log)), p, ONE_P
        return r
    return a * b + c


def terms(x: Rat) -> tuple[dict, np.ndarray, np.ndarray]:
    """``x`` (denominator 1) as its terms other than ``w * u * v`` (atoms ``u``, ``v``, integer ``|w| <= WMAX``),
    and the keys ``i << 32 | j`` of the others with their ``w``, as they come (a key may repeat)."""
    keys, ws, rest = [], [], {}
    for (m, e), c in (x.up[0] if type(x) is Dot else x.n).t.items():
        if not e and c.denominator == 1 and -WMAX <= c <= WMAX and \
                (len(m) == 2 and m[0][1] == 1 == m[1][1] or len(m) == 1 and m[0][1] == 2):
            keys.append(index(((m[0][0], 1),)) << 32 | index(((m[-1][0], 1),)))
            ws.append(int(c))
        else:
            rest[m, e] = c
    k, w = np.array(keys, np.int64), np.array(ws, np.int64)
    if type(x) is Dot:
        _, ij, cs = x.up
        k = np.concatenate((k, np.frombuffer(ij, np.int64, x.k)))
        w = np.concatenate((w, np.ones(x.k, np.int64) if cs is None else np.frombuffer(cs, np.int64, x.k)))
    return rest, k, w


def canon(x: Rat) -> tuple[dict, np.ndarray, np.ndarray]:
    """``terms`` with the keys as ``i << 32 | j`` (``i <= j``), sorted and distinct, with their nonzero sums."""
    rest, k, w = terms(x)
    i, j = k >> 32, k & ALL
    k = np.minimum(i, j) << 32 | np.maximum(i, j)
    order = np.argsort(k, kind="stable")
    k, w = k[order], w[order]
    first = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1]))) if len(k) else np.zeros(0, np.int64)
    k, w = k[first], np.add.reduceat(w, first) if len(k) else w
    return rest, k[w != 0], w[w != 0]


def dot_equal(a, b) -> bool:
    """Whether ``a`` and ``b``, one a ``Dot``, have equal ``canon`` forms, so equal normal forms (False: not shown);
    two dot products of equal bases with the same terms in the same order are equal without sorting them."""
    if Dot not in (type(a), type(b)) or not (isinstance(a, Rat) and isinstance(b, Rat)) \
            or a.d is not ONE_P or b.d is not ONE_P or max(x.k for x in (a, b) if type(x) is Dot) >> 32:
        return False
    if type(a) is type(b) and a.k == b.k and a.up[2] is b.up[2] is None and a.up[1][:a.k] == b.up[1][:b.k] \
            and a.up[0].t == b.up[0].t:
        return True
    (ra, ka, wa), (rb, kb, wb) = canon(a), canon(b)
    return ra == rb and np.array_equal(ka, kb) and np.array_equal(wa, wb)


def dot(acc: Rat, a: list, b: list) -> Rat:
    """``acc + sum_k a[k] b[k]``, in order, as ``fma`` builds it (appends at once where it can)."""
    for k in range(len(a)):
        if type(acc) is Dot and acc.up[2] is None and len(acc.up[1]) == acc.k and all(
                type(x) is Var is type(y) for x, y in zip(a[k:], b[k:])):
            acc.up[1].extend(x.ix << 32 | y.ix for x, y in zip(a[k:], b[k:]))
            return Dot.new(acc.up, acc.k + len(a) - k)
        acc = fma(a[k], b[k], acc)
    return acc


def mma_acc(g: int, q: int) -> tuple:
    """The accumulator elements (i, j) of an m16n8 fragment in lane ``4 g + q``."""
    return (g, 2 * q), (g, 2 * q + 1), (g + 8, 2 * q), (g + 8, 2 * q + 1)


def quick(ins: Instr, inputs: dict[str, int], r: "Replay"):
    """A shortcut ``f(regs, th)`` (or None): does what ``step`` does and returns True, or changes nothing and returns
    False: f32 add/sub/mul/fma/mad of ``Rat``s, loads of f32 (f16) ``inputs``, f16/f32 cvt of a ``Rat``, integer ALU ops
    and setp of ints. Shared memory takes ``step``: a shortcut gains nothing where lockstep does not run."""
    p, o, op, ty, inits = ins.parts, ins.operands, ins.op, ins.parts[-1], r.inits
    dst = o[0].name if o and isinstance(o[0], Reg) and "sat" not in p else None
    if dst and ty == "f32" and op in ("add", "sub", "mul", "fma", "mad") and all(isinstance(x, Reg) for x in o):
        src, fn, three = [x.name for x in o[1:]], FLOAT_OPS[op], len(o) == 4 and op in ("fma", "mad")

        def flt(regs, th):
            a, b, c = regs.get(src[0]), regs.get(src[1]), regs.get(src[-1])   # two or three operands
            if type(a) not in RATS or type(b) not in RATS or type(c) not in RATS:
                return False
            regs[dst] = fma(a, b, c) if three else fn((a, b))   # FLOAT_OPS' fma and mad are fma
            return True
        return flt
    w = {"f32": 4, "u16": 2, "b16": 2, "s16": 2, "f16": 2}.get(ty)   # f32, or 16 bits of an f16 element
    if dst and w and p[:2] == ["ld", "global"] and p[2:-1] in ([], ["nc"]) and isinstance(o[1], Mem) \
            and isinstance(o[1].base, Reg) and len(o) == 2:
        base, off = o[1].base.name, o[1].offset

        def load(regs, th):
            a = regs.get(base)
            if type(a) is not Ptr or a.space not in ("generic", "global") or inputs.get(a.alloc[0]) != w \
                    or a.alloc[3] != "global" or (a + off) % w or not a.alloc[1] <= a + off <= a.alloc[2] - w:
                return False
            i = a + off
            regs[dst] = inits.get(i) or inits.setdefault(i, var(f"{a.alloc[0]}[{(i - a.alloc[1]) // w}]"))
            return True
        return load
    if dst and p in CONV and len(o) == 2 and isinstance(o[1], Reg):
        def conv(regs, th):   # the identity on the reals, as cvt
            v = regs.get(o[1].name)
            if type(v) not in RATS:
                return False
            regs[dst] = v
            return True
        return conv
    mode, n, cmp = p[1] if len(p) == 3 else "lo", bits(ty), op == "setp"
    if not dst or ty not in INTS or not all(isinstance(x, (Reg, Imm)) for x in o) or len(o) != 3 + (op == "mad") \
            or len(p) != 2 + (op in ("mul", "mad", "setp")) or mode not in ("lo", "hi", "wide", *COMPARE) \
            or op not in ("mul", "mad", "setp", *BINARY_OPS):
        return None
    dt = ty[0] + str(2 * n) if mode == "wide" else ty
    src = [(x.name, t) if isinstance(x, Reg) else (None, wrap(x.value, t)) for x, t in zip(o[1:], (ty, ty, dt))]
    at = {"add": 0, "sub": 0, "mad": 2}.get(op, -1)   # the operand an address may be
    fn = COMPARE[mode] if cmp else BINARY_OPS.get(op) or (lambda a, b, c=0: (a * b >> n if mode == "hi" else a * b) + c)
    (na, ca), (nb, cb) = src[:2]

    def addsub(regs, th):   # a + b, a - b: integer's result (its operands' wraps vanish modulo 2^n)
        a, b = ca if na is None else regs.get(na), cb if nb is None else regs.get(nb)
        if type(b) is not int or type(a) is not int and type(a) is not Ptr:
            return False
        r = wrap(a - b if op == "sub" else a + b, ty)
        regs[dst] = r if type(a) is int else Ptr(r, a.alloc, a.space)
        return True

    def integer(regs, th):
        v, ptr = [c if name is None else regs.get(name) for name, c in src], None
        for i, (x, (name, t)) in enumerate(zip(v, src)):
            if type(x) is Ptr and i == at:
                ptr, v[i] = x, int(x)
            elif type(x) is not int:
                return False
            elif name is not None:
                v[i] = wrap(x, t)
        r = fn(*v)
        regs[dst] = r if cmp else wrap(r, dt) if ptr is None else Ptr(wrap(r, dt), ptr.alloc, ptr.space)
        return True
    return addsub if op in ("add", "sub") else integer


class Th:
    """One thread: registers, program counter, state (run / block / exit), vector clock."""

    __slots__ = ("lin", "lane", "pc", "regs", "state", "wait", "vc", "syncs", "lmem")

    def __init__(self, lin: int, block, cta, grid, n: int) -> None:
        self.lin, self.lane, self.pc = lin, lin % 32, 0
        tid = (lin % block[0], lin // block[0] % block[1], lin // (block[0] * block[1]))
        self.regs: dict = {"%laneid": self.lane}   # %warpid is volatile (ISA): refused
        for pre, vals in (("%tid", tid), ("%ntid", block), ("%ctaid", cta), ("%nctaid", grid)):
            self.regs.update((f"{pre}.{c}", v) for c, v in zip("xyz", vals))
        self.state, self.wait, self.vc = "run", None, [0] * n
        self.syncs: list[int] = []       # pc of each barrier passed, in order
        self.lmem: dict[int, tuple] = {}  # .local memory: address -> (value, width)


class Replay:
    """One CTA of ``kernel`` under a launch; ``run(schedule)`` replays it."""

    def __init__(self, k: Kernel, grid, block, params: list[dict], cta, limits: Limits, side: str = "",
                 dyn: int | None = None) -> None:
        self.k, self.limits, self.steps, self.side = k, limits, 0, side
        fail_if(len(params) != len(k.params), Rejected, f"{k.name}: {len(k.params)} .param in PTX, {len(params)} bound")
        self.pv: dict[str, int] = {}
        self.tensors: list[tuple] = []        # (name, role, esize, numel, base)
        self.ints: list[str] = []             # the s32 tensors: their elements are Words
        for i, (kp, p) in enumerate(zip(k.params, params)):
            if p["role"] == "scalar":
                self.pv[kp.name] = Rat.var(p["name"]) if p.get("dtype") == "f32" else int(p["value"])
                continue
            numel, base, esize = math.prod(int(d) for d in p["shape"]), GLOBAL_BASE + i * GLOBAL_STRIDE, \
                2 if p["dtype"] in ("f16", "bf16") else 4
            self.tensors.append((p["name"], p["role"], esize, numel, base))
            self.ints += [p["name"]] if p["dtype"] == "s32" else []
            self.pv[kp.name] = Ptr(base, (p["name"], base, base + numel * esize, "global"), "generic")
        self.sym: dict[str, Ptr] = {}
        self.tables: dict[str, bytes] = {}
        addr, loc, tab = SHARED_BASE, LOCAL, TABLES
        for v in k.vars.values():
            if v.space == "local":           # per thread; read only as written (same address and width)
                self.sym[v.name] = Ptr(loc, (v.name, loc, loc + v.size, "local"), "local")
                loc += (v.size // 0x10000 + 1) * 0x10000
            if v.space == "shared" and not v.extern:
                addr = (addr + v.align - 1) // v.align * v.align
                self.sym[v.name] = Ptr(addr, (v.name, addr, addr + v.size, "shared"), "shared")
                addr += v.size
            if v.init is not None:           # initialized .const / .global arrays: read-only tables
                self.sym[v.name] = Ptr(tab, (v.name, tab, tab + v.size, "table"), v.space)
                self.tables[v.name] = v.init
                tab += (v.size // 0x10000 + 1) * 0x10000
        ext = [v for v in k.vars.values() if v.space == "shared" and v.extern]
        if ext and dyn is None:
            raise Unsupported(f"{k.file}:{ext[0].line}: extern .shared {ext[0].name} needs the launch's shared_bytes")
        if ext:                               # every extern array is the one dynamic region
            al = max(v.align for v in ext)
            addr = (addr + al - 1) // al * al
            self.sym.update((v.name, Ptr(addr, ("shared@dynamic", addr, addr + dyn, "shared"), "shared")) for v in ext)
        self.n = block[0] * block[1] * block[2]
        fail_if(not 0 < self.n <= 1024, Rejected, f"{k.name}: block of {self.n} threads")
        self.th = [Th(i, block, cta, grid, self.n) for i in range(self.n)]
        inputs = {t[0]: t[2] for t in self.tensors if t[1] == "input" and t[0] not in self.ints}   # name -> bytes
        self.smem: dict[int, tuple] = {}      # address -> (value, width)
        self.gmem: dict[int, object] = {}
        self.inits: dict[int, object] = {}    # address -> its unknown initial value (one object)
        self.shadow: dict[str, dict] = {"shared": {}, "global": {}}   # space -> byte -> [last write, {tid: read}]
        self.words: dict[str, dict] = {"shared": {}, "global": {}}    # space -> aligned word -> the same (access)
        self.quick = [quick(ins, inputs, self) for ins in k.instrs]
        self.runs = [()] * (len(k.instrs) + 1)   # pc -> the shortcuts of the unguarded instructions from pc on
        for pc in range(len(k.instrs) - 1, -1, -1):
            if self.quick[pc] and k.instrs[pc].guard is None:
                self.runs[pc] = (self.quick[pc], *self.runs[pc + 1][:63])
        self.witness: set[tuple] = set()

    def err(self, th: Th, ins: Instr, msg: str) -> Rejected:
        return Rejected(f"{self.k.file}:{ins.line}: thread {th.lin}: {msg} in `{ins.text}`")

    def unsupported(self, ins: Instr, msg: str) -> Unsupported:
        return Unsupported(f"{self.k.file}:{ins.line}: {msg} in `{ins.text}`")

    # -------------------------------------------------------------- schedule

    def run(self, schedule: list) -> dict[str, object]:
        """Replay ``schedule``; the values written to output tensors, by element."""
        for i, ev in enumerate(schedule):
            where = f"schedule event #{i}"
            if not isinstance(ev, list) or not ev or ev[0] not in ("run", "bar", "warp"):
                raise Rejected(f"{where}: not a run / bar / warp event")
            if ev[0] == "run" and len(ev) == 3 and all(type(x) is int for x in ev[1:]) and ev[1] <= ev[2]:
                for t in range(ev[1], ev[2] + 1):
                    if not 0 <= t < self.n or self.th[t].state != "run":
                        raise Rejected(f"{where}: thread {t} is not runnable")
                    self.thread(self.th[t])
            elif ev[0] == "bar" and len(ev) == 4:
                self.bar(ev[1], ev[2], ev[3], where)
            elif ev[0] == "warp" and len(ev) == 3 and type(ev[1]) is int and type(ev[2]) is int:
                self.warp(ev[1], ev[2], where)
            else:
                raise Rejected(f"{where}: malformed {ev[0]} event")
        left = [t.lin for t in self.th if t.state != "exit"]
        fail_if(left, Rejected, f"the schedule ends with thread {left and left[0]} not exited ({len(left)} in all)")
        return {f"{self.tensor(a)[0]}[{self.tensor(a)[1]}]": v for a, v in self.gmem.items()}

    def bar(self, bid, cnt, ranges, where: str) -> None:
        members: list[int] = []
        for r in ranges if isinstance(ranges, list) else [None]:
            if not (isinstance(r, list) and len(r) == 2 and all(type(x) is int for x in r) and r[0] <= r[1]):
                raise Rejected(f"{where}: malformed member range")
            members.extend(range(r[0], r[1] + 1))
        want = self.n if cnt is None else cnt
        if len(members) != want or len(set(members)) != want:
            raise Rejected(f"{where}: barrier {bid} released for {len(members)} threads, needs {want}")
        for t in members:
            if not 0 <= t < self.n or self.th[t].wait != ("bar", bid, cnt):
                raise Rejected(f"{where}: thread {t} is not waiting at barrier {bid} (count {cnt})")
            t0 = self.th[t - t % 32]
            ins = self.k.instrs[self.th[t].pc]
            if (ins.op == "bar" or "aligned" in ins.parts) and self.th[t].pc != t0.pc:
                raise Rejected(f"{where}: threads {t0.lin} and {t} of one warp wait at different aligned "
                               f"barriers (instructions {t0.pc} and {self.th[t].pc}: undefined behaviour)")
        self.release([self.th[t] for t in members], self.sync)

    def warp(self, w: int, mask: int, where: str) -> None:
        group = [self.th[w * 32 + i] for i in range(32) if mask >> i & 1 and w * 32 + i < self.n]
        fail_if(not group or w < 0, Rejected, f"{where}: no threads in warp {w} mask {mask:#x}")
        kind, pc = group[0].wait, group[0].pc
        if kind is None or kind[0] == "bar" or kind[1] != mask:
            raise Rejected(f"{where}: thread {group[0].lin} is not at a warp collective over {mask:#x}")
        for t in group:
            if t.wait != kind or (kind[0] != "wsync" and t.pc != pc):
                raise Rejected(f"{where}: thread {t.lin} is not at the same warp collective")
        self.release(group, self.sync if kind[0] == "wsync" else getattr(self, kind[0]))

    def release(self, group: list[Th], action) -> None:
        action(group)
        for t in group:
            t.state, t.wait, t.pc = "run", None, t.pc + 1

    def sync(self, group: list[Th]) -> None:
        """A barrier: each thread ticks its clock; all share one new list, the join of their clocks (never changed in
        place). Its entry i is i's own (no thread holds more of i than i), so a whole CTA's is their own entries."""
        joined = [t.vc[t.lin] for t in self.th] if len(group) == self.n else [max(c) for c in zip(*(t.vc for t in group))]
        for t in group:
            t.syncs.append(t.pc)
            joined[t.lin] = t.vc[t.lin] + 1
        for t in group:
            t.vc = joined

    # -------------------------------------------------------------- one thread

    def thread(self, th: Th) -> None:
        """Run ``th`` until it blocks at a barrier or collective, or exits."""
        instrs, regs, quick = self.k.instrs, th.regs, self.quick
        while th.state == "run":
            if th.pc >= len(instrs):
                th.state = "exit"
                return
            i = 0
            for q in self.runs[th.pc]:   # straight-line shortcuts, up to the first declining
                if not q(regs, th):
                    break
                i += 1
            n = max(i, 1)   # the shortcuts taken, else the one instruction below
            self.steps += n
            if self.steps >> 12 != (self.steps - n) >> 12:   # a tick per 4096 steps
                self.limits.tick()
            if i:
                th.pc += i
                continue
            ins = instrs[th.pc]
            if ins.guard is not None:
                p = regs.get(ins.guard[0])
                if p is None:
                    raise self.err(th, ins, f"read of unset predicate {ins.guard[0]}")
                if bool(p) == ins.guard[1]:
                    th.pc += 1
                    continue
            q = quick[th.pc]
            if q is not None and q(regs, th):
                th.pc += 1
                continue
            try:
                self.step(th, ins)
            except CheckError:
                raise
            except (IndexError, KeyError, AttributeError, TypeError, ValueError, ZeroDivisionError) as e:
                raise self.err(th, ins, f"cannot execute ({type(e).__name__})") from None

    def collective(self, th: Th, ins: Instr, op: str, p: list, o: list) -> tuple | None:
        """What ``ins`` waits for: a barrier, a warp collective, or nothing."""
        if op in ("bar", "barrier"):
            if p[1] == "warp":
                return "wsync", self.ival(th, o[0], ins, "b32") & ALL
            if ins.opcode not in BARRIERS:
                raise self.unsupported(ins, f"barrier variant `{ins.opcode}`")
            cnt = self.ival(th, o[1], ins, "u32") if len(o) > 1 else None
            if cnt is not None and (cnt != self.n or cnt % 32):
                raise self.unsupported(ins, f"barrier thread count {cnt} is not the CTA's {self.n} threads "
                                            "(a multiple of 32): its member set would depend on the schedule")
            return "bar", self.ival(th, o[0], ins, "u32") if o else 0, cnt
        if op == "shfl":
            return "shfl", self.ival(th, o[4], ins, "b32") & ALL if len(o) > 4 else ALL
        if op == "vote":
            return "vote", self.ival(th, o[-1], ins, "b32") & ALL if "sync" in p else ALL
        if ins.opcode in LDMATRIX or ins.opcode == MMA or (op == "wmma" and wmma_ok(p)):
            return op, ALL
        if op in ("wmma", "mma", "ldmatrix"):
            raise self.unsupported(ins, f"tensor-core instruction `{ins.opcode}`")
        return None

    def step(self, th: Th, ins: Instr) -> None:
        op, p, o, ty = ins.op, ins.parts, ins.operands, ins.parts[-1]
        if op == "bra":
            th.pc = self.k.labels[o[0].name]
            return
        if op in ("ret", "exit"):
            th.state = "exit"
            return
        wait = self.collective(th, ins, op, p, o)
        if wait is not None:
            th.state, th.wait = "block", wait
            return
        if op in ("ld", "st", "ldu"):
            self.mem(th, ins)
        elif op in ("membar", "fence"):
            pass
        elif op == "mov":
            if isinstance(o[1], Vec) or isinstance(o[0], Vec):
                raise self.unsupported(ins, "vector mov")
            if ty in FLOATS:
                self.put(o[0], th, self.fval(th, o[1], ins))
            else:
                v = self.val(th, o[1], ins, ty)
                self.put(o[0], th, self.keep(ins, v, wrap(v, ty)) if isinstance(v, int) and ty != "pred" else v)
        elif op == "cvta":
            self.cvta(th, ins, p, o)
        elif op == "cvt":
            self.cvt(th, ins, p[-2], ty, o)
        elif op == "setp":
            self.setp(th, ins, p, o)
        elif op == "selp":
            self.put(o[0], th, self.val(th, o[1] if self.val(th, o[3], ins, "pred") else o[2], ins, ty))
        elif ty in FLOATS:
            f = [self.fval(th, x, ins) for x in o[1:]]
            if any(isinstance(x, Inf) for x in f):
                try:
                    r = inf_arith(op, p, f)   # refuses .sat
                except ValueError as e:
                    raise self.unsupported(ins, str(e)) from None
            else:
                if op == "div" and f[1].is_zero():
                    raise self.err(th, ins, "division by zero")
                if op not in FLOAT_OPS:
                    raise self.unsupported(ins, "float instruction")
                r = FLOAT_OPS[op](f)
            self.put(o[0], th, self.saturate(ins, r) if "sat" in p else r)
        elif ty == "pred":
            v = [bool(self.val(th, x, ins, "pred")) for x in o[1:]]
            if op not in PRED_OPS:
                raise self.unsupported(ins, "predicate instruction")
            self.put(o[0], th, PRED_OPS[op](v))
        else:
            self.integer(th, ins, op, p, o, ty)
        th.pc += 1

    # -------------------------------------------------------------- operands

    def val(self, th: Th, o, ins: Instr, ty: str | None = None):
        if isinstance(o, Reg):
            if o.name not in th.regs:
                raise self.err(th, ins, f"read of unset register {o.name}")
            return th.regs[o.name]
        if isinstance(o, Imm):
            if ty in FLOATS:
                raise self.err(th, ins, "integer immediate used as a float")
            return wrap(o.value, ty) if ty and ty != "pred" else o.value
        if isinstance(o, FImm):
            return float_of_bits(o.bits, o.width)
        if isinstance(o, Sym) and o.name in self.sym:
            return self.sym[o.name]
        raise self.err(th, ins, f"bad source operand {o}")

    def ival(self, th: Th, o, ins: Instr, ty: str) -> int:
        v = self.val(th, o, ins, ty)
        if type(v) is bool:
            return int(v)
        if isinstance(v, Ptr):
            raise self.unsupported(ins, f"integer operation on an address of {v.alloc[0]} (layout-dependent)")
        if not isinstance(v, int):
            raise self.unsupported(ins, "integer operation on a symbolic value")
        return wrap(v, ty)

    def fval(self, th: Th, o, ins: Instr) -> Rat:
        v = self.val(th, o, ins, "f32")
        if isinstance(v, (Rat, Inf)):
            return v
        if type(v) is not int:
            raise self.err(th, ins, "not a float value")
        return typed(v, ins.parts[-1] if ins.parts[-1] in FLOATS else "f32")   # raw bits: the source type's format

    def packed(self, th: Th, o, ins: Instr) -> Packed:
        v = self.val(th, o, ins)
        if not isinstance(v, Packed):
            raise self.unsupported(ins, f"operand {o.name} is not a packed f16 pair")
        return v

    @staticmethod
    def put(o, th: Th, v) -> None:
        if not isinstance(o, Reg):
            raise Rejected(f"bad destination {o}")
        th.regs[o.name] = v

    def address(self, th: Th, m: Mem, ins: Instr, space: str) -> Ptr:
        """``m`` for an access in ``space``: a pointer into one allocation of that space (or generic into global)."""
        v = self.val(th, m.base, ins)
        if not isinstance(v, Ptr):
            raise self.unsupported(ins, "address not derived from a parameter or a variable" if isinstance(v, int)
                                   else "data-dependent address")
        if v.space != space and {v.space, space} != {"generic", "global"}:
            raise self.err(th, ins, f"a {v.space} address of {v.alloc[0]} used for a {space} access")
        if space == "global" and v.alloc[3] not in ("global", "table"):
            raise self.err(th, ins, f"a generic address of shared {v.alloc[0]} used for a global access")
        return v.at(m.offset)

    def keep(self, ins: Instr, v, r: int):
        """``r`` with the provenance of ``v`` (refused where the conversion changes an address)."""
        if not isinstance(v, Ptr):
            return r
        if r != v:
            raise self.unsupported(ins, f"an address of {v.alloc[0]} changed by a conversion (layout-dependent)")
        return Ptr(r, v.alloc, v.space)

    def derive(self, ins: Instr, op: str, p: list, v: list, ptrs: list[int], r: int):
        """The provenance of an integer result with address operands ``v[i]``, ``i in ptrs``: ``ptr +/- int``,
        ``int + ptr``, ``a * b + ptr`` keep the pointer's; ``ptr - ptr`` in one allocation: a distance; else refused."""
        if op == "sub" and ptrs == [0, 1] and v[0].alloc == v[1].alloc and v[0].space == v[1].space:
            return r
        if "sat" not in p and (op == "add" and ptrs in ([0], [1]) or op == "sub" and ptrs == [0]
                               or op == "mad" and ptrs == [2]):
            return Ptr(r, v[ptrs[0]].alloc, v[ptrs[0]].space)
        raise self.unsupported(ins, f"integer operation on an address of {v[ptrs[0]].alloc[0]} (layout-dependent)")

    def cvta(self, th: Th, ins: Instr, p: list, o: list) -> None:
        """``cvta[.to].space``: a generic address to one in ``space`` (global, shared) or back."""
        v, space = self.val(th, o[1], ins), next((x for x in p if x in SPACES), "?")
        if space not in ("global", "shared"):
            raise self.unsupported(ins, f"cvta of .{space}")
        frm, to = ("generic", space) if "to" in p else (space, "generic")
        if not isinstance(v, Ptr) or v.alloc[3] != space or (v.space != frm and {v.space, frm} != {"generic", "global"}):
            raise self.err(th, ins, f"cvta of a value that is not a {frm} address of {space} memory")
        self.put(o[0], th, Ptr(self.keep(ins, v, wrap(v, p[-1])), v.alloc, to))

    def saturate(self, ins: Instr, r: Rat) -> Rat:
        """A float ``.sat`` result: clamped to [0, 1], exact on constants, refused on symbols."""
        c = r.constant()
        if c is None:
            raise self.unsupported(ins, ".sat (clamp to [0, 1]) of a symbolic value")
        return Rat.of(min(max(c, 0), 1))

    # -------------------------------------------------------------- arithmetic

    def cvt(self, th: Th, ins: Instr, dt: str, st: str, o: list) -> None:
        """``cvt``: integer widths exact, ``.sat`` clamps; to an integer or ``.rni .rzi .rmi .rpi``: exact on constants,
        refused on symbols; other float conversions the identity on reals; ``.sat`` to a float: [0, 1]."""
        mode, sat = next((x for x in ins.parts[1:] if x in IROUND), None), "sat" in ins.parts
        if dt == "f16x2":   # cvt.rn.f16x2.f32 d, a, b: d = {hi: a, lo: b} (Packed: low half first)
            if ins.parts != ["cvt", "rn", "f16x2", "f32"]:
                raise self.unsupported(ins, "cvt variant")
            return self.put(o[0], th, Packed([self.fval(th, o[2], ins), self.fval(th, o[1], ins)]))
        if st not in FLOATS and dt not in FLOATS:
            a = self.val(th, o[1], ins, st)
            if mode is not None:
                raise self.unsupported(ins, "cvt variant")
            if isinstance(a, Ptr) and not sat:
                return self.put(o[0], th, self.keep(ins, a, wrap(a, dt)))
            a = self.ival(th, o[1], ins, st)
            return self.put(o[0], th, clamp(a, dt) if sat else wrap(a, dt))
        v = Rat.of(self.ival(th, o[1], ins, st)) if st not in FLOATS else self.fval(th, o[1], ins)
        if mode is not None or dt not in FLOATS:
            c = v.constant()
            if c is None or mode is None:
                raise self.unsupported(ins, "float-to-integer rounding of a symbolic value" if mode
                                       else "cvt to an integer without a rounding mode")
            if dt not in FLOATS:
                return self.put(o[0], th, float_to_int(c, mode, dt))
            v = Rat.of(float_to_int(c, mode, "s4096"))
        self.put(o[0], th, self.saturate(ins, v) if sat else v)

    def setp(self, th: Th, ins: Instr, p: list, o: list) -> None:
        cmp, ty, boolop = p[1], p[-1], next((m for m in p[2:-1] if m in ("and", "or", "xor")), None)
        if len(o) != 3 + bool(boolop):   # .ftz comes before the BoolOp: setp.lt.ftz.and.f32 p, a, b, c
            raise self.unsupported(ins, f"setp with {len(o)} operands")
        if ty in FLOATS:
            a, b = self.fval(th, o[1], ins).constant(), self.fval(th, o[2], ins).constant()
            if a is None or b is None:
                raise self.unsupported(ins, "branch on a symbolic float comparison")
            cmp = cmp.rstrip("u") if cmp not in ("lu", "gu") else cmp[0] + "t"
        elif cmp in ("eq", "ne") and null_test(self.val(th, o[1], ins, ty), self.val(th, o[2], ins, ty), ty):
            a, b = 1, 0
        else:
            a, b = self.ival(th, o[1], ins, ty), self.ival(th, o[2], ins, ty)   # .u/.b: unsigned (wrap)
        if cmp not in COMPARE:
            raise self.unsupported(ins, f"setp comparison .{cmp}")
        r = COMPARE[cmp](a, b)
        if boolop:   # as the predicate instructions
            r = PRED_OPS[boolop]((r, bool(self.val(th, o[3], ins, "pred"))))
        if isinstance(o[0], Pair):
            th.regs[o[0].first.name], th.regs[o[0].second.name] = r, not r
        else:
            self.put(o[0], th, r)

    def integer(self, th: Th, ins: Instr, op: str, p: list, o: list, ty: str) -> None:
        """Integer instructions at their width: results wrap; ``.sat`` clamps (``s32`` add, sub, mad.hi, mad24.hi)."""
        if ty not in INTS:
            raise self.unsupported(ins, f"integer instruction on .{ty}")
        raw = [self.val(th, x, ins) for x in o[1:]]
        ptrs = [i for i, x in enumerate(raw) if isinstance(x, Ptr)]
        if any(isinstance(x, Word) for x in raw):
            try:
                return self.put(o[0], th, ring(op, p, raw, bits(ty)))
            except ValueError as e:
                raise self.unsupported(ins, str(e)) from None

        def iv(i: int, t: str) -> int:
            return int(raw[i]) if i in ptrs else self.ival(th, o[i + 1], ins, t)
        n, a, dt = bits(ty), iv(0, ty), ty
        if op in UNARY_OPS:
            r, dt = UNARY_OPS[op](a, n, (1 << n) - 1), "u32" if op in ("popc", "clz") else ty
        elif op == "bfi":
            b = iv(1, ty)
            pos, ln = iv(2, "u32") & 0xFF, iv(3, "u32") & 0xFF
            mk = ((1 << ln) - 1) << pos
            r = (b & ~mk) | ((a << pos) & mk)
        elif op == "bfe":
            pos, ln = iv(1, "u32") & 0xFF, iv(2, "u32") & 0xFF
            r = (a >> pos) & ((1 << ln) - 1) if ln else 0
            if ty[0] == "s" and ln and r >> (ln - 1):
                r -= 1 << ln
        else:
            b = iv(1, "u32" if op in ("shl", "shr") else ty)
            if op in ("mul", "mad", "mul24", "mad24"):
                mode = p[1] if len(p) > 2 else "lo"
                r = mul24(a, b, ty, mode == "hi") if op[3:] == "24" else (a * b) >> n if mode == "hi" else a * b
                dt = ty[0] + str(2 * n) if mode == "wide" and op[3:] != "24" else ty
                if op in ("mad", "mad24"):
                    r += iv(2, dt)
            elif op in ("div", "rem"):
                if b == 0 or (ty[0] == "s" and b == -1 and a == -(1 << (n - 1))):   # the ISA leaves both unspecified
                    raise self.err(th, ins, "integer division by zero or overflow (unspecified in PTX)")
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                r = q if op == "div" else a - q * b
            elif op == "shl":
                r = a << b if b < n else 0
            elif op == "shr":
                r = a >> min(b, n) if ty[0] == "s" else ((a & ((1 << n) - 1)) >> b if b < n else 0)
            elif op in BINARY_OPS:
                r = BINARY_OPS[op](a, b)
            else:
                raise self.unsupported(ins, "integer instruction")
        if "sat" in p and (ty != "s32" or op not in ("add", "sub", "mad", "mad24") or op[:3] == "mad" and "hi" not in p):
            raise self.unsupported(ins, ".sat variant")
        r = clamp(r, dt) if "sat" in p else wrap(r, dt)
        self.put(o[0], th, self.derive(ins, op, p, raw, ptrs, r) if ptrs else r)

    # -------------------------------------------------------------- memory

    def mem(self, th: Th, ins: Instr) -> None:
        p, o, load = ins.parts, ins.operands, ins.op != "st"
        if "mem" not in ins.cache:            # decoded once per instruction
            ins.cache["mem"] = (next((s for s in reversed(SPACES) if s in p), "generic"),
                                bits(p[-1]) // 8 if p[-1] != "pred" else 1,
                                next((int(x[1:]) for x in p if x in ("v2", "v4", "v8")), 1))
        (space, width, vec), ty = ins.cache["mem"], p[-1]
        dst, m = (o[0], o[1]) if load else (o[1], o[0])
        if not isinstance(m, Mem):
            raise self.err(th, ins, "expected a memory operand")
        if space == "param":
            if ins.op != "ld" or not isinstance(m.base, Sym) or m.base.name not in self.pv or m.offset:
                raise self.err(th, ins, "bad parameter access")
            v = self.pv[m.base.name]
            if isinstance(v, Rat) and ty not in ("f32", "b32"):
                raise self.err(th, ins, "a float parameter read as an integer")
            return self.put(dst, th, v if isinstance(v, Rat) else self.keep(ins, v, wrap(v, ty)))
        addr = self.address(th, m, ins, space)
        if addr % width:
            raise self.err(th, ins, f"misaligned {width}-byte access at {addr:#x}")
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        if len(dsts) != vec:
            raise self.err(th, ins, f"vector width {vec} with {len(dsts)} operands")
        for i, d in enumerate(dsts):
            if load:
                v = self.load(th, ins, addr.at(i * width) if i else addr, width)
                self.put(d, th, self.keep(ins, v, wrap(v, ty)) if isinstance(v, Ptr) else typed(v, ty))
                continue
            v = self.val(th, d, ins, ty)
            if type(v) is bool:
                raise self.err(th, ins, "store of a predicate")
            self.store(th, ins, addr.at(i * width) if i else addr, width,
                       self.keep(ins, v, wrap(v, ty)) if isinstance(v, Ptr) else typed(v, ty))

    def tensor(self, addr: int, ins: Instr | None = None) -> tuple:
        """The output or input element at global address ``addr``: (name, index, role, esize)."""
        for name, role, esize, numel, base in self.tensors:
            if base <= addr < base + GLOBAL_STRIDE:
                off = addr - base
                if off % esize or off // esize >= numel:
                    raise Rejected(f"out-of-bounds or misaligned access to {name} at byte {off}"
                                   + (f" (line {ins.line})" if ins else ""))
                return name, off // esize, role, esize
        raise Rejected(f"global access to unknown address {addr:#x}")

    def where(self, th: Th, ins: Instr, addr: Ptr, width: int, write: bool) -> str:
        """``addr``'s memory, after its bounds check (against its allocation) and, for shared memory, the race check."""
        name, lo, hi, memory = addr.alloc
        if not lo <= addr <= hi - width:
            raise self.err(th, ins, f"access out of bounds: byte {addr - lo} of {name} ({hi - lo} bytes), "
                                    "the allocation the address derives from")
        if memory == "shared":
            self.access("shared", addr, width, th, ins, write)
        return memory

    def uninit(self, addr: int) -> Rat:
        """Never-written shared memory: an unknown of this side (no claim rests on two kernels' garbage agreeing)."""
        return Rat.var(f"{self.side}.shared@uninit[{addr - SHARED_BASE:#x}]")

    def load(self, th: Th, ins: Instr, addr: Ptr, width: int):
        memory = self.where(th, ins, addr, width, False)
        if memory == "table":                 # its PTX initial bytes, little-endian
            return int.from_bytes(self.tables[addr.alloc[0]][addr - addr.alloc[1]:][:width], "little")
        if memory == "local":
            if th.lmem.get(addr, (0, 0))[1] != width:
                raise self.unsupported(ins, f"a {width}-byte read of local memory this thread did not write so")
            return th.lmem[addr][0]
        if memory == "shared":
            ent = self.smem.get(addr) or ((None, 2) if width == 4 and addr + 2 in self.smem else None)
            if ent is None:
                return self.uninit(addr)
            if ent[1] == 2 and width == 4:
                halves = [self.smem.get(a) for a in (addr, addr + 2)]
                if any(e is not None and e[1] != 2 for e in halves):
                    raise self.unsupported(ins, "mixed-width load")
                return Packed([e[0] if e else self.uninit(a) for a, e in zip((addr, addr + 2), halves)])
            if ent[1] != width:
                raise self.unsupported(ins, "partial-word type punning")
            return ent[0]
        name, i, role, esize = self.tensor(addr, ins)
        if width == 4 and esize == 2 and role == "input":
            return Packed([self.load(th, ins, addr, 2), self.load(th, ins, addr.at(2), 2)])
        if width != esize:
            raise self.unsupported(ins, f"{width}-byte access to a {esize}-byte tensor {name}")
        if role == "output":   # written by the kernel: not through the non-coherent path (PTX ISA: read-only data)
            fail_if({"nc", "ldu"} & {*ins.parts}, Unsupported, f"{self.k.file}:{ins.line}: non-coherent load of {name}")
            self.access("global", addr, width, th, ins, False)
        if addr in self.gmem:
            return self.gmem[addr]
        if addr not in self.inits:
            v = var(f"{name}@init[{i}]" if role == "output" else f"{name}[{i}]")
            self.inits[addr] = Word(v, 32) if name in self.ints else v
        return self.inits[addr]

    def store(self, th: Th, ins: Instr, addr: Ptr, width: int, value) -> None:
        if isinstance(value, Inf):
            raise self.unsupported(ins, "a store of ±inf")
        if addr.alloc[3] == "table":
            raise self.unsupported(ins, f"a store to the .const/.global variable {addr.alloc[0]}")
        if addr.alloc[3] == "local" and self.where(th, ins, addr, width, True):
            for a in [a for a in th.lmem if a < addr + width and a + th.lmem[a][1] > addr]:
                del th.lmem[a]
            th.lmem[addr] = (value, width)
            return
        if self.where(th, ins, addr, width, True) == "shared":
            for a in range(addr - 7, addr + width):      # drop the values this store overlaps
                e = self.smem.get(a)
                if e is not None and a + e[1] > addr and (a != addr or e[1] != width):
                    del self.smem[a]
            if isinstance(value, Packed):
                if width != 4:
                    raise self.unsupported(ins, f"packed pair stored as {width} bytes")
                self.smem[addr], self.smem[addr + 2] = (value[0], 2), (value[1], 2)
            else:
                self.smem[addr] = (value, width)
            return
        name, _, role, esize = self.tensor(addr, ins)
        if width != esize:
            raise self.unsupported(ins, f"{width}-byte store to a {esize}-byte tensor {name}")
        if role != "output":
            raise self.err(th, ins, f"store to input tensor {name}")
        if isinstance(value, Ptr):
            raise self.unsupported(ins, "an address stored to global memory (layout-dependent)")
        if isinstance(value, Rat if name in self.ints else Word):
            raise self.unsupported(ins, f"{'a float' if name in self.ints else 'integer data'} stored to tensor {name}")
        self.access("global", addr, width, th, ins, True)
        self.gmem[addr] = value

    def access(self, space: str, addr: int, width: int, th: Th, ins: Instr, write: bool) -> None:
        """Check the access against each byte's last write and reads; record ordered conflicts. An aligned word
        only ever accessed whole has one entry in ``words`` (its bytes' entries would be equal, and the byte loop
        finds nothing new past the first); any other access first splits the words it overlaps into byte copies."""
        me, vc, last = (th.lin, th.vc[th.lin], ins.index), th.vc, None
        shadow, seen = self.shadow[space], write and set()   # seen: reads checked at an earlier byte (same outcome)
        words, span = self.words[space], range(addr, addr + width)
        if width == 4 and not addr % 4 and (addr in words or all(a not in shadow for a in span)):
            shadow, span = words, (addr,)
        for w in range(addr - addr % 4, addr + width, 4) if shadow is not words else ():
            old = words.pop(w, None)
            shadow.update({b: [old[0], dict(old[1])] for b in range(w, w + 4)} if old else {})
        for a in span:
            sh = shadow.get(a) or shadow.setdefault(a, [None, {}])
            if sh[0] is not None and sh[0][0] != th.lin and sh[0] is not last:   # the same write: same class
                self.conflict(space, a, sh[0], me, vc, "WAW" if write else "RAW")
                last = sh[0]
            if write:
                for r in sh[1].values():
                    if r[0] != th.lin and r not in seen:
                        seen.add(r)
                        self.conflict(space, a, r, me, vc, "WAR")
                sh[0], sh[1] = me, {}
            else:
                sh[1][th.lin] = me

    def conflict(self, space: str, addr: int, first: tuple, me: tuple, vc: list, kind: str) -> None:
        tid, clock, pc = first
        if vc[tid] <= clock:
            raise Rejected(f"data race on {space} byte {addr:#x}: thread {tid} at instruction {pc} and "
                           f"thread {me[0]} at instruction {me[2]} ({kind}), no barrier orders them")
        self.witness.add((space, kind, pc, me[2], self.th[tid].syncs[clock]))

    # -------------------------------------------------------------- warp collectives

    def shfl(self, group: list[Th]) -> None:
        lanes, res = {t.lane: t for t in group}, []
        for t in group:
            ins = self.k.instrs[t.pc]
            mode, (dst, a, b, c) = ins.parts[2], ins.operands[:4]
            bv, cv = self.ival(t, b, ins, "b32") & 31, self.ival(t, c, ins, "b32")
            clamp, seg, lane = cv & 31, (cv >> 8) & 31, t.lane
            hi = (lane & seg) | (clamp & ~seg & 31)
            if mode not in ("up", "down", "bfly", "idx"):
                raise self.unsupported(ins, f"shfl mode {mode}")
            j = {"up": lane - bv, "down": lane + bv, "bfly": lane ^ bv, "idx": (lane & seg) | (bv & ~seg & 31)}[mode]
            ok = j >= hi if mode == "up" else j <= hi
            j = j if ok else lane
            if j not in lanes:
                raise self.err(t, ins, f"shfl source lane {j} is not in the member mask")
            res.append((t, dst, self.val(lanes[j], a, ins), ok))
        for t, dst, v, ok in res:
            if isinstance(dst, Pair):
                t.regs[dst.first.name], t.regs[dst.second.name] = v, ok
            else:
                t.regs[dst.name] = v

    def vote(self, group: list[Th]) -> None:
        ins = self.k.instrs[group[0].pc]   # every thread's (Replay.warp)
        vals = [bool(self.val(t, ins.operands[1], ins, "pred")) for t in group]
        mode = next((x for x in ins.parts[1:] if x in ("all", "any", "uni", "ballot")), "?")
        if mode == "?":
            raise self.unsupported(ins, "vote mode")
        r = {"all": all(vals), "any": any(vals), "uni": all(vals) or not any(vals),
             "ballot": sum(1 << t.lane for t, v in zip(group, vals) if v)}[mode]
        for t in group:
            t.regs[ins.operands[0].name] = r

    def full_warp(self, group: list[Th]) -> Instr:
        fail_if(len(group) != 32, Rejected, f"{self.k.file}: a tensor-core instruction needs a full warp")
        return self.k.instrs[group[0].pc]

    def ldmatrix(self, group: list[Th]) -> None:
        """m8n8 ``x1/x2/x4`` [.trans] b16: lane l supplies row address l of matrix l // 8. Without .trans, a lane's two
        halves are one aligned word: held as two 16-bit entries, it is read as one 4-byte load (the same values)."""
        ins = self.full_warp(group)
        trans = "trans" in ins.parts
        nmat = int(next(x for x in ins.parts if x in ("x1", "x2", "x4"))[1:])
        rows = [self.address(t, ins.operands[1], ins, "shared") for t in group]
        out = []
        for t in group:
            lane, regs = t.lane, []
            for i in range(nmat):
                addrs = [rows[8 * i + 2 * (lane % 4) + h].at(2 * (lane // 4)) for h in (0, 1)] if trans else \
                    [rows[8 * i + lane // 4].at(4 * (lane % 4) + h) for h in (0, 2)]
                whole = not trans and addrs[0] % 4 == 0 and all(self.smem.get(a, ())[1:] == (2,) for a in addrs)
                regs.append(self.load(t, ins, addrs[0], 4) if whole else Packed([self.load(t, ins, a, 2) for a in addrs]))
            out.append(regs)
        for t, regs in zip(group, out):
            for d, v in zip(ins.operands[0].items, regs):
                t.regs[d.name] = v

    def mma(self, group: list[Th]) -> None:
        """m16n8k16 row.col f32.f16.f16.f32 (PTX ISA fragment layout, g = lane/4, q = lane%4)."""
        ins = self.full_warp(group)
        d_o, a_o, b_o, c_o = (x.items for x in ins.operands)
        A, B, C = [[None] * 16 for _ in range(16)], [[None] * 16 for _ in range(8)], {}   # A by rows, B by columns
        for t in group:
            g, q = t.lane // 4, t.lane % 4
            for r, (i, j) in enumerate(((g, 2 * q), (g + 8, 2 * q), (g, 2 * q + 8), (g + 8, 2 * q + 8))):
                A[i][j], A[i][j + 1] = self.packed(t, a_o[r], ins)
            for r, k in enumerate((2 * q, 2 * q + 8)):
                B[g][k], B[g][k + 1] = self.packed(t, b_o[r], ins)
            for r, ij in enumerate(mma_acc(g, q)):
                C[ij] = self.fval(t, c_o[r], ins)
        for t in group:
            for r, (i, j) in enumerate(mma_acc(t.lane // 4, t.lane % 4)):
                t.regs[d_o[r].name] = dot(C[i, j], A[i], B[j])

    def wmma(self, group: list[Th]) -> None:
        """m16n16k16: element e of a row-major f32 tile in lane e // 8, register e % 8; f16
        fragments hold elements 2r, 2r+1 of row lane % 16 in register r (both lane halves)."""
        ins = self.full_warp(group)
        p, o = ins.parts, ins.operands
        if p[1] in ("load", "store"):
            mem = o[1] if p[1] == "load" else o[0]
            addrs = {(a, a.alloc, a.space): a for a in (self.address(t, mem, ins, "shared") for t in group)}
            strides = {self.ival(t, o[2], ins, "u32") for t in group}
            if len(addrs) != 1 or len(strides) != 1:
                raise self.err(group[0], ins, "wmma lanes disagree on address (or allocation) or stride")
            base, stride, col = addrs.popitem()[1], strides.pop(), "col" in p

            def at(e: int, size: int) -> Ptr:
                i, j = divmod(e, 16)
                return base.at(size * (j * stride + i if col else i * stride + j))
            if p[1] == "store":
                for t in group:
                    for r, src in enumerate(o[1].items):
                        self.store(t, ins, at(t.lane * 8 + r, 4), 4, self.fval(t, src, ins))
                return
            val = {e: self.load(t, ins, at(e, 2), 2) for e in range(256) for t in (group[e // 16], group[16 + e // 16])}
            for t in group:
                for r, d in enumerate(o[0].items):
                    e = (t.lane % 16) * 16 + 2 * r
                    t.regs[d.name] = Packed([val[e], val[e + 1]])
            return
        d_o, a_o, b_o, c_o = (x.items for x in o)
        A, B, C = [[None] * 16 for _ in range(16)], [[None] * 16 for _ in range(16)], {}   # A by rows, B by columns
        for t in group:
            for r in range(8):
                i, j = t.lane % 16, 2 * r
                A[i][j], A[i][j + 1] = self.packed(t, a_o[r], ins)
                B[j][i], B[j + 1][i] = self.packed(t, b_o[r], ins)
                C[divmod(t.lane * 8 + r, 16)] = self.fval(t, c_o[r], ins)
        for t in group:
            for r in range(8):
                i, j = divmod(t.lane * 8 + r, 16)
                t.regs[d_o[r].name] = dot(C[i, j], A[i], B[j])


@lru_cache(maxsize=None)
def anon(v: str) -> str:
    """``v``, or for an atom of ``ATOMS`` 16 hex digits of the blake2b of its name (digests use no table)."""
    return v if v not in ATOMS else hashlib.blake2b(v.encode(), digest_size=8).hexdigest()


anon.expo = lru_cache(maxsize=1 << 16)(lambda e, name: hashlib.blake2b(_expo_text(e, name).encode(), digest_size=8)
                                       .hexdigest())   # an exponent in a digest: 16 hex digits of its text's blake2b


class Printer:
    """Normal forms as text with a shared atom table: each atom (``max(...)``, ``sqrt(...)``, ...) is written ``@k``
    and defined once, after the atoms its arguments use. The same values in the same order print the same."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.table: list[str] = []
        self.h = np.zeros(0, np.uint64)   # NAMES[i]'s hash in ``digest``
        self.dens: dict[tuple, tuple] = {}   # (id, naming) -> (denominator, its text)

    def name(self, v: str) -> str:
        if v not in ATOMS:
            return v
        if v not in self.ids:
            fn, args = ATOMS[v]
            body = f"{fn}({', '.join(a.text(self.name) for a in args)})"
            self.ids[v] = f"@{len(self.table) + 1}"
            self.table.append(body)
        return self.ids[v]

    def text(self, x) -> str:
        if isinstance(x, Word):
            return f"int{x.n}: {x.p.text(self.name)}"
        return self.ratio(x, self.name) if isinstance(x, Rat) else str(x)

    def ratio(self, x: Rat, name) -> str:
        """``x.text(name)``, each denominator printed once (the outputs of a softmax row share theirs)."""
        if x.d.constant() == 1:
            return x.text(name)
        n, key = x.n.text(name), (id(x.d), name)
        return f"({n})/({(self.dens.get(key) or self.dens.setdefault(key, (x.d, x.d.text(name))))[1]})"

    def digest(self, x) -> str:
        """The sha256 of ``x``'s text (atoms named by ``anon``: no table) or, if all its ``terms`` are products of two
        input elements, of ``sum_t w_t * mix(u_t, v_t) mod 2^64``, each element ``u`` as 8 bytes of its name's blake2b
        (linear in ``w``: a function of the normal form). For auditors: the outputs' equality never rests on it."""
        rest, k, w = terms(x) if isinstance(x, Rat) and x.d is ONE_P else ({0: 0}, None, None)
        if len(self.h) < len(NAMES):    # 0: an atom of ATOMS (in the text)
            self.h = np.concatenate((self.h, np.array([0 if m[0][0] in ATOMS else 1 | int.from_bytes(hashlib.blake2b(
                m[0][0].encode(), digest_size=8).digest(), "little") for m in NAMES[len(self.h):]], np.uint64)))
        u, v = (self.h[k >> 32], self.h[k & ALL]) if not rest else (np.zeros(1, np.uint64),) * 2
        if not (u.all() and v.all()):
            text = self.ratio(x, anon) if isinstance(x, Rat) else self.text(x)
            return hashlib.sha256(text.encode()).hexdigest()
        z = np.minimum(u, v) ^ np.maximum(u, v) * np.uint64(0x9E3779B97F4A7C15)   # splitmix64's finalizer
        z = (z ^ z >> np.uint64(30)) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ z >> np.uint64(27)) * np.uint64(0x94D049BB133111EB)
        total = (w.astype(np.uint64) * (z ^ z >> np.uint64(31))).sum(dtype=np.uint64)
        return hashlib.sha256(b"pairs" + int(total).to_bytes(8, "little")).hexdigest()


def positive(x: Rat, strict: bool) -> bool:
    """``x >= 0`` (``> 0`` if ``strict``) by form: terms of positive coefficients, even powers or of ``LN2``."""
    return all(all(c > 0 and all(k % 2 == 0 or v == str(LN2) for v, k in m) for (m, _), c in p.t.items()) and (
        not s or any(all(v == str(LN2) for v, _ in m) for m, _ in p.t)) for p, s in ((x.n, strict), (x.d, True)))


def undefined(ref: list, opt: list) -> tuple:
    """The optimized kernel's first side condition (``poly.side_conditions``: kind, value) neither ``positive`` nor the
    reference's (one normal form; its kind, or ``>0``), or None; and how many of the reference's are not ``positive``
    (assumed: the claim holds where the reference is defined)."""
    own = {(k, str(x)) for k, x in {(k, id(x)): (k, x) for k, x in ref}.values() if not positive(x, k != ">=0")}
    return next(((k, x) for k, x in {(k, id(x)): (k, x) for k, x in opt}.values() if not positive(x, k != ">=0")
                 and not {(k, str(x)), (">0", str(x))} & own), None), len(own)


def least(x) -> tuple | None:
    """The exponent ``shift`` divides out of ``x`` (None: no such denominator): the least denominator exponent without
    its ``max`` monomials (a running or sentinel maximum), then by monomial and whole exponent (as tuples)."""
    if not isinstance(x, Rat) or x.d.constant() is not None or not all(e for _, e in x.d.t):
        return None
    return min((_kept(e), m, e) for m, e in x.d.t)[2]


def shift(x, to: tuple = ()):
    """``x`` with numerator and denominator multiplied by one ``exp(to - least(x))``: equal over the reals (``exp``
    never vanishes), and for ``to = ()`` a canonical representative for softmax-like quotients ``sum_j exp(s_j - M)
    v_j / sum_j exp(s_j - M)`` whatever the shift ``M``; ``to = least(y)`` scales ``x`` onto ``shift(y)``'s."""
    if (e := least(x)) is None:
        return x
    f = Poly({((), intern_expo(Poly(dict(to)).add(Poly(dict(e)), -1).key())): 1})
    return Rat(x.n.mul(f), x.d.mul(f))


@lru_cache(maxsize=1 << 14)
def _kept(expo: tuple) -> tuple:
    """``expo`` without its ``max`` monomials (the outputs of one softmax row share their denominator's exponents)."""
    return tuple((k, c) for k, c in expo if not any(v[:4] in ("max(", "max#") for v, _ in k[0]))


# ------------------------------------------------------------------ the claim


def check_dims(v, where: str) -> tuple[int, int, int]:
    """A grid or block: three integers in 1..65535."""
    if not (isinstance(v, list) and len(v) == 3 and all(type(x) is int and 1 <= x <= 65535 for x in v)):
        raise Malformed(where, "needs three positive integers")
    return tuple(v)


def check_params(v, where: str) -> list[dict]:
    """Kernel parameter bindings (docs/kernels.md): tensors with dtype and shape, integer scalars."""
    fail_if(not isinstance(v, list), Malformed, where, "params: needs a list")
    for i, p in enumerate(v):
        w = f"{where}: params[{i}]"
        fail_if(not isinstance(p, dict) or not isinstance(p.get("name"), str), Malformed, w, "needs a name")
        if p["name"] in [q.get("name") for q in v[:i] if isinstance(q, dict)]:
            raise Malformed(w, f"a second parameter named {p['name']}")
        if p.get("role") == "scalar":
            if (p.get("dtype") == "f32") == ("value" in p) or "value" in p and type(p["value"]) is not int \
                    or not re.fullmatch(r"[A-Za-z_]\w*", p["name"]):
                raise Malformed(w, "a scalar needs an identifier name and an integer value, or dtype f32 "
                                "and no value (symbolic)")
        elif p.get("role") in ("input", "output"):
            if p.get("dtype") not in ("f32", "f16", "s32") or not isinstance(p.get("shape"), list) or not all(
                    type(d) is int and 0 <= d <= 1 << 24 for d in p["shape"]):
                raise Malformed(w, "a tensor needs dtype f32/f16/s32 and a shape of integers")
        else:
            raise Malformed(w, "role must be input, output or scalar")
    return v


def bind(params: list[dict], spec: dict, where: str) -> list[dict]:
    """One kernel's ``.param`` bindings: those ``spec["params"]`` names (in ``.param`` order), else ``params``."""
    names = spec.get("params")
    if names is None:
        return params
    by = {p["name"]: p for p in params}
    if not isinstance(names, list) or len(set(map(str, names))) != len(names) or \
            not all(isinstance(n, str) and n in by for n in names):
        raise Malformed(where, "params: needs distinct names of the pair's parameters")
    return [by[n] for n in names]


def shared_bytes(spec: dict, where: str) -> int | None:
    """The launch's dynamic shared memory in bytes (``shared_bytes``), if given."""
    n = spec.get("shared_bytes")
    if n is not None and not (type(n) is int and 0 <= n <= 228 * 1024):
        raise Malformed(where, "shared_bytes: needs an integer in 0..233472")
    return n


def ctas(grid) -> list[tuple[int, int, int]]:
    """Every CTA of ``grid``, x fastest."""
    return [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]


def coverage(outs) -> dict[str, list]:
    """The output elements written, by tensor, as inclusive index ranges (``"y[3]"`` keys)."""
    out: dict[str, list] = {}
    for name, i in sorted((n, int(x)) for n, x in (key[:-1].rsplit("[", 1) for key in outs)):
        runs = out.setdefault(name, [])
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return out


def scope(cta, grid) -> str:
    """Which CTAs a claim covers: every CTA (``"all"``) or one, named."""
    if math.prod(grid) == 1 or cta == "all":
        return f"the whole launch (every CTA of grid {tuple(grid)}, written outputs disjoint)"
    return f"only CTA {tuple(cta)} of grid {tuple(grid)}"
