"""Properties of the exact normal form (``certificates.poly``) and of ``decide``.

Random expression trees over a few variables are built twice: once as ``Rat``
values (the normal form) and once directly, as exact fractions (for + - * /) or as
floats (with exp, tanh and sqrt); the two must agree at every point where the
direct evaluation is defined. Algebraic identities must hold by the normal form
alone (``Rat.equals``), and a few near-misses must not.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from certificates.errors import LimitExceeded
from certificates.poly import Q, Rat, apply
from certificates.solve import evaluate
from certificates.smt import unsat
from certificates.solve import decide

VARS = ("x", "y", "z", "w")
SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- expression trees

leaf = st.one_of(
    st.sampled_from(VARS).map(lambda v: ("var", v)),
    st.sampled_from([Fraction(n, d) for n in (-3, -1, 1, 2, 5) for d in (1, 2, 3)] + [Fraction(0)])
    .map(lambda c: ("const", c)),
)


def _arith(children):
    return st.tuples(st.sampled_from(["add", "sub", "mul", "div"]), children, children)


def _trans(children):
    return st.one_of(_arith(children),
                     st.tuples(st.sampled_from(["exp", "tanh", "sqrt"]), children))


rational_trees = st.recursive(leaf, _arith, max_leaves=8)
trees = st.recursive(leaf, _trans, max_leaves=7)
points = st.fixed_dictionaries({v: st.fractions(-3, 3, max_denominator=7) for v in VARS})
float_points = st.fixed_dictionaries({v: st.floats(-2, 2, allow_nan=False) for v in VARS})


class Undefined(Exception):
    """The direct evaluation is undefined or ill-conditioned at this point."""


def build(t) -> Rat:
    kind = t[0]
    if kind == "var":
        return Rat.var(t[1])
    if kind == "const":
        return Rat.of(t[1])
    if kind in ("exp", "tanh", "sqrt"):
        return apply(kind, build(t[1]))
    a, b = build(t[1]), build(t[2])
    return {"add": a.__add__, "sub": a.__sub__, "mul": a.__mul__, "div": a.__truediv__}[kind](b)


def direct(t, env, exact: bool):
    """Value of the tree at ``env``; floats carry an error scale for the tolerance."""
    kind = t[0]
    if kind == "var":
        v = env[t[1]]
        return (v, abs(v)) if not exact else v
    if kind == "const":
        return (float(t[1]), abs(float(t[1]))) if not exact else t[1]
    if exact:
        a, b = direct(t[1], env, True), direct(t[2], env, True)
        if kind == "div" and b == 0:
            raise Undefined
        return {"add": a + b, "sub": a - b, "mul": a * b}.get(kind) if kind != "div" else a / b
    a, ma = direct(t[1], env, False)
    if kind == "exp":
        if a > 30:
            raise Undefined
        e = math.exp(a)
        return e, e * (1 + ma)
    if kind == "tanh":
        return math.tanh(a), 1 + ma
    if kind == "sqrt":
        if a < 1e-3:
            raise Undefined
        r = math.sqrt(a)
        return r, r + ma / r
    b, mb = direct(t[2], env, False)
    if kind == "add":
        return a + b, ma + mb
    if kind == "sub":
        return a - b, ma + mb
    if kind == "mul":
        return a * b, ma * abs(b) + abs(a) * mb + ma * mb
    if abs(b) < 1e-2 or mb > 1e3 * abs(b):
        raise Undefined
    return a / b, ma / abs(b) + abs(a) * mb / b**2


def _normal_form(t) -> Rat:
    try:
        return build(t)
    except ZeroDivisionError:  # a divisor that normalizes to zero: undefined everywhere
        assume(False)
    except LimitExceeded:
        assume(False)


@settings(max_examples=300, **SETTINGS)
@given(rational_trees, st.lists(points, min_size=3, max_size=3))
def test_rational_normal_form_is_exact(t, envs):
    """Without atoms the normal form evaluates exactly to the tree's value."""
    r = _normal_form(t)
    checked = 0
    for env in envs:
        try:
            want = direct(t, env, True)
        except Undefined:
            continue
        den = r.d.value(env.__getitem__)
        if den == 0:  # the normal form may be undefined only where the tree is
            continue
        got = r.value(env.__getitem__)
        assert isinstance(got, (Fraction, Q)) and not isinstance(got, float)  # exact, not rounded
        assert got == want, f"{t} at {env}: normal form {r} gives {got}, tree {want}"
        checked += 1
    assume(checked)


