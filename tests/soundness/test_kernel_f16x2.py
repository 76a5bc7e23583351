"""``cvt.rn.f16x2.f32 d, a, b`` (issue 17: FlashAttention-2 re-packs its f32 score accumulator
as f16 mma operands with ``__floats2half2_rn``): d's upper half is a, its lower half b (PTX ISA,
cvt), each conversion the identity on the reals like ``cvt.rn.f16.f32``. The halves are read
back through shared memory; swapped halves are refuted by the engine and rejected by replay;
the variants (``.relu``, ``.satfinite``, other rounding) are refused and a two-operand form is
malformed."""

from __future__ import annotations

from certificates.errors import Malformed
from certificates.ptx import parse
from test_kernel_reach import STORE, TENSORS, certify, entry, forged, kernel, rejected, with_ptx
from verifier.kernels.equiv import check_pair

SHARED = ".shared .align 4 .b8 buf[128];"


def packed(cvt: str = "cvt.rn.f16x2.f32 %r10, %f1, %f2;", half: int = 0) -> str:
    """Pack x[i] (upper) and y[i] (lower), store the word to shared memory, read back half ``half``."""
    return (f"\t{cvt}\n\tmov.u32 %r11, buf;\n\tmad.lo.s32 %r12, %r1, 4, %r11;\n"
            f"\tst.shared.b32 [%r12], %r10;\n\tbar.sync 0;\n"
            f"\t.reg .b16 %rs<4>;\n\tld.shared.b16 %rs1, [%r12+{2 * half}];\n"
            f"\t{{ cvt.f32.f16 %f3, %rs1; }}\n" + STORE)


def copy_of(reg: str) -> str:
    return f"\tmov.f32 %f3, {reg};\n" + STORE


def test_low_half_is_the_second_source_and_high_half_the_first(tmp_path):
    for half, src in ((0, "%f2"), (1, "%f1")):
        e = entry(tmp_path, kernel(copy_of(src)), kernel(packed(half=half), shared=SHARED))
        cert = certify(tmp_path, e)
        other = kernel(packed(half=1 - half), shared=SHARED)
        assert check_pair(entry(tmp_path, kernel(copy_of(src)), other), tmp_path).verdict == "not-equivalent"
        rejected(with_ptx(cert, other), tmp_path, "the certified normal form is not the replay's")


def test_swapped_halves_forged_certificate_is_rejected(tmp_path):
    e = entry(tmp_path, kernel(copy_of("%f2")), kernel(packed("cvt.rn.f16x2.f32 %r10, %f2, %f1;"), shared=SHARED))
    rejected(forged(tmp_path, e), tmp_path, "differs")


def test_variants_are_refused_and_two_operands_malformed(tmp_path):
    for cvt, why in (("cvt.rn.relu.f16x2.f32 %r10, %f1, %f2;", "modifier .relu"),   # refused by the parser
                     ("cvt.rn.satfinite.f16x2.f32 %r10, %f1, %f2;", "modifier .satfinite"),
                     ("cvt.rz.f16x2.f32 %r10, %f1, %f2;", "cvt variant")):
        e = entry(tmp_path, kernel(copy_of("%f2")), kernel(packed(cvt), shared=SHARED))
        r = check_pair(e, tmp_path)
        assert r.verdict == "unsupported" and why in r.message, r.message
        cert = certify(tmp_path, entry(tmp_path, kernel(copy_of("%f2")), kernel(packed(), shared=SHARED)))
        rejected(with_ptx(cert, kernel(packed(cvt), shared=SHARED)), tmp_path, why)
    try:
        parse(kernel(packed("cvt.rn.f16x2.f32 %r10, %f1;"), shared=SHARED))
    except Malformed as e:
        assert "takes 3 operands" in str(e)
    else:
        raise AssertionError("two-operand cvt.rn.f16x2.f32 parsed")
