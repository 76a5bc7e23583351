"""z3 and cvc5 as the provers of ``solve.PROVERS`` (atoms uninterpreted; ``unsat`` proves, ``sat`` stays unknown),
registered on import for the kinds of claims that trust them: those replayed through chain.py."""

import functools
import math
import sys

from . import solve
from .poly import ATOMS, Cond, Poly, Rat

SOLVER_MS = 10_000


def prove(a: Rat, b: Rat, hyps: list[Cond] | tuple = ()) -> str | None:
    """The solver that proves ``a == b`` under ``hyps`` (None: neither does, or none is installed)."""
    return next((w for w in ("z3", "cvc5") if unsat(w, hyps, lambda enc: enc.rat(a) != enc.rat(b))), None)


def implied(hyps: list[Cond], c: Cond) -> bool:
    """Whether z3 shows that ``hyps`` imply the side condition ``c``."""
    return bool(unsat("z3", hyps, lambda enc: enc.s.Not(enc.cond(c)), axioms=True))


def unsat(which: str, hyps, negated, axioms: bool = False) -> bool | None:
    """True if the solver finds ``hyps``, ``negated(encoder)`` (and ``axioms``) unsatisfiable, denominators non-zero."""
    try:
        if which == "z3":
            import z3 as s
        else:
            import cvc5.pythonic as s  # type: ignore[import-not-found]
    except ImportError:
        return None
    enc = _Encoder(s)
    try:
        solver = s.Solver()
        solver.set("timeout", SOLVER_MS) if which == "z3" else solver.set("tlimit-per", SOLVER_MS)
        solver.add(negated(enc), *[enc.cond(h) for h in hyps])
        solver.add(*[d != 0 for d in enc.denominators], *(enc.axioms if axioms else []))
        return True if str(solver.check()) == "unsat" else None
    except Exception:  # a solver-internal failure is "cannot decide", never acceptance
        return None


class _Encoder:
    """Real-arithmetic terms for the SMT solver ``s`` (z3 or cvc5.pythonic)."""

    def __init__(self, s) -> None:
        self.s, self.cache, self.funcs, self.denominators = s, {}, {}, []
        self.axioms: list = []  # exp > 0; sqrt(a) >= 0 and sqrt(a)^2 = a where a >= 0

    def cond(self, c: Cond):
        v = self.rat(c[1])
        return v != 0 if c[0] == "!=0" else v > 0 if c[0] == ">0" else v >= 0

    def rat(self, x: Rat):
        n = self.poly(x.n)
        if x.d.constant() == 1:
            return n
        d = self.poly(x.d)
        self.denominators.append(d)
        return n / d

    def poly(self, p: Poly):
        total = self.s.RealVal(0)
        for (mono, expo), c in p.t.items():
            term = math.prod((self.atom(v) for v, k in mono for _ in range(k)),
                             start=self.s.RealVal(f"{c.numerator}/{c.denominator}"))
            if expo:
                e = self.func("exp", 1)(self.poly(Poly(dict(expo))))
                self.axioms.append(e > 0)
                term = term * e
            total = total + term
        return total

    def func(self, name: str, arity: int):
        if (name, arity) not in self.funcs:
            self.funcs[name, arity] = self.s.Function(f"{name}_{arity}", *([self.s.RealSort()] * (arity + 1)))
        return self.funcs[name, arity]

    def atom(self, name: str):
        if name in self.cache:
            return self.cache[name]
        if name not in ATOMS:
            out = self.s.Real(name)
        else:
            fn, args = ATOMS[name]
            xs = [self.rat(a) for a in args]
            if fn == "max":
                out = functools.reduce(lambda x, y: self.s.If(x >= y, x, y), xs)
            else:
                out = self.func(fn, len(xs))(*xs)
                if fn == "sqrt":
                    self.axioms += [out >= 0, self.s.Implies(xs[0] >= 0, out * out == xs[0])]
        self.cache[name] = out
        return out


solve.PROVERS.append(sys.modules[__name__])
