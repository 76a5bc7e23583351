"""Integers on intervals (docs/refinement.md, "Integers on intervals"; agda/Composition/Intervals.agda). A free
integer input element is a variable over an interval (its *case*, ``BOX``), an integer tensor holds values ``v + c``.
Whatever a case does not decide (a comparison, a condition, a row, an operation without a rule here) raises ``Cut``,
and ``Cases`` decides the two halves instead. ``embedding`` reads the rows ``v + c`` reaches as one atom
``sel(v - lo, rows)``; ``embedding_dense_backward`` adds ``eq(v - lo, k - c - lo) * g`` to each reached row ``k``."""

import numpy as np

from . import graph
from .dtypes import INT_BITS, bounds, fit
from .errors import LimitExceeded, Unsupported, fail_if
from .graph import Graph
from .limits import Limits
from .ops import MOVES, ShapeError, _fail_if, _scalar, is_sym
from .poly import NUMERIC, Rat, apply

BOX: dict[str, tuple[int, int]] = {}   # variable -> [lo, hi) of the case being decided
NUMERIC.update({"sel": lambda i, *rows: rows[min(max(round(i), 0), len(rows) - 1)],
                "eq": lambda i, k: float(round(i) == round(k))})


class Cut(Exception):
    def __init__(self, var: str, at: int, why: str):
        super().__init__(f"{why}: split {var} at {at}")
        self.var, self.at = var, at


