"""Clean expressions (grammar: docs/clean-expressions.md): parse, print, infer shapes, evaluate. Functions
move or sum values; ``scale`` and ``mean`` multiply by a non-zero rational constant."""

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from .errors import LimitExceeded, Malformed, fail_if
from .limits import DEFAULT, Limits

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Ref:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Call:
    fn: str
    args: tuple
    kw: tuple  # (key, value) pairs in the function's key order; list values stored as tuples

    def __str__(self) -> str:
        kws = [f"{k}={list(v) if isinstance(v, tuple) else v}".replace(" ", "") for k, v in self.kw]
        return f"{self.fn}({', '.join([str(a) for a in self.args] + kws)})"


Term = Ref | Call

# function -> (min args, max args (None = any), required keys, optional keys), keys in print order
FUNCTIONS: dict[str, tuple[int, int | None, tuple[str, ...], tuple[str, ...]]] = {
    "concat": (1, None, ("dim",), ()),
    "slice": (1, 1, ("dim", "start", "end"), ("step",)),
    "pad": (1, 1, ("dim", "before", "after"), ()),
    "permute": (1, 1, ("dims",), ()),
    "transpose": (1, 1, ("dim0", "dim1"), ()),
    "reshape": (1, 1, ("shape",), ()),
    "sum": (1, None, (), ()),
    "scale": (1, 1, ("num", "den"), ()),
    "mean": (1, None, (), ()),
}
_LIST_KEYS = {"dims", "shape"}  # every other key takes an integer
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_.]*(?:@r[0-9]+)?)|(-?[0-9]{1,40}(?![0-9]))|(\S))")  # ints: <= 40 digits


def parse(text: str, where: str = "", limits: Limits = DEFAULT) -> Term:
    """Parse a clean expression; errors name ``where`` and the offending position."""
    if not isinstance(text, str) or len(text) > 100_000:
        raise Malformed(where, "clean expression must be a string of at most 100000 characters")
    toks = [(("name", "int", "sym")[m.lastindex - 1], m.group(m.lastindex), m.start(m.lastindex))
            for m in _TOKEN.finditer(text)]  # (kind, text, column)
    pos = 0

    def fail(msg: str):
        at = toks[pos][2] if pos < len(toks) else len(text)
        raise Malformed(where, f"clean expression {text[:80]!r}: {msg} at column {at}")

    def eat(kind: str, val: str | None = None) -> str:
        nonlocal pos
        if pos >= len(toks) or toks[pos][0] != kind or (val is not None and toks[pos][1] != val):
            fail(f"expected {val or kind}")
        pos += 1
        return toks[pos - 1][1]

    def peek(val: str) -> bool:
        return pos < len(toks) and toks[pos][1] == val and toks[pos][0] == "sym"

    def value():
        if not peek("["):
            return int(eat("int"))
        eat("sym", "[")
        items = []
        while not peek("]"):
            items.append(int(eat("int")))
            if not peek("]"):
                eat("sym", ",")
        eat("sym", "]")
        return tuple(items)

    def term(depth: int) -> Term:
        nonlocal pos
        if depth > limits.max_term_depth:
            raise LimitExceeded(f"{where}: clean expression nested deeper than {limits.max_term_depth}")
        name = eat("name")
        if not peek("("):
            return Ref(name)
        if name not in FUNCTIONS:
            pos -= 1
            fail(f"unknown function '{name}' (clean functions: {', '.join(FUNCTIONS)})")
        eat("sym", "(")
        args, kw = [], {}
        while not peek(")"):
            if pos + 1 < len(toks) and toks[pos + 1][1] == "=" and toks[pos][0] == "name":
                key = eat("name")
                eat("sym", "=")
                if key in kw:
                    fail(f"repeated key '{key}'")
                if peek("[") != (key in _LIST_KEYS):
                    fail(f"key '{key}' takes {'a list' if key in _LIST_KEYS else 'an integer'}")
                kw[key] = value()
            elif kw:
                fail("positional argument after a keyword")
            else:
                args.append(term(depth + 1))
            if not peek(")"):
                eat("sym", ",")
        eat("sym", ")")
        lo, hi, req, opt = FUNCTIONS[name]
        if len(args) < lo or (hi is not None and len(args) > hi):
            fail(f"{name} takes {lo}..{hi or 'n'} terms, got {len(args)}")
        if not set(req) <= set(kw) <= set(req + opt):
            fail(f"{name} needs keys {list(req)}{' (optional ' + str(list(opt)) + ')' if opt else ''}")
        return Call(name, tuple(args), tuple((k, kw[k]) for k in req + opt if k in kw))

    t = term(0)
    if pos != len(toks):
        fail("unexpected text")
    return t


