"""``certificates.kernel.fma`` (the kernels' multiply-add) builds exactly what ``a * b + c`` builds:
the same terms in the same insertion order, through branching lazy logs, coefficients other than
1, squares, ``exp`` factors and short accumulators (where it falls back to the operators); its
array form (``Dot``) prints, converts and compares (``canon``, ``dot_equal``) as that value."""

import random

from certificates.kernel import Dot, Var, canon, dot_equal, fma, var
from certificates.poly import LAZY_LONG, Rat, apply
from verifier.kernels.equiv import compare


def _same(x: Rat, y: Rat) -> bool:
    return list(x.n.t.items()) == list(y.n.t.items()) and list(x.d.t.items()) == list(y.d.t.items())


def _factor(rng: random.Random) -> Rat:
    v = Rat.var(f"x{rng.randrange(12)}")
    kind = rng.randrange(6)
    return v * rng.choice([2, -3, 0.5]) if kind == 0 else apply("exp", v) if kind == 1 else \
        v * v if kind == 2 else Rat.of(rng.choice([1, 7])) if kind == 3 else v


def test_fma_is_multiply_then_add():
    rng = random.Random(17)
    for _ in range(40):
        fast, slow = [Rat.of(0)], [Rat.of(0)]
        for _ in range(rng.randrange(1, 60)):
            i = rng.randrange(len(fast))    # continue any earlier accumulator: logs branch and share prefixes
            a, b = _factor(rng), _factor(rng)
            fast.append(fma(a, b, fast[i]))
            slow.append(a * b + slow[i])
        for x, y in zip(fast, slow):
            assert _same(x, y), (x, y)


def test_fma_dot_product_matches_text():
    xs, ys = [Rat.var(f"A[{k}]") for k in range(40)], [Rat.var(f"B[{k}]") for k in range(40)]
    acc_f = acc_s = Rat.of(0)
    for x, y in zip(xs, ys):
        acc_f, acc_s = fma(x, y, acc_f), x * y + acc_s
    assert str(acc_f) == str(acc_s) and _same(acc_f, acc_s) and (acc_f - acc_s).is_zero()
    assert not (fma(xs[0], ys[1], acc_f) - acc_s).is_zero()


# ---- array-form dot products (certificates.kernel.Dot, issue 17)

def _one(rng: random.Random, ints: bool) -> Rat:
    """A one-term value: mostly an atom times an integer (the array form), else what falls back (``ints``:
    small integer coefficients, where ``canon`` is complete, else beyond ``WMAX`` and fractions too)."""
    v = (var if rng.randrange(2) else Rat.var)(f"x{rng.randrange(12)}")   # an input element, or built
    kind = rng.randrange(10)
    return v * rng.choice([2, -1, -3] + ([] if ints else [1 << 30, (1 << 30) + 1, 0.5])) if kind < 2 else \
        (apply("exp", v) if kind == 2 else v * v if kind == 3 and not ints else v)


def _long(rng: random.Random, ints: bool) -> Rat:
    acc = Rat.of(rng.choice([0, 5]))
    for _ in range(LAZY_LONG + rng.randrange(3)):
        acc = acc + _one(rng, ints) * _one(rng, ints)
    return acc


def test_dot_is_multiply_then_add():
    """Random mixes of fma and other operations on branching accumulators: the ``Dot`` prints, converts
    (same terms, same order) and compares canonically as the operators' value; repeated pairs cancel."""
    rng, dots = random.Random(1717), 0
    for trial in range(60):
        ints = trial % 2 == 0
        base = _long(rng, ints)
        fast, slow, pairs = [base], [base], []
        for _ in range(rng.randrange(10, 80)):
            i, op = rng.randrange(len(fast)), rng.randrange(10)
            if op < 6 or op == 9 and not pairs:
                a, b = _one(rng, ints), _one(rng, ints)
                a, b = (b, a) if rng.randrange(2) else (a, b)
                pairs.append((a, b))
                fast.append(fma(a, b, fast[i]))
                slow.append(a * b + slow[i])
            elif op == 9:                               # undo an earlier product, the pair in either order
                a, b = rng.choice(pairs)
                a, b = (b, a) if rng.randrange(2) else (a, b)
                fast.append(fma(-a, b, fast[i]))
                slow.append((-a) * b + slow[i])
            elif op == 6:
                j = rng.randrange(len(fast))
                fast.append(fast[i] + fast[j])
                slow.append(slow[i] + slow[j])
            elif op == 7:
                fast.append(fast[i] * 2)
                slow.append(slow[i] * 2)
            else:
                a = _one(rng, ints)
                fast.append(fast[i] - a * a)
                slow.append(slow[i] - a * a)
        dots += any(type(x) is Dot for x in fast)
        for t in rng.sample(range(len(fast)), min(12, len(fast))):   # dot_equal: never between unequal values
            u = rng.randrange(len(fast))
            assert not dot_equal(fast[t], fast[u]) or (slow[t] - slow[u]).is_zero()
        for x, y in zip(fast, slow):
            assert str(x) == str(y)
            if type(x) is Dot and ints:
                assert dot_equal(x, y) and dot_equal(y, x) and x.equals(y)
            assert _same(x, y), (x, y)
    assert dots > 45


