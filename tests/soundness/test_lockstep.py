"""The engine's lockstep execution (issue 17, ``verifier.kernels.simt`` through ``exec.run_cta``) under
attack: each program below is one a wrong lockstep rule would get wrong (a race inside one instruction or
between two groups of a split warp, a dot product copied and then extended twice, integers at the edges of
their types, mixed address provenance, a deadlock, barriers at two pcs, out-of-bounds lanes). With
lockstep, every outcome (outputs, steps, schedule, witness, bytes written and touched, or the error) must
be the per-thread interpreter's, the programs lockstep is meant to run must really run in lockstep (the
per-thread path is not called), and the checker (``certificates.kernel_claim.replay_cta``) must accept the
evidence lockstep writes and reject forged schedules. The checker's own lockstep (``certificates.lockstep``) is
held to the same rule against the checker's per-thread replay."""

from __future__ import annotations

import pytest

import certificates.kernel as ck
from certificates.errors import CheckError
from certificates.kernel import Printer
from certificates.kernel_claim import replay_cta
from certificates.limits import Limits
from certificates.lockstep import lockstep as checker_lockstep
from certificates.ptx import parse
from verifier.kernels import exec as ex
from verifier.kernels.certificate import _evidence

HEAD = """.version 9.0
.target sm_80
.address_size 64
.visible .entry k(
\t.param .u64 k_param_0,
\t.param .u64 k_param_1,
\t.param .u64 k_param_2,
\t.param .u64 k_param_3
)
{
\t.reg .pred %p<8>;
\t.reg .f32 %f<32>;
\t.reg .b32 %r<64>;
\t.reg .b64 %rd<32>;
\t.reg .b16 %rs<8>;
\t.shared .align 16 .b8 buf[1024];
\tld.param.u64 %rd1, [k_param_0];
\tld.param.u64 %rd2, [k_param_1];
\tld.param.u64 %rd20, [k_param_2];
\tcvta.to.global.u64 %rd3, %rd1;
\tcvta.to.global.u64 %rd4, %rd2;
\tcvta.to.global.u64 %rd21, %rd20;
\tld.param.u64 %rd23, [k_param_3];
\tcvta.to.global.u64 %rd24, %rd23;
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd25, %r1, 2;
\tadd.s64 %rd26, %rd24, %rd25;
\tmul.wide.u32 %rd5, %r1, 4;
\tadd.s64 %rd6, %rd3, %rd5;
\tadd.s64 %rd7, %rd4, %rd5;
\tadd.s64 %rd22, %rd21, %rd5;
\tld.global.f32 %f1, [%rd6];
\tld.global.f32 %f2, [%rd6+256];
\tmov.u32 %r2, buf;
\tshl.b32 %r3, %r1, 2;
\tadd.s32 %r4, %r2, %r3;
"""
TAIL = "\tret;\n}\n"
PARAMS = [{"name": "x", "role": "input", "dtype": "f32", "shape": [128]},
          {"name": "y", "role": "output", "dtype": "f32", "shape": [64]},
          {"name": "z", "role": "output", "dtype": "f32", "shape": [64]},
          {"name": "h", "role": "input", "dtype": "f16", "shape": [128]}]
Y, Z = "\tst.global.f32 [%rd7], %f{};\n", "\tst.global.f32 [%rd22], %f{};\n"
OTHER = "\txor.b32 %r5, %r1, {};\n\tshl.b32 %r6, %r5, 2;\n\tadd.s32 %r7, %r2, %r6;\n"   # thread tid^k's slot


def x_at(reg: str, dst: str) -> str:
    """``dst = x[reg & 63]``: an integer's low six bits made visible in an output's normal form."""
    return (f"\tand.b32 %r60, {reg}, 63;\n\tmul.wide.u32 %rd30, %r60, 4;\n\tadd.s64 %rd31, %rd3, %rd30;\n"
            f"\tld.global.f32 {dst}, [%rd31];\n")


SPREAD = "\tmul.lo.u32 %r10, %r1, -1640531527;\n\tadd.s32 %r11, %r10, -2147483648;\n"   # over the 32-bit range


