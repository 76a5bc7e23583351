"""``wmma.load``/``wmma.store`` lanes must agree on one address, provenance included: the executors compared the lanes'
addresses as integers, and shared arrays lie contiguously in the model, so lanes holding one past the end of ``A`` and
lanes holding the start of ``B`` (declared right after ``A``) were one address, although where ``B`` lies is ptxas's
choice (no address may depend on the layout). The first lane's address was the one modelled: with lane 0 at ``B``, a
kernel doing so was "equivalent" to one where every lane uses ``B``, and a certificate for the latter with the
former's PTX swapped in was ACCEPTed (with lane 0 at the end of ``A``, it was rejected, as out of ``A``'s bounds). Now
the lanes must agree on the allocation and space too, and both are refused for that; the benign kernel verifies."""

from __future__ import annotations

import pytest

from test_kernel_soundness import STORE, certify, check, outcome, with_ptx

# one warp: thread t writes x[t] and y[t] as f16 into half of row t // 2 of A and of B (16x16 f16 each, adjacent, the same
# alignment), then the warp multiplies the tile at its address by itself (wmma) into buf (16x16 f32), and thread t
# writes buf[t] to out[t]
INIT = """\t.shared .align 32 .b8 A[512];
\t.shared .align 32 .b8 B[512];
\t.reg .b16 %rs<4>;
\tcvt.rn.f16.f32 %rs1, %f1;
\tcvt.rn.f16.f32 %rs2, %f2;
\tshl.b32 %r5, %r1, 4;
\tmov.u32 %r6, A;
\tadd.s32 %r6, %r6, %r5;
\tmov.u32 %r7, B;
\tadd.s32 %r7, %r7, %r5;
""" + "".join(f"\tst.shared.b16 [%r6+{2 * k}], %rs{1 + k % 2};\n\tst.shared.b16 [%r7+{2 * k}], %rs{2 - k % 2};\n"
              for k in range(8)) + "\tbar.sync 0;\n\tmov.u32 %r8, B;\n"
MMA = """\tmov.u32 %r9, 16;
\twmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%r11, %r12, %r13, %r14, %r15, %r16, %r17, %r18}, [%r8], %r9;
\twmma.load.b.sync.aligned.col.m16n16k16.shared.f16 {%r19, %r20, %r21, %r22, %r23, %r24, %r25, %r26}, [%r8], %r9;
\tmov.f32 %f12, 0f00000000;
\twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f4, %f5, %f6, %f7, %f8, %f9, %f10, %f11}, \
{%r11, %r12, %r13, %r14, %r15, %r16, %r17, %r18}, {%r19, %r20, %r21, %r22, %r23, %r24, %r25, %r26}, \
{%f12, %f12, %f12, %f12, %f12, %f12, %f12, %f12};
\tmov.u32 %r27, buf;
\twmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%r27], {%f4, %f5, %f6, %f7, %f8, %f9, %f10, %f11}, %r9;
\tbar.sync 0;
\tshl.b32 %r28, %r1, 2;
\tadd.s32 %r28, %r27, %r28;
\tld.shared.f32 %f3, [%r28];
""" + STORE
# lanes 0..15 / 16..31: B + 0 and the end of A (= B + 0 in the model's layout, not necessarily in ptxas's), or the
# other way round
LANES = "\tmov.u32 %r10, {0};\n\tadd.s32 %r10, %r10, {1};\n\tsetp.lt.u32 %p1, %r1, 16;\n\tselp.b32 %r8, {2}, %p1;\n"
GOOD = INIT + LANES.format("B", 0, "%r8, %r10") + MMA    # every lane: B + 0 (the same instructions as the attacks)
ATTACKS = {"B first": INIT + LANES.format("A", 512, "%r8, %r10") + MMA,
           "end of A first": INIT + LANES.format("A", 512, "%r10, %r8") + MMA}
WHY = "wmma lanes disagree on address"


def test_the_benign_kernel_verifies(tmp_path):
    _, r = check(tmp_path, GOOD, GOOD, threads=32)
    assert r.verdict == "equivalent", r.message
    ok, detail = outcome(certify(tmp_path, GOOD, GOOD, threads=32), tmp_path)
    assert ok, detail


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_lanes_at_one_value_in_two_allocations_are_refused(tmp_path, name):
    bad = ATTACKS[name]
    _, r = check(tmp_path, GOOD, bad, threads=32)
    assert r.verdict != "equivalent" and WHY in r.message, r.message
    cert = certify(tmp_path, GOOD, GOOD, threads=32)
    ok, detail = outcome(with_ptx(cert, bad), tmp_path)
    assert not ok and WHY in detail, detail
