"""``certificates.kernel.fma`` (the kernels' multiply-add) builds exactly what ``a * b + c`` builds:
the same terms in the same insertion order, through branching lazy logs, coefficients other than
1, squares, ``exp`` factors and short accumulators (where it falls back to the operators)."""

import random

from certificates.kernel import fma
from certificates.poly import Rat, apply


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
