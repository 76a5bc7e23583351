"""The checker's parametrization of an input relation (``refinement.instantiate``) against the programs
that would fool it: a later equation rebinding an impl element a first equation reads (directly, through
a slice, a ``scale``, a ``mean`` or a ``sum``), which would make the obligation speak of inputs that do not
satisfy the relation. A first equation takes exactly the elements it reads (it used to take every element
of the tensors it names); the properties below hold for every relation of a random pool.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from certificates import refinement, terms
from certificates.errors import Unsupported
from certificates.graph import parse_graph
from certificates.poly import Rat
from verifier.ir import GraphBuilder

POOL = ["a@r0", "concat(b@r1, c@r1, dim=0)", "concat(slice(a@r0, dim=0, start=0, end=2), b@r1, dim=0)",
        "scale(a@r0, num=3, den=2)", "mean(a@r0, concat(b@r1, c@r1, dim=0))", "sum(concat(c@r1, b@r1, dim=0), a@r0)",
        "concat(c@r1, slice(a@r0, dim=0, start=2, end=4), dim=0)", "concat(slice(a@r0, dim=0, start=2, end=4), c@r1, dim=0)"]


def _graphs():
    s = GraphBuilder("spec")
    s.input("A", [4], "activation")
    s.node("aten.neg.default", ["A"], "Y")
    s.output("Y")
    g = GraphBuilder("impl", 2)
    g.input("a@r0", [4], "activation", rank=0)
    g.input("b@r1", [2], "activation", rank=1)
    g.input("c@r1", [2], "activation", rank=1)
    g.node("aten.neg.default", ["a@r0"], "y@r0", rank=0)
    g.output("y@r0")
    return parse_graph(s.build(), "spec"), parse_graph(g.build(), "impl")


def _holds(t, spec_env, impl_env) -> bool:
    got = np.asarray(terms.evaluate(t, impl_env.__getitem__)).ravel()
    return all(Rat.of(x).equals(Rat.of(y)) for x, y in zip(got, spec_env["A"].ravel()))


def _relations(n: int = 300):
    rng = random.Random(7)
    return [[POOL[i] for i in rng.sample(range(len(POOL)), rng.randint(1, 3))] for _ in range(n)]


@pytest.mark.parametrize("exprs", _relations(), ids=lambda e: " | ".join(e))
def test_instantiation_satisfies_what_it_claims(exprs):
    """Strict (whole-graph evidence): refused, or every equation holds on the values. Lenient
    (per-operator obligations): the first equation always holds (a left-out element only weakens)."""
    spec, impl = _graphs()
    rel = {"A": [terms.parse(e, "rel") for e in exprs]}
    fresh = lambda label, t: Rat.var(label)   # noqa: E731
    try:
        spec_env, impl_env = refinement.instantiate(spec, impl, rel, fresh)
        assert all(_holds(t, spec_env, impl_env) for t in rel["A"]), exprs
    except Unsupported as e:
        assert "twice" in str(e) or "scales a part" in str(e)
    spec_env, impl_env = refinement.instantiate(spec, impl, rel, fresh, strict=False)
    assert _holds(rel["A"][0], spec_env, impl_env), exprs
