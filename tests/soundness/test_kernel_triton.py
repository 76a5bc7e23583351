"""Triton kernels of the real corpus (issue 13): what their PTX needs beyond nvcc's, each with
the program that would fool it. ±inf arithmetic (the online softmax's first rescale
``exp(-inf - m) = 0``), incomplete ``.const`` initializers (zero-filled), TF32 ``mma`` and
``cp.async`` (refused), and tampered Triton kernels: none is "equivalent", and each tampered
certificate (engine-written for a benign twin, or forged from the engine's forms) is REJECTed."""

from __future__ import annotations

import copy
import json

import pytest

from certificates.replay import replay
from test_kernel_reach import (COPY, LITERAL, LOOKUP, NEG_INF, POS_INF, STORE, TENSORS, certify, entry, forged,
                               kernel, rejected, with_ptx)
from verifier.kernels.equiv import CORPUS, check_pair, load_pairs

REAL = CORPUS / "real"


def accepted(cert: dict, tmp_path) -> None:
    p = tmp_path / "ok.json"
    p.write_text(json.dumps(cert))
    res = replay(str(p))
    assert res and all(r.ok for r in res), "; ".join(r.detail for r in res)


# ------------------------------------------------------------------ ±inf: exp(-inf - x) = 0

def rescale(sub: str = f"sub.f32 %f4, {NEG_INF}, %f1", mul: str = "mul.f32 %f5, %f4, 0f3FB8AA3B",
            ex2: str = "ex2.approx.f32 %f6, %f5", use: str = "fma.rn.f32 %f3, %f1, %f6, %f1") -> str:
    """out = x + x * 2^((-inf - x) / ln 2) = x: Triton's first rescale of the running sum."""
    return "".join(f"\t{i};\n" for i in (sub, mul, ex2, use)) + STORE


def test_exp_of_minus_inf_is_zero(tmp_path):
    accepted(certify(tmp_path, entry(tmp_path, kernel(COPY), kernel(rescale()))), tmp_path)
    # ex2(-inf) = 0, not 1: x * exp(-inf - x) is 0, not x
    e = entry(tmp_path, kernel(COPY), kernel(rescale(use="mul.f32 %f3, %f1, %f6")))
    assert check_pair(e, tmp_path).verdict == "not-equivalent"
    rejected(forged(tmp_path, e), tmp_path, "differs")


@pytest.mark.parametrize("body, reason", [
    (rescale(sub=f"sub.f32 %f4, {POS_INF}, %f1"), "infinite operand"),            # ex2(+inf) = +inf, then fma
    (rescale(sub=f"sub.f32 %f4, %f1, {NEG_INF}"), "infinite operand"),            # x - -inf = +inf
    (rescale(mul="mul.f32 %f5, %f4, 0fBFB8AA3B"), "infinite operand"),            # -inf * -1/ln2 = +inf
    (rescale(mul="mul.f32 %f5, %f4, %f1"), "times a symbolic value"),             # sign of x unknown
    (rescale(mul="mul.f32 %f5, %f4, 0f00000000"), "times a symbolic value or zero"),  # NaN
    (rescale(sub=f"sub.f32 %f4, {NEG_INF}, {NEG_INF}"), "inf - inf"),             # NaN
    (rescale(sub=f"sub.sat.f32 %f4, {NEG_INF}, %f1"), "infinite operand"),        # .sat clamps: refused
    (rescale(ex2="lg2.approx.f32 %f6, %f5"), "infinite operand"),                 # log(-inf): NaN
    (rescale(use="fma.rn.f32 %f3, %f1, %f5, %f1"), "infinite operand"),          # fma with -inf: refused
    (rescale(use="mov.f32 %f3, %f5"), "a store of ±inf"),                          # -inf leaves the kernel
])
def test_inf_variants_that_would_fool_the_checker(tmp_path, body, reason):
    r = check_pair(entry(tmp_path, kernel(COPY), kernel(body)), tmp_path)
    assert r.verdict != "equivalent" and reason in r.message, r.message
    cert = certify(tmp_path, entry(tmp_path, kernel(COPY), kernel(rescale())))
    rejected(with_ptx(cert, kernel(body)), tmp_path, reason)