def rename(t: Term, f: Callable[[str], str]) -> Term:
    """``t`` with every tensor name ``n`` replaced by ``f(n)``."""
    return Ref(f(t.name)) if isinstance(t, Ref) else Call(t.fn, tuple(rename(a, f) for a in t.args), t.kw)


def refs(t: Term) -> list[str]:
    """Tensor names in order of appearance."""
    return [t.name] if isinstance(t, Ref) else [n for a in t.args for n in refs(a)]


class TermError(ValueError):
    """A well-formed term that does not fit the shapes of its tensors."""


def _axis(d, n: int) -> int:
    fail_if(not isinstance(d, int) or not -n <= d < n, TermError, f"dim {d} out of range for rank {n}")
    return d % n


def _apply(t: Call, xs: list, ops: dict):
    """One rule per function, shared by shape inference and evaluation (``ops``: their actions)."""
    kw, x = dict(t.kw), xs[0]
    n, s0 = len(shape_of(x)), shape_of(x)
    if t.fn == "concat":
        d = _axis(kw["dim"], n)
        for y in xs[1:]:
            s = shape_of(y)
            if len(s) != n or any(a != b for i, (a, b) in enumerate(zip(s, s0)) if i != d):
                raise TermError(f"concat of shapes {[list(shape_of(z)) for z in xs]} on dim {d}")
        return ops["concat"](xs, d)
    if t.fn == "slice":
        d, step, lo, hi = _axis(kw["dim"], n), kw.get("step", 1), kw["start"], kw["end"]
        if not (isinstance(step, int) and step >= 1 and 0 <= lo <= hi <= s0[d]):
            raise TermError(f"slice [{lo}:{hi}:{step}] out of range on dim {d} of {list(s0)}")
        return ops["slice"](x, d, lo, hi, step)
    if t.fn == "pad":
        d, lo, hi = _axis(kw["dim"], n), kw["before"], kw["after"]
        if not (isinstance(lo, int) and isinstance(hi, int) and lo >= 0 and hi >= 0):
            raise TermError("pad widths must be non-negative")
        return ops["pad"](x, d, lo, hi)
    if t.fn in ("permute", "transpose"):
        if t.fn == "permute":
            p = [_axis(d, n) for d in kw["dims"]]
        else:
            p, i, j = list(range(n)), _axis(kw["dim0"], n), _axis(kw["dim1"], n)
            p[i], p[j] = p[j], p[i]
        fail_if(sorted(p) != list(range(n)), TermError, f"{list(kw.get('dims', p))} is not a permutation of rank {n}")
        return ops["transpose"](x, p)
    if t.fn == "reshape":
        s = tuple(kw["shape"])
        if any(not isinstance(v, int) or v < 0 for v in s) or int(np.prod(s)) != int(np.prod(s0)):
            raise TermError(f"cannot reshape {list(s0)} to {list(s)}")
        return ops["reshape"](x, s)
    if t.fn == "scale":
        c = Fraction(kw["num"], kw["den"]) if kw["den"] >= 1 else Fraction(0)
        if not c or (c.numerator, c.denominator) != (kw["num"], kw["den"]):
            raise TermError(f"scale {kw['num']}/{kw['den']}: needs num != 0, den >= 1, in lowest terms")
        return ops["scale"](x, c)
    for y in xs[1:]:  # sum, mean
        fail_if(shape_of(y) != s0, TermError, f"{t.fn} of shapes {[list(shape_of(z)) for z in xs]}")
    return ops["sum"](xs) if t.fn == "sum" else ops["scale"](ops["sum"](xs), Fraction(1, len(xs)))


