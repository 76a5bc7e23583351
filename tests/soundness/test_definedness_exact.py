"""The spec's definedness witness is exact (DESIGN.md rule 4; certificates/box.py).

A claim whose proof assumes the spec's side conditions needs the spec shown defined at some input.
That witness was a float64 run: a divisor that is zero over the reals but rounds to a non-zero
float passed, and a claim about a spec defined nowhere was ACCEPTed. Each spec below divides by such
a divisor (so it is defined nowhere); the impl computes the same. Neither engine may verify it, and
the control's certificate with the attack's graphs put in must be REJECTed by replay. The controls
divide by a non-zero value (rational, or irrational: an enclosure decides it) and still verify.
"""

from __future__ import annotations

import pytest

from certificates.chain import witnessed as spec_defined
from certificates.graph import parse_graph
from verifier.ir import GraphBuilder

import forge
from forge import Pair


def _constant(g: GraphBuilder, w: str, p: str, c: float) -> str:
    return g.node("aten.add.Scalar", [g.node("aten.mul.Scalar", [w], f"{p}z", other=0)], f"{p}c", other=c)


def _tenths(last: float):
    """``(0.1 + 0.2) - last``: zero over the reals for 0.3, 5.55e-17 in float64."""
    def build(g: GraphBuilder, w: str, p: str) -> str:
        a = g.node("aten.add.Scalar", [_constant(g, w, p, 0.1)], f"{p}a", other=0.2)
        return g.node("aten.sub.Scalar", [a], f"{p}d", other=last)
    return build


def _sqrt_squared(target: str):
    """``sqrt(2)^2 - 2``: zero over the reals, 4.4e-16 in float64, not zero in normal form (sqrt(2) is
    an atom); with ``aten.add.Scalar``, ``sqrt(2)^2 + 2``."""
    def build(g: GraphBuilder, w: str, p: str) -> str:
        r = g.node("aten.sqrt.default", [_constant(g, w, p, 2)], f"{p}r")
        return g.node(target, [g.node("aten.pow.Tensor_Scalar", [r], f"{p}q", exponent=2)], f"{p}d", other=2)
    return build


def _exp_log(c: int, base: int = 3, exp: bool = True):
    """``exp(log(base)) - c``: zero over the reals for ``c = base``, not zero in normal form (4.4e-16 in
    float64 for 3); without ``exp``, ``log(base) - c``."""
    def build(g: GraphBuilder, w: str, p: str) -> str:
        e = g.node("aten.log.default", [_constant(g, w, p, base)], f"{p}l")
        e = g.node("aten.exp.default", [e], f"{p}e") if exp else e
        return g.node("aten.sub.Scalar", [e], f"{p}d", other=c)
    return build


def _graph(upper: bool, divisor) -> dict:
    """``Y = X * (D / D)`` (names upper-case for the spec, lower-case for the impl)."""
    n = str.upper if upper else str.lower
    g = GraphBuilder("spec" if upper else "impl")
    g.input(n("x"), [2], "activation")
    g.input(n("w"), [2], "parameter")
    d = divisor(g, n("w"), n("t"))
    q = g.node("aten.div.Tensor", [d, d], n("q"))
    g.node("aten.mul.Tensor", [n("x"), q], n("y"), name="out")
    g.output(n("y"))
    return g.build()


def _pair(divisor) -> Pair:
    return _graph(True, divisor), _graph(False, divisor), {"X": ["x"], "W": ["w"]}, {"Y": ["y"]}


def _exp_masked(target: str):
    """``exp(-5000) - exp(-5000)``: zero over the reals (and in float64); the witness encloses exp of an
    argument below -2^12 (a masked attention score) by [0, 2^-4096]; with ``aten.add.Tensor`` plus 1,
    ``exp(-5000) + exp(-5000) + 1``, which that enclosure shows non-zero."""
    def build(g: GraphBuilder, w: str, p: str) -> str:
        e = g.node("aten.exp.default", [_constant(g, w, p, -5000)], f"{p}e")
        d = g.node(target, [e, e], f"{p}s")
        return g.node("aten.add.Scalar", [d], f"{p}d", other=1) if target == "aten.add.Tensor" else d
    return build


