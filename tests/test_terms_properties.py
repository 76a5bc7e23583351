"""Properties of clean expressions (``certificates.terms``).

Random well-formed terms over a few per-rank tensors of known shapes are built
together with their shape. For each: printing and parsing round-trips,
``infer_shape`` gives the constructed shape and the shape of ``evaluate``, and
``evaluate`` agrees with a direct numpy construction. Malformed text is rejected
as ``Malformed`` naming the column; over-deep nesting as ``LimitExceeded``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from certificates.errors import LimitExceeded, Malformed
from certificates.limits import DEFAULT, Limits
from certificates.terms import FUNCTIONS, Call, Ref, TermError, evaluate, infer_shape, parse

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
RANKS = 3
# Base tensors; every base has one shard per rank with the same shape.
BASES = {"x": (2, 3), "h.0": (4,), "w_1": (2, 1, 3), "act": (3, 2, 2)}


def name(base: str, rank: int) -> str:
    return f"{base}@r{rank}"


SHAPES = {name(b, r): s for b, s in BASES.items() for r in range(RANKS)}


def call(fn: str, args: tuple, **k) -> Call:
    """A ``Call`` as the parser builds it: keys in the function's declared order, lists as tuples."""
    _, _, req, opt = FUNCTIONS[fn]
    assert set(req) <= set(k) <= set(req) | set(opt)
    return Call(fn, args, tuple((key, tuple(k[key]) if isinstance(k[key], list) else k[key])
                                for key in tuple(req) + tuple(opt) if key in k))


def rerank(t, shift: int):
    """The same term over other ranks' shards: same shape, different tensors."""
    if isinstance(t, Ref):
        base, _, r = t.name.rpartition("@r")
        return Ref(name(base, (int(r) + shift) % RANKS))
    return Call(t.fn, tuple(rerank(a, shift) for a in t.args), t.kw)


def _neg(draw, d: int, n: int) -> int:
    """``d`` or its negative alias."""
    return d - n if draw(st.booleans()) else d


@st.composite
def terms(draw, depth: int = 3):
    """A well-shaped term and its shape."""
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        base = draw(st.sampled_from(sorted(BASES)))
        return Ref(name(base, draw(st.integers(0, RANKS - 1)))), BASES[base]
    t, s = draw(terms(depth - 1))
    n = len(s)
    fn = draw(st.sampled_from(["concat", "slice", "pad", "permute", "transpose", "reshape", "sum"]))
    if fn == "concat" and n:
        d = draw(st.integers(0, n - 1))
        k = draw(st.integers(1, 3))
        parts = [t] + [rerank(t, draw(st.integers(1, RANKS - 1))) for _ in range(k - 1)]
        if draw(st.booleans()):  # a sliced piece: differs only along d
            lo = draw(st.integers(0, s[d]))
            hi = draw(st.integers(lo, s[d]))
            parts.append(call("slice", (rerank(t, 1),), dim=d, start=lo, end=hi))
            extra = hi - lo
        else:
            extra = 0
        out = s[:d] + (s[d] * k + extra,) + s[d + 1:]
        return call("concat", tuple(parts), dim=_neg(draw, d, n)), out
    if fn == "slice" and n:
        d = draw(st.integers(0, n - 1))
        lo = draw(st.integers(0, s[d]))
        hi = draw(st.integers(lo, s[d]))
        step = draw(st.integers(1, 3))
        keys = dict(dim=_neg(draw, d, n), start=lo, end=hi)
        if step != 1 or draw(st.booleans()):
            keys["step"] = step
        return call("slice", (t,), **keys), s[:d] + (len(range(lo, hi, step)),) + s[d + 1:]
    if fn == "pad" and n:
        d = draw(st.integers(0, n - 1))
        lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        return call("pad", (t,), dim=_neg(draw, d, n), before=lo, after=hi), s[:d] + (s[d] + lo + hi,) + s[d + 1:]
    if fn == "permute":
        p = draw(st.permutations(list(range(n))))
        return call("permute", (t,), dims=[_neg(draw, d, n) for d in p]), tuple(s[i] for i in p)
    if fn == "transpose" and n:
        i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        p = list(range(n))
        p[i], p[j] = p[j], p[i]
        return call("transpose", (t,), dim0=_neg(draw, i, n), dim1=j), tuple(s[q] for q in p)
    if fn == "reshape":
        total = int(np.prod(s))
        dims, rest = [], total
        for _ in range(draw(st.integers(0, 2))):
            d = draw(st.sampled_from([v for v in range(1, rest + 1) if rest % v == 0] or [1, 2]))
            dims.append(d)
            rest //= d
        out = tuple(draw(st.permutations(dims + [rest])))
        return call("reshape", (t,), shape=list(out)), out
    if fn == "sum":
        k = draw(st.integers(1, 3))
        return call("sum", (t,) + tuple(rerank(t, i) for i in range(1, k))), s
    return t, s