def visible(regs: list[int]) -> str:
    """Each pair of integer registers made visible: ``y = sum x[a & 63] * x[b & 63]``."""
    return ("\tmov.f32 %f3, 0f00000000;\n"
            + "".join(x_at(f"%r{a}", "%f4") + x_at(f"%r{b}", "%f5") + "\tfma.rn.f32 %f3, %f4, %f5, %f3;\n"
                      for a, b in zip(regs[::2], regs[1::2])) + Y.format(3))


INTEGERS_32 = SPREAD + (  # each edge of the 32-bit rules, thread-dependent
    "\tmul.hi.u32 %r12, %r10, %r10;\n\tmul.hi.s32 %r13, %r10, %r11;\n\tshr.s32 %r14, %r11, 7;\n"
    "\tshr.u32 %r15, %r11, 7;\n\tmin.u32 %r16, %r10, %r11;\n\tmin.s32 %r17, %r10, %r11;\n"
    "\tsetp.lt.u32 %p1, %r10, %r11;\n\tselp.u32 %r18, 1, 2, %p1;\n\tsetp.lt.s32 %p2, %r10, %r11;\n"
    "\tselp.u32 %r19, 4, 8, %p2;\n\tshl.b32 %r20, %r10, 31;\n\tshr.u32 %r21, %r20, 26;\n"
    "\tsub.s32 %r22, 5, %r1;\n\tshr.s32 %r23, %r22, 1;\n\trem.u32 %r24, %r10, 61;\n\tdiv.s32 %r25, %r11, 977;\n"
    "\tmad.lo.s32 %r26, %r10, %r11, %r22;\n\tbfe.u32 %r27, %r10, 9, 6;\n\tmax.u32 %r28, %r11, %r22;\n"
    "\tmax.s32 %r29, %r11, %r22;\n\tshl.b32 %r30, %r10, 33;\n\tnot.b32 %r31, %r11;\n") \
    + visible(list(range(12, 32)))
INTEGERS_64 = SPREAD + (  # past 2^63 as unsigned, negative as signed
    "\tmul.wide.u32 %rd10, %r10, %r10;\n\tmul.wide.s32 %rd11, %r10, %r11;\n\tshr.u64 %rd12, %rd10, 35;\n"
    "\tcvt.u32.u64 %r12, %rd12;\n\tshr.s64 %rd13, %rd11, 40;\n\tcvt.u32.u64 %r13, %rd13;\n"
    "\tadd.u64 %rd14, %rd10, %rd10;\n\tshr.u64 %rd15, %rd14, 60;\n\tcvt.u32.u64 %r14, %rd15;\n"
    "\tsub.s32 %r22, 5, %r1;\n\tcvt.s64.s32 %rd16, %r22;\n\tshr.u64 %rd17, %rd16, 58;\n"
    "\tcvt.u32.u64 %r15, %rd17;\n\tsetp.gt.u64 %p3, %rd16, 100;\n\tselp.u32 %r16, 16, 32, %p3;\n"
    "\tsetp.lt.s64 %p4, %rd16, 100;\n\tselp.u32 %r17, 16, 32, %p4;\n") + visible(list(range(12, 18)))
REJOIN = (  # threads tid % 4 == 0 take path A; %f9 a dot product of both paths, %f7 one per path
    "\tfma.rn.f32 %f9, %f1, %f2, 0f00000000;\n"
    "\tand.b32 %r5, %r1, 3;\n\tsetp.eq.u32 %p1, %r5, 0;\n\t@%p1 bra A;\n\tadd.s64 %rd9, %rd6, 4;\n"
    "\tmov.b64 %rd10, %rd22;\n\tmov.u32 %r6, 7;\n\tmov.f32 %f3, %f1;\n\tsetp.lt.u32 %p2, %r1, 40;\n"
    "\tfma.rn.f32 %f7, %f1, %f2, 0f00000000;\n\tbra J;\nA:\n"
    "\tadd.s64 %rd9, %rd6, 8;\n\tmov.b64 %rd10, %rd7;\n\tmov.u32 %r6, %r1;\n\tld.global.f32 %f3, [%rd6+256];\n"
    "\tsetp.ge.u32 %p2, %r1, 20;\n\tfma.rn.f32 %f7, %f2, %f1, 0f00000000;\nJ:\n\tld.global.f32 %f4, [%rd9];\n"
    "\tselp.u32 %r7, 1, 2, %p2;\n\tadd.u32 %r8, %r6, %r7;\n\tfma.rn.f32 %f5, %f3, %f4, 0f00000000;\n"
    "\tfma.rn.f32 %f5, %f4, %f2, %f5;\n\tfma.rn.f32 %f6, %f3, %f1, 0f3F800000;\n\tadd.f32 %f5, %f5, %f6;\n"
    "\tfma.rn.f32 %f7, %f2, %f2, %f7;\n\tfma.rn.f32 %f9, %f2, %f2, %f9;\n\tadd.f32 %f5, %f5, %f7;\n"
    "\tadd.f32 %f10, %f5, %f9;\n" + visible([6, 8]) + "\tst.global.f32 [%rd10], %f10;\n")   # after y = visible
