"""Dtype conversions are exact for their dtype, or refused (DESIGN.md rule 1; issue 12, item 3).

Attacks: ``x.to(int32).to(float32)`` against ``x``, ``.bool()`` against the integer, a uint8 and an
int8 wrap-around. Each must not verify (either engine), and the certificate the engine wrote for
the correct control, with the bug's graphs put in, must be REJECTed by replay. Then a generator of
random dtype chains compares the checker's values with torch's on zero, negative, large and
overflowing values, and checks that ``chain(x) == x`` is never accepted where torch differs.
"""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from certificates import refinement
from certificates.dtypes import FLOATS, bounds
from certificates.errors import Unsupported
from certificates.graph import evaluate, parse_graph
from certificates.poly import Rat
from verifier.ir import GraphBuilder

import forge
from forge import Pair

torch = pytest.importorskip("torch")

CAST = "aten._to_copy.default"


def _chain_pair(dtype: str, steps: list[tuple], spec_steps: list[tuple] = (), rng=None, n: int = 1) -> Pair:
    """Spec: ``spec_steps`` on X (a copy if none); impl: ``steps`` on x. A step is (target, out dtype, attrs)."""
    graphs = []
    for name, src, chain in (("spec", "X", spec_steps), ("impl", "x", steps)):
        g = GraphBuilder(name)
        g.input(src, [n], "activation" if dtype in FLOATS else "index", dtype=dtype, range=rng)
        cur = src
        for i, (target, dt, attrs) in enumerate(list(chain) or [("aten.clone.default", dtype, {})]):
            cur = g.node(target, [cur], f"{src.lower()}{i}", out_dtype=dt, name=f"n{i}", **attrs)
        g.node("aten.clone.default", [cur], src.upper() * 2 if name == "spec" else "y", name="out")
        g.output(src.upper() * 2 if name == "spec" else "y")
        graphs.append(g.build())
    return graphs[0], graphs[1], {"X": ["x"]}, {"XX": ["y"]}


def cast(dt: str) -> tuple:
    return (CAST, dt, {"dtype": dt})


def add(dt: str, c: int) -> tuple:
    return ("aten.add.Scalar", dt, {"other": c})


ATTACKS: dict[str, tuple] = {  # name: (bug, control)
    "float -> int32 -> float32 is not the identity": (
        lambda: _chain_pair("float32", [cast("int32"), cast("float32")]),
        lambda: _chain_pair("float32", [cast("float64"), cast("float32")])),
    "int -> bool -> int is not the identity": (
        lambda: _chain_pair("int64", [cast("bool"), cast("int64")], rng=(0, 3)),
        lambda: _chain_pair("int64", [cast("int8"), cast("int64")], rng=(-128, 128))),
    "uint8 wraps around at 256": (
        lambda: _chain_pair("int64", [cast("uint8"), cast("int64")], rng=(250, 260)),
        lambda: _chain_pair("int64", [cast("uint8"), cast("int64")], rng=(0, 256))),
    "int8 + 10 wraps, int64 + 10 does not": (
        lambda: _chain_pair("int8", [cast("int64"), add("int64", 10)], [add("int8", 10)], rng=(110, 128)),
        lambda: _chain_pair("int8", [cast("int64"), add("int64", 10), cast("int8")], [add("int8", 10)],
                            rng=(110, 128))),
}


def _relate_y(cert: dict, bug: Pair) -> dict:
    """The control's certificate with the bug's graphs in place; per-operator evidence relates every
    spec tensor to the impl's output ``y`` (well-formed for the bug)."""
    cert = forge.embed(cert, bug[0], bug[1])
    evidence = next(iter(cert["evidence"].values()))
    if "relation" in evidence:
        evidence["relation"] = {t: ["y"] for t in evidence["relation"]}
    return cert


@pytest.mark.parametrize("form", forge.FORMS)
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_cast_attack_is_refused_and_its_certificate_rejected(name, form, tmp_path):
    bug, ok = ATTACKS[name]
    forge.attack(bug(), ok(), form, tmp_path, _relate_y)


def test_symbolic_truncation_is_refused_with_a_reason():
    s, g, rin, out = _chain_pair("float32", [cast("int32"), cast("float32")])
    spec, impl = parse_graph(s, "spec"), parse_graph(g, "impl")
    with pytest.raises(Unsupported, match="truncation is not polynomial"):
        refinement.check(spec, impl, refinement.parse_relation(rin, spec, impl, "in", True),
                         refinement.parse_relation(out, spec, impl, "out", False))


