"""The precise definedness witness of refinement claims (certificates/precise.py, box.boxes(PRECISE)): every
enclosure holds the function's value (against mpmath at 120 digits), and a deep spec whose float enclosures
widen past a square root's domain is shown defined, while an undefined one still is not."""

from __future__ import annotations

import random

import pytest

from certificates.box import Box, boxes, call
from certificates.graph import parse_graph
from certificates.poly import Q
from certificates.precise import PRECISE
from certificates.chain import witnessed as spec_defined
from verifier.ir import GraphBuilder

mpmath = pytest.importorskip("mpmath")
mpmath.mp.dps = 120
_K = mpmath.sqrt(2 / mpmath.pi)
_T = lambda x: mpmath.tanh(_K * (x + mpmath.mpf("0.044715") * x ** 3))  # noqa: E731
REF = {"exp": mpmath.exp, "log": mpmath.log, "sqrt": mpmath.sqrt, "sigmoid": lambda x: 1 / (1 + mpmath.exp(-x)),
       "tanh": mpmath.tanh, "gelu": lambda x: x * (1 + mpmath.erf(x / mpmath.sqrt(2))) / 2,
       "gelu_grad": lambda x: (1 + mpmath.erf(x / mpmath.sqrt(2))) / 2 + x * mpmath.exp(-x * x / 2) / mpmath.sqrt(2 * mpmath.pi),
       "gelu_tanh": lambda x: x * (1 + _T(x)) / 2,
       "gelu_tanh_grad": lambda x: ((1 + _T(x)) + x * (1 - _T(x) ** 2) * _K * (1 + 3 * mpmath.mpf("0.044715") * x * x)) / 2,
       "sin": mpmath.sin, "cos": mpmath.cos}


@pytest.mark.parametrize("fn", sorted(REF))
def test_every_precise_enclosure_holds_the_value(fn):
    assert set(PRECISE) == set(REF)
    rng = random.Random(fn)
    points = [Q(rng.randint(-8 * s, 8 * s), rng.choice([1, 3, 64, 1000, 7**5])) for s in (1, 64, 2**18) * 40]
    points += [Q(k, 10) for k in range(-200, 201, 7)]
    for q in points:
        q = max(min(q, Q(4000)), Q(-4000))   # box.call encloses |x| <= 2^12 only
        if fn in ("log", "sqrt"):
            q = abs(q) + Q(1, 1000)
        for x in (Box(q), Box(q, q + Q(1, 2**40))):
            with boxes(PRECISE):
                b = call(fn, x)
            for end in {x.lo, x.hi}:
                v = REF[fn](mpmath.mpf(end.numerator) / end.denominator)
                assert mpmath.mpf(b.lo.numerator) / b.lo.denominator <= v <= mpmath.mpf(b.hi.numerator) / b.hi.denominator
            width = (b.hi - b.lo) / (1 + abs(b.lo))
            assert x.lo != x.hi or width < Q(1, 2**110)   # at a point: narrow


def _deep(layers: int, log_of_negative: bool = False):
    """``layers`` of layer norm over 2 features, softmax and gelu: float enclosures widen past the variance's
    domain within a few layers."""
    g = GraphBuilder("deep")
    x = g.input("x", [2, 2], "activation")
    for i in range(layers):
        w = g.input(f"w{i}", [2, 2], "parameter")
        x = g.node("aten.mm.default", [x, w], f"m{i}")
        x = g.node("aten.native_layer_norm.default", [x], [f"n{i}", f"mu{i}", f"r{i}"],
                   attrs={"normalized_shape": [2], "eps": 1e-5})[0]
        x = g.node("aten._softmax.default", [x], f"s{i}", attrs={"dim": 1, "half_to_float": False})
        x = g.node("aten.gelu.default", [x], f"g{i}")
    if log_of_negative:   # log(-(x*x) - 1): defined nowhere
        sq = g.node("aten.mul.Tensor", [x, x], "sq")
        x = g.node("aten.log.default", [g.node("aten.rsub.Scalar", [sq], "neg", attrs={"other": -1})], "bad")
    g.output(x)
    return parse_graph(g.build(), "deep")


def test_a_deep_spec_is_shown_defined_with_precise_values_only():
    spec = _deep(10)
    assert spec_defined(spec) is not None   # 2^-30 enclosures: the variance's interval reaches below -eps
    assert spec_defined(spec, precise=PRECISE) is None


def test_an_undefined_spec_is_still_not_shown_defined():
    assert spec_defined(_deep(2, log_of_negative=True), precise=PRECISE) is not None


def test_gpt_of_8_blocks_verifies_and_replays(tmp_path):
    """The regression this fixed: examples/cases/gpt_tp_sp.py at 8 blocks was UNKNOWN, 'not shown defined'."""
    pytest.importorskip("torch")
    from certificates.replay import replay
    from conftest import ROOT, run_pvcert

    (tmp_path / "gpt8.py").write_text("from examples.cases import gpt_tp_sp\nCASE = gpt_tp_sp.make_case(8, 2)\n")
    cert = tmp_path / "c.json"
    r = run_pvcert("verify", str(tmp_path / "gpt8.py"), "--emit-cert", str(cert), cwd=ROOT)
    assert r.returncode == 0 and "VERIFIED gpt_8l_tp2_sp" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    assert all(x.ok for x in replay(str(cert)))