@settings(max_examples=400, **SETTINGS)
@given(trees, st.lists(float_points, min_size=3, max_size=3))
def test_normal_form_agrees_with_float_evaluation(t, envs):
    r = _normal_form(t)
    checked = 0
    for env in envs:
        try:
            want, scale = direct(t, env, False)
        except (Undefined, OverflowError):
            continue
        try:
            got = evaluate(r, env)
        except (ValueError, ZeroDivisionError, OverflowError):
            continue  # an atom's argument at the edge of its domain after rounding
        if not math.isfinite(got) or scale > 1e8:
            continue
        assert abs(got - want) <= 1e-7 * (1 + scale + abs(want)), f"{t} at {env}: {got} vs {want}"
        checked += 1
    assume(checked)


# ---------------------------------------------------------------- identities of the normal form

polys = st.recursive(leaf, lambda c: st.tuples(st.sampled_from(["add", "sub", "mul"]), c, c),
                     max_leaves=5).map(build)
x, y, z = Rat.var("x"), Rat.var("y"), Rat.var("z")


@settings(max_examples=150, **SETTINGS)
@given(polys, polys, polys)
def test_ring_laws(a, b, c):
    assert (a + b).equals(b + a)
    assert (a * b).equals(b * a)
    assert ((a + b) + c).equals(a + (b + c))
    assert ((a * b) * c).equals(a * (b * c))
    assert (a * (b + c)).equals(a * b + a * c)
    assert (a - a).is_zero() and (a + 0).equals(a) and (a * 1).equals(a)
    assert (a - b).equals(a + (-1) * b)
    assert ((a + b) ** 2).equals(a * a + 2 * a * b + b * b)


@settings(max_examples=100, **SETTINGS)
@given(polys, polys)
def test_exp_of_sum_is_product_of_exps(a, b):
    assert (apply("exp", a) * apply("exp", b)).equals(apply("exp", a + b))
    assert (apply("exp", a) / apply("exp", b)).equals(apply("exp", a - b))
    assert apply("log", apply("exp", a)).equals(a)


@settings(max_examples=80, **SETTINGS)
@given(st.lists(polys, min_size=1, max_size=3), polys)
def test_softmax_shift_invariance(xs, m):
    shifted = [apply("exp", v - m) for v in xs]
    plain = [apply("exp", v) for v in xs]
    total_s, total_p = sum(shifted[1:], shifted[0]), sum(plain[1:], plain[0])
    for s, p in zip(shifted, plain):
        assert (s / total_s).equals(p / total_p)


@settings(max_examples=100, **SETTINGS)
@given(polys, polys)
def test_division_cancels(a, b):
    assume(not b.is_zero())
    assert (a / b * b).equals(a)
    assert ((a * b) / b).equals(a)
    if not a.is_zero():
        assert (a / a).equals(Rat.of(1))


def test_identities_on_named_variables():
    assert ((x + y) ** 2).equals(x * x + 2 * x * y + y * y)
    assert ((x - y) * (x + y)).equals(x * x - y * y)
    assert (x / y * y).equals(x)
    assert (1 / (1 / x)).equals(x)
    assert (x / (x * y)).equals(1 / y)
    assert apply("log", apply("exp", x)).equals(x)
    assert apply("log", apply("exp", x * y + 3)).equals(x * y + 3)
    assert (apply("exp", x) * apply("exp", -x)).equals(Rat.of(1))
    assert apply("exp", Rat.of(0)).equals(Rat.of(1))
    assert apply("max", x, apply("max", y, x)).equals(apply("max", y, x))
    assert apply("sqrt", Rat.of(Fraction(9, 4))).equals(Rat.of(Fraction(3, 2)))
    assert (apply("tanh", x + y) - apply("tanh", y + x)).is_zero()  # atoms of equal arguments
    xs = [x, y, z]
    m = apply("max", *xs)
    num = apply("exp", x - m)
    den = sum((apply("exp", v - m) for v in xs[1:]), apply("exp", xs[0] - m))
    assert (num / den).equals(apply("exp", x) / (apply("exp", x) + apply("exp", y) + apply("exp", z)))


@pytest.mark.parametrize("a,b", [
    (x * y, x + y),
    (apply("exp", x + y), apply("exp", x) + apply("exp", y)),
    (apply("sqrt", x * x), x),
    (apply("exp", 2 * x), 2 * apply("exp", x)),
    (apply("tanh", x), x),
    ((x + 1) ** 2, x * x + 1),
    (x / y, y / x),
    (apply("max", x, 0), x),
    (apply("log", x * y), apply("log", x) + apply("log", y)),
], ids=["mul-add", "exp-sum", "sqrt-square", "exp-2x", "tanh", "square", "swap-div", "relu", "log-product"])
def test_non_identities(a, b):
    assert not a.equals(b)
    assert not b.equals(a)


