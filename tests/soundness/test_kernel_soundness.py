"""Kernel checker soundness (issue 13, items 1-4): each attack is hand-written PTX; the engine
must not say "equivalent", and a certificate for it (engine-written for a benign twin, then
tampered) must be REJECTed by replay. Controls: the sound neighbours still verify."""

from __future__ import annotations

import copy
import hashlib
import json
import struct

import pytest

from certificates.errors import Malformed
from certificates.limits import canonical_bytes
from certificates.ptx import parse
from certificates.replay import replay
from conftest import run_pvcert
from verifier.kernels.certificate import kernel_certificate, pair_claim
from verifier.kernels.equiv import check_pair

HEAD = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(
\t.param .u64 k_x,
\t.param .u64 k_y,
\t.param .u64 k_out
)
{
\t.reg .pred %p<4>;
\t.reg .f32 %f<16>;
\t.reg .b32 %r<32>;
\t.reg .b64 %rd<32>;
\t.shared .align 4 .b8 buf[1024];
\tld.param.u64 %rd1, [k_x];
\tld.param.u64 %rd2, [k_y];
\tld.param.u64 %rd3, [k_out];
\tcvta.to.global.u64 %rd4, %rd1;
\tcvta.to.global.u64 %rd5, %rd2;
\tcvta.to.global.u64 %rd6, %rd3;
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r3, %ntid.x;
\tmad.lo.s32 %r4, %r2, %r3, %r1;
\tmul.wide.u32 %rd7, %r4, 4;
\tadd.s64 %rd8, %rd4, %rd7;
\tadd.s64 %rd9, %rd5, %rd7;
\tadd.s64 %rd10, %rd6, %rd7;
\tld.global.f32 %f1, [%rd8];
\tld.global.f32 %f2, [%rd9];
"""
TAIL = "\tret;\n}\n"
STORE = "\tst.global.f32 [%rd10], %f3;\n"


def kernel(body: str) -> str:
    return HEAD + body + TAIL


def launch(tmp_path, ref: str, opt: str, threads: int = 1, grid: int = 1, cta=(0, 0, 0), n: int = 0) -> dict:
    """A pair entry for two kernel bodies (x, y inputs and out, n elements each)."""
    n = n or threads * grid
    (tmp_path / "ref.ptx").write_text(kernel(ref))
    (tmp_path / "opt.ptx").write_text(kernel(opt))
    params = [{"name": t, "role": "output" if t == "out" else "input", "dtype": "f32", "shape": [n]}
              for t in ("x", "y", "out")]
    side = {"entry": "k", "grid": [grid, 1, 1], "block": [threads, 1, 1]}
    return {"name": "p", "params": params, "check_cta": cta if cta == "all" else list(cta),
            "reference": {"ptx": "ref.ptx", **side}, "optimized": {"ptx": "opt.ptx", **side}}


def check(tmp_path, ref: str, opt: str, **kw):
    entry = launch(tmp_path, ref, opt, **kw)
    return entry, check_pair(entry, tmp_path)


def certify(tmp_path, ref: str, opt: str, **kw) -> dict:
    entry, report = check(tmp_path, ref, opt, **kw)
    assert report.verdict == "equivalent", report.message
    return kernel_certificate([pair_claim("p", entry, tmp_path, report)])


def with_ptx(cert: dict, body: str, side: int = 1) -> dict:
    """``cert`` with one side's PTX replaced by ``kernel(body)`` (hash fixed)."""
    c = copy.deepcopy(cert)
    art = c["subject"]["artifacts"][side]
    art["embedded"] = kernel(body)
    art["sha256"] = hashlib.sha256(canonical_bytes(art["embedded"])).hexdigest()
    return c


def outcome(cert: dict, tmp_path) -> tuple[bool, str]:
    p = tmp_path / "cert.json"
    p.write_text(json.dumps(cert))
    try:
        res = replay(str(p))
    except Malformed as e:
        return False, f"malformed: {e}"
    return all(r.ok for r in res), "; ".join(r.detail for r in res)


def rejected(cert: dict, tmp_path, reason: str) -> None:
    ok, detail = outcome(cert, tmp_path)
    assert not ok and reason in detail, detail


def f32(x: float) -> str:
    return "0f%08X" % struct.unpack("<I", struct.pack("<f", x))[0]


SUM = "\tadd.f32 %f3, %f1, %f2;\n"


# ------------------------------------------------------------------ 1. directives without ';'

LOC = "\t.loc 1 7 3\n"
TWICE = SUM + LOC + "\tadd.f32 %f3, %f3, %f3;\n"


def test_loc_does_not_swallow_the_next_instruction(tmp_path):
    assert [i.opcode for i in parse(kernel(TWICE)).kernel().instrs][-3:] == ["add.f32", "add.f32", "ret"]
    _, r = check(tmp_path, SUM + STORE, TWICE + STORE)
    assert r.verdict == "not-equivalent", r.message
    cert = certify(tmp_path, SUM + STORE, SUM + STORE)
    rejected(with_ptx(cert, TWICE + STORE), tmp_path, "normal form")


def test_loc_file_pragma_and_dwarf_section_control(tmp_path):
    body = ('\t.file 1 "k.cu"\n' + LOC + SUM + '\t.loc 1 8 1, function_name $L__info_string0, inlined_at 1 9 3\n'
            + '\t.pragma "nounroll";\n' + STORE)
    section = "\t.section\t.debug_abbrev\n\t{\n.b8 1\n.b8 17\n$L__info_string0:\n.b8 0\n\t}\n"
    (tmp_path / "s.ptx").write_text(kernel(body) + section)
    assert len(parse((tmp_path / "s.ptx").read_text()).kernel().instrs) == len(parse(kernel(SUM + STORE)).kernel().instrs)
    ok, detail = outcome(certify(tmp_path, SUM + STORE, body), tmp_path)
    assert ok, detail


@pytest.mark.parametrize("bad", ["\t.loc 1 7 3 add.f32 %f3, %f1, %f2;\n", "\t.loc 1 7\n", '\t.pragma nounroll;\n'])
def test_malformed_directives_are_refused(bad):
    with pytest.raises(Malformed, match="bad .(loc|pragma) directive"):
        parse(kernel(bad + SUM + STORE), "bad.ptx")


# ------------------------------------------------------------------ 2. counted barriers

# thread 0 writes buf[0]; thread 32 reads it after barrier 1 and writes out[0]
WRITE0 = "\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra $L_A;\n\tst.shared.f32 [buf], %f1;\n$L_A:\n"
READ32 = ("\tsetp.ne.u32 %p2, %r1, 32;\n\t@%p2 bra $L_B;\n\tld.shared.f32 %f3, [buf];\n"
          "\tst.global.f32 [%rd6], %f3;\n$L_B:\n")
DIRECT = "\tsetp.ne.u32 %p2, %r1, 32;\n\t@%p2 bra $L_B;\n\tld.global.f32 %f3, [%rd4];\n\tst.global.f32 [%rd6], %f3;\n$L_B:\n"


def barrier(b: str) -> str:
    return WRITE0 + f"\t{b};\n" + READ32


def test_counted_barrier_below_the_cta_is_refused(tmp_path):
    _, r = check(tmp_path, DIRECT, barrier("bar.sync 1, 64"), threads=128)
    assert r.verdict == "unsupported" and "count 64 is not the CTA's 128 threads" in r.message, r.message
    cert = certify(tmp_path, DIRECT, barrier("bar.sync 1"), threads=128)
    c = with_ptx(cert, barrier("bar.sync 1, 64"))
    sched = c["evidence"]["p"]["optimized"]["schedule"]
    i = next(i for i, e in enumerate(sched) if e[0] == "bar")
    sched[i:i + 1] = [["bar", 1, 64, [[0, 63]]], ["bar", 1, 64, [[64, 127]]]]   # warps 0+1, then 2+3
    rejected(c, tmp_path, "count 64 is not the CTA's 128 threads")


@pytest.mark.parametrize("b", ["bar.arrive 1, 64", "bar.red.popc.u32 %r9, 1, 64, %p1", "barrier.arrive 1, 64",
                               "barrier.sync 1, 64", "barrier.sync.aligned 1, 96", "bar.sync 1, 32"])
def test_other_counted_barrier_forms_are_refused(tmp_path, b):
    _, r = check(tmp_path, DIRECT, barrier(b), threads=128)
    assert r.verdict == "unsupported", r.message


@pytest.mark.parametrize("b", ["bar.sync 1, 128", "barrier.sync 1", "barrier.cta.sync.aligned 0", "bar.sync 0"])
def test_barriers_over_the_whole_cta_verify(tmp_path, b):
    ok, detail = outcome(certify(tmp_path, DIRECT, barrier(b), threads=128), tmp_path)
    assert ok, detail


# ------------------------------------------------------------------ 3. divergent aligned barriers

def split(cond: str, b: str = "bar.sync 0") -> str:
    """Lanes with ``tid == cond`` reach one barrier instruction, the others another."""
    return (f"\tsetp.eq.u32 %p1, %r1, {cond};\n\t@%p1 bra $L_X;\n\t{b};\n\tbra.uni $L_Y;\n$L_X:\n\t{b};\n$L_Y:\n"
            "\tmov.f32 %f3, %f1;\n" + STORE)


def test_lanes_of_one_warp_at_two_bar_sync_are_rejected(tmp_path):
    _, r = check(tmp_path, "\tmov.f32 %f3, %f1;\n" + STORE, split("0"), threads=32)
    assert r.verdict == "rejected" and "different aligned barriers" in r.message, r.message
    cert = certify(tmp_path, "\tmov.f32 %f3, %f1;\n" + STORE, split("99"), threads=32)   # never taken
    rejected(with_ptx(cert, split("0")), tmp_path, "different aligned barriers")


def test_non_aligned_barrier_sync_may_diverge(tmp_path):
    ok, detail = outcome(certify(tmp_path, "\tmov.f32 %f3, %f1;\n" + STORE, split("0", "barrier.sync 0"),
                                 threads=32), tmp_path)
    assert ok, detail


# ------------------------------------------------------------------ 4. exact integer semantics

def as_output(setup: str) -> str:
    """out = x + (float) %r9 where ``setup`` computes %r9 (s32) from concrete values."""
    return setup + "\tcvt.rn.f32.s32 %f4, %r9;\n\tadd.f32 %f3, %f1, %f4;\n" + STORE


def cvt_from(value: float, op: str) -> str:
    return as_output(f"\tmov.f32 %f5, {f32(value)};\n\t{op} %r9, %f5;\n")


def const(v: int) -> str:
    return as_output(f"\tmov.u32 %r9, {v};\n")


ROUND = {"rni": round, "rzi": int, "rmi": lambda v: __import__("math").floor(v), "rpi": lambda v: -int(-v // 1)}
VALUES = [2.5, -2.5, 1.5, -1.7, 2.7, 3.5]


def differing():
    """(mode a, mode b, value) for every pair of float-to-integer rounding modes."""
    out = []
    for a in ROUND:
        for b in ROUND:
            if a < b:
                v = next(v for v in VALUES if ROUND[a](v) != ROUND[b](v))
                out.append((a, b, v))
    return out


@pytest.mark.parametrize("a,b,v", differing())
def test_cvt_rounding_modes_differ(tmp_path, a, b, v):
    ref, opt = cvt_from(v, f"cvt.{a}.s32.f32"), cvt_from(v, f"cvt.{b}.s32.f32")
    _, r = check(tmp_path, ref, opt)
    assert r.verdict == "not-equivalent", r.message
    rejected(with_ptx(certify(tmp_path, ref, ref), opt), tmp_path, "normal form")


@pytest.mark.parametrize("mode", ROUND)
@pytest.mark.parametrize("v", VALUES)
def test_cvt_rounding_is_exact(tmp_path, mode, v):
    ok, detail = outcome(certify(tmp_path, const(ROUND[mode](v)), cvt_from(v, f"cvt.{mode}.s32.f32")), tmp_path)
    assert ok, detail


@pytest.mark.parametrize("ref,opt", [
    (const(44), cvt_from(300.0, "cvt.rzi.u8.f32")),            # float-to-int clamps (255), never wraps
    (const(-2), cvt_from(2.0**31, "cvt.rzi.s32.f32")),         # clamps to 2^31 - 1
    (const(44), as_output("\tmov.u32 %r8, 300;\n\tcvt.sat.u8.s32 %r9, %r8;\n")),     # .sat clamps: 255
    (const(-2**31), as_output("\tmov.u32 %r8, 2147483647;\n\tadd.sat.s32 %r9, %r8, 1;\n")),
], ids=["cvt.rzi.u8", "cvt.rzi.s32", "cvt.sat.u8.s32", "add.sat.s32"])
def test_saturation_is_not_wraparound(tmp_path, ref, opt):
    _, r = check(tmp_path, ref, opt)
    assert r.verdict == "not-equivalent", r.message
    rejected(with_ptx(certify(tmp_path, ref, ref), opt), tmp_path, "normal form")


@pytest.mark.parametrize("op", ["cvt.rni.f32.f32 %f3, %f1", "cvt.rzi.s32.f32 %r9, %f1", "cvt.sat.f32.f32 %f3, %f1",
                                "add.sat.f32 %f3, %f1, %f2"])
def test_rounding_of_symbolic_values_is_refused(tmp_path, op):
    body = f"\t{op};\n" + ("\tcvt.rn.f32.s32 %f3, %r9;\n" if "%r9" in op else "") + STORE
    _, r = check(tmp_path, "\tmov.f32 %f3, %f1;\n" + STORE, body)
    assert r.verdict == "unsupported", r.message
    rejected(with_ptx(certify(tmp_path, "\tmov.f32 %f3, %f1;\n" + STORE, "\tmov.f32 %f3, %f1;\n" + STORE), body),
             tmp_path, "symbolic")


A24, B24 = 0x00C00001, 0x00A00003        # bit 23 set: negative as signed 24-bit values


def mul24(a: int, b: int, signed: bool, hi: bool) -> int:
    def s24(v: int) -> int:
        v &= 0xFFFFFF
        return v - (1 << 24) if signed and v >> 23 else v
    p = s24(a) * s24(b)
    r = ((p >> 16) if hi else p) & 0xFFFFFFFF
    return r - (1 << 32) if r >> 31 else r


NEG = A24 + 0xFF000000 - (1 << 32)       # the same low 24 bits, negative as s32


def intop(op: str, a: int = NEG, b: int = B24) -> str:
    return as_output(f"\tmov.u32 %r7, {a};\n\tmov.u32 %r8, {b};\n\t{op} %r9, %r7, %r8;\n")


@pytest.mark.parametrize("t", ["u32", "s32"])
@pytest.mark.parametrize("mode", ["lo", "hi"])
def test_mul24_is_exact(tmp_path, t, mode):
    v = mul24(A24, B24, t == "s32", mode == "hi")
    ok, detail = outcome(certify(tmp_path, const(v), intop(f"mul24.{mode}.{t}")), tmp_path)
    assert ok, detail


@pytest.mark.parametrize("op", ["div.s32", "rem.s32"])
def test_signed_division_overflow_is_refused(tmp_path, op):
    """INT_MIN / -1 has no s32 result; the ISA does not say what the hardware gives (as for / 0)."""
    body = intop(op, -2**31, -1)
    _, r = check(tmp_path, const(-2**31 if op == "div.s32" else 0), body)
    assert r.verdict != "equivalent" and "unspecified" in r.message, r.message
    ref = intop(op, -2**31, 1)
    rejected(with_ptx(certify(tmp_path, ref, ref), body), tmp_path, "unspecified")


WIDTH_VARIANTS = [   # (a, b): one instruction's variants that differ in value on these operands
    ("mul24.hi.u32", "mul.hi.u32"), ("mul24.lo.u32", "mul.lo.u32"), ("mul24.hi.u32", "mul24.hi.s32"),
    ("mul24.lo.u32", "mul24.hi.u32"), ("mul.hi.u32", "mul.hi.s32"), ("shr.u32", "shr.s32"),
    ("shl.b32", "shr.b32"), ("min.u32", "min.s32"), ("max.u32", "max.s32"), ("div.u32", "div.s32"),
    ("rem.u32", "rem.s32"), ("add.u32", "add.sat.s32"), ("sub.s32", "sub.sat.s32"),
]


@pytest.mark.parametrize("a,b", WIDTH_VARIANTS)
def test_width_and_sign_variants_differ(tmp_path, a, b):
    x, y = {"shr": (-5, 3), "shl": (-5, 3), "add": (2**31 - 5, 9), "sub": (-2**31 + 5, 9)}.get(a[:3], (NEG, B24))
    ref, opt = intop(a, x, y), intop(b, x, y)
    _, r = check(tmp_path, ref, opt)
    assert r.verdict == "not-equivalent", r.message
    rejected(with_ptx(certify(tmp_path, ref, ref), opt), tmp_path, "normal form")


@pytest.mark.parametrize("setup,value", [
    ("\tmov.u32 %r7, -1;\n\tadd.u32 %r9, %r7, 1;\n", 0),                     # wraps
    ("\tmov.u32 %r7, 1;\n\tshl.b32 %r9, %r7, 33;\n", 0),                      # shift >= width: 0
    ("\tmov.u32 %r7, -8;\n\tshr.s32 %r9, %r7, 40;\n", -1),                    # sign fill
    ("\tmov.u32 %r7, -1;\n\tmov.u32 %r8, -1;\n\tmul.hi.u32 %r9, %r7, %r8;\n", -2),   # 0xFFFFFFFE
    ("\tmov.u32 %r7, -1;\n\tmov.u32 %r8, -1;\n\tmad.hi.s32 %r9, %r7, %r8, 5;\n", 5),
    ("\tmov.u32 %r7, 0xF0;\n\tbfe.s32 %r9, %r7, 4, 4;\n", -1),
    ("\tmov.u32 %r7, 0xF0;\n\tbfe.u32 %r9, %r7, 4, 4;\n", 15),
], ids=["add.u32", "shl.b32", "shr.s32", "mul.hi.u32", "mad.hi.s32", "bfe.s32", "bfe.u32"])
def test_integer_widths_are_exact(tmp_path, setup, value):
    ok, detail = outcome(certify(tmp_path, const(value), as_output(setup)), tmp_path)
    assert ok, detail


# ------------------------------------------------------------------ 5. address provenance and spaces

READ_Y = "\tld.global.f32 %f3, [%rd5];\n" + STORE


@pytest.mark.parametrize("forge", [
    "\tadd.s64 %rd11, %rd4, 4294967296;\n",                                   # x + 2^32 lands in y
    "\tsub.s64 %rd12, %rd5, %rd4;\n\tadd.s64 %rd11, %rd4, %rd12;\n",          # x + (y - x)
    "\tmov.u64 %rd11, 1099511627776;\n",                                      # a bare integer
], ids=["x+2^32", "x+(y-x)", "integer"])
def test_addresses_carry_provenance(tmp_path, forge):
    attack = forge + "\tld.global.f32 %f3, [%rd11];\n" + STORE
    _, r = check(tmp_path, READ_Y, attack)
    assert r.verdict in ("rejected", "unsupported"), r.message
    ok, detail = outcome(with_ptx(certify(tmp_path, READ_Y, READ_Y), attack), tmp_path)
    assert not ok and ("out of bounds" in detail or "layout-dependent" in detail or "derived" in detail), detail


SHARED = "\tst.shared.f32 [buf], %f1;\n\tmov.u64 %rd11, buf;\n\tcvta.shared.u64 %rd12, %rd11;\n"
FROM_BUF = SHARED + "\tld.shared.f32 %f3, [buf];\n" + STORE


def test_generic_address_used_with_ld_shared_is_rejected(tmp_path):
    attack = SHARED + "\tld.shared.f32 %f3, [%rd12];\n" + STORE
    _, r = check(tmp_path, FROM_BUF, attack)
    assert r.verdict == "rejected" and "generic address" in r.message, r.message
    rejected(with_ptx(certify(tmp_path, FROM_BUF, FROM_BUF), attack), tmp_path, "generic address")


@pytest.mark.parametrize("use", ["\tld.f32 %f3, [%rd12];\n",
                                 "\tcvta.to.shared.u64 %rd13, %rd12;\n\tld.shared.f32 %f3, [%rd13];\n"],
                         ids=["generic", "to.shared"])
def test_generic_and_converted_shared_addresses_verify(tmp_path, use):
    ok, detail = outcome(certify(tmp_path, FROM_BUF, SHARED + use + STORE), tmp_path)
    assert ok, detail


def test_shared_address_used_as_generic_is_rejected(tmp_path):
    attack = SHARED + "\tld.f32 %f3, [%rd11];\n" + STORE
    _, r = check(tmp_path, FROM_BUF, attack)
    assert r.verdict == "rejected" and "shared address" in r.message, r.message


def test_two_kernels_garbage_is_not_equal(tmp_path):
    uninit = "\tld.shared.f32 %f3, [buf+8];\n" + STORE      # never written: each launch's own garbage
    _, r = check(tmp_path, uninit, uninit)
    assert r.verdict == "not-equivalent", r.message
    rejected(with_ptx(with_ptx(certify(tmp_path, COPY, COPY), uninit, 0), uninit), tmp_path, "normal form")


# ------------------------------------------------------------------ 6. the claim names its CTA

COPY = "\tmov.f32 %f3, %f1;\n" + STORE
IGNORE_BLOCK = ("\tmul.wide.u32 %rd11, %r1, 4;\n\tadd.s64 %rd12, %rd4, %rd11;\n\tadd.s64 %rd13, %rd6, %rd11;\n"
                "\tld.global.f32 %f3, [%rd12];\n\tst.global.f32 [%rd13], %f3;\n")


def test_claim_names_the_cta_and_the_outputs_it_covers(tmp_path):
    entry, r = check(tmp_path, COPY, IGNORE_BLOCK, threads=4, grid=2)
    assert r.verdict == "equivalent" and "only CTA (0, 0, 0) of grid (2, 1, 1): 4 of 8" in r.message, r.message
    _, r1 = check(tmp_path, COPY, IGNORE_BLOCK, threads=4, grid=2, cta=(1, 0, 0))
    assert r1.verdict == "not-equivalent", r1.message
    cert = kernel_certificate([pair_claim("p", entry, tmp_path, r)])
    assert cert["claims"][0]["covers"] == {"out": [[0, 3]]} and cert["claims"][0]["cta"] == [0, 0, 0]
    ok, detail = outcome(cert, tmp_path)
    assert ok and "only CTA (0, 0, 0) of grid (2, 1, 1): 4 of 8 output elements equal over the reals" in detail
    for edit in (lambda c: c.__setitem__("covers", {"out": [[0, 7]]}), lambda c: c.pop("covers"),
                 lambda c: c.__setitem__("cta", [1, 0, 0]), lambda c: c["optimized"].__setitem__("grid", [1, 1, 1])):
        c = copy.deepcopy(cert)
        edit(c["claims"][0])
        assert not outcome(c, tmp_path)[0]


def test_every_cta_of_the_grid(tmp_path):
    entry, r = check(tmp_path, COPY, "\tadd.f32 %f3, %f1, 0f00000000;\n" + STORE, threads=4, grid=2, cta="all")
    assert r.verdict == "equivalent" and "the whole launch" in r.message and "8 of 8" in r.message, r.message
    cert = kernel_certificate([pair_claim("p", entry, tmp_path, r)])
    ok, detail = outcome(cert, tmp_path)
    assert ok and "every CTA of grid (2, 1, 1)" in detail and "8 of 8 output elements" in detail, detail
    c = copy.deepcopy(cert)
    c["evidence"]["p"]["optimized"]["ctas"].pop()
    rejected(c, tmp_path, "one entry per CTA")


def test_ctas_writing_one_output_are_rejected(tmp_path):
    _, r = check(tmp_path, COPY, IGNORE_BLOCK, threads=4, grid=2, cta="all")
    assert r.verdict == "racy" and "both access output byte" in r.message, r.message
    cert = certify(tmp_path, IGNORE_BLOCK, IGNORE_BLOCK, threads=4, grid=2)      # CTA 0 only: true
    c = copy.deepcopy(cert)                      # the same evidence claimed for both CTAs of the grid
    c["claims"][0]["cta"] = "all"
    for side in ("reference", "optimized"):
        c["evidence"]["p"][side] = {"ctas": [c["evidence"]["p"][side]] * 2}
    rejected(c, tmp_path, "both access output byte")


# ------------------------------------------------------------------ 7. one pair's failure

def test_a_failing_pair_never_aborts_the_others(tmp_path):
    ok = launch(tmp_path, COPY, COPY)
    (tmp_path / "bad.ptx").write_text(kernel("\t.loc 1 2\n" + COPY))
    (tmp_path / "ub.ptx").write_text(kernel(split("0")))
    pairs = [dict(ok, name="good"), dict(ok, name="bad", optimized={**ok["optimized"], "ptx": "bad.ptx"}),
             dict(ok, name="ub", optimized={**ok["optimized"], "ptx": "ub.ptx", "block": [32, 1, 1]},
                  reference={**ok["reference"], "block": [32, 1, 1]}, params=launch(tmp_path, COPY, COPY, 32)["params"])]
    (tmp_path / "pairs.json").write_text(json.dumps({"pairs": pairs}))
    (tmp_path / "ref.ptx").write_text(kernel(COPY))
    (tmp_path / "opt.ptx").write_text(kernel(COPY))
    res = run_pvcert("kernels", "--corpus", str(tmp_path))
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
    lines = {ln.split()[0]: ln for ln in res.stdout.splitlines() if ln and not ln.startswith(" ")}
    assert "VERIFIED" in lines["good"] and "malformed" in lines["bad"] and "rejected" in lines["ub"], res.stdout


# ------------------------------------------------------------------ dot products decided without sorting

DOT = "\tfma.rn.f32 %f3, %f1, %f2, {};\n\tfma.rn.f32 %f3, %f2, %f1, %f3;\n" + STORE


@pytest.mark.parametrize("other", [
    DOT.format(f32(1.0)),   # the same products in the same order on another base (1 instead of 0)
    "\tmul.f32 %f4, %f1, " + f32(3.0) + ";\n" + DOT.replace("%f1, %f2, {}", "%f4, %f2, {}").format(f32(0.0)),
])
def test_dot_products_with_the_same_terms_are_not_equal_on_another_base_or_coefficient(tmp_path, other):
    """``dot_equal`` decides two dot products with the same terms in the same order without sorting them; a kernel
    whose products come in that order but on another base, or with another coefficient ((3 x) y + y x against
    x y + y x: the same pairs of elements), is not equivalent, and a certificate of it is REJECTed."""
    entry, r = check(tmp_path, DOT.format(f32(0.0)), other)
    assert r.verdict == "not-equivalent", r.message
    r.verdict = "equivalent"   # forged: each side's own schedule and printed forms, the engine's verdict overruled
    cert = kernel_certificate([pair_claim("p", entry, tmp_path, r)])
    rejected(cert, tmp_path, "differs")
