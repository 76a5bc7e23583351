"""The checker's shortcuts of issue 17 (``certificates.kernel.quick``: 16-bit loads of f16 inputs, f16/f32
``cvt``; ``Replay.sync``: a full barrier's clock join in n steps; shared accesses by a variable's name, a
shortcut once, now ``Replay.step`` and ``certificates.lockstep``) under attack: a certificate the engine wrote for a benign kernel, its PTX swapped for one that
only a wrong shortcut would let through, must be REJECTed, and the engine must not say "equivalent"."""

from __future__ import annotations

import pytest

from test_kernel_soundness import STORE, certify, check, outcome, rejected, with_ptx

# each thread its own slot of buf, by a register address: race-free
OWN = ("\tmov.u32 %r5, buf;\n\tshl.b32 %r6, %r1, 2;\n\tadd.s32 %r7, %r5, %r6;\n"
       "\tst.shared.f32 [%r7], %f1;\n\tbar.sync 0;\n\tld.shared.f32 %f3, [%r7];\n" + STORE)
BY_NAME = {
    # every thread stores to buf+8 by name, then reads it: a write-write race
    "race by name": "\tst.shared.f32 [buf+8], %f1;\n\tld.shared.f32 %f3, [buf+8];\n" + STORE,
    # past the end of buf (1024 bytes) by name
    "out of bounds by name": "\tst.shared.f32 [buf+1024], %f1;\n\tbar.sync 0;\n\tld.shared.f32 %f3, [buf+1024];\n"
                             + STORE,
    # a word read two bytes off its alignment by name
    "misaligned by name": "\tst.shared.f32 [buf], %f1;\n\tbar.sync 0;\n\tld.shared.f32 %f3, [buf+2];\n" + STORE,
}
REASONS = {"race by name": "data race", "out of bounds by name": "out of bounds", "misaligned by name": ""}


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_shared_access_by_name(tmp_path, name):
    _, r = check(tmp_path, OWN, BY_NAME[name], threads=2)
    assert r.verdict != "equivalent", r.message
    rejected(with_ptx(certify(tmp_path, OWN, OWN, threads=2), BY_NAME[name]), tmp_path, REASONS[name])


# x is an f32 tensor: 16 bits of it are no f16 element (the shortcut serves only f16 inputs)
HALF_OF_F32 = ("\t.reg .b16 %rs<4>;\n\tld.global.u16 %rs1, [%rd8];\n\tld.global.u16 %rs2, [%rd8];\n"
               "\tcvt.f32.f16 %f3, %rs2;\n" + STORE)
COPY = "\tmov.f32 %f3, %f1;\n" + STORE


def attacked(tmp_path, ref: str, good: str, bad: str) -> None:
    """``ref`` against ``good`` is certified and ACCEPTed; against ``bad`` the engine does not say "equivalent", and
    the certificate with ``bad``'s PTX in place of ``good``'s is not ACCEPTed."""
    cert = certify(tmp_path, ref, good)
    ok, detail = outcome(cert, tmp_path)
    assert ok, detail
    _, r = check(tmp_path, ref, bad)
    assert r.verdict != "equivalent", r.message
    ok, detail = outcome(with_ptx(cert, bad), tmp_path)
    assert not ok, detail


def test_sixteen_bits_of_an_f32_input(tmp_path):
    attacked(tmp_path, COPY, COPY, HALF_OF_F32)


# thread 0 writes its slot and exits before the barrier; thread 1 reads that slot after it. An exited
# thread never arrives at a barrier, so nothing orders the two: the join of a barrier that lacks a
# thread is the full one, and the race stands.
EXITED = ("\tmov.u32 %r5, buf;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 st.shared.f32 [%r5], %f1;\n\t@%p1 bra DONE;\n"
          "\tbar.sync 0;\n\tld.shared.f32 %f3, [%r5];\n" + STORE + "DONE:\n")
EXITED_OWN = ("\tmov.u32 %r5, buf;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 st.shared.f32 [%r5], %f1;\n"
              "\tbar.sync 0;\n\tld.shared.f32 %f3, [%r5];\n" + STORE)


def test_a_thread_that_exited_is_not_ordered_by_the_barrier(tmp_path):
    _, r = check(tmp_path, EXITED_OWN, EXITED, threads=2)
    assert r.verdict != "equivalent", r.message
    ok, detail = outcome(with_ptx(certify(tmp_path, EXITED_OWN, EXITED_OWN, threads=2), EXITED), tmp_path)
    assert not ok, detail


# ``__expf``: ex2 of x * log2(e) is exp(x), taken without the product by log(2) (``kernel.FLOAT_OPS``); ex2 of
# x * log2(e)^2 is exp(x / ln 2), which a shortcut for any denominator holding log(2) would call exp(x)
EXPF = "\tmul.f32 %f4, %f1, 0f3FB8AA3B;\n\tex2.approx.ftz.f32 %f3, %f4;\n" + STORE
EXPF_TWICE = "\tmul.f32 %f4, %f1, 0f3FB8AA3B;\n\tmul.f32 %f4, %f4, 0f3FB8AA3B;\n\tex2.approx.ftz.f32 %f3, %f4;\n" + STORE
# x * ln 2 * log2(e): every term holds log(2), which the product cancels (``kernel.over_ln2`` leaves it to ``Rat``)
LN2_CANCELS = ("\tmov.f32 %f5, 0f3FB8AA3B;\n\trcp.rn.f32 %f5, %f5;\n\tmul.f32 %f4, %f1, %f5;\n"
               "\tmul.f32 %f3, %f4, 0f3FB8AA3B;\n" + STORE)


