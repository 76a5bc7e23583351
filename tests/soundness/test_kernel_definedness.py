"""Kernel claims and partial operations (DESIGN.md rule 4, as for graph claims): ``x * (y / y)`` has the normal form of
``x`` but no value at ``y = 0``, and was certified equal to ``x``. Each division, square root and logarithm of the
optimized kernel must now be defined wherever the reference is: its condition positive by form
(``certificates.kernel.positive``) or one of the reference's own (same normal form; a logarithm's ``> 0`` serves a
divisor's ``!= 0``). The reference's conditions that are not positive by form are the claim's assumptions, counted in
its ACCEPT line. Each attack: the engine says "unknown", and a certificate for a benign pair with the attack's PTX
swapped in is REJECTed."""

from __future__ import annotations

import pytest

from test_kernel_soundness import STORE, certify, check, outcome, with_ptx

X = "\tmov.f32 %f3, %f1;\n" + STORE
ZERO = "0f00000000"
ATTACKS = {   # name: (reference, optimized), each out = x on the reals where defined
    "x * (y / y)": (X, "\tdiv.rn.f32 %f4, %f2, %f2;\n\tmul.f32 %f3, %f1, %f4;\n" + STORE),
    "x * y * rcp(y)": (X, "\trcp.rn.f32 %f4, %f2;\n\tmul.f32 %f5, %f1, %f2;\n\tmul.f32 %f3, %f5, %f4;\n" + STORE),
    "x * (y^2 / y^2)": (X, "\tmul.f32 %f4, %f2, %f2;\n\tdiv.rn.f32 %f5, %f4, %f4;\n\tmul.f32 %f3, %f1, %f5;\n" + STORE),
    "x + 0 * lg2(y)": (X, f"\tlg2.approx.f32 %f4, %f2;\n\tmul.f32 %f4, %f4, {ZERO};\n\tadd.f32 %f3, %f1, %f4;\n" + STORE),
    "x + 0 * sqrt(-y^2)": (X, f"\tmul.f32 %f4, %f2, %f2;\n\tneg.f32 %f4, %f4;\n\tsqrt.rn.f32 %f4, %f4;\n"
                              f"\tmul.f32 %f4, %f4, {ZERO};\n\tadd.f32 %f3, %f1, %f4;\n" + STORE),
    "x + 0 * sqrt(y)": (X, f"\tsqrt.rn.f32 %f4, %f2;\n\tmul.f32 %f4, %f4, {ZERO};\n\tadd.f32 %f3, %f1, %f4;\n" + STORE),
    "x * ((y + 1) / (y + 1))": (X, "\tadd.f32 %f4, %f2, 0f3F800000;\n\tdiv.rn.f32 %f5, %f4, %f4;\n"
                                   "\tmul.f32 %f3, %f1, %f5;\n" + STORE),
    # the reference's y >= 0 (a square root) is no divisor's y != 0; y is one object with both conditions, in
    # either order
    "sqrt(y) in both, y / y in one": (
        f"\tsqrt.rn.f32 %f4, %f2;\n\tmul.f32 %f4, %f4, {ZERO};\n\tadd.f32 %f3, %f1, %f4;\n" + STORE,
        f"\tsqrt.rn.f32 %f4, %f2;\n\tmul.f32 %f4, %f4, {ZERO};\n\tdiv.rn.f32 %f5, %f2, %f2;\n"
        "\tmul.f32 %f6, %f1, %f5;\n\tadd.f32 %f3, %f6, %f4;\n" + STORE),
    "y / y, then sqrt(y) in both": (
        f"\tsqrt.rn.f32 %f4, %f2;\n\tmul.f32 %f4, %f4, {ZERO};\n\tadd.f32 %f3, %f1, %f4;\n" + STORE,
        f"\tdiv.rn.f32 %f5, %f2, %f2;\n\tmul.f32 %f6, %f1, %f5;\n\tsqrt.rn.f32 %f4, %f2;\n\tmul.f32 %f4, %f4, {ZERO};\n"
        "\tadd.f32 %f3, %f6, %f4;\n" + STORE),
    # 1/y >= 0 needs y > 0: the reference's y != 0 (its own 0/y) covers the optimized rcp(y), not its square root
    "sqrt(1/y) against 0/y": (
        f"\tdiv.rn.f32 %f4, {ZERO}, %f2;\n\tadd.f32 %f3, %f1, %f4;\n" + STORE,
        f"\trcp.rn.f32 %f4, %f2;\n\tsqrt.rn.f32 %f4, %f4;\n\tmul.f32 %f4, %f4, {ZERO};\n\tadd.f32 %f3, %f1, %f4;\n"
        + STORE),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_partial_operation_not_defined_where_the_reference_is(tmp_path, name):
    ref, opt = ATTACKS[name]
    _, r = check(tmp_path, ref, opt)
    assert r.verdict == "unknown" and "is not shown wherever the reference is defined" in r.message, r.message
    ok, detail = outcome(with_ptx(certify(tmp_path, ref, ref), opt), tmp_path)
    assert not ok and "is not shown wherever the reference is defined" in detail, detail


CONTROLS = {   # name: (reference, optimized, assumptions counted)
    "x / y in both": ("\tdiv.rn.f32 %f3, %f1, %f2;\n" + STORE,
                      "\trcp.rn.f32 %f4, %f2;\n\tmul.f32 %f3, %f1, %f4;\n" + STORE, 1),
    "x / (y^2 + 1): positive by form": (
        "\tfma.rn.f32 %f4, %f2, %f2, 0f3F800000;\n\tdiv.rn.f32 %f3, %f1, %f4;\n" + STORE,
        "\tfma.rn.f32 %f4, %f2, %f2, 0f3F800000;\n\trcp.rn.f32 %f4, %f4;\n\tmul.f32 %f3, %f1, %f4;\n" + STORE, 0),
    "log(y) covers 1/y": (f"\tlg2.approx.f32 %f4, %f2;\n\tmul.f32 %f4, %f4, {ZERO};\n\tadd.f32 %f3, %f1, %f4;\n" + STORE,
                          f"\tdiv.rn.f32 %f4, {ZERO}, %f2;\n\tadd.f32 %f3, %f1, %f4;\n" + STORE, 1),
    "exp(x) / (exp(x) + exp(y))": (
        "\tex2.approx.f32 %f4, %f1;\n\tex2.approx.f32 %f5, %f2;\n\tadd.f32 %f6, %f4, %f5;\n\tdiv.rn.f32 %f3, %f4, %f6;\n"
        + STORE,
        "\tex2.approx.f32 %f4, %f1;\n\tex2.approx.f32 %f5, %f2;\n\tadd.f32 %f6, %f5, %f4;\n\trcp.rn.f32 %f6, %f6;\n"
        "\tmul.f32 %f3, %f6, %f4;\n" + STORE, 0),
}


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_defined_where_the_reference_is(tmp_path, name):
    ref, opt, assumed = CONTROLS[name]
    ok, detail = outcome(certify(tmp_path, ref, opt), tmp_path)
    assert ok, detail
    assert (f"wherever the reference is defined ({assumed} of its" in detail) == bool(assumed), detail