REMAINDERS = SPREAD + (  # divisors 4 tid - 130 (never 0 or -1), 7 and -7; u64 patterns past 2^63
    "\tshl.b32 %r12, %r1, 2;\n\tadd.s32 %r12, %r12, -130;\n\trem.s32 %r13, %r11, %r12;\n"
    "\trem.u32 %r14, %r11, %r12;\n\trem.s32 %r15, %r11, 7;\n\trem.s32 %r16, %r11, -7;\n\tcvt.s64.s32 %rd10, %r11;\n"
    "\trem.s64 %rd11, %rd10, 1000003;\n"
    "\tcvt.u32.u64 %r17, %rd11;\n\tmul.wide.u32 %rd12, %r10, %r10;\n\tadd.u64 %rd13, %rd12, %rd12;\n"
    "\trem.u64 %rd14, %rd13, 977;\n\tcvt.u32.u64 %r18, %rd14;\n\trem.u32 %r19, %r1, 3;\n") \
    + visible(list(range(12, 20)))

PROGRAMS = {  # name -> (body, threads, runs in lockstep)
    # every thread loads x[5] and h[3] (one address: the checker's lockstep holds one Var), moves and converts them,
    # takes them into a dot product and a sum, stores one to shared memory; then one past x's end, misaligned, before
    # its start
    "one element for every thread": (
        "\tld.global.f32 %f8, [%rd3+20];\n\tld.global.nc.u16 %rs4, [%rd24+6];\n\tcvt.f32.f16 %f9, %rs4;\n"
        "\tmov.f32 %f10, %f9;\n\tmov.f32 %f5, 0f00000000;\n\tfma.rn.f32 %f5, %f8, %f1, %f5;\n"
        "\tfma.rn.f32 %f5, %f10, %f8, %f5;\n\tadd.f32 %f6, %f8, %f2;\n\tst.shared.f32 [%r4], %f10;\n\tbar.sync 0;\n"
        + OTHER.format(1) + "\tld.shared.f32 %f7, [%r7];\n\tadd.f32 %f6, %f6, %f7;\n" + Y.format(5) + Z.format(6),
        64, False),
    "one element for every thread, past the end": ("\tld.global.f32 %f8, [%rd3+512];\n" + Y.format(8), 64, False),
    "one element for every thread, misaligned": ("\tld.global.f32 %f8, [%rd3+2];\n" + Y.format(8), 64, False),
    "one element for every thread, before the start": ("\tld.global.f32 %f8, [%rd3+-4];\n" + Y.format(8), 64, False),
    # a dot product copied, then both copies extended: each copy keeps its own terms
    "dot copied then extended twice": (
        "\tmov.f32 %f3, 0f00000000;\n\tfma.rn.f32 %f3, %f1, %f1, %f3;\n\tmov.f32 %f4, %f3;\n"
        "\tfma.rn.f32 %f3, %f1, %f2, %f3;\n\tfma.rn.f32 %f4, %f2, %f2, %f4;\n\tfma.rn.f32 %f4, %f2, %f1, %f4;\n"
        + Y.format(3) + Z.format(4), 64, True),
    # a dot product on a base that differs per thread (an input element)
    "dot on a per-thread base": ("\tfma.rn.f32 %f3, %f2, %f2, %f1;\n\tfma.rn.f32 %f3, %f1, %f2, %f3;\n"
                                 + Y.format(3), 64, True),
    # a shared tile written, a barrier, a K-loop reading another thread's slots: ordered
    "tile loop, ordered": (
        "\tst.shared.f32 [%r4], %f1;\n\tst.shared.f32 [%r4+256], %f2;\n\tbar.sync 0;\n\tmov.f32 %f3, 0f00000000;\n"
        "\tmov.u32 %r8, 0;\nLOOP:\n\tadd.s32 %r9, %r1, %r8;\n\tand.b32 %r9, %r9, 63;\n\tshl.b32 %r9, %r9, 2;\n"
        "\tadd.s32 %r9, %r2, %r9;\n\tld.shared.f32 %f4, [%r9];\n\tld.shared.f32 %f5, [%r9+256];\n"
        "\tfma.rn.f32 %f3, %f4, %f5, %f3;\n\tadd.s32 %r8, %r8, 1;\n\tsetp.lt.u32 %p1, %r8, 16;\n\t@%p1 bra LOOP;\n"
        "\tbar.sync 0;\n\tst.shared.f32 [%r4], %f2;\n" + Y.format(3), 64, True),
    "32-bit integers at the edges of their types": (INTEGERS_32, 64, True),
    "64-bit integers past 2^63": (INTEGERS_64, 64, False),
    # two threads (one warp) store different values to one word in one instruction
    "two lanes, one word, one instruction": ("\tand.b32 %r5, %r3, -8;\n\tadd.s32 %r6, %r2, %r5;\n"
                                             "\tst.shared.f32 [%r6], %f1;\n" + Y.format(1), 64, False),
    # ... in two warps, the same value
    "two warps, one word, one value": ("\tand.b32 %r5, %r3, 127;\n\tadd.s32 %r6, %r2, %r5;\n"
                                       "\tmov.f32 %f3, 0f3F800000;\n\tst.shared.f32 [%r6], %f3;\n" + Y.format(1),
                                       64, False),
    # one warp split by a branch: the low half reads the slots the high half writes, no barrier
    "split warp, reader first": (
        "\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 bra READ;\n\tst.shared.f32 [%r4], %f1;\n\tbra DONE;\n"
        "READ:\n" + OTHER.format(16) + "\tld.shared.f32 %f3, [%r7];\n" + Y.format(3) + "DONE:\n", 32, False),
    "split warp, writer first": (
        "\tsetp.ge.u32 %p1, %r1, 16;\n\t@%p1 bra WRITE;\n" + OTHER.format(16) + "\tld.shared.f32 %f3, [%r7];\n"
        + Y.format(3) + "\tbra DONE;\nWRITE:\n\tst.shared.f32 [%r4], %f1;\nDONE:\n", 32, False),
    # warp 1 reads the slots warp 0 writes in the same epoch (no barrier between): a race, in either order
    "two warps, read across, no barrier": ("\tst.shared.f32 [%r4], %f1;\n" + OTHER.format(32)
                                           + "\tld.shared.f32 %f3, [%r7];\n" + Y.format(3), 64, False),
    "two warps, overwrite a slot read, no barrier": (
        "\tst.shared.f32 [%r4], %f1;\n\tbar.sync 0;\n" + OTHER.format(32) + "\tld.shared.f32 %f3, [%r7];\n"
        "\tst.shared.f32 [%r4], %f2;\n" + Y.format(3), 64, False),
    # two warps at two barrier instructions (one id, every thread): race-free, with a RAW witness
    "two warps, two barrier pcs": (
        "\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 bra READ;\n\tst.shared.f32 [%r4], %f1;\n\tbar.sync 0;\n\tbra DONE;\n"
        "READ:\n\tbar.sync 0;\n" + OTHER.format(32) + "\tld.shared.f32 %f3, [%r7];\n" + Y.format(3) + "DONE:\n",
        64, False),
    # the lanes of one warp at two barrier instructions: undefined behaviour
    "one warp, two barrier pcs": (
        "\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 bra READ;\n\tst.shared.f32 [%r4], %f1;\n\tbar.sync 0;\n\tbra DONE;\n"
        "READ:\n\tbar.sync 0;\n" + OTHER.format(16) + "\tld.shared.f32 %f3, [%r7];\n" + Y.format(3) + "DONE:\n",
        64, False),
    # write, barrier, read another's slot, barrier, overwrite it: RAW, WAR, WAW classes
    "witness classes": ("\tst.shared.f32 [%r4], %f1;\n\tbar.sync 0;\n" + OTHER.format(1)
                        + "\tld.shared.f32 %f3, [%r7];\n\tbar.sync 0;\n\tst.shared.f32 [%r7], %f2;\n\tbar.sync 0;\n"
                        "\tld.shared.f32 %f4, [%r4];\n\tadd.f32 %f3, %f3, %f4;\n" + Y.format(3), 64, True),
    # thread 5 exits, the others wait at a barrier for every thread
    "exit before a barrier": ("\tsetp.eq.u32 %p1, %r1, 5;\n\t@%p1 bra DONE;\n\tbar.sync 0;\n" + Y.format(1)
                              + "DONE:\n", 64, False),
    # some threads exit early without any barrier: the others finish
    "early exit, no barrier": ("\tsetp.lt.u32 %p1, %r1, 7;\n\t@%p1 bra DONE;\n" + Y.format(1) + "DONE:\n",
                               64, True),
    # per thread a different number of loop trips
    "divergent trip counts": ("\tand.b32 %r8, %r1, 3;\n\tmov.f32 %f3, 0f00000000;\nLOOP:\n"
                              "\tfma.rn.f32 %f3, %f1, %f2, %f3;\n\tsub.s32 %r8, %r8, 1;\n\tsetp.ge.s32 %p1, %r8, 0;\n"
                              "\t@%p1 bra LOOP;\n" + Y.format(3), 64, True),
    # an address that is x's for some threads, y's for others
    "mixed provenance": ("\tsetp.lt.u32 %p1, %r1, 40;\n\tselp.b64 %rd9, %rd6, %rd7, %p1;\n"
                         "\tld.global.f32 %f3, [%rd9];\n" + Z.format(3), 64, False),
    # the sum of two addresses is no address
    "address plus address": ("\tadd.s64 %rd9, %rd6, %rd7;\n\tld.global.f32 %f3, [%rd9];\n" + Y.format(3), 64, False),
    # one lane reads past the end of x
    "one lane out of bounds": ("\tld.global.f32 %f3, [%rd6+260];\n" + Y.format(3), 64, False),
    # shared memory never written
    "never written": ("\tld.shared.f32 %f3, [%r4+8];\n" + Y.format(3), 64, False),
    "store to an input": ("\tst.global.f32 [%rd6], %f1;\n" + Y.format(1), 64, False),
    "reread an output": (Y.format(1) + "\tld.global.f32 %f3, [%rd7];\n\tadd.f32 %f3, %f3, %f2;\n" + Z.format(3),
                         64, False),
    "two warps, one output": ("\tand.b32 %r5, %r1, 31;\n\tmul.wide.u32 %rd9, %r5, 4;\n\tadd.s64 %rd10, %rd4, %rd9;\n"
                              "\tst.global.f32 [%rd10], %f1;\n", 64, False),
    "vector shared accesses": ("\tshl.b32 %r5, %r1, 4;\n\tadd.s32 %r6, %r2, %r5;\n"
                               "\tst.shared.v4.f32 [%r6], {%f1, %f2, %f1, %f2};\n\tbar.sync 0;\n" + OTHER.format(3)
                               + "\tshl.b32 %r6, %r5, 4;\n\tadd.s32 %r6, %r2, %r6;\n"
                               "\tld.shared.v4.f32 {%f3, %f4, %f5, %f6}, [%r6];\n\tadd.f32 %f3, %f3, %f6;\n"
                               + Y.format(3), 32, False),
    # saturation, a float immediate, a quotient (the checker's lockstep: .sat and div per thread, by step)
    "saturated, immediate, quotient": ("\tadd.sat.f32 %f3, %f1, %f2;\n\tmul.f32 %f4, %f3, 0f40000000;\n"
                                       "\tdiv.rn.f32 %f5, %f4, %f2;\n\tsub.f32 %f5, %f5, %f3;\n" + Y.format(5), 64, False),
    # f16 elements (2-byte loads, as nvcc loads halves) converted to f32 and multiplied; and converted back
    "f16 loads into a dot product": (
        "\tld.global.nc.u16 %rs1, [%rd26];\n\tld.global.nc.u16 %rs2, [%rd26+128];\n\tcvt.f32.f16 %f3, %rs1;\n"
        "\tcvt.f32.f16 %f4, %rs2;\n\tmov.f32 %f5, 0f00000000;\n\tfma.rn.f32 %f5, %f3, %f4, %f5;\n"
        "\tfma.rn.f32 %f5, %f3, %f1, %f5;\n\tcvt.rn.f16.f32 %rs3, %f2;\n\tcvt.f32.f16 %f6, %rs3;\n"
        "\tfma.rn.f32 %f5, %f6, %f4, %f5;\n" + Y.format(5), 64, False),
    "f16 load, misaligned": ("\tadd.s64 %rd27, %rd26, 1;\n\tld.global.nc.u16 %rs1, [%rd27];\n"
                             "\tcvt.f32.f16 %f3, %rs1;\n" + Y.format(3), 64, False),
    "f16 load, one lane past the end": ("\tld.global.nc.u16 %rs1, [%rd26+130];\n\tcvt.f32.f16 %f3, %rs1;\n"
                                        + Y.format(3), 64, False),
    # a real rounded to an integer: no identity (only f16/f32 conversions are)
    "a float converted to an integer": ("\tcvt.rzi.s32.f32 %r40, %f1;\n\tcvt.rn.f32.s32 %f3, %r40;\n" + Y.format(3),
                                        64, False),
    "16 bits of an f32 element": ("\tld.global.u16 %rs1, [%rd6];\n\tcvt.f32.f16 %f3, %rs1;\n" + Y.format(3),
                                  64, False),
    # two paths rejoin (lockstep joins the groups): per path another address in x, one into y or z, a uniform
    # integer or a column, a loaded element or another, a predicate; dot products from immediates 0 and 1, one
    # begun before the paths part and one per path (their term rows rejoined)
    "paths rejoining": (REJOIN, 64, False),
    # ... with %f7 on base 1 on path A: dot products on two bases do not join (each group keeps its terms)
    "paths rejoining, dot products on two bases": (REJOIN.replace("%f7, %f2, %f1, 0f00000000", "%f7, %f2, %f1, "
                                                                  "0f3F800000"), 64, False),
    # a register written on one path only, read after the paths rejoin: unset for the other threads
    "paths rejoining, a register of one path": (
        "\tand.b32 %r5, %r1, 3;\n\tsetp.eq.u32 %p1, %r5, 0;\n\t@%p1 bra J;\n\tmov.u32 %r20, 5;\nJ:\n"
        "\tadd.u32 %r21, %r20, 1;\n" + visible([21, 21]), 64, False),
    # ... read after the paths rejoin only by the threads that wrote it (the joined group holds it for those)
    "paths rejoining, a register of one path read on it": (
        "\tand.b32 %r5, %r1, 3;\n\tsetp.eq.u32 %p1, %r5, 0;\n\t@%p1 bra J;\n\tmov.u32 %r20, 5;\nJ:\n"
        "\tmov.u32 %r21, 9;\n\t@!%p1 add.u32 %r21, %r20, %r1;\n" + visible([21, 21]), 64, False),
    # ... selected by two threads, one of which did not write it (unset for that one), and stored as it is
    "paths rejoining, a register of one path read across": (
        "\tand.b32 %r5, %r1, 3;\n\tsetp.eq.u32 %p1, %r5, 0;\n\t@%p1 bra J;\n\tmov.u32 %r20, 5;\nJ:\n"
        "\tsetp.eq.u32 %p2, %r1, 4;\n\tsetp.eq.u32 %p3, %r1, 5;\n\tor.pred %p2, %p2, %p3;\n"
        "\tselp.b32 %r21, %r20, 9, %p2;\n\tst.global.b32 [%rd7], %r21;\n", 64, False),
    # a register every thread writes, live across the paths and rewritten under a guard after they rejoin: the
    # guarded write does not end its old value (which the threads it skips store)
    "paths rejoining, a guarded write": (
        "\tmov.f32 %f3, %f1;\n\tand.b32 %r5, %r1, 3;\n\tsetp.eq.u32 %p1, %r5, 0;\n\t@%p1 bra J;\n"
        "\tmov.u32 %r20, 5;\nJ:\n\tsetp.lt.u32 %p2, %r1, 20;\n\t@%p2 mov.f32 %f3, %f2;\n" + Y.format(3), 64, False),
    # each path stores its own slot; after they rejoin, each thread reads its neighbour's without a barrier: a race
    "paths rejoining, read across, no barrier": (
        "\tand.b32 %r5, %r1, 1;\n\tsetp.eq.u32 %p1, %r5, 0;\n\t@%p1 bra A;\n\tst.shared.f32 [%r4], %f1;\n"
        "\tbra J;\nA:\n\tst.shared.f32 [%r4], %f2;\nJ:\n" + OTHER.format(1) + "\tld.shared.f32 %f3, [%r7];\n"
        + Y.format(3), 64, False),
    # ... with a barrier between: ordered (a RAW witness)
    "paths rejoining, barrier, read across": (
        "\tand.b32 %r5, %r1, 1;\n\tsetp.eq.u32 %p1, %r5, 0;\n\t@%p1 bra A;\n\tst.shared.f32 [%r4], %f1;\n"
        "\tbra J;\nA:\n\tst.shared.f32 [%r4], %f2;\nJ:\n\tbar.sync 0;\n" + OTHER.format(1)
        + "\tld.shared.f32 %f3, [%r7];\n" + Y.format(3), 64, True),
    # C's remainder (the dividend's sign) of negative dividends and divisors, per-thread divisors, 64-bit patterns
    "remainders at the edges": (REMAINDERS, 64, False),
    # a zero divisor in one thread, the overflowing INT_MIN % -1 in one thread: unspecified in PTX, rejected
    "remainder by zero": (SPREAD + "\tsub.s32 %r22, 5, %r1;\n\trem.u32 %r12, %r10, %r22;\n" + visible([12, 12]),
                          64, False),
    "remainder overflowing": (SPREAD + "\tshl.b32 %r22, %r1, 1;\n\tsub.s32 %r22, -1, %r22;\n"
                              "\trem.s32 %r12, %r11, %r22;\n" + visible([12, 12]), 64, False),
    "float arithmetic off the dot path": ("\tmul.f32 %f3, %f1, %f2;\n\tmax.f32 %f4, %f3, %f1;\n"
                                          "\tmul.f32 %f5, %f4, 0f3FB8AA3B;\n\tex2.approx.f32 %f6, %f5;\n"
                                          "\tfma.rn.f32 %f6, %f6, %f6, %f3;\n" + Y.format(6), 64, True),
}