# ------------------------------------------------------------------ incomplete initializers (Triton's _$_str)

SHORT = ".const .align 4 .b8 W[8] = {0, 0, 0, 63};\n.global .align 4 .b8 B[4] = {0, 0, 128, 63};"  # W = {0.5, 0}
LITERAL0 = LITERAL.replace("0fBF800000", "0f00000000")


def test_incomplete_initializer_is_zero_filled(tmp_path):
    cert = certify(tmp_path, entry(tmp_path, kernel(LITERAL0), kernel(LOOKUP, shared=SHORT)))
    accepted(cert, tmp_path)
    e = entry(tmp_path, kernel(LITERAL), kernel(LOOKUP, shared=SHORT))          # W[1] read as -1.0: no
    assert check_pair(e, tmp_path).verdict == "not-equivalent"
    rejected(forged(tmp_path, e), tmp_path, "differs")
    full = SHORT.replace("{0, 0, 0, 63}", "{0, 0, 0, 63, 0, 0, 128, 191}")       # the missing bytes given
    rejected(with_ptx(cert, kernel(LOOKUP, shared=full)), tmp_path, "normal form")
    long = SHORT.replace("W[8] = {0, 0, 0, 63}", "W[4] = {0, 0, 0, 63, 1}")        # more bytes than the array
    assert check_pair(entry(tmp_path, kernel(LITERAL0), kernel(LOOKUP, shared=long)), tmp_path).verdict == "malformed"
    rejected(with_ptx(cert, kernel(LOOKUP, shared=long)), tmp_path, "initial bytes")


# ------------------------------------------------------------------ the Triton kernels themselves

def corpus_pair(tmp_path, name: str) -> dict:
    """The corpus pair ``name`` with both PTX files copied into ``tmp_path``."""
    e = copy.deepcopy(load_pairs(REAL)[name])
    for side in ("reference", "optimized"):
        (tmp_path / f"{side}.ptx").write_text((REAL / e[side]["ptx"]).read_text())
        e[side]["ptx"] = f"{side}.ptx"
    return e


MMA_TF32 = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
CP_ASYNC = "cp.async.ca.shared.global"


@pytest.mark.parametrize("variant, construct", [("tf32", MMA_TF32), ("pipelined", CP_ASYNC)])
def test_tf32_dot_and_cp_async_are_refused(tmp_path, variant, construct):
    e = corpus_pair(tmp_path, "triton_matmul_ieee")
    cert = certify(tmp_path, e)
    bad = (REAL / f"../triton/matmul_{variant}.ptx").read_text()
    (tmp_path / "optimized.ptx").write_text(bad)
    r = check_pair(e, tmp_path)
    assert r.verdict == "unsupported" and construct in r.message, r.message
    rejected(with_ptx(cert, bad), tmp_path, "")   # the ieee kernel's schedule: REJECT at the first mismatch


@pytest.mark.parametrize("instr", [
    f"{MMA_TF32} {{%f4, %f5, %f6, %f7}}, {{%r5, %r6, %r7, %r8}}, {{%r9, %r10}}, {{%f4, %f5, %f6, %f7}}",
    f"{CP_ASYNC} [%r5], [%rd8], 4"])
def test_tf32_mma_and_cp_async_in_a_certificate_are_refused_by_replay(tmp_path, instr):
    """TF32 rounds each input to 10 mantissa bits: not exact over the reals; cp.async completes
    at a later wait, a memory order the checker does not model."""
    cert = certify(tmp_path, entry(tmp_path, kernel(COPY), kernel(COPY)))
    body = f"\t{instr};\n" + COPY
    assert check_pair(entry(tmp_path, kernel(COPY), kernel(body)), tmp_path).verdict == "unsupported"
    rejected(with_ptx(cert, kernel(body)), tmp_path, instr.split()[0])


def test_layer_norm_with_rsqrt_for_sqrt(tmp_path):
    e = corpus_pair(tmp_path, "triton_layer_norm")
    cert = certify(tmp_path, e)
    ptx = (tmp_path / "optimized.ptx").read_text()
    bad = ptx.replace("sqrt.approx.ftz.f32", "rsqrt.approx.ftz.f32")             # 1 / rsqrt = sqrt: no
    assert bad != ptx
    (tmp_path / "optimized.ptx").write_text(bad)
    assert check_pair(e, tmp_path).verdict == "not-equivalent"
    rejected(forged(tmp_path, e), tmp_path, "differs")
    rejected(with_ptx(cert, bad), tmp_path, "normal form")


