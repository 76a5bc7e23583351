"""Atoms whose text passes 256 characters are named by its SHA-256 (poly.apply). The attack: two
different long arguments of one function must stay two atoms (a false equality would be a false
ACCEPT), and one argument built twice, in another order, must stay one atom."""

from certificates.poly import Rat, apply
from certificates.solve import decide


def _long(coeff: int, order=range(40)):
    total = Rat.of(0)
    for i in order:
        total = total + Rat.var(f"x{i}") * (coeff if i == 17 else i + 1)
    return total


def test_long_arguments_that_differ_in_one_coefficient_are_different_atoms():
    a, b = apply("sqrt", _long(18)), apply("sqrt", _long(19))
    assert len(str(_long(18))) > 256 and "#" in str(a)   # the digest form is in use
    assert not a.equals(b)
    assert decide(a, b).holds is not True


def test_one_long_argument_built_in_another_order_is_one_atom():
    a, b = apply("sqrt", _long(18)), apply("sqrt", _long(18, order=reversed(range(40))))
    assert str(a) == str(b) and a.equals(b)
    assert apply("sqrt", _long(18) * 1).equals(a)