def kernel(name: str):
    return parse(HEAD + PROGRAMS[name][0] + TAIL, "t.ptx").kernel()


def outcome(fn):
    try:
        return "ok", fn()
    except CheckError as e:
        return type(e).__name__, str(e)


def engine_view(r: ex.Result) -> tuple:
    p = Printer()
    return ({k: p.text(v) for k, v in sorted(r.outputs.items())}, r.steps, r.barriers, r.schedule,
            sorted(r.witness), sorted(r.written), sorted(r.touched))


def per_thread(name: str) -> tuple:
    k, n = kernel(name), PROGRAMS[name][1]
    with ck.no_gc():
        return outcome(lambda: engine_view(ex.CTA(k, [1, 1, 1], [n, 1, 1], PARAMS).run()))


def lockstep(name: str, monkeypatch, alone: bool) -> tuple:
    k, n = kernel(name), PROGRAMS[name][1]
    if alone:   # the per-thread interpreter must not be needed
        monkeypatch.setattr(ex.CTA, "run", lambda self: pytest.fail("fell back to the per-thread engine"))
    got = outcome(lambda: engine_view(ex.run_cta(k, [1, 1, 1], [n, 1, 1], PARAMS)))
    monkeypatch.undo()
    return got


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_engine_lockstep_changes_no_outcome(name, monkeypatch):
    want = per_thread(name)
    assert lockstep(name, monkeypatch, alone=PROGRAMS[name][2]) == want
    if PROGRAMS[name][2]:
        assert want[0] == "ok", want