def test_flash_attention_without_the_rescale(tmp_path):
    e = corpus_pair(tmp_path, "triton_attn_fwd")
    cert = certify(tmp_path, e)
    ptx = (tmp_path / "optimized.ptx").read_text()
    bad = ptx.replace("ex2.approx.f32 \t%r357, %r356;", "mov.f32 \t%r357, 0f3F800000;")  # alpha = 1 for row 0
    assert bad != ptx
    (tmp_path / "optimized.ptx").write_text(bad)
    assert check_pair(e, tmp_path).verdict == "not-equivalent"
    rejected(forged(tmp_path, e), tmp_path, "differs")
    rejected(with_ptx(cert, bad), tmp_path, "normal form")


# ------------------------------------------------------------------ every lane stores one value to one slot

SLOT = ".shared .align 4 .b8 slot[4];"
X0 = "\tld.global.f32 %f3, [%rd1];\n" + STORE                                   # out[i] = x[0]


def one_slot(value: str = "%f4", guard: str = "") -> str:
    """Threads (``guard``: %p1 thread 0, %p2 lane 0) store ``value`` (x[0] in %f4) to ``slot``,
    then every thread reads it back."""
    return ("\tld.global.f32 %f4, [%rd1];\n\tmov.u64 %rd11, slot;\n\tsetp.eq.u32 %p1, %r1, 0;\n"
            "\tand.b32 %r6, %r1, 31;\n\tsetp.eq.u32 %p2, %r6, 0;\n"
            f"\t{guard}st.shared.f32 [%rd11], {value};\n\tbar.sync 0;\n\tld.shared.f32 %f3, [%rd11];\n" + STORE)


@pytest.mark.parametrize("body, threads, verdict", [
    (one_slot(), 32, "unsupported"),          # Triton's cross-warp reduction: refused, not a bug, not a proof
    (one_slot(value="%f1"), 32, "racy"),      # lanes store different values: a race
    (one_slot(guard="@%p2 "), 64, "racy"),    # the same value from lane 0 of two warps: a race
])
def test_lanes_storing_one_value_to_one_slot(tmp_path, body, threads, verdict):
    params = [{**t, "shape": [threads]} for t in TENSORS]
    e = entry(tmp_path, kernel(X0), kernel(one_slot(guard="@%p1 "), shared=SLOT), params, threads=threads)
    cert = certify(tmp_path, e)                                                  # control: only thread 0 stores
    bad = kernel(body, shared=SLOT)
    r = check_pair(entry(tmp_path, kernel(X0), bad, params, threads=threads), tmp_path)
    assert r.verdict == verdict, r.message
    rejected(with_ptx(cert, bad), tmp_path, "race")


@pytest.mark.parametrize("new, verdict, reason", [
    ("setp.le.s32 \t%p2, %r7, %r65;", "unsupported", "inf - inf"),       # the diagonal masked too: row 0 all -inf
    ("setp.gt.s32 \t%p2, %r7, %r65;", "not-equivalent", "normal form"),  # the mask turned around
])
def test_causal_flash_attention_with_another_mask(tmp_path, new, verdict, reason):
    """``-inf`` scores where the mask says so: ``exp(-inf - m) = 0``; a row with every score
    masked would need ``-inf - -inf`` (NaN): refused."""
    e = corpus_pair(tmp_path, "triton_attn_fwd_causal")
    e["check_cta"] = [0, 0, 0]
    cert = certify(tmp_path, e)
    ptx = (tmp_path / "optimized.ptx").read_text()
    bad = ptx.replace("setp.lt.s32 \t%p2, %r7, %r65;", new)
    assert bad != ptx
    (tmp_path / "optimized.ptx").write_text(bad)
    r = check_pair(e, tmp_path)
    assert r.verdict == verdict, r.message
    rejected(with_ptx(cert, bad), tmp_path, reason)
