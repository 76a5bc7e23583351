"""Deciding ``a == b`` for normal-form values: equal normal forms prove, a numeric probe refutes, then z3 and
cvc5 (atoms uninterpreted; ``unsat`` proves, ``sat`` stays unknown). ``hyps``, and ``refinement.definedness``
through ``unsat``: DESIGN.md rule 4 (docs/certificates.md, replay step 7 and "Definedness")."""

import functools
import math
import random
from dataclasses import dataclass

from .poly import ATOMS, NUMERIC, Cond, Poly, Rat

SOLVER_MS = 10_000


@dataclass
class Verdict:
    holds: bool | None                 # True proved, False refuted, None unknown
    method: str                        # normal-form | z3 | cvc5 | numeric | unknown
    witness: dict[str, float] | None = None
    values: tuple[float, float] | None = None


def evaluate(x: Rat, env: dict[str, float]) -> float:
    """Numeric value of ``x`` with variables from ``env`` and atoms by their functions."""
    memo: dict[str, float] = {}

    def look(name: str) -> float:
        if name in env:
            return env[name]
        if name not in memo:
            fn, args = ATOMS[name]
            memo[name] = NUMERIC[fn](*(float(a.value(look)) for a in args))
        return memo[name]

    return float(x.value(look))


def variables(x: Rat) -> set[str]:
    """The input variables under ``x``, looking inside atoms."""
    out: set[str] = set()
    todo = list(x.atoms())
    while todo:
        a = todo.pop()
        if a in ATOMS:
            todo.extend(v for arg in ATOMS[a][1] for v in arg.atoms())
        else:
            out.add(a)
    return out


def decide(a: Rat, b: Rat, seed: int = 0, hyps: list[Cond] | tuple = ()) -> Verdict:
    """Decide ``a == b``, assuming the side conditions ``hyps`` (already shown satisfiable)."""
    a, b = Rat.of(a), Rat.of(b)
    if a.equals(b):
        return Verdict(True, "normal-form")
    witness = probe(a, b, seed)
    if witness is not None:
        return witness
    names = variables(a) | variables(b)
    relevant = [h for h in hyps if variables(h[1]) & names]
    for name in ("z3", "cvc5"):
        if _smt(a, b, name, relevant):
            return Verdict(True, name)
    return Verdict(None, "unknown")


def probe(a: Rat, b: Rat, seed: int) -> Verdict | None:
    """Evaluate at random points; a difference beyond rounding is a counterexample."""
    rng = random.Random(seed)
    names = sorted(variables(a) | variables(b))
    for _ in range(4):
        env = {n: rng.choice([-2, -1, 1, 2, 3]) / rng.choice([1, 2, 4]) for n in names}
        try:
            va, vb = evaluate(a, env), evaluate(b, env)
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        if abs(va - vb) > 1e-6 * (1.0 + abs(va) + abs(vb)):
            return Verdict(False, "numeric", env, (va, vb))
    return None


def _smt(a: Rat, b: Rat, which: str, hyps: list[Cond] | tuple = ()) -> bool | None:
    """True if the solver proves ``a == b`` under ``hyps``, None if it cannot (or is not installed)."""
    return unsat(which, hyps, lambda enc: enc.rat(a) != enc.rat(b))


def unsat(which: str, hyps, negated, axioms: bool = False) -> bool | None:
    """True if the solver finds ``hyps`` and ``negated(encoder)`` unsatisfiable (denominators
    non-zero; with ``axioms``, those of exp and sqrt too), None if it cannot (or is not installed)."""
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
        result = str(solver.check())
    except Exception:  # a solver-internal failure is "cannot decide", never acceptance
        return None
    return True if result == "unsat" else None


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
        s = self.s
        total = s.RealVal(0)
        for (mono, expo), c in p.t.items():
            term = math.prod((self.atom(v) for v, k in mono for _ in range(k)),
                             start=s.RealVal(f"{c.numerator}/{c.denominator}"))
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
