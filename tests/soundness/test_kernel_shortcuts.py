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


def test_sixteen_bits_of_an_f32_input(tmp_path):
    _, r = check(tmp_path, COPY, HALF_OF_F32)
    assert r.verdict != "equivalent", r.message
    ok, detail = outcome(with_ptx(certify(tmp_path, COPY, COPY), HALF_OF_F32), tmp_path)
    assert not ok, detail


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