# ---------------------------------------------------------------- numpy reference

def reference(t, env: dict) -> np.ndarray:
    if isinstance(t, Ref):
        return env[t.name]
    k = dict(t.kw)
    xs = [reference(a, env) for a in t.args]
    x = xs[0]
    if t.fn == "concat":
        return np.concatenate(xs, axis=k["dim"])
    if t.fn == "slice":
        idx = [slice(None)] * x.ndim
        idx[k["dim"]] = slice(k["start"], k["end"], k.get("step", 1))
        return x[tuple(idx)]
    if t.fn == "pad":
        widths = [(0, 0)] * x.ndim
        widths[k["dim"]] = (k["before"], k["after"])
        return np.pad(x, widths, mode="constant", constant_values=0)
    if t.fn == "permute":
        return np.transpose(x, k["dims"])
    if t.fn == "transpose":
        return np.swapaxes(x, k["dim0"], k["dim1"])
    if t.fn == "reshape":
        return np.reshape(x, k["shape"])
    assert t.fn == "sum"
    out = x.copy()
    for y in xs[1:]:
        out = out + y
    return out


def _env(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(s) for n, s in SHAPES.items()}


@settings(max_examples=300, **SETTINGS)
@given(terms(), st.sampled_from([" ", ""]))
def test_print_parse_round_trip(ts, space):
    t, _ = ts
    text = str(t)
    assert parse(text) == t
    compact = text.replace(" ", space)
    assert parse(compact) == t
    assert str(parse(text)) == text


@settings(max_examples=300, **SETTINGS)
@given(terms(), st.integers(0, 2**32 - 1))
def test_shape_and_value_agree_with_numpy(ts, seed):
    t, shape = ts
    env = _env(seed)
    assert infer_shape(t, SHAPES.__getitem__) == shape
    got = evaluate(t, env.__getitem__)
    assert got.shape == shape
    want = reference(t, env)
    assert want.shape == shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@settings(max_examples=100, **SETTINGS)
@given(terms())
def test_integer_arrays_move_exactly_and_pad_with_zero(ts):
    """On integer arrays (indices, element labels) evaluation moves values; padding is 0."""
    t, shape = ts
    offsets = {n: 1 + i * 1000 for i, n in enumerate(SHAPES)}
    labels = {n: offsets[n] + np.arange(int(np.prod(s))).reshape(s) for n, s in SHAPES.items()}
    got = evaluate(t, labels.__getitem__)
    assert got.shape == shape and got.dtype.kind == "i"
    floats = evaluate(t, lambda n: labels[n].astype(float))
    np.testing.assert_array_equal(got, floats)


# ---------------------------------------------------------------- shape errors