def test_ex2_of_a_value_over_ln2_squared(tmp_path):
    attacked(tmp_path, EXPF, EXPF, EXPF_TWICE)


def test_a_product_by_log2e_that_cancels_prints_as_the_engine_does(tmp_path):
    ok, detail = outcome(certify(tmp_path, COPY, LN2_CANCELS), tmp_path)
    assert ok, detail


# e^x / (e^x + e^y), and the same with both exponents shifted by m = max(x, y): equal, and decided by scaling the
# optimized side onto the reference's shift (``kernel.least``); with one denominator term left unshifted: unequal
EXP = "\tmul.f32 %f{0}, %f{1}, 0f3FB8AA3B;\n\tex2.approx.ftz.f32 %f{0}, %f{0};\n"
SOFTMAX = EXP.format(5, 1) + EXP.format(7, 2) + "\tadd.f32 %f8, %f5, %f7;\n\tdiv.rn.f32 %f3, %f5, %f8;\n" + STORE
SHIFTED = ("\tmax.f32 %f9, %f1, %f2;\n\tsub.f32 %f10, %f1, %f9;\n\tsub.f32 %f11, %f2, %f9;\n" + EXP.format(5, 10)
           + EXP.format(7, 11) + "\tadd.f32 %f8, %f5, %f7;\n\tdiv.rn.f32 %f3, %f5, %f8;\n" + STORE)
HALF_SHIFTED = SHIFTED.replace(EXP.format(7, 11), EXP.format(7, 2))


def test_a_softmax_shifted_in_its_numerator_only(tmp_path):
    attacked(tmp_path, SOFTMAX, SHIFTED, HALF_SHIFTED)


# 64 threads: after a full barrier (``Replay.sync`` gives every thread one shared clock list), thread 0 writes buf
# and each warp syncs alone; thread 32 then reads buf, ordered after the write by no barrier (a clock list ticked in
# place would carry warp 0's tick to warp 1 and order it). Thread 1 (warp 0) reading it is ordered.
WARPS = ("\tmov.u32 %r5, buf;\n\tbar.sync 0;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 st.shared.f32 [%r5], %f1;\n"
         "\tbar.warp.sync -1;\n\tsetp.eq.u32 %p3, %r1, {};\n\t@%p3 ld.shared.f32 %f4, [%r5];\n\tmov.f32 %f3, %f1;\n"
         + STORE)


def test_a_warp_sync_orders_no_other_warp(tmp_path):
    _, r = check(tmp_path, WARPS.format(1), WARPS.format(32), threads=64)
    assert r.verdict == "racy", r.message
    rejected(with_ptx(certify(tmp_path, WARPS.format(1), WARPS.format(1), threads=64), WARPS.format(32)), tmp_path,
             "data race")


# fma(0, y, x) is x (``kernel.fma``: a zero factor leaves the addend as it is); fma(2^-126, y, x) is not
FMA_ZERO = "\tfma.rn.f32 %f3, %f2, 0f00000000, %f1;\n" + STORE
FMA_TINY = "\tfma.rn.f32 %f3, %f2, 0f00800000, %f1;\n" + STORE


def test_an_fma_by_zero_is_its_addend(tmp_path):
    attacked(tmp_path, COPY, FMA_ZERO, FMA_TINY)


# ldmatrix.x1 reads a word whose halves are 16-bit values (``Replay.ldmatrix`` reads such a word as one 4-byte load):
# thread t writes the two halves of word t + 1 (mod 32), which lane t + 1 reads (then unpacks through its own slot).
# With the barrier between the writes and the ldmatrix, race-free; with it before the writes, each word is read by
# another thread than its writer, unordered: the race must be found.
def _ldmatrix(before: str, after: str) -> str:
    return ("\t.reg .b16 %rs<4>;\n\tcvt.rn.f16.f32 %rs1, %f1;\n\tcvt.rn.f16.f32 %rs2, %f2;\n\tmov.u32 %r5, buf;\n"
            "\tadd.s32 %r6, %r1, 1;\n\tand.b32 %r6, %r6, 31;\n\tshl.b32 %r6, %r6, 2;\n\tadd.s32 %r7, %r5, %r6;\n"
            + before + "\tst.shared.u16 [%r7], %rs1;\n\tst.shared.u16 [%r7+2], %rs2;\n" + after +
            "\tand.b32 %r8, %r1, 7;\n\tshl.b32 %r8, %r8, 4;\n\tadd.s32 %r9, %r5, %r8;\n"
            "\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r10}, [%r9];\n\tshl.b32 %r11, %r1, 2;\n"
            "\tadd.s32 %r11, %r11, 512;\n\tadd.s32 %r11, %r5, %r11;\n\tst.shared.b32 [%r11], %r10;\n"
            "\tld.shared.u16 %rs1, [%r11];\n\tld.shared.u16 %rs2, [%r11+2];\n"
            "\tcvt.f32.f16 %f4, %rs1;\n\tcvt.f32.f16 %f5, %rs2;\n\tadd.f32 %f3, %f4, %f5;\n" + STORE)


def test_ldmatrix_of_16_bit_halves(tmp_path):
    good, bad = _ldmatrix("", "\tbar.sync 0;\n"), _ldmatrix("\tbar.sync 0;\n", "")
    cert = certify(tmp_path, good, good, threads=32)
    ok, detail = outcome(cert, tmp_path)
    assert ok, detail
    _, r = check(tmp_path, good, bad, threads=32)
    assert r.verdict == "racy", r.message
    rejected(with_ptx(cert, bad), tmp_path, "data race")