def test_input_elements_take_the_short_path():
    """``fma`` of two input elements (``Var``) onto a ``Dot`` at the end of its arrays appends in place."""
    xs = [var(f"A[{k}]") for k in range(40)]
    acc = Rat.of(0)
    for k in range(39):
        acc = fma(xs[k], xs[k + 1], acc)
    assert type(xs[0]) is Var and type(acc) is Dot and acc.k == 39 and len(acc.up[1]) == acc.k   # from the first term
    other = fma(xs[0], xs[0], fma(xs[3], xs[1], acc))   # in place, then a branch from acc: copied
    mine = fma(xs[5], xs[5], acc)
    assert mine.up[1] is not other.up[1] and list(mine.up[1][:-1]) == list(acc.up[1][:acc.k])
    assert str(mine) == str(acc + xs[5] * xs[5]) and str(other) == str(acc + xs[3] * xs[1] + xs[0] ** 2)


def test_dot_pairs_squares_and_cancellation():
    xs = [Rat.var(f"A[{k}]") for k in range(40)]
    acc = Rat.of(0)
    for k in range(20):
        acc = fma(xs[k], xs[k + 1], acc)
    assert type(acc) is Dot
    swapped = fma(xs[7], xs[3], acc)                    # x_i * x_j and x_j * x_i: one monomial
    assert dot_equal(swapped, fma(xs[3], xs[7], acc)) and str(swapped) == str(acc + xs[3] * xs[7])
    sq = fma(xs[5], xs[5], acc)
    assert dot_equal(sq, acc + xs[5] ** 2) and not dot_equal(sq, acc + xs[5] * xs[6])
    zero = fma(-xs[2], xs[2], fma(xs[2], xs[2], fma(-xs[9], xs[8], acc)))   # x9*x8 cancels the base's x8*x9
    rest = sum((xs[k] * xs[k + 1] for k in range(20) if k != 8), Rat.of(0))
    assert dot_equal(zero, rest) and str(zero) == str(rest) and _same(zero, fma(-xs[9], xs[8], acc) + 0 * xs[0])
    _, keys, ws = canon(zero)
    assert list(keys) == sorted(set(keys)) and all(ws) and len(keys) == 19
    assert all((k >> 32) <= (k & 0xFFFFFFFF) for k in keys)


def test_long_dot_product_dropped_or_changed_term_is_refuted():
    """4096 terms: one product dropped, or one coefficient changed, is not equal (canonical arrays, then
    the normal-form decision: the engine's ``compare`` refutes it)."""
    xs, ys = [Rat.var(f"A[{k}]") for k in range(4096)], [Rat.var(f"B[{k}]") for k in range(4096)]

    def dot(skip: int = -1, coef: int = -1) -> Rat:
        acc = Rat.of(0)
        for k, (x, y) in enumerate(zip(xs, ys)):
            if k != skip:
                acc = fma(x * 2 if k == coef else x, y, acc)
        return acc
    good, dropped, changed = dot(), dot(skip=3000), dot(coef=4000)
    assert type(good) is Dot and dot_equal(good, dot()) and compare({("C", 0): good}, {("C", 0): dot()}).verdict == "equivalent"
    for bad in (dropped, changed):
        assert not dot_equal(good, bad) and not dot_equal(bad, good)
        assert compare({("C", 0): good}, {("C", 0): bad}).verdict == "not-equivalent"


def test_same_terms_in_the_same_order_need_equal_bases_and_coefficients():
    """``dot_equal`` decides dot products with the same terms in the same order without sorting them: only where the
    bases are equal and no term has a coefficient (the same pairs with coefficients 2 and 3 are other values)."""
    xs = [var(f"A[{k}]") for k in range(9)]

    def dot(base, coef: int = 1, n: int = 6) -> Rat:
        acc = base
        for k in range(n):
            acc = fma(xs[k] * coef if k == 2 else xs[k], xs[k + 1], acc)
        return acc
    assert dot_equal(dot(Rat.of(0)), dot(Rat.of(0))) and dot_equal(dot(xs[8] * xs[8]), dot(xs[8] * xs[8]))
    assert not dot_equal(dot(Rat.of(0)), dot(Rat.of(1))) and not dot_equal(dot(xs[8] * xs[8]), dot(Rat.of(0)))
    two, three = dot(Rat.of(0), 2), dot(Rat.of(0), 3)
    assert list(two.up[1][:two.k]) == list(three.up[1][:three.k]) and not dot_equal(two, three)
    assert dot_equal(two, dot(Rat.of(0), 2)) and not dot_equal(dot(Rat.of(0)), dot(Rat.of(0), n=5))