@pytest.mark.parametrize("text", [
    "concat(x@r0, h.0@r0, dim=0)",
    "concat(x@r0, x@r1, dim=2)",
    "concat(x@r0, w_1@r0, dim=0)",
    "slice(x@r0, dim=1, start=2, end=4)",
    "slice(x@r0, dim=1, start=2, end=1)",
    "slice(x@r0, dim=1, start=0, end=1, step=0)",
    "slice(x@r0, dim=-3, start=0, end=1)",
    "pad(x@r0, dim=0, before=-1, after=0)",
    "permute(x@r0, dims=[0,0])",
    "permute(x@r0, dims=[0])",
    "transpose(x@r0, dim0=0, dim1=2)",
    "reshape(x@r0, shape=[5])",
    "reshape(x@r0, shape=[-1,6])",
    "sum(x@r0, h.0@r0)",
])
def test_ill_shaped_terms_raise_term_error(text):
    t = parse(text)
    with pytest.raises(TermError):
        infer_shape(t, SHAPES.__getitem__)
    with pytest.raises(TermError):
        evaluate(t, _env(0).__getitem__)


# ---------------------------------------------------------------- parse errors

@pytest.mark.parametrize("text,column,words", [
    ("foo(x)", 0, "unknown function 'foo'"),
    ("concat(x, bar(y), dim=0)", 10, "unknown function 'bar'"),
    ("slice(x, dim=0, start=0)", 24, "needs keys"),
    ("slice(x, dim=0, start=0, end=1, stride=2)", 41, "needs keys"),
    ("x y", 2, "unexpected text"),
    ("sum(x))", 6, "unexpected text"),
    ("concat(dim=0, x)", 14, "positional argument after a keyword"),
    ("slice(x, dim=0, dim=1, start=0, end=1)", 20, "repeated key 'dim'"),
    ("sum(x", 5, "expected"),
    ("", 0, "expected name"),
    ("permute(x, dims=[0)", 18, "expected ,"),
    ("concat(x, dim=[0])", 14, "key 'dim' takes an integer"),
    ("permute(x, dims=1)", 16, "key 'dims' takes a list"),
    ("concat(x, dim=a)", 14, "expected int"),
    ("concat(dim=0)", 13, "takes 1..n terms, got 0"),
    ("slice(x, y, dim=0, start=0, end=1)", 34, "takes 1..1 terms, got 2"),
    ("sum(x; y)", 5, "expected ,"),
    ("3", 0, "expected name"),
])
def test_parse_errors_name_the_column(text, column, words):
    with pytest.raises(Malformed) as e:
        parse(text, where="cert.json: relations[0]")
    msg = str(e.value)
    assert msg.startswith("cert.json: relations[0]: ")
    assert words in msg
    assert re.search(rf"at column {column}\b", msg), msg


@pytest.mark.parametrize("text", ["x ", "sum(x, y)  ", " x", "\tsum( x ,y )\t"])
def test_whitespace_is_insignificant(text):
    assert parse(text) == parse(text.strip().replace(" ", ""))


@pytest.mark.parametrize("text", ["permute(x, dims=1)", "reshape(x, shape=6)", "concat(x, dim=[0])",
                                  "slice(x, dim=0, start=[0], end=1)", "pad(x, dim=0, before=[1], after=0)"])
def test_parse_rejects_wrong_value_kinds(text):
    with pytest.raises(Malformed, match="column"):
        parse(text)


def test_parse_rejects_non_strings_and_huge_text():
    with pytest.raises(Malformed):
        parse(["x"])  # type: ignore[arg-type]
    with pytest.raises(Malformed):
        parse("sum(" + "x, " * 40_000 + "x)")


def _nested(depth: int) -> str:
    return "sum(" * depth + "x@r0" + ")" * depth


def test_nesting_up_to_the_limit_parses():
    t = parse(_nested(DEFAULT.max_term_depth))
    assert infer_shape(t, SHAPES.__getitem__) == SHAPES["x@r0"]
    small = Limits(max_term_depth=3)
    assert parse(_nested(3), limits=small) == parse(_nested(3))
    with pytest.raises(LimitExceeded):
        parse(_nested(4), limits=small)


@pytest.mark.parametrize("depth", [DEFAULT.max_term_depth + 1, 2_000, 6_000])
def test_deep_nesting_is_a_limit_not_a_recursion_error(depth):
    with pytest.raises(LimitExceeded, match="nested deeper"):
        parse(_nested(depth), where="c.json")
    with pytest.raises(LimitExceeded):
        parse("concat(" * depth + "x" + ", dim=0)" * depth)
