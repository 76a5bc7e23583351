"""Kernel checker reach (issue 13, "Reach"): the constructs nvcc emits for real kernels
(±inf as the identity of max/min, WARP_SZ, symbolic float scalars, parameter lists bound by
name, dynamic shared memory). For each, the program that would fool it is not "equivalent"
and its certificate (engine-written for a benign twin, then tampered) is REJECTed."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

from certificates.errors import Malformed
from certificates.limits import canonical_bytes
from certificates.replay import replay
from verifier.kernels.certificate import kernel_certificate, pair_claim
from certificates.ptx import parse
from verifier.kernels.equiv import CORPUS, check_pair, load_pairs

PARAMS = ("x", "y", "out")


def kernel(body: str, params=PARAMS, shared: str = "") -> str:
    """A kernel ``k``: one thread per element, ``%f1 = x[i]``, ``%f2 = y[i]`` (if bound),
    ``%rd10`` the address of ``out[i]``; ``alpha`` is loaded into ``%f9``."""
    decl = ",\n".join(f"\t.param .{'f32' if p == 'alpha' else 'u64'} k_{p}" for p in params)
    lines = [".version 8.0", ".target sm_80", ".address_size 64", shared,
             f".visible .entry k(\n{decl}\n)", "{", "\t.reg .pred %p<4>;", "\t.reg .f32 %f<16>;",
             "\t.reg .b32 %r<32>;", "\t.reg .b64 %rd<32>;",
             "\tmov.u32 %r1, %tid.x;", "\tmov.u32 %r2, %ctaid.x;", "\tmov.u32 %r3, %ntid.x;",
             "\tmad.lo.s32 %r4, %r2, %r3, %r1;", "\tmul.wide.u32 %rd7, %r4, 4;"]
    regs = {"x": ("%rd1", "%rd8", "%f1"), "y": ("%rd2", "%rd9", "%f2"), "out": ("%rd3", "%rd10", None)}
    for p in params:
        if p == "alpha":
            lines.append("\tld.param.f32 %f9, [k_alpha];")
        elif p in regs:
            r, a, f = regs[p]
            lines += [f"\tld.param.u64 {r}, [k_{p}];", f"\tcvta.to.global.u64 {r}, {r};", f"\tadd.s64 {a}, {r}, %rd7;"]
            if f:
                lines.append(f"\tld.global.f32 {f}, [{a}];")
    return "\n".join(lines) + "\n" + body + "\tret;\n}\n"


STORE = "\tst.global.f32 [%rd10], %f3;\n"
TENSORS = [{"name": t, "role": "output" if t == "out" else "input", "dtype": "f32", "shape": [32]}
           for t in ("x", "y", "out")]
ALPHA = {"name": "alpha", "role": "scalar", "dtype": "f32"}


def entry(tmp_path, ref: str, opt: str, params=None, ref_side=None, opt_side=None, threads: int = 32) -> dict:
    (tmp_path / "ref.ptx").write_text(ref)
    (tmp_path / "opt.ptx").write_text(opt)
    side = {"entry": "k", "grid": [1, 1, 1], "block": [threads, 1, 1]}
    return {"name": "p", "params": params or TENSORS, "check_cta": [0, 0, 0],
            "reference": {"ptx": "ref.ptx", **side, **(ref_side or {})},
            "optimized": {"ptx": "opt.ptx", **side, **(opt_side or {})}}


def certify(tmp_path, e: dict) -> dict:
    report = check_pair(e, tmp_path)
    assert report.verdict == "equivalent", report.message
    return kernel_certificate([pair_claim("p", e, tmp_path, report)])


def forged(tmp_path, e: dict) -> dict:
    """The certificate the engine would write for ``e`` had it found it equivalent."""
    report = check_pair(e, tmp_path)
    assert report.verdict == "not-equivalent", report.message
    report.verdict = "equivalent"
    return kernel_certificate([pair_claim("p", e, tmp_path, report)])


def with_ptx(cert: dict, text: str, side: int = 1) -> dict:
    c = copy.deepcopy(cert)
    art = c["subject"]["artifacts"][side]
    art["embedded"] = text
    art["sha256"] = hashlib.sha256(canonical_bytes(text)).hexdigest()
    return c


def rejected(cert: dict, tmp_path, reason: str) -> None:
    p = tmp_path / "cert.json"
    p.write_text(json.dumps(cert))
    try:
        res = replay(str(p))
    except Malformed as e:
        assert reason in str(e), str(e)
        return
    detail = "; ".join(r.detail for r in res)
    assert not all(r.ok for r in res) and reason in detail, detail


COPY = "\tmov.f32 %f3, %f1;\n" + STORE
NEG_INF, POS_INF = "0fFF800000", "0f7F800000"


# ------------------------------------------------------------------ ±inf (arithmetic: test_kernel_triton.py)

def test_inf_identity_of_max_and_min_verifies(tmp_path):
    body = f"\tmov.f32 %f4, {NEG_INF};\n\tmax.f32 %f5, %f4, %f1;\n\tmov.f32 %f6, {POS_INF};\n" \
           "\tmin.f32 %f3, %f5, %f6;\n" + STORE
    e = entry(tmp_path, kernel(COPY), kernel(body))
    assert check_pair(e, tmp_path).verdict == "equivalent"


@pytest.mark.parametrize("body, reason", [
    (f"\tmax.f32 %f3, %f1, {POS_INF};\n" + STORE, "a store of ±inf"),                   # +inf absorbs max
    (f"\tmin.f32 %f3, %f1, {NEG_INF};\n" + STORE, "a store of ±inf"),                   # -inf absorbs min
    (f"\tsub.f32 %f3, %f1, {NEG_INF};\n" + STORE, "a store of ±inf"),                   # x - -inf = inf
    (f"\tadd.f32 %f4, {NEG_INF}, {POS_INF};\n\tmax.f32 %f3, %f4, %f1;\n" + STORE, "infinite operand"),  # NaN
    (f"\tmul.f32 %f4, {NEG_INF}, 0f00000000;\n\tmax.f32 %f3, %f4, %f1;\n" + STORE, "infinite operand"),
    (f"\tabs.f32 %f4, {NEG_INF};\n\tmin.f32 %f3, %f4, %f1;\n" + STORE, "infinite operand"),
    (f"\tmov.f32 %f3, 0f7FC00000;\n" + STORE, "NaN float constant"),
])
def test_inf_where_nan_or_inf_would_arise_is_refused(tmp_path, body, reason):
    e = entry(tmp_path, kernel(COPY), kernel(body))
    r = check_pair(e, tmp_path)
    assert r.verdict == "unsupported" and reason in r.message, r.message
    cert = certify(tmp_path, entry(tmp_path, kernel(COPY), kernel(COPY)))
    rejected(with_ptx(cert, kernel(body)), tmp_path, reason)


def test_warp_sz_is_32_and_warpid_is_refused(tmp_path):
    ok = "\tmov.u32 %r5, WARP_SZ;\n\tsetp.ne.u32 %p1, %r5, 32;\n\t@%p1 bra $DONE;\n" + COPY + "$DONE:\n"
    cert = certify(tmp_path, entry(tmp_path, kernel(COPY), kernel(ok)))
    bad = "\tmov.u32 %r5, %warpid;\n\tsetp.ne.u32 %p1, %r5, 0;\n\t@%p1 bra $DONE;\n" + COPY + "$DONE:\n"
    assert check_pair(entry(tmp_path, kernel(COPY), kernel(bad)), tmp_path).verdict != "equivalent"
    rejected(with_ptx(cert, kernel(bad)), tmp_path, "%warpid")


# ------------------------------------------------------------------ symbolic float scalars

ALPHA_PARAMS = ("x", "alpha", "out")
SCALED = "\tmul.f32 %f3, %f9, %f1;\n" + STORE


def test_symbolic_alpha_holds_for_every_value(tmp_path):
    twice = "\tmul.f32 %f4, %f9, 0f3F000000;\n\tmul.f32 %f5, %f4, %f1;\n\tadd.f32 %f3, %f5, %f5;\n" + STORE
    params = [TENSORS[0], ALPHA, TENSORS[2]]
    cert = certify(tmp_path, entry(tmp_path, kernel(SCALED, ALPHA_PARAMS), kernel(twice, ALPHA_PARAMS), params))
    for fake in ("\tmul.f32 %f3, 0f40000000, %f1;\n" + STORE,     # alpha = 2 only
                 "\tmov.f32 %f3, %f1;\n" + STORE):               # alpha = 1 only
        rejected(with_ptx(cert, kernel(fake, ALPHA_PARAMS)), tmp_path, "normal form")
        e = entry(tmp_path, kernel(SCALED, ALPHA_PARAMS), kernel(fake, ALPHA_PARAMS), params)
        rejected(forged(tmp_path, e), tmp_path, "differs")


def test_float_scalar_read_as_integer_or_given_a_value_is_refused(tmp_path):
    params = [TENSORS[0], ALPHA, TENSORS[2]]
    bits = kernel("\tld.param.u32 %r9, [k_alpha];\n" + COPY, ALPHA_PARAMS)
    r = check_pair(entry(tmp_path, kernel(SCALED, ALPHA_PARAMS), bits, params), tmp_path)
    assert r.verdict == "unsupported" and "read as an integer" in r.message, r.message
    with pytest.raises(Malformed, match="symbolic"):
        check_pair_file(tmp_path, [TENSORS[0], {**ALPHA, "value": 2}, TENSORS[2]])
    with pytest.raises(Malformed, match="identifier"):
        check_pair_file(tmp_path, [TENSORS[0], {**ALPHA, "name": "x[0]"}, TENSORS[2]])


def check_pair_file(tmp_path, params) -> None:
    e = entry(tmp_path, kernel(COPY), kernel(COPY), params)
    (tmp_path / "pairs.json").write_text(json.dumps({"pairs": [e]}))
    load_pairs(tmp_path)


# ------------------------------------------------------------------ parameter lists bound by name

DIFF = "\tsub.f32 %f3, %f1, %f2;\n" + STORE


def test_params_bound_by_name(tmp_path):
    ref = kernel(DIFF)
    opt = kernel(DIFF, ("y", "x", "out"))          # the same kernel text, parameters declared in another order
    same = {"params": ["x", "y", "out"]}
    swapped = {"params": ["y", "x", "out"]}
    # binding opt's first .param to y: opt computes x - y again
    cert = certify(tmp_path, entry(tmp_path, ref, opt, opt_side=swapped))
    rejected(forged(tmp_path, entry(tmp_path, ref, opt, opt_side=same)), tmp_path, "differs")  # y - x
    bad = copy.deepcopy(cert)
    bad["claims"][0]["optimized"]["params"] = ["x", "y", "out"]
    rejected(bad, tmp_path, "normal form")
    bad["claims"][0]["optimized"]["params"] = ["x", "x", "out"]
    rejected(bad, tmp_path, "distinct names")


def test_unused_parameter_and_duplicate_names(tmp_path):
    unused = {"name": "n", "role": "scalar", "dtype": "s32", "value": 5}
    e = entry(tmp_path, kernel(COPY), kernel(COPY, ("x", "out")), [TENSORS[0], unused, TENSORS[2]],
              ref_side={"params": ["x", "n", "out"]}, opt_side={"params": ["x", "out"]})
    (tmp_path / "ref.ptx").write_text(kernel(COPY, ("x", "n", "out")).replace(".u64 k_n", ".u32 k_n"))
    assert check_pair(e, tmp_path).verdict == "equivalent"
    with pytest.raises(Malformed, match="a second parameter named x"):
        check_pair_file(tmp_path, [TENSORS[0], TENSORS[0], TENSORS[2]])


# ------------------------------------------------------------------ dynamic shared memory

DYN = ".extern .shared .align 4 .b8 dyn_a[];\n.extern .shared .align 16 .b8 dyn_b[];"


def via_shared(read_off: int) -> str:
    """Write x[i] through dyn_a, read it back through dyn_b at byte ``4 * i + read_off``."""
    return ("\tmov.u64 %rd11, dyn_a;\n\tmul.wide.u32 %rd12, %r1, 4;\n\tadd.s64 %rd13, %rd11, %rd12;\n"
            "\tst.shared.f32 [%rd13], %f1;\n\tbar.sync 0;\n\tmov.u64 %rd14, dyn_b;\n\tadd.s64 %rd15, %rd14, %rd12;\n"
            f"\tld.shared.f32 %f3, [%rd15+{read_off}];\n" + STORE)


def test_extern_shared_arrays_alias_and_are_sized_by_the_launch(tmp_path):
    dyn = {"shared_bytes": 128}
    cert = certify(tmp_path, entry(tmp_path, kernel(COPY), kernel(via_shared(0), shared=DYN), opt_side=dyn))
    # reading past the 128 launched bytes (thread 31 at byte 128) is out of bounds
    r = check_pair(entry(tmp_path, kernel(COPY), kernel(via_shared(4), shared=DYN), opt_side=dyn), tmp_path)
    assert r.verdict != "equivalent", r.message
    rejected(with_ptx(cert, kernel(via_shared(4), shared=DYN)), tmp_path, "out of bounds")
    small = copy.deepcopy(cert)
    small["claims"][0]["optimized"]["shared_bytes"] = 64
    rejected(small, tmp_path, "out of bounds")
    r = check_pair(entry(tmp_path, kernel(COPY), kernel(via_shared(0), shared=DYN)), tmp_path)
    assert r.verdict == "unsupported" and "shared_bytes" in r.message, r.message
    none = copy.deepcopy(cert)
    del none["claims"][0]["optimized"]["shared_bytes"]
    rejected(none, tmp_path, "shared_bytes")


# ------------------------------------------------------------------ .const / .global tables

TABLE = ".const .align 4 .b8 W[8] = {0, 0, 0, 63, 0, 0, 128, 191};\n" \
        ".global .align 4 .b8 B[4] = {0, 0, 128, 63};"           # W = {0.5, -1.0}, B = {1.0}
LOOKUP = ("\tand.b32 %r5, %r1, 1;\n\tmul.wide.u32 %rd11, %r5, 4;\n\tmov.u64 %rd12, W;\n\tadd.s64 %rd13, %rd12, %rd11;\n"
          "\tld.const.f32 %f4, [%rd13];\n\tmov.u64 %rd14, B;\n\tld.global.f32 %f5, [%rd14];\n"
          "\tfma.rn.f32 %f3, %f4, %f1, %f5;\n" + STORE)
LITERAL = ("\tand.b32 %r5, %r1, 1;\n\tsetp.eq.u32 %p1, %r5, 0;\n\tselp.f32 %f4, 0f3F000000, 0fBF800000, %p1;\n"
           "\tfma.rn.f32 %f3, %f4, %f1, 0f3F800000;\n" + STORE)


def test_const_and_global_tables_are_read_at_their_initial_values(tmp_path):
    cert = certify(tmp_path, entry(tmp_path, kernel(LITERAL), kernel(LOOKUP, shared=TABLE)))
    assert "at their PTX initial values" in json.dumps(replay_detail(cert, tmp_path))
    changed = TABLE.replace("128, 191", "128, 63")                  # W[1] = 1.0 instead of -1.0
    rejected(with_ptx(cert, kernel(LOOKUP, shared=changed)), tmp_path, "normal form")
    rejected(forged(tmp_path, entry(tmp_path, kernel(LITERAL), kernel(LOOKUP, shared=changed))), tmp_path, "differs")


@pytest.mark.parametrize("edit, reason", [
    (lambda b: b.replace("ld.const.f32 %f4, [%rd13]", "ld.global.f32 %f4, [%rd13]"), "used for a global access"),
    (lambda b: b.replace("ld.global.f32 %f5, [%rd14]", "ld.const.f32 %f5, [%rd14]"), "used for a const access"),
    (lambda b: b.replace("ld.global.f32 %f5, [%rd14]", "ld.global.f32 %f5, [%rd14+4]"), "out of bounds"),
    (lambda b: "\tmov.u64 %rd14, B;\n\tst.global.f32 [%rd14], %f1;\n" + b, "a store to the .const/.global"),
])
def test_table_misuse_is_refused(tmp_path, edit, reason):
    r = check_pair(entry(tmp_path, kernel(LITERAL), kernel(edit(LOOKUP), shared=TABLE)), tmp_path)
    assert r.verdict != "equivalent" and reason in r.message, r.message
    cert = certify(tmp_path, entry(tmp_path, kernel(LITERAL), kernel(LOOKUP, shared=TABLE)))
    rejected(with_ptx(cert, kernel(edit(LOOKUP), shared=TABLE)), tmp_path, reason)


@pytest.mark.parametrize("decl", [".const .align 4 .b8 W[8];",   # incomplete initializers: test_kernel_triton
                                  ".const .align 4 .f32 W[2] = {0f3F000000, 0fBF800000};"])
def test_tables_without_exact_byte_initializers_are_refused(tmp_path, decl):
    r = check_pair(entry(tmp_path, kernel(LITERAL), kernel(LOOKUP, shared=decl + "\n.global .align 4 .b8 B[4] = "
                                                                      "{0, 0, 128, 63};")), tmp_path)
    assert r.verdict == "unsupported", r.message


def replay_detail(cert: dict, tmp_path) -> list[str]:
    p = tmp_path / "cert.json"
    p.write_text(json.dumps(cert))
    res = replay(str(p))
    assert all(r.ok for r in res)
    return [r.detail for r in res]


# ------------------------------------------------------------------ .func / call / ret (inlined)

FUNC = """.func (.param .b32 r) f(.param .b32 a, .param .b32 b)
{
\t.reg .f32 %f<4>;
\tld.param.f32 %f1, [a];
\tld.param.f32 %f2, [b];
\tsub.f32 %f3, %f1, %f2;
\tst.param.f32 [r+0], %f3;
\tret;
}"""
LOOP = """.func (.param .b32 r) g(.param .b32 a)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<2>;
\t.reg .f32 %f<2>;
\tld.param.f32 %f1, [a];
\tmov.u32 %r1, 0;
$L_top:
\tadd.f32 %f1, %f1, %f1;
\tadd.s32 %r1, %r1, 1;
\tsetp.lt.u32 %p1, %r1, 3;
\t@%p1 bra $L_top;
\tst.param.f32 [r+0], %f1;
\tret;
}"""


def call(fn: str, args=("%f1", "%f2"), dst: str = "%f3", order=(0, 1)) -> str:
    decl = "".join(f"\t.param .b32 p{i};\n\tst.param.f32 [p{i}+0], {a};\n" for i, a in enumerate(args))
    names = ", ".join(f"p{i}" for i in order[:len(args)])
    return f"\t{{\n{decl}\t.param .b32 r0;\n\tcall.uni (r0), {fn}, ({names});\n\tld.param.f32 {dst}, [r0+0];\n\t}}\n"


def test_func_call_is_inlined(tmp_path):
    cert = certify(tmp_path, entry(tmp_path, kernel(DIFF), kernel(call("f") + STORE, shared=FUNC)))
    assert cert["claims"]
    twice = call("g", ("%f1",), "%f4") + call("g", ("%f2",), "%f5") + "\tadd.f32 %f3, %f4, %f5;\n" + STORE
    ref = "\tadd.f32 %f4, %f1, %f2;\n\tmul.f32 %f3, %f4, 0f41000000;\n" + STORE     # 8 (x + y)
    certify(tmp_path, entry(tmp_path, kernel(ref), kernel(twice, shared=LOOP)))


@pytest.mark.parametrize("body, module, how", [
    (call("f", order=(1, 0)) + STORE, FUNC, "differs"),                             # swapped arguments
    (call("f") + STORE, FUNC.replace("sub.f32", "add.f32"), "differs"),            # another body
])
def test_func_that_would_fool_the_checker(tmp_path, body, module, how):
    e = entry(tmp_path, kernel(DIFF), kernel(body, shared=module))
    rejected(forged(tmp_path, e), tmp_path, how)
    cert = certify(tmp_path, entry(tmp_path, kernel(DIFF), kernel(call("f") + STORE, shared=FUNC)))
    rejected(with_ptx(cert, kernel(body, shared=module)), tmp_path, "normal form")


@pytest.mark.parametrize("module, body, reason", [
    (FUNC.replace("\tret;", "\t" + call("f", ("%f1", "%f2"), "%f3").strip() + "\n\tret;"), call("f") + STORE,
     "recursive call of f"),
    (FUNC, call("h") + STORE, "no body"),
    (FUNC, call("f", ("%f1",)) + STORE, "with 1 arguments"),
    (FUNC.replace("ld.param.f32 %f2, [b]", "ld.param.f32 %f2, [b+4]"), call("f") + STORE, "parameter access"),
    (FUNC, call("f").replace("ld.param.f32 %f3, [r0+0]", "ld.param.f64 %fd3, [r0+0]"), "call parameter access"),
    # a call run twice would see its registers' old values (inlined once), where PTX gives fresh ones
    (FUNC, "\tmov.u32 %r20, 0;\n$L_k:\n" + call("f") + "\tadd.s32 %r20, %r20, 1;\n\tsetp.lt.u32 %p2, %r20, 2;\n"
     "\t@%p2 bra $L_k;\n" + STORE, "call inside a loop"),
])
def test_func_refusals(tmp_path, module, body, reason):
    r = check_pair(entry(tmp_path, kernel(DIFF), kernel(body, shared=module)), tmp_path)
    assert r.verdict == "unsupported" and reason in r.message, r.message
    cert = certify(tmp_path, entry(tmp_path, kernel(DIFF), kernel(call("f") + STORE, shared=FUNC)))
    rejected(with_ptx(cert, kernel(body, shared=module)), tmp_path, reason)


# ------------------------------------------------------------------ .local arrays (per thread)

LOCALS = "\t.local .align 8 .b8 depot[16];\n\t.local .align 8 .b8 other[8];\n"
SPILL = (LOCALS + "\tmov.u64 %rd11, depot;\n\tst.local.v2.f32 [%rd11], {%f1, %f2};\n\tmov.u64 %rd12, other;\n"
         "\tst.local.f32 [%rd12], %f2;\n\tld.local.f32 %f3, [%rd11];\n" + STORE)


def test_local_array_is_per_thread(tmp_path):
    certify(tmp_path, entry(tmp_path, kernel(COPY), kernel(SPILL)))


@pytest.mark.parametrize("edit, reason", [
    (lambda b: b.replace("ld.local.f32 %f3, [%rd11]", "ld.local.f32 %f3, [%rd11+8]"), "did not write so"),
    (lambda b: b.replace("ld.local.f32 %f3, [%rd11]", "ld.local.u16 %r9, [%rd11];\n\tmov.f32 %f3, %f1"),
     "did not write so"),
    (lambda b: b.replace("ld.local.f32 %f3, [%rd11]", "ld.local.f32 %f3, [%rd11+16]"), "out of bounds"),
    (lambda b: b.replace("ld.local.f32 %f3, [%rd11]", "ld.global.f32 %f3, [%rd11]"), "used for a global access"),
    (lambda b: b.replace("st.local.f32 [%rd12], %f2", "st.local.f32 [%rd11], %f2"), "differs"),  # overwrites x
])
def test_local_misuse(tmp_path, edit, reason):
    body = edit(SPILL)
    cert = certify(tmp_path, entry(tmp_path, kernel(COPY), kernel(SPILL)))
    e = entry(tmp_path, kernel(COPY), kernel(body))
    r = check_pair(e, tmp_path)
    assert r.verdict != "equivalent", r.message
    if reason == "differs":
        rejected(forged(tmp_path, e), tmp_path, reason)
    else:
        assert reason in r.message, r.message
        rejected(with_ptx(cert, kernel(body)), tmp_path, reason)


# ------------------------------------------------------------------ integer data: a ring modulo 2^32

INTS = [{**t, "dtype": "s32"} for t in TENSORS]
ILOAD = "\tld.global.s32 %r10, [%rd8];\n\tld.global.s32 %r11, [%rd9];\n"
ISTORE = "\tst.global.s32 [%rd10], %r12;\n"
IREF = ILOAD + "\tadd.s32 %r13, %r10, %r11;\n\tmul.lo.s32 %r12, %r13, %r10;\n" + ISTORE          # (x + y) x
IOPT = ILOAD + "\tmul.lo.s32 %r13, %r10, %r10;\n\tmad.lo.s32 %r12, %r10, %r11, %r13;\n" + ISTORE  # x y + x x


def test_integer_data_ring_identities_verify(tmp_path):
    certify(tmp_path, entry(tmp_path, kernel(IREF), kernel(IOPT), INTS))
    wrap = ILOAD + "\tmul.lo.s32 %r13, %r10, 65536;\n\tmul.lo.s32 %r14, %r13, 65536;\n" \
                   "\tadd.s32 %r12, %r14, %r11;\n" + ISTORE                               # 2^32 x + y = y
    certify(tmp_path, entry(tmp_path, kernel(ILOAD + "\tmov.b32 %r12, %r11;\n" + ISTORE), kernel(wrap), INTS))


@pytest.mark.parametrize("op, reason", [
    ("\tsetp.lt.s32 %p1, %r10, %r11;\n\tselp.b32 %r12, %r10, %r11, %p1;\n", "integer"),   # min via compare
    ("\tshr.s32 %r12, %r10, 1;\n", "on integer data"),
    ("\tdiv.s32 %r12, %r10, 2;\n", "on integer data"),
    ("\tmul.hi.s32 %r12, %r10, %r11;\n", "on integer data"),
    ("\tmul.wide.s32 %rd20, %r10, %r11;\n\tcvt.u32.u64 %r12, %rd20;\n", "on integer data"),
    ("\tcvt.s64.s32 %rd21, %r10;\n\tadd.s64 %rd22, %rd8, %rd21;\n\tld.global.s32 %r12, [%rd22];\n", "integer"),
    ("\tcvt.rn.f32.s32 %f4, %r10;\n\tcvt.rzi.s32.f32 %r12, %f4;\n", "integer"),
])
def test_integer_data_beyond_the_ring_is_refused(tmp_path, op, reason):
    body = ILOAD + op + ISTORE
    r = check_pair(entry(tmp_path, kernel(IREF), kernel(body), INTS), tmp_path)
    assert r.verdict == "unsupported" and reason in r.message, r.message
    cert = certify(tmp_path, entry(tmp_path, kernel(IREF), kernel(IOPT), INTS))
    rejected(with_ptx(cert, kernel(body)), tmp_path, reason)


def test_integer_data_that_differs_modulo_2_32(tmp_path):
    half = ILOAD + "\tmul.lo.s32 %r13, %r10, 65536;\n\tmul.lo.s32 %r14, %r13, 32768;\n" \
                   "\tadd.s32 %r12, %r14, %r11;\n" + ISTORE                               # 2^31 x + y != y
    e = entry(tmp_path, kernel(ILOAD + "\tmov.b32 %r12, %r11;\n" + ISTORE), kernel(half), INTS)
    r = check_pair(e, tmp_path)
    assert r.verdict == "not-equivalent" and "modulo 2^32" in r.message, r.message
    rejected(forged(tmp_path, e), tmp_path, "differs")


@pytest.mark.parametrize("body, params, reason", [
    (ILOAD + "\tst.global.s32 [%rd10], %r10;\n", [INTS[0], INTS[1], TENSORS[2]], "integer data stored to tensor out"),
    ("\tst.global.f32 [%rd10], %f1;\n", [TENSORS[0], TENSORS[1], INTS[2]], "a float stored to tensor out"),
])
def test_integer_and_float_data_do_not_mix(tmp_path, body, params, reason):
    r = check_pair(entry(tmp_path, kernel(body), kernel(body), params), tmp_path)
    assert r.verdict == "unsupported" and reason in r.message, r.message


# ------------------------------------------------------------------ Triton's PTX

def test_triton_softmax_with_a_sum_step_dropped(tmp_path):
    real = CORPUS / "real"
    e = copy.deepcopy(load_pairs(real)["triton_softmax_rows"])
    ptx = (real / e["optimized"]["ptx"]).read_text()
    for side in ("reference", "optimized"):
        (tmp_path / f"{side}.ptx").write_text((real / e[side]["ptx"]).read_text())
        e[side]["ptx"] = f"{side}.ptx"
    cert = certify(tmp_path, e)
    bad = ptx.replace("add.f32 \t%r39, %r37, %r38;", "add.f32 \t%r39, %r37, %r37;")   # the sum misses half the lanes
    assert bad != ptx
    (tmp_path / "optimized.ptx").write_text(bad)
    assert check_pair(e, tmp_path).verdict == "not-equivalent"
    rejected(forged(tmp_path, e), tmp_path, "differs")
    rejected(with_ptx(cert, bad), tmp_path, "normal form")


def test_param_pointer_to_another_space_is_refused():
    text = kernel(COPY).replace(".param .u64 k_x", ".param .u64 .ptr .shared .align 4 k_x")
    with pytest.raises(Malformed, match="bad parameter"):
        parse(text)
    parse(kernel(COPY).replace(".param .u64 k_x", ".param .u64 .ptr .global .align 16 k_x"))
