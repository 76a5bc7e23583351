"""Deciding ``a == b`` for normal-form values: equal normal forms prove, a numeric probe refutes, then the provers
a kind of claim trusts (``PROVERS``: smt.py's z3 and cvc5, for the kinds that replay through chain.py; staged claims
hold by normal forms alone). ``hyps``, and ``refinement.definedness`` through ``implied``: DESIGN.md rule 4
(docs/certificates.md, replay step 7 and "Definedness")."""

import random
from contextlib import contextmanager
from typing import Iterator

from .poly import ATOMS, NUMERIC, Cond, Rat
from .refinement import Verdict

PROVERS: list = []   # each with prove(a, b, hyps) -> its name or None, implied(hyps, cond) -> bool (smt.py)


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
    for p in PROVERS:
        if name := p.prove(a, b, relevant):
            return Verdict(True, name)
    return Verdict(None, "unknown")


def implied(hyps: list[Cond], c: Cond) -> bool:
    """Whether a prover shows side condition ``c`` from those of ``hyps`` that share a variable with it."""
    names = variables(c[1])
    return any(p.implied([h for h in hyps if variables(h[1]) & names], c) for p in PROVERS)


@contextmanager
def provers(ps) -> Iterator[None]:
    """Decide with the provers ``ps`` alone, meanwhile (a kind of claim that trusts fewer)."""
    saved, PROVERS[:] = PROVERS[:], ps
    try:
        yield
    finally:
        PROVERS[:] = saved


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