# ---------------------------------------------------------------- decide

def relu(v):
    return apply("max", v, 0)


def test_decide_normal_form():
    v = decide((x + y) ** 2, x * x + 2 * x * y + y * y)
    assert v.holds is True and v.method == "normal-form"


def test_decide_relu_identity_needs_z3():
    pytest.importorskip("z3")
    a, b = relu(x) - relu(-x), x
    assert not a.equals(b)
    v = decide(a, b)
    assert v.holds is True and v.method == "z3"


def test_decide_refutes_with_numeric_witness():
    a, b = (x + 1) ** 2, x * x + 1
    v = decide(a, b)
    assert v.holds is False and v.method == "numeric"
    assert set(v.witness) == {"x"}
    va, vb = evaluate(a, v.witness), evaluate(b, v.witness)
    assert (va, vb) == v.values and abs(va - vb) > 1e-3


def test_decide_refutes_relu_as_identity():
    v = decide(relu(x), x)
    assert v.holds is False and v.witness["x"] < 0


def test_decide_never_proves_a_false_atom_claim():
    # exp(x) = 1 + x fails at every probe point; tanh(x) = tanh(y) likewise in general.
    assert decide(apply("exp", x), 1 + x).holds is False
    assert decide(apply("tanh", x), apply("tanh", y)).holds is not True


def _smt(a, b, which):
    return unsat(which, (), lambda enc: enc.rat(a) != enc.rat(b))


def test_cvc5_proves_small_identities():
    pytest.importorskip("cvc5.pythonic")
    assert _smt(relu(x) - relu(-x), x, "cvc5") is True
    assert _smt((x + y) ** 2, x * x + 2 * x * y + y * y, "cvc5") is True
    assert _smt(x * y, x + y, "cvc5") is None


def test_z3_does_not_prove_false_claims():
    pytest.importorskip("z3")
    assert _smt(x * y, x + y, "z3") is None
    assert _smt(relu(x), x, "z3") is None


def test_rat_defers_to_numpy_arrays():
    """``Rat op array`` maps over the elements (numpy's reflected operator), 0-d arrays included."""
    np = pytest.importorskip("numpy")
    b = np.array([y, Rat.of(2)], dtype=object)
    for out, want in [(x + b, [x + y, x + 2]), (x - b, [x - y, x - 2]), (x * b, [x * y, 2 * x]),
                      (x / b, [x / y, x / 2]), (b - x, [y - x, 2 - x]), (1 / b, [1 / y, Rat.of(Fraction(1, 2))])]:
        assert isinstance(out, np.ndarray) and all(u.equals(v) for u, v in zip(out, want))
    zero_d = np.array(y, dtype=object)
    assert Rat.of((x + zero_d) + zero_d).equals(x + 2 * y)
    assert (x * np.float64(1.5)).equals(Fraction(3, 2) * x) and (x * np.int64(3)).equals(3 * x)


# ---------------------------------------------------------------- interned exponents

def test_printed_forms_are_pinned():
    """Printed normal forms are what certificates store and replay compares: these texts
    were produced before exponent keys were interned and must never change."""
    m = apply("max", x, y, z)
    den = apply("exp", x - m) + apply("exp", y - m) + apply("exp", z - m)
    cases = [
        (apply("exp", x) * apply("exp", 2 * y) * (x + 1), "exp(x + 2*y) + x*exp(x + 2*y)"),
        ((apply("exp", x - m) * y + apply("exp", y - m) * z) / den,
         "(y*exp(-1*max(x, y, z) + x) + z*exp(-1*max(x, y, z) + y))/(exp(-1*max(x, y, z) + x)"
         " + exp(-1*max(x, y, z) + y) + exp(-1*max(x, y, z) + z))"),
        (apply("exp", apply("exp", x) - apply("exp", -y)) * apply("exp", apply("exp", -y)), "exp(exp(x))"),
        ((3 * x * apply("exp", x * y)) / (6 * y * apply("exp", 2 * x)), "(1/2*x*exp(-2*x + x*y))/(y)"),
        (apply("log", apply("exp", x * y + Fraction(1, 3))) + apply("tanh", x / (y + 1)),
         "1/3 + tanh((x)/(1 + y)) + x*y"),
        (apply("max", apply("max", x, 0), y - 1, Rat.of(-10**30)),
         "max(-1 + y, -1000000000000000000000000000000, 0, x)"),
        ((x + apply("sqrt", y)) / (apply("exp", -x) + 2 * z * apply("exp", y)),
         "(sqrt(y) + x)/(exp(-1*x) + 2*z*exp(y))"),
    ]
    for value, text in cases:
        assert str(value) == text