def _check(pair: Pair) -> bool:
    s, g, rin, out = pair
    spec, impl = parse_graph(s, "spec"), parse_graph(g, "impl")
    return all(o.holds for o in refinement.check(spec, impl, refinement.parse_relation(rin, spec, impl, "in", True),
                                                 refinement.parse_relation(out, spec, impl, "out", False)))


def test_integers_meeting_reals_are_exact_reals_not_float64():
    """Over the reals, int x + 1e-17 is not x (float64 would round it away), and x * 0.1 * 10 is."""
    scaled = [("aten.mul.Scalar", "float32", {"other": 0.1}), ("aten.mul.Scalar", "float32", {"other": 10})]
    assert not _check(_chain_pair("int64", [cast("float32")], [add("float32", 1e-17)], rng=(1, 4)))
    assert _check(_chain_pair("int64", [cast("float32")], scaled, rng=(0, 4)))
    assert _check(_chain_pair("int64", [cast("float32"), ("aten.div.Scalar", "float32", {"other": 3}),
                                        ("aten.mul.Scalar", "float32", {"other": 3})],
                              [("aten.div.Scalar", "float32", {"other": 3}), ("aten.mul.Scalar", "float32", {"other": 3})],
                              rng=(0, 4)))


@pytest.mark.parametrize("value, dtype, want", [(0.5, "bool", True), (0, "bool", False), (-2.5, "int32", -2),
                                                (255, "uint8", 255), (300, "uint8", None), (-1, "uint8", None)])
def test_factory_fill_values_are_cast_as_torch_does(value, dtype, want):
    """``full(value, dtype)``: bool is ``!= 0``, integers truncate; torch refuses values beyond the dtype."""
    from certificates.ops import REGISTRY, ShapeError
    run = REGISTRY["aten.full.default"].run
    attrs = {"size": [1], "fill_value": value, "dtype": dtype, "_symbolic": True, "_group": None}
    if want is None:
        with pytest.raises(ShapeError, match="does not fit"):
            run([], attrs)
    else:
        assert run([], attrs)[0].tolist() == [want]
        assert torch.full((1,), value, dtype=TORCH_ALL[dtype]).tolist() == [want]


def _sum(dtype: str, out: str, values: list) -> list:
    g = GraphBuilder("sum")
    g.input("x", [len(values)], "index" if dtype != "float32" else "activation", dtype=dtype,
            range=(-128, 128) if dtype != "float32" else None)
    g.node("aten.sum.default", ["x"], "y", out_dtype=out, dtype=out)
    g.output("y")
    x = np.array(values, dtype=np.int64 if dtype != "float32" else float)
    return evaluate(parse_graph(g.build(), "sum"), {"x": x}, False)["y"].tolist()


def test_reductions_with_a_dtype_attribute_are_exact_or_refused():
    """sum(int8, dtype=int8) wraps as torch; sum(float, dtype=int32) (a cast inside) is refused."""
    assert _sum("int8", "int8", [100, 100]) == torch.tensor([100, 100], dtype=torch.int8).sum(dtype=torch.int8).item()
    assert _sum("int8", "int64", [100, 100]) == 200
    with pytest.raises(Unsupported, match="real-valued result declared int32"):
        _sum("float32", "int32", [1.5, 2.5])


def test_a_dtype_attribute_must_match_the_declared_result():
    s, g, _, _ = _chain_pair("float32", [cast("int32")])
    g["tensors"]["x0"]["dtype"] = "float32"
    with pytest.raises(Exception, match="dtype attribute 'int32'"):
        parse_graph(g, "impl")


def test_low_precision_casts_verify_over_the_reals_and_replay_says_so(tmp_path):
    """float32 -> bfloat16 -> float32 is the identity over the reals; the claim says rounding is not modelled."""
    pair = _chain_pair("float32", [cast("bfloat16"), cast("float32")])
    path = tmp_path / "c.json"
    (result,) = forge.replayed(forge.certify(pair, "whole-graph"), path)
    assert result.ok and "values over the reals; bfloat16 rounding not modelled" in result.shown


# ---------------------------------------------------------------- generator (issue 12, item (b))

DTYPES = ("float32", "int32", "int64", "int8", "uint8", "bool")
TORCH = {d: getattr(torch, d) for d in DTYPES}
TORCH_ALL = {**TORCH, "int16": torch.int16, "float64": torch.float64}


def _values(dtype: str) -> list:
    """Zero, negative, large and boundary values of ``dtype`` (floats exact in float32)."""
    if dtype == "bool":
        return [False, True]
    if dtype == "float32":
        return [0.0, -1.5, 2.5, -7.25, 127.5, 255.75, -129.5, 3e9, -2.0**40, 2.0**31]
    lo, hi = bounds(dtype)
    return sorted(v for v in {0, 1, -1, 2, lo, hi, lo + 1, hi - 1, 100} if lo <= v <= hi)


