"""Booleans as 0/1 variables (certificates/symint.py): what it proves must hold at every boolean point, what it
cannot prove goes to the enumeration, and it never gives booleans' arithmetic to other integers."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from certificates import refinement, symint
from certificates.graph import parse_graph
from certificates.limits import Limits
from certificates.poly import Rat
from certificates.refinement import parse_relation
from certificates.replay import replay
from conftest import run_pvcert
from verifier.ir import GraphBuilder


def _pair(build_spec, build_impl, n: int = 3):
    """Spec and one-rank impl over a boolean mask ``M`` [n, n] and reals ``X``, ``Y``; the input relation."""
    s, i = GraphBuilder("s"), GraphBuilder("i")
    for g, sfx, build in ((s, "", build_spec), (i, "@r0", build_impl)):
        m, x, y = (g.input(f"{k}{sfx}", [n, n], "mask" if k in "Mm" else "activation",
                           dtype="bool" if k in "Mm" else "float32") for k in (("M", "X", "Y") if not sfx else "mxy"))
        g.output(build(g, m, x, y, sfx))
    spec, impl = parse_graph(s.build(), "s"), parse_graph(i.build(), "i")
    rin = parse_relation({"M": ["m@r0"], "X": ["x@r0"], "Y": ["y@r0"]}, spec, impl, "rel", True)
    rout = parse_relation({spec.outputs[0]: [impl.outputs[0]]}, spec, impl, "out", False)
    return spec, impl, rin, rout


def _where(g, m, x, y, sfx, name="o"):
    return g.node("aten.where.self", [m, x, y], f"{name}{sfx}", out_dtype="float32")


def test_a_mask_of_2_to_the_64_assignments_is_decided_once():
    spec, impl, rin, rout = _pair(_where, _where, 8)
    with pytest.raises(Exception, match="cases of integer inputs"):   # 2^64 masks: cases split until the limit
        refinement.check(spec, impl, rin, rout, Limits(max_assignments=64))   # (64: at the default 4,096, 100 s)
    out = symint.check(spec, impl, rin, rout)
    assert all(o.holds for o in out) and out[0].elements == 64


def test_swapped_branches_are_refuted_by_the_enumeration():
    swapped = lambda g, m, x, y, sfx: g.node("aten.where.self", [m, y, x], f"o{sfx}", out_dtype="float32")  # noqa
    spec, impl, rin, rout = _pair(_where, swapped, 2)
    out = symint.check(spec, impl, rin, rout)
    assert not out[0].holds and "differ" in out[0].failure


def test_an_identity_only_at_boolean_points_falls_back_to_the_enumeration():
    """where(m, where(m, x, y), y) is b^2 x + ...: equal to where(m, x, y) at b in {0, 1}, not as polynomials."""
    def twice(g, m, x, y, sfx):
        inner = g.node("aten.where.self", [m, x, y], f"t{sfx}", out_dtype="float32")
        return g.node("aten.where.self", [m, inner, y], f"o{sfx}", out_dtype="float32")

    spec, impl, rin, rout = _pair(_where, twice, 2)
    out = symint.check(spec, impl, rin, rout)   # proved by 16 assignments
    assert all(o.holds for o in out) and out[0].elements == 16 * 4


def test_integers_made_from_booleans_never_get_boolean_arithmetic():
    """bitwise_and(where(m, 2, 3), 1) is 0 or 1; as if it were a product of 0/1 values it would be where(m, 2, 3)."""
    def ints(g, m, x, y, sfx, masked: bool):
        two = g.node("aten.full.default", [], f"two{sfx}", attrs={"size": [3, 3], "fill_value": 2, "dtype": "int64"},
                     out_dtype="int64")
        three = g.node("aten.full.default", [], f"three{sfx}", attrs={"size": [3, 3], "fill_value": 3,
                                                                        "dtype": "int64"}, out_dtype="int64")
        c = g.node("aten.where.self", [m, two, three], f"c{sfx}", out_dtype="int64")
        if masked:
            one = g.node("aten.full.default", [], f"one{sfx}", attrs={"size": [3, 3], "fill_value": 1,
                                                                      "dtype": "int64"}, out_dtype="int64")
            c = g.node("aten.bitwise_and.Tensor", [c, one], f"d{sfx}")
        return g.node("aten._to_copy.default", [c], f"o{sfx}", attrs={"dtype": "float32"}, out_dtype="float32")

    spec, impl, rin, rout = _pair(lambda *a: ints(*a, True), lambda *a: ints(*a, False))
    out = symint.check(spec, impl, rin, rout)
    assert not out[0].holds, "bitwise_and of integers was given boolean arithmetic"


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "bitwise_and", "bitwise_or"])
def test_boolean_arithmetic_at_every_boolean_point(op):
    f = symint.BOOLEAN[op]
    got = f([np.array([Rat.var("a")], dtype=object), np.array([Rat.var("b")], dtype=object)], {})[0]
    ref = getattr(np, op.replace("bitwise", "logical"))
    for a, b in itertools.product((0, 1), repeat=2):
        assert got.value({"a": a, "b": b}.__getitem__) == int(ref(bool(a), bool(b)))
    for name in ("logical_not", "bitwise_not"):
        v = symint.BOOLEAN[name]([np.array([Rat.var("a")], dtype=object)], {})[0]
        assert [v.value({"a": a}.__getitem__) for a in (0, 1)] == [1, 0]


def test_a_masked_case_verifies_and_replays(tmp_path):
    """At a size the enumeration refuses (a 6 x 6 mask: 2^36 assignments), as pvcert verify and replay run it."""
    s, i = GraphBuilder("s"), GraphBuilder("i")
    for g, sfx in ((s, ""), (i, "@r0")):
        m, x, y = (g.input(f"{k}{sfx}", [6, 6], "mask" if k == "m" else "activation",
                           dtype="bool" if k == "m" else "float32") for k in "mxy")
        w = g.node("aten.where.self", [m, x, y], f"w{sfx}", out_dtype="float32")
        g.output(g.node("aten._softmax.default", [w], f"o{sfx}", attrs={"dim": 1, "half_to_float": False}))
        (tmp_path / f"{'spec' if not sfx else 'impl'}.json").write_text(json.dumps(g.build()))
    case = {"format": "pvcert-case", "version": 1, "name": "masked", "spec": "spec.json", "impl": "impl.json",
            "input_relation": {"m": ["m@r0"], "x": ["x@r0"], "y": ["y@r0"]}, "expect": {"o": ["o@r0"]}}
    (tmp_path / "case.json").write_text(json.dumps(case))
    cert = tmp_path / "c.json"
    r = run_pvcert("verify", str(tmp_path / "case.json"), "--emit-cert", str(cert))
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    assert all(x.ok for x in replay(str(cert), Limits()))


def test_a_real_value_declared_boolean_is_refused_as_by_the_enumeration():
    """where(m, x, y) of reals declared bool (torch gives a float): the core refuses it, so must this."""
    from certificates.errors import Unsupported

    declared_bool = lambda g, m, x, y, sfx: g.node("aten.where.self", [m, x, y], f"o{sfx}")  # noqa: E731
    spec, impl, rin, rout = _pair(declared_bool, declared_bool, 2)
    with pytest.raises(Unsupported, match=r"y@r0\[0,0\] is not an integer of the case"):   # by intervals._fit
        symint.check(spec, impl, rin, rout)