def shape_of(x) -> Shape:
    return tuple(x) if isinstance(x, tuple) else tuple(x.shape)


def _fold(t: Term, leaf: Callable, ops: dict):
    return leaf(t.name) if isinstance(t, Ref) else _apply(t, [_fold(a, leaf, ops) for a in t.args], ops)


def _dim_index(nd: int, d: int, s: slice) -> tuple:
    return tuple(s if k == d else slice(None) for k in range(nd))


def _pad_array(x: np.ndarray, d: int, lo: int, hi: int) -> np.ndarray:
    out = np.full(x.shape[:d] + (x.shape[d] + lo + hi,) + x.shape[d + 1:], 0, dtype=x.dtype)
    out[_dim_index(x.ndim, d, slice(lo, lo + x.shape[d]))] = x
    return out


def _array(v) -> np.ndarray:
    """``v`` as an array; a scalar (numpy unwraps 0-d results) as a 0-d object array."""
    if isinstance(v, np.ndarray):
        return v
    a = np.empty((), dtype=object)
    a[()] = v
    return a


_SHAPE_OPS = {
    "concat": lambda xs, d: xs[0][:d] + (sum(s[d] for s in xs),) + xs[0][d + 1:],
    "slice": lambda x, d, lo, hi, st: x[:d] + (len(range(lo, hi, st)),) + x[d + 1:],
    "pad": lambda x, d, lo, hi: x[:d] + (x[d] + lo + hi,) + x[d + 1:],
    "transpose": lambda x, p: tuple(x[i] for i in p),
    "reshape": lambda x, s: s,
    "sum": lambda xs: xs[0],
    "scale": lambda x, c: x,
}
_EVAL_OPS = {
    "concat": lambda xs, d: np.concatenate(xs, axis=d),
    "slice": lambda x, d, lo, hi, st: x[_dim_index(x.ndim, d, slice(lo, hi, st))],
    "pad": _pad_array,
    "transpose": np.transpose,
    "reshape": np.reshape,
    "sum": lambda xs: _array(sum(xs[1:], xs[0])),
    # exact on rationals and symbolic values; numeric (float) runs only propose candidates
    "scale": lambda x, c: x * float(c) if x.dtype.kind == "f" else _array(np.frompyfunc(lambda e: e * c, 1, 1)(x)),
}


def factor(t: Term) -> tuple[Fraction, Term]:
    """``(c, u)`` with ``t = c * u``: a ``scale`` or ``mean`` at the top of ``t`` taken out (else ``c = 1``)."""
    if isinstance(t, Call) and t.fn in ("scale", "mean"):
        return (Fraction(*dict(t.kw).values()), t.args[0]) if t.fn == "scale" else (Fraction(1, len(t.args)), Call("sum", t.args, ()))
    return Fraction(1), t


def infer_shape(t: Term, shape: Callable[[str], Shape]) -> Shape:
    """Shape of ``t`` given its tensors' shapes; raises ``TermError`` if it does not fit."""
    return _fold(t, lambda n: tuple(shape(n)), _SHAPE_OPS)


def evaluate(t: Term, value: Callable[[str], np.ndarray]) -> np.ndarray:
    """Value of ``t`` on arrays of any element type (symbolic, float, or integer labels)."""
    return _fold(t, lambda n: _array(value(n)), _EVAL_OPS)