def _random_chain(rng: random.Random, start: str) -> list[tuple]:
    """Casts and arithmetic (exact in float32: sign and powers of two; integers wrap)."""
    steps, dt = [], start
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["cast", "cast", "arith"])
        if kind == "cast" or dt == "bool":
            dt = rng.choice([d for d in DTYPES if d != dt])
            steps.append(cast(dt))
        elif dt == "float32":
            steps.append(rng.choice([("aten.neg.default", dt, {}), ("aten.mul.Scalar", dt, {"other": 2.0}),
                                     ("aten.mul.Scalar", dt, {"other": -0.5})]))
        else:
            steps.append(rng.choice([("aten.neg.default", dt, {}), add(dt, rng.choice([1, -1, 100, 200, 2**31])),
                                     ("aten.mul.Scalar", dt, {"other": rng.choice([3, -1, 100])})]))
    return steps


def _torch(x, steps):
    for target, dt, attrs in steps:
        if target == CAST:
            x = x.to(TORCH[dt])
        elif target == "aten.neg.default":
            x = -x
        elif target == "aten.add.Scalar":
            x = x + attrs["other"]
        else:
            x = x * attrs["other"]
    return x


def _checker(g, start: str, vals: list, symbolic: bool):
    """The checker's values of the chain's output on ``vals`` (symbolic: exact rationals)."""
    if start == "bool":
        x = np.array(vals, dtype=bool)
    elif start in FLOATS:
        x = np.array([Rat.of(v) for v in vals], dtype=object) if symbolic else np.array(vals, dtype=float)
    else:
        x = np.array(vals, dtype=np.int64)
    out = evaluate(g, {"x": x}, symbolic)["y"]
    return [float(Rat.of(v).constant()) if isinstance(v, Rat) else v.item() for v in out.ravel()]


def test_random_dtype_chains_agree_with_torch():
    """600 chains: the checker's values equal torch's exactly (or it refuses a float -> integer
    cast whose truncation is out of the target's range, where torch's result is undefined), and the
    symbolic claim ``chain(x) == x`` (cast back) holds only where torch finds no difference."""
    rng, t0 = random.Random(12), time.monotonic()
    compared = refused = accepted = 0
    for i in range(600):
        start = DTYPES[i % len(DTYPES)]
        steps = _random_chain(rng, start)
        if steps[-1][1] != start:
            steps.append(cast(start))
        vals = _values(start)
        lo, hi = bounds(start) if start != "float32" else (0, 0)
        window = (max(lo, hi - 3), hi + 1) if rng.random() < 0.5 else (lo, min(hi, lo + 3) + 1)
        s, g, rin, out = _chain_pair(start, steps, rng=window if start not in ("float32", "bool") else None)
        graph = parse_graph(g, "impl")
        want = _torch(torch.tensor(vals, dtype=TORCH[start]), steps).tolist()
        try:
            got = [_checker(graph, start, [v], sym)[0] for v in vals for sym in (False, True)]
        except Unsupported as e:
            assert "out of range" in str(e), (steps, str(e))
            refused += 1
            continue
        assert got == [w for w in want for _ in (0, 1)], (start, steps, vals)
        compared += 1
        # the symbolic claim chain(x) == x, integers enumerated over a window of their range
        spec, impl = parse_graph(s, "spec"), parse_graph(g, "impl")
        try:
            holds = all(o.holds for o in refinement.check(
                spec, impl, refinement.parse_relation(rin, spec, impl, "in", True),
                refinement.parse_relation(out, spec, impl, "out", False)))
        except Unsupported:
            holds = False
        domain = vals if start in ("float32", "bool") else list(range(*window))
        differs = _torch(torch.tensor(domain, dtype=TORCH[start]), steps).tolist() != \
            torch.tensor(domain, dtype=TORCH[start]).tolist()
        assert not (holds and differs), (start, steps, window)
        accepted += holds
    assert compared >= 400 and accepted >= 50 and refused >= 10, (compared, accepted, refused)
    assert time.monotonic() - t0 < 30


def test_numpy_integers_become_rationals_exactly():
    """numpy integers are not ``int``: they went through float and lost bits above 2^53."""
    from certificates.poly import to_fraction

    assert to_fraction(np.int64(2**60 + 1)) == 2**60 + 1
    assert to_fraction(np.uint64(2**64 - 1)) == 2**64 - 1
    assert to_fraction(np.bool_(True)) == 1