ATTACKS = {  # name: (divisor zero over the reals, a non-zero control)
    "(0.1 + 0.2) - 0.3": (_tenths(0.3), _tenths(0.25)),
    "sqrt(2)^2 - 2": (_sqrt_squared("aten.sub.Scalar"), _sqrt_squared("aten.add.Scalar")),
    "exp(log(3)) - 3": (_exp_log(3), _exp_log(2)),
    "exp(log(5000)) - 5000 (control: log of a large value)": (_exp_log(5000, 5000), _exp_log(8, 5000, exp=False)),
    "exp(-5000) - exp(-5000) (control: a masked score's exp + 1)": (_exp_masked("aten.sub.Tensor"),
                                                                    _exp_masked("aten.add.Tensor")),
}


def _relate_lower(cert: dict, bug: Pair) -> dict:
    """The control's certificate with the bug's graphs; per-operator evidence relates each spec
    tensor to the impl tensor of the same name, lower-cased."""
    cert = forge.embed(cert, bug[0], bug[1])
    evidence = next(iter(cert["evidence"].values()))
    if "relation" in evidence:
        evidence["relation"] = {t: [t.lower()] for t in bug[0]["tensors"] if t not in bug[0]["inputs"]}
        evidence["steps"] = [n["name"] for n in bug[0]["nodes"]]
    return cert


@pytest.mark.parametrize("form", forge.FORMS)
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_spec_defined_nowhere_is_not_accepted(name, form, tmp_path):
    bug, ok = ATTACKS[name]
    forge.attack(_pair(bug), _pair(ok), form, tmp_path, _relate_lower)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_the_witness_is_refused_exactly(name):
    """The reason is the witness, not another check: the spec alone is not shown defined."""
    bug, ok = ATTACKS[name]
    assert spec_defined(parse_graph(_graph(True, bug), "spec")) is not None
    assert spec_defined(parse_graph(_graph(True, ok), "spec")) is None


@pytest.mark.parametrize("x", ["-5000", "-4096", "-4095", "-800", "-700.5", "-121.47", "-1", "0", "1/3", "50", "700"])
def test_exp_enclosure_is_positive_and_holds_the_value(x):
    """exp's enclosure (softmax divides by a sum of exps): positive, and it holds e^x (mpmath, 300 digits)
    at normal values, underflowing ones (x < -693) and masked scores (x <= -2^12)."""
    from fractions import Fraction
    from certificates.box import Box, boxes, call

    mpmath = pytest.importorskip("mpmath")
    q = Fraction(x)
    with boxes():
        b = call("exp", Box(q))
    with mpmath.workdps(300):
        v = mpmath.exp(mpmath.mpf(q.numerator) / q.denominator)
        assert 0 <= b.lo and (b.lo > 0 or q <= -4096)
        assert mpmath.mpf(b.lo.numerator) / b.lo.denominator <= v <= mpmath.mpf(b.hi.numerator) / b.hi.denominator


def test_even_power_of_an_interval_around_zero_is_not_negative():
    """``g.pow(2).sum()`` (a gradient norm under sqrt): an even power's enclosure starts at 0, not at
    -|lo| hi as the product of two independent intervals would; odd powers and products keep their sign."""
    from fractions import Fraction
    from certificates.box import Box

    x = Box(Fraction(-1, 3), Fraction(1, 2))
    sq, cube, prod = x ** 2, x ** 3, x * x
    assert (sq.lo, sq.hi) == (0, Fraction(1, 4)) and prod.lo < 0 and cube.lo < 0
    assert (Box(Fraction(-2), Fraction(-1)) ** 2).lo == 1 and (Box(Fraction(1, 2)) ** -2).lo == 4
