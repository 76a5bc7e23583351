"""Instruction modifiers that change values (PTX ISA: ``max.xorsign.abs``, ``max.abs``, ``.relu``, ``.oob``): the
executors gave ``max.xorsign.abs.f32`` the value of ``max.f32`` and ``max.relu.s32`` that of ``max.s32``, so a kernel
differing only there was "equivalent" and a certificate for the benign one, its PTX swapped, was ACCEPTed. The parser
now refuses every modifier of a value instruction outside ``certificates.ptx.MODS``; those inside still verify."""

from __future__ import annotations

import pytest

from certificates.errors import Unsupported
from certificates.ptx import parse
from test_kernel_soundness import STORE, certify, check, kernel, outcome, with_ptx

# threads 0..63: x = (t - 32) * 10^8 (wrapping), y = 5 - t; thread 31 has both negative, thread 6 a positive x
INTS = "\tsub.s32 %r10, %r1, 32;\n\tsub.s32 %r11, 5, %r1;\n\tmul.lo.s32 %r10, %r10, 100000000;\n"
INT_OUT = "\tcvt.rn.f32.s32 %f3, %r12;\n" + STORE
H = "\t.reg .b16 %rs<4>;\n"
ATTACKS = {   # name: (benign body, the same with a modifier that changes its values)
    "max.xorsign.abs.f32": ("\tmax.f32 %f3, %f1, %f2;\n" + STORE, "\tmax.xorsign.abs.f32 %f3, %f1, %f2;\n" + STORE),
    "min.xorsign.abs.f32": ("\tmin.f32 %f3, %f1, %f2;\n" + STORE, "\tmin.xorsign.abs.f32 %f3, %f1, %f2;\n" + STORE),
    "max.abs.f32": ("\tmax.f32 %f3, %f1, %f2;\n" + STORE, "\tmax.abs.f32 %f3, %f1, %f2;\n" + STORE),
    "max.relu.s32": (INTS + "\tmax.s32 %r12, %r10, %r11;\n" + INT_OUT,
                     INTS + "\tmax.relu.s32 %r12, %r10, %r11;\n" + INT_OUT),
    "min.relu.s32": (INTS + "\tmin.s32 %r12, %r10, %r11;\n" + INT_OUT,
                     INTS + "\tmin.relu.s32 %r12, %r10, %r11;\n" + INT_OUT),
    "fma.rn.relu.f32": ("\tfma.rn.f32 %f3, %f1, %f2, %f1;\n" + STORE, "\tfma.rn.relu.f32 %f3, %f1, %f2, %f1;\n" + STORE),
    "cvt.rn.relu.f16.f32": (H + "\tcvt.rn.f16.f32 %rs1, %f1;\n\tcvt.f32.f16 %f3, %rs1;\n" + STORE,
                            H + "\tcvt.rn.relu.f16.f32 %rs1, %f1;\n\tcvt.f32.f16 %f3, %rs1;\n" + STORE),
    "fma.rn.oob.f32": ("\tfma.rn.f32 %f3, %f1, %f2, %f1;\n" + STORE, "\tfma.rn.oob.f32 %f3, %f1, %f2, %f1;\n" + STORE),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_modifier_that_changes_values_is_refused(tmp_path, name):
    good, bad = ATTACKS[name]
    with pytest.raises(Unsupported, match="modifier"):
        parse(kernel(bad))
    _, r = check(tmp_path, good, bad, threads=64)
    assert r.verdict == "unsupported" and "modifier" in r.message, r.message
    cert = certify(tmp_path, good, good, threads=64)
    assert outcome(cert, tmp_path)[0]
    ok, detail = outcome(with_ptx(cert, bad), tmp_path)
    assert not ok and "modifier" in detail, detail


# modifiers with a meaning here: rounding and flush-to-zero (ignored over the reals), approx/full division, .cc
# (its carry is never read), the comparison of setp
CONTROLS = {
    "max.ftz.f32": ("\tmax.f32 %f3, %f1, %f2;\n" + STORE, "\tmax.ftz.f32 %f3, %f1, %f2;\n" + STORE),
    "neg.ftz.f32": ("\tneg.f32 %f3, %f1;\n" + STORE, "\tneg.ftz.f32 %f3, %f1;\n" + STORE),
    "div.full.f32": ("\tdiv.rn.f32 %f3, %f1, %f2;\n" + STORE, "\tdiv.full.f32 %f3, %f1, %f2;\n" + STORE),
    "add.cc.u32": (INTS + "\tadd.u32 %r12, %r10, %r11;\n" + INT_OUT, INTS + "\tadd.cc.u32 %r12, %r10, %r11;\n" + INT_OUT),
    "setp.lt.s32": (INTS + "\tmin.s32 %r12, %r10, %r11;\n" + INT_OUT,
                    INTS + "\tsetp.lt.s32 %p1, %r10, %r11;\n\tselp.b32 %r12, %r10, %r11, %p1;\n" + INT_OUT),
}


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_modelled_modifiers_still_verify(tmp_path, name):
    good, other = CONTROLS[name]
    ok, detail = outcome(certify(tmp_path, good, other, threads=64), tmp_path)
    assert ok, detail