def evidence(name: str) -> dict | None:
    """The certificate evidence of ``name`` as ``run_cta`` (lockstep where it can) writes it; None where it fails."""
    k, n = kernel(name), PROGRAMS[name][1]
    try:
        r = ex.run_cta(k, [1, 1, 1], [n, 1, 1], PARAMS)
    except CheckError:
        return None
    return _evidence(r, Printer())   # as the certificate writer prints it


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_checker_accepts_what_lockstep_certifies(name):
    """The checker replays the lockstep engine's schedule and reaches its witness and outputs."""
    ev = evidence(name)
    assert (ev is None) == (per_thread(name)[0] != "ok")
    if ev is not None:
        k, n = kernel(name), PROGRAMS[name][1]
        got, r, _ = replay_cta(k, [1, 1, 1], [n, 1, 1], PARAMS, (0, 0, 0), ev, "", "t", Printer(), Limits(), None,
                                 set())
        assert set(got) == set(ev["outputs"])


# the programs the checker's lockstep runs to the end (the others: groups under a warp, a race, a deadlock, ...)
CHECKER_LOCKSTEP = {"64-bit integers past 2^63", "divergent trip counts", "dot copied then extended twice",
                    "paths rejoining", "paths rejoining, barrier, read across", "paths rejoining, a guarded write",
                    "paths rejoining, a register of one path read on it",
                    "paths rejoining, dot products on two bases",
                    "dot on a per-thread base", "early exit, no barrier", "one element for every thread",
                    "f16 loads into a dot product", "float arithmetic off the dot path", "mixed provenance",
                    "remainders at the edges", "reread an output", "saturated, immediate, quotient",
                    "tile loop, ordered",
                    "two warps, two barrier pcs", "vector shared accesses", "witness classes"}