def affine(x, why: str, split: bool = False) -> tuple[str | None, int]:
    """``x`` as ``v + c`` (``v`` None: the constant ``c``); anything else, or ``split``, halves a variable of ``x``."""
    x = Rat.of(x)
    var = sorted(a for a in x.atoms() if a in BOX)
    c = (x - Rat.var(var[0]) if len(var) == 1 else x).constant()
    if c is not None and c.denominator == 1 and not split:
        return (var[0] if var else None), int(c)
    fail_if(not var, ShapeError, f"{why}: {x} is not an integer of the case")
    lo, hi = BOX[var[0]]
    raise Cut(var[0], (lo + hi) // 2, why)


# comparison with 0 -> (test, the offsets e where its truth can change: between n = e - 1 and n = e)
_CMP = {"lt": (lambda n: n < 0, (0,)), "le": (lambda n: n <= 0, (1,)), "gt": (lambda n: n > 0, (1,)),
        "ge": (lambda n: n >= 0, (0,)), "eq": (lambda n: n == 0, (0, 1)), "ne": (lambda n: n != 0, (0, 1))}


def _test(x: np.ndarray, name: str, why: str) -> np.ndarray:
    """``x name 0`` elementwise, one truth value over the whole case (Intervals.steady), else a ``Cut``."""
    out = []
    for e in x.ravel():
        (v, c), (fn, edges) = affine(e, why), _CMP[name]
        lo, hi = BOX.get(v, (0, 1))
        for at in (a - c for a in edges if v is not None and lo < a - c < hi):
            raise Cut(v, at, why)
        out.append(fn(c + lo))
    return np.array(out, dtype=bool).reshape(x.shape)


def _rows(x, n: int, why: str) -> tuple[Rat | None, int, int]:
    """(``v - lo`` or None for a constant, first row, end) of the rows in [0, n) that ``x = v + c`` reaches."""
    v, c = affine(x, why)
    lo, hi = BOX.get(v, (0, 1))
    for at in (-c, n - c):
        if v is not None and lo < at < hi:
            raise Cut(v, at, why)
    fail_if(lo + c < 0 or hi + c > n, ShapeError, f"{why}: index {x} out of range [0, {n})")
    return (Rat.var(v) - lo if v else None), lo + c, hi + c


def _embedding(xs, a, why):
    w, idx = xs
    out = np.empty(idx.shape + w.shape[1:], dtype=object)
    for ix in np.ndindex(*idx.shape):
        at, r0, r1 = _rows(idx[ix], w.shape[0], why)
        out[ix] = [apply("sel", at, *w[r0:r1, j]) if at is not None else w[r0, j] for j in range(w.shape[1])]
    return [out]


def _embedding_backward(xs, a, why):
    (g, idx), n = xs, a["num_weights"]
    _fail_if(a["scale_grad_by_freq"], "scale_grad_by_freq is not supported")
    out = np.full((n, g.shape[-1]), Rat.of(0), dtype=object)
    for row, x in zip(g.reshape(-1, g.shape[-1]), idx.ravel()):   # row r0 + k adds row * eq(v - lo, k)
        at, r0, r1 = _rows(x, n, why)
        out[r0:r1] += row * np.array([apply("eq", at, k) if at is not None else 1 for k in range(r1 - r0)])[:, None]
    out[[p for p in [a["padding_idx"]] if 0 <= p < n]] = Rat.of(0)   # the padding row: nothing added
    return [out]


def _other(xs, a):
    return xs[1] if len(xs) > 1 else _scalar(a["other"])


# op -> its outputs where an integer operand holds ``v + c`` values (``REAL``: a real operand may be symbolic too)
RULES = {"embedding": _embedding, "embedding_dense_backward": _embedding_backward,
         "add": lambda xs, a, why: [np.asarray(xs[0] + _other(xs, a) * _scalar(a["alpha"]), dtype=object)],
         "sub": lambda xs, a, why: [np.asarray(xs[0] - _other(xs, a) * _scalar(a["alpha"]), dtype=object)],
         **{k: lambda xs, a, why, k=k: [_test(xs[0] - _other(xs, a), k, why)] for k in _CMP}}
REAL = {"embedding", "embedding_dense_backward"}
RUN = (MOVES - {"_to_copy"}) | {"where", "masked_fill"}   # by the registry (their conditions decided first)


def _fit(v: np.ndarray, dtype: str, why: str) -> np.ndarray:
    """An integer result ``v + c``: within ``dtype`` over the case (no wrap-around), or refused."""
    for x in v.ravel():
        var, c = affine(x, why)
        lo, hi = BOX.get(var, (0, 1))
        if dtype not in INT_BITS or not bounds(dtype)[0] <= lo + c <= hi - 1 + c <= bounds(dtype)[1]:
            raise ShapeError(f"{why}: {x} may not fit {dtype}")
    consts = [Rat.of(x).constant() for x in v.ravel()]
    return v if None in consts else np.array([int(c) for c in consts], dtype=np.int64).reshape(v.shape)


def _step(g: Graph, node, xs: list, symbolic: bool) -> list:
    """``graph.evaluate``'s step: booleans decided first, then ``RUN`` by the registry, ``RULES``, else a ``Cut``."""
    name, why = node.target.split(".")[1], f"node '{node.name}' ({node.target})"
    kinds = [g.tensors[t].dtype if is_sym(x) else "" for t, x in zip(node.inputs, xs)]
    xs = [_test(x, "ne", why) if k == "bool" else x for x, k in zip(xs, kinds)]
    ints = [x for x, k in zip(xs, kinds) if k in INT_BITS]
    if not ints or name in RUN:
        outs = node.op.run(xs, node.full_attrs(symbolic))
    elif name in RULES and (name in REAL or set(kinds) <= set(INT_BITS) | {"", "bool"}):
        outs = RULES[name](xs, node.full_attrs(symbolic), why)
    else:
        affine(next(e for e in ints[0].ravel() if Rat.of(e).constant() is None), f"{why}: no rule", split=True)
    ts = [g.tensors[t] for t in node.outputs]
    return [_fit(v, t.dtype, why) if is_sym(v) and t.is_int else fit(v, t.dtype, symbolic) for t, v in
            zip(ts, map(np.asarray, outs))]


def evaluate(g: Graph, env: dict[str, np.ndarray], symbolic: bool, limits: Limits) -> dict:
    return graph.evaluate(g, env, symbolic, limits, _step)


class Cases:
    """The cases of the free integer variables: first each over its declared range (``box``), halves of a case that
    ``Cut`` (Intervals.split); yields (the case, the values of ``envs``) with a variable alone in its interval
    replaced by its value (``concrete``)."""

    def __init__(self, box: dict, envs: tuple, concrete, limits: Limits):
        self.todo, self.envs, self.concrete, self.limits, self.count, self.cut = [box], envs, concrete, limits, 0, None

    def __iter__(self):
        while self.todo:
            self.box, self.count = self.todo.pop(), self.count + 1
            if self.count > self.limits.max_assignments:
                raise LimitExceeded(f"more than {self.limits.max_assignments} cases of integer inputs ({self.cut})")
            point = {v: lo for v, (lo, hi) in self.box.items() if hi - lo == 1}
            BOX.clear()
            BOX.update((v, r) for v, r in self.box.items() if v not in point)
            yield ({v: r[0] if v in point else f"[{r[0]}, {r[1]})" for v, r in sorted(self.box.items())},
                   *(self.concrete(env, point) for env in self.envs))

    def split(self, cut: Cut) -> None:
        lo, hi = self.box[cut.var]
        fail_if(not lo < cut.at < hi, Unsupported, f"{cut}: outside [{lo}, {hi})")
        self.cut, self.count = cut, self.count - 1   # counted: the cases decided
        self.todo += [{**self.box, cut.var: (cut.at, hi)}, {**self.box, cut.var: (lo, cut.at)}]