@settings(max_examples=100, **SETTINGS)
@given(polys, polys)
def test_printed_form_is_independent_of_operand_order(a, b):
    """``add`` walks the smaller operand, so dict order differs; the text must not."""
    ea, eb = apply("exp", a), apply("exp", b)
    for u, v in [(a, b), (ea, eb), (ea * a, eb + b)]:
        assert str(u + v) == str(v + u) and str(u * v) == str(v * u)
        assert (u + v).equals(v + u) and (u * v).equals(v * u)


@settings(max_examples=100, **SETTINGS)
@given(polys)
def test_exponent_keys_are_interned_and_equal_plain_keys(a):
    import copy
    import pickle

    from certificates.poly import Expo, Poly, intern_expo
    assume(not a.is_zero() and a.d.constant() == 1)
    e = apply("exp", a)
    ((_, k), _), = e.n.t.items()
    plain = a.n.key()
    assert type(k) is Expo and k is intern_expo(plain) and k is intern_expo(k)
    assert k == plain and hash(k) == hash(plain) and str(k) == str(plain)
    assert pickle.loads(pickle.dumps(k)) is k and copy.deepcopy(k) is k
    # a term built from a plain (not interned) key is the same term
    raw = Rat(Poly({((), plain): Q(1)}))
    assert str(raw) == str(e) and raw.equals(e) and (raw - e).is_zero()
    assert (raw * apply("exp", -a)).equals(Rat.of(1)) and str(raw + e) == str(2 * e)
    assert str(pickle.loads(pickle.dumps(e * x))) == str(e * x)


def _eager_add(a: dict, b: dict, sign: int) -> dict:
    """``Poly.add`` without laziness (the algorithm the lazy log replays)."""
    if sign == 1 and len(b) > len(a):
        a, b = b, a
    d = dict(a)
    for k, c in b.items():
        if v := d.get(k, 0) + (c if sign == 1 else -c):
            d[k] = v
        else:
            d.pop(k, None)
    return d


@settings(max_examples=60, **SETTINGS)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 6), st.sampled_from([1, -1]), st.booleans(),
                          st.integers(0, 5)), min_size=1, max_size=80))
def test_lazy_sums_equal_eager_sums(steps):
    """Lazy dot-product sums (``Poly.add``'s log) give the eager dicts, insertion order included,
    whichever operand is long, with cancellations, subtractions and shared prefixes."""
    from certificates.poly import Poly
    vals = [Poly({((("v0", 1), ("w", i)), ()): Q(1) for i in range(20)})]
    ref = [dict(vals[0].t)]
    for seed, size, sign, left, back in steps:
        short = {((("v%d" % ((seed + i) % 9), 1), ("w", i)), ()): Q(seed - 15 or 1, i + 1) for i in range(size)}
        j = max(0, len(vals) - 1 - back)          # extend an older value too: a shared log prefix
        s = Poly(dict(short))
        got = s.add(vals[j], 1) if left and sign == 1 else vals[j].add(s, sign)
        want = _eager_add(short, ref[j], 1) if left and sign == 1 else _eager_add(ref[j], short, sign)
        if len(vals) == 1:
            assert (got._up is not None) == (size <= 4)   # the lazy path is taken
        vals.append(got)
        ref.append(want)
    for p, d in zip(vals, ref):
        assert list(p.t.items()) == list(d.items())


def test_lazy_sum_after_cancellation_keeps_eager_order():
    """A lazy chain that cancels down to a few terms, then grows from the left and the right:
    the forced dict is the eager one at every size tie (which operand ``add`` copies)."""
    from certificates.poly import Poly

    def mono(i: int) -> dict:
        return {((("x", 1), ("w", i)), ()): Q(1)}
    p, ref = Poly({k: c for i in range(16) for k, c in mono(i).items()}), None
    ref = dict(p.t)
    for i in range(0, 16, 4):
        q = {k: c for j in range(i, i + 4) for k, c in mono(j).items()}
        p, ref = p.add(Poly(q), -1), _eager_add(ref, q, -1)
    for i, left in ((20, True), (21, True), (22, False), (23, True), (24, False)):
        q = mono(i)
        p, ref = (Poly(q).add(p), _eager_add(q, ref, 1)) if left else (p.add(Poly(q)), _eager_add(ref, q, 1))
        assert p._up is not None
    assert list(p.t.items()) == list(ref.items()) and len(ref) == 5