def schedule(name: str) -> list:
    """The per-thread engine's schedule, or one running every thread to its end (a racy or deadlocking program)."""
    k, n = kernel(name), PROGRAMS[name][1]
    try:
        with ck.no_gc():
            return ex.CTA(k, [1, 1, 1], [n, 1, 1], PARAMS).run().schedule
    except CheckError:
        return [["run", 0, n - 1]]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_checkers_lockstep_is_its_per_thread_replay(name):
    """Along the same schedule, the checker's lockstep declines (None) or ends exactly as its per-thread ``Replay``
    (outputs, witness, output bytes written); it never completes where that one rejects (a race, a deadlock)."""
    k, n, sched = kernel(name), PROGRAMS[name][1], schedule(name)

    def view(lock: bool):
        r = ck.Replay(k, [1, 1, 1], [n, 1, 1], PARAMS, (0, 0, 0), Limits())
        with ck.no_gc():
            got = checker_lockstep(r, sched) if lock else r.run(sched)
        p = Printer()
        return got and ({key: p.text(v) for key, v in sorted(got.items())}, sorted(r.witness), sorted(r.gmem))

    want, got = outcome(lambda: view(False)), outcome(lambda: view(True))
    assert got in (want, ("ok", None)), (want, got)
    assert (got == want) == (want[0] == "ok" and name in CHECKER_LOCKSTEP), name


