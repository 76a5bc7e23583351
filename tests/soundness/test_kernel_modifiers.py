"""Instruction modifiers that change values or promise what is not checked (PTX ISA: ``max.xorsign.abs``,
``max.abs``, ``.relu``, ``.oob``; ``ld.global.nc`` of data the kernel writes; a guarded ``bra.uni`` that diverges): the
executors gave ``max.xorsign.abs.f32`` the value of ``max.f32``, ``max.relu.s32`` that of ``max.s32``, an ``.nc`` load
of an output the value just stored and ``bra.uni`` that of ``bra``, so a kernel differing only there was "equivalent"
and a certificate for the benign one, its PTX swapped, was ACCEPTed. The parser now refuses every modifier of a value
instruction outside ``certificates.ptx.MODS`` and a guarded ``bra.uni``; the executors refuse a non-coherent load of an
output; the modifiers with a meaning still verify."""

from __future__ import annotations

import pytest

from certificates.errors import Unsupported
from certificates.ptx import parse
from test_kernel_soundness import STORE, certify, check, kernel, outcome, with_ptx

# threads 0..63: x = (t - 32) * 10^8 (wrapping), y = 5 - t; thread 31 has both negative, thread 6 a positive x
INTS = "\tsub.s32 %r10, %r1, 32;\n\tsub.s32 %r11, 5, %r1;\n\tmul.lo.s32 %r10, %r10, 100000000;\n"
INT_OUT = "\tcvt.rn.f32.s32 %f3, %r12;\n" + STORE
H = "\t.reg .b16 %rs<4>;\n"
DIVERGE = "\tsetp.lt.u32 %p1, %r1, 16;\n\tmov.f32 %f3, %f1;\n\t@%p1 {bra} L1;\n\tmov.f32 %f3, %f2;\nL1:\n" + STORE
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
    # half the threads branch: .uni promises that no warp diverges here
    "@p bra.uni": (DIVERGE.format(bra="bra"), DIVERGE.format(bra="bra.uni")),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_modifier_that_changes_values_is_refused(tmp_path, name):
    good, bad = ATTACKS[name]
    with pytest.raises(Unsupported, match="modifier"):
        parse(kernel(bad))
    refused(tmp_path, good, bad, "modifier")


def refused(tmp_path, good: str, bad: str, why: str) -> None:
    """The engine calls ``bad`` unsupported (``why``), and a certificate for ``good`` with ``bad``'s PTX swapped in is
    not ACCEPTed, for that reason."""
    _, r = check(tmp_path, good, bad, threads=64)
    assert r.verdict == "unsupported" and why in r.message, r.message
    cert = certify(tmp_path, good, good, threads=64)
    assert outcome(cert, tmp_path)[0]
    ok, detail = outcome(with_ptx(cert, bad), tmp_path)
    assert not ok and why in detail, detail


def test_a_non_coherent_load_of_an_output_is_refused(tmp_path):
    """``ld.global.nc`` reads through the read-only path: of an output the kernel wrote, its value is not the store's."""
    back = "\tst.global.f32 [%rd10], %f1;\n\tld.global.nc.f32 %f4, [%rd10];\n\tadd.f32 %f3, %f4, %f4;\n" + STORE
    refused(tmp_path, "\tadd.f32 %f3, %f1, %f1;\n" + STORE, back, "non-coherent load")
    ok, detail = outcome(certify(tmp_path, "\tmov.f32 %f3, %f1;\n" + STORE, "\tld.global.nc.f32 %f3, [%rd8];\n" + STORE,
                                 threads=64), tmp_path)
    assert ok, detail   # of an input: read-only


def test_nan_propagation_is_refused_as_unsupported():
    """``max.NaN.f32`` is PTX (the one upper-case modifier), not a malformed opcode: refused by name."""
    with pytest.raises(Unsupported, match=r"max.NaN.f32` \(modifier .NaN\)"):
        parse(kernel("\tmax.NaN.f32 %f3, %f1, %f2;\n" + STORE))


# modifiers with a meaning here: rounding and flush-to-zero (ignored over the reals), approx/full division, .cc
# (its carry is never read), the comparison of setp
CONTROLS = {
    "max.ftz.f32": ("\tmax.f32 %f3, %f1, %f2;\n" + STORE, "\tmax.ftz.f32 %f3, %f1, %f2;\n" + STORE),
    "neg.ftz.f32": ("\tneg.f32 %f3, %f1;\n" + STORE, "\tneg.ftz.f32 %f3, %f1;\n" + STORE),
    "div.full.f32": ("\tdiv.rn.f32 %f3, %f1, %f2;\n" + STORE, "\tdiv.full.f32 %f3, %f1, %f2;\n" + STORE),
    "add.cc.u32": (INTS + "\tadd.u32 %r12, %r10, %r11;\n" + INT_OUT, INTS + "\tadd.cc.u32 %r12, %r10, %r11;\n" + INT_OUT),
    "setp.lt.s32": (INTS + "\tmin.s32 %r12, %r10, %r11;\n" + INT_OUT,
                    INTS + "\tsetp.lt.s32 %p1, %r10, %r11;\n\tselp.b32 %r12, %r10, %r11, %p1;\n" + INT_OUT),
    "bra.uni": ("\tmov.f32 %f3, %f1;\n" + STORE, "\tbra.uni L1;\nL1:\n\tmov.f32 %f3, %f1;\n" + STORE),
}


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_modelled_modifiers_still_verify(tmp_path, name):
    good, other = CONTROLS[name]
    ok, detail = outcome(certify(tmp_path, good, other, threads=64), tmp_path)
    assert ok, detail


# p1 = (1.0 < 2.0) and p2, p2 = (thread < 16): the BoolOp after .ftz was not seen, so p1 was true for every thread
FTZ_AND = ("\tsetp.lt.u32 %p2, %r1, 16;\n\tmov.f32 %f4, 0f3F800000;\n\tsetp.lt.ftz.{op}.f32 %p1, %f4, 0f40000000, %p2;\n"
           "\tmov.f32 %f3, %f1;\n\t@%p1 bra L1;\n\tmov.f32 %f3, %f2;\nL1:\n" + STORE)
ALWAYS = "\tmov.f32 %f3, %f1;\n" + STORE


def test_setp_combines_its_predicate_operand_after_ftz(tmp_path):
    assert check(tmp_path, FTZ_AND.format(op="and"), DIVERGE.format(bra="bra"), threads=64)[1].verdict == "equivalent"
    assert check(tmp_path, FTZ_AND.format(op="or"), ALWAYS, threads=64)[1].verdict == "equivalent"
    assert check(tmp_path, FTZ_AND.format(op="and"), ALWAYS, threads=64)[1].verdict == "not-equivalent"
    ok, detail = outcome(with_ptx(certify(tmp_path, ALWAYS, ALWAYS, threads=64), FTZ_AND.format(op="and")), tmp_path)
    assert not ok, detail


def test_setp_with_a_fourth_operand_and_no_boolop_is_refused(tmp_path):
    bad = "\tsetp.ne.s32 %p2, %r1, 3;\n\tsetp.lt.u32 %p1, %r1, 16, %p2;\n\tmov.f32 %f3, %f1;\n\t@%p1 bra L1;\n" \
          "\tmov.f32 %f3, %f2;\nL1:\n" + STORE
    refused(tmp_path, DIVERGE.format(bra="bra"), bad, "setp with 4 operands")