# schedules an attacker writes for "tile loop, ordered" (64 threads): each must be REJECTed
FORGED = {
    "released before all arrived": [["run", 0, 31], ["bar", 0, None, [[0, 63]]], ["run", 32, 63]],
    "a barrier left out": [["run", 0, 63], ["run", 0, 63]],
    "a thread run twice": [["run", 0, 63], ["run", 5, 5]],
    "released for half": [["run", 0, 63], ["bar", 0, None, [[0, 31]]], ["run", 0, 31]],
    "released with a count": [["run", 0, 63], ["bar", 0, 64, [[0, 63]]], ["run", 0, 63],
                              ["bar", 0, 64, [[0, 63]]], ["run", 0, 63]],
    "a warp event": [["run", 0, 63], ["warp", 0, -1], ["bar", 0, None, [[0, 63]]], ["run", 0, 63]],
}


@pytest.mark.parametrize("forged", sorted(FORGED))
def test_forged_schedules_are_rejected(forged):
    ev = dict(evidence("tile loop, ordered"), schedule=FORGED[forged])
    with pytest.raises(CheckError):
        replay_cta(kernel("tile loop, ordered"), [1, 1, 1], [64, 1, 1], PARAMS, (0, 0, 0), ev, "", "t", Printer(),
                   Limits(), None, set())
