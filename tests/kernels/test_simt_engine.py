"""Lockstep execution in the engine (issue 17, ``verifier.kernels.simt``): with it, ``run_cta`` gives exactly
the per-thread result (printed outputs and their order, steps, barriers, schedule, witness, output bytes
written and touched) or the same error, on every corpus kernel and on small racy / odd kernels; and on
the GEMM kernels it really completes (no fallback)."""

import pytest

from certificates.errors import CheckError
from certificates.kernel import Printer, bind, no_gc, shared_bytes
from certificates.ptx import parse
from verifier.kernels import exec as ex
from verifier.kernels import simt
from verifier.kernels.equiv import CORPUS, _side, at_k, load_pairs

from test_exec import HEAD, PARAMS, TAIL
from test_fast_paths import CASES


def outcome(fn):
    try:
        r = fn()
    except CheckError as e:
        return type(e).__name__, str(e)
    p = Printer()
    return ("ok", [(key, p.text(v)) for key, v in r.outputs.items()], r.steps, r.barriers, r.threads, r.schedule,
            sorted(r.witness), sorted(r.written), sorted(r.touched))


def both(monkeypatch, *args):
    """The outcome per thread, and with lockstep (``exec.LOCKSTEP``)."""
    out = []
    for on in (False, True):
        monkeypatch.setattr(ex, "LOCKSTEP", on)
        out.append(outcome(lambda: ex.run_cta(*args)))
    return out


def lockstep(*args):
    """``simt.Lockstep`` itself (a Fallback propagates)."""
    with no_gc():
        return simt.Lockstep(ex.CTA(*args), ex.MAX_STEPS, ex.SHARED_BASE).run()


def sides(base):
    """Each distinct launch (kernel, grid, block, parameters) of a corpus once."""
    seen = set()
    for name, pair in load_pairs(base).items():
        for side in ("reference", "optimized"):
            spec = pair[side]
            key = repr((spec["ptx"], spec.get("entry"), spec["grid"], spec["block"], pair["params"],
                        pair.get("check_cta")))
            if key not in seen:
                seen.add(key)
                yield pytest.param(base, name, side, id=f"{base.name}:{name}:{side}")


def launch(base, name, side):
    pair = load_pairs(base)[name]
    pair = at_k(pair, 16) or pair
    spec = pair[side]
    cta = pair.get("check_cta", [0, 0, 0])
    return (_side(spec, base), spec["grid"], spec["block"], bind(pair["params"], spec, side),
            (0, 0, 0) if cta == "all" else tuple(cta), side, shared_bytes(spec, side))


@pytest.mark.parametrize("base, name, side", [*sides(CORPUS), *sides(CORPUS / "real")])
def test_corpus_same_result(base, name, side, monkeypatch):
    try:
        args = launch(base, name, side)
    except CheckError:
        pytest.skip("not parsed")
    if not simt.eligible(args[0]):
        pytest.skip("outside the static gate: per thread only")
    per_thread, lock = both(monkeypatch, *args)
    assert lock == per_thread


GEMMS = [(n, s) for n in ("sgemm_naive_self", "sgemm_coalesced", "sgemm_smem", "sgemm_1d_blocktile",
                          "sgemm_2d_blocktile", "sgemm_vectorized", "sgemm_warptile", "sgemm_double_buffer",
                          "bug_sgemm_2d_tile_offset", "sgemm_agent_regtile")
         for s in ("reference", "optimized")] + [("conv2d_implicit_gemm", "reference"),
                                                  ("reduce_ref_self", "reference")]


@pytest.mark.parametrize("name, side", GEMMS)
def test_lockstep_completes(name, side):
    args = launch(CORPUS, name, side)
    outs, steps, barriers, schedule, *_ = lockstep(*args)
    assert outs and steps > 0 and schedule[0][0] == "run"


def test_sgemm_at_k_32_same_and_complete(monkeypatch):
    pair = at_k(load_pairs()["sgemm_smem"], 32)
    for side in ("reference", "optimized"):
        spec = pair[side]
        args = (_side(spec, CORPUS), spec["grid"], spec["block"], bind(pair["params"], spec, side), (0, 0, 0),
                side, None)
        lockstep(*args)
        per_thread, lock = both(monkeypatch, *args)
        assert lock == per_thread and lock[0] == "ok"


MORE = {   # kernels of 64 threads (two warps): divergence, barriers, wrapping, witness classes
    "divergent stores, read back after a barrier":
        "\tsetp.lt.u32 %p1, %r1, 20;\n\t@%p1 st.shared.f32 [%r4], %f1;\n\t@!%p1 st.shared.f32 [%r4], 0f40000000;\n"
        "\tbar.sync 0;\n\txor.b32 %r8, %r1, 1;\n\tshl.b32 %r9, %r8, 2;\n\tadd.s32 %r5, %r2, %r9;\n"
        "\tld.shared.f32 %f2, [%r5];\n\tst.global.f32 [%rd7], %f2;\n",
    "write after read by others (WAR witness)":
        "\tst.shared.f32 [%r4], %f1;\n\tbar.sync 0;\n\tld.shared.f32 %f2, [%r2];\n\tbar.sync 0;\n"
        "\tsetp.eq.u32 %p1, %r1, 5;\n\t@%p1 st.shared.f32 [%r2], %f2;\n\tbar.sync 0;\n"
        "\tld.shared.f32 %f3, [%r2];\n\tadd.f32 %f3, %f3, %f2;\n\tst.global.f32 [%rd7], %f3;\n",
    "broadcast read racing a write": "\tld.shared.f32 %f2, [%r2];\n\tsetp.eq.u32 %p1, %r1, 7;\n"
                                     "\t@%p1 st.shared.f32 [%r2], %f1;\n\tst.global.f32 [%rd7], %f1;\n",
    "two threads store one word": "\tand.b32 %r8, %r1, 62;\n\tshl.b32 %r9, %r8, 2;\n\tadd.s32 %r5, %r2, %r9;\n"
                                  "\tst.shared.f32 [%r5], %f1;\n\tst.global.f32 [%rd7], %f1;\n",
    "output written twice by one thread, then by another after a barrier":
        "\tst.global.f32 [%rd7], %f1;\n\tadd.f32 %f2, %f1, %f1;\n\tst.global.f32 [%rd7], %f2;\n\tbar.sync 0;\n"
        "\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 st.global.f32 [%rd4+4], %f2;\n",
    "output race": "\tst.global.f32 [%rd4], %f1;\n",
    "warps at two barriers": "\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 bra LA;\n\tst.shared.f32 [%r4], %f1;\n"
                             "\tbar.sync 0;\n\tbra LB;\nLA:\n\tst.shared.f32 [%r4], %f1;\n\tbar.sync 0;\nLB:\n"
                             "\txor.b32 %r8, %r1, 33;\n\tshl.b32 %r9, %r8, 2;\n\tadd.s32 %r5, %r2, %r9;\n"
                             "\tld.shared.f32 %f2, [%r5];\n\tst.global.f32 [%rd7], %f2;\n",
    "one warp at two barriers": "\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 bra LA;\n\tbar.sync 0;\n\tbra LB;\nLA:\n"
                                "\tbar.sync 0;\nLB:\n\tst.global.f32 [%rd7], %f1;\n",
    "deadlock: half the threads exit": "\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 bra LB;\n\tbar.sync 0;\nLB:\n"
                                       "\tst.global.f32 [%rd7], %f1;\n",
    "register set on one path only": "\tsetp.lt.u32 %p1, %r1, 10;\n\t@%p1 bra LA;\n\tmov.f32 %f5, %f1;\nLA:\n"
                                     "\tsetp.ge.u32 %p2, %r1, 10;\n\t@%p2 st.global.f32 [%rd7], %f5;\n",
    "register set on one path only, read by all": "\tsetp.lt.u32 %p1, %r1, 10;\n\t@%p1 bra LA;\n"
                                                  "\tmov.f32 %f5, %f1;\nLA:\n\tst.global.f32 [%rd7], %f5;\n",
    "u64 values above 2^63": "\tcvt.s64.s32 %rd8, %r1;\n\tneg.s64 %rd8, %rd8;\n\tshl.b64 %rd9, %rd8, 2;\n"
                             "\tadd.s64 %rd10, %rd7, %rd9;\n\tadd.s64 %rd10, %rd10, %rd5;\n"
                             "\tsetp.lt.u64 %p1, %rd9, 4;\n\tselp.f32 %f2, %f1, 0f3F800000, %p1;\n"
                             "\tst.global.f32 [%rd10], %f2;\n",
    "integers through shared memory": "\tst.shared.u32 [%r4], %r1;\n\tbar.sync 0;\n\tld.shared.u32 %r8, [%r2+12];\n"
                                      "\tld.shared.f32 %f2, [%r2+8];\n\tmul.wide.u32 %rd8, %r8, 4;\n"
                                      "\tadd.s64 %rd9, %rd3, %rd8;\n\tld.global.f32 %f3, [%rd9];\n"
                                      "\tadd.f32 %f3, %f3, %f2;\n\tst.global.f32 [%rd7], %f3;\n",
    "never written shared word": "\tld.shared.f32 %f2, [%r4+4];\n\tst.global.f32 [%rd7], %f2;\n",
    "vector accesses": "\tand.b32 %r8, %r1, 15;\n\tshl.b32 %r9, %r8, 4;\n\tadd.s32 %r5, %r2, %r9;\n"
                       "\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 st.shared.v4.f32 [%r5], {%f1, %f1, %f1, 0f3F800000};\n"
                       "\tbar.sync 0;\n\tld.shared.v4.f32 {%f2, %f3, %f4, %f5}, [%r5];\n"
                       "\tfma.rn.f32 %f2, %f3, %f4, %f5;\n"
                       "\tst.global.f32 [%rd7], %f2;\n",
    "dot products, stored and reread": "\tmov.f32 %f2, 0f00000000;\n\tld.global.f32 %f3, [%rd3+4];\n"
                                       "\tfma.rn.f32 %f2, %f1, %f3, %f2;\n\tfma.rn.f32 %f2, %f3, %f3, %f2;\n"
                                       "\tmov.f32 %f4, %f2;\n\tfma.rn.f32 %f4, %f1, %f1, %f4;\n"
                                       "\tst.shared.f32 [%r4], %f2;\n\tbar.sync 0;\n\tld.shared.f32 %f5, [%r4];\n"
                                       "\tadd.f32 %f5, %f5, %f4;\n\tst.global.f32 [%rd7], %f5;\n",
    "out of bounds in one thread": "\tsetp.eq.u32 %p1, %r1, 63;\n\t@%p1 ld.global.f32 %f2, [%rd6+4];\n"
                                   "\t@!%p1 mov.f32 %f2, %f1;\n\tst.global.f32 [%rd7], %f2;\n",
    "input stored to": "\tst.global.f32 [%rd6], %f1;\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_path_cases_same_outcome(name, monkeypatch):
    body = "\t.reg .b16 %rs<4>;\n\tmov.b16 %rs1, 7;\n" + CASES[name]
    per_thread, lock = both(monkeypatch, parse(HEAD + body + TAIL, "t.ptx").kernel(), [1, 1, 1], [2, 1, 1], PARAMS)
    assert lock == per_thread


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_cases_same_outcome(name, monkeypatch):
    k = parse(HEAD + MORE[name] + TAIL, "t.ptx").kernel()
    assert simt.eligible(k)
    per_thread, lock = both(monkeypatch, k, [1, 1, 1], [64, 1, 1], PARAMS)
    assert lock == per_thread


def test_lockstep_completes_the_ordered_cases():
    """Not only equal outcomes by falling back: the race-free cases above finish in lockstep."""
    for name in ("divergent stores, read back after a barrier", "write after read by others (WAR witness)",
                 "warps at two barriers", "u64 values above 2^63", "integers through shared memory",
                 "vector accesses", "dot products, stored and reread", "register set on one path only",
                 "output written twice by one thread, then by another after a barrier"):
        lockstep(parse(HEAD + MORE[name] + TAIL, "t.ptx").kernel(), [1, 1, 1], [64, 1, 1], PARAMS)


def test_lockstep_falls_back_on_races_and_deadlocks():
    for name in ("broadcast read racing a write", "two threads store one word", "output race",
                 "one warp at two barriers", "deadlock: half the threads exit",
                 "register set on one path only, read by all", "input stored to"):
        with pytest.raises(simt.Fallback):
            lockstep(parse(HEAD + MORE[name] + TAIL, "t.ptx").kernel(), [1, 1, 1], [64, 1, 1], PARAMS)


def test_static_gate():
    def ok(body):
        return simt.eligible(parse(HEAD + body + TAIL, "t.ptx").kernel())
    assert ok("\tbar.sync 0;\n\tmembar.cta;\n")
    assert not ok("\tbar.sync 0, 32;\n")
    assert not ok("\tshfl.sync.bfly.b32 %r8, %r1, 1, 31, -1;\n")
    assert not ok("\tbar.warp.sync -1;\n")
    assert not ok("\tld.shared.u64 %rd8, [%r4];\n")
    assert not ok("\tst.shared.b16 [%r4], %r1;\n")
    assert not ok("\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bar.sync 0;\n")


# Random integer programs over per-thread values (the numpy integer paths against the per-thread semantics)
PREFIX = {16: "%rs", 32: "%r", 64: "%rd"}
POOL = {16: range(8), 32: range(10, 18), 64: range(8, 14)}
IMMS = [0, 1, -1, 3, 31, 32, 63, 64, 255, 0x7FFFFFFF, -0x80000000, 0x80000005, 12345, -77]


def random_program(seed: int) -> str:
    import random

    rng = random.Random(seed)

    def reg(w):
        return f"{PREFIX[w]}{rng.choice(POOL[w])}"

    def src(w):
        return reg(w) if rng.random() < 0.75 else str(rng.choice(IMMS))

    lines = ["\t.reg .b16 %rs<8>;\n", "\tmov.u32 %r10, %tid.x;\n", "\tmul.lo.s32 %r11, %r10, -1234567;\n",
             "\txor.b32 %r12, %r11, 1540483477;\n", "\tshl.b32 %r13, %r10, 27;\n", "\tor.b32 %r14, %r13, %r10;\n",
             "\tadd.s32 %r15, %r12, %r13;\n", "\tneg.s32 %r16, %r10;\n", "\tmov.u32 %r17, 7;\n",
             "\tcvt.s64.s32 %rd8, %r11;\n", "\tmul.wide.s32 %rd9, %r12, %r11;\n", "\tshl.b64 %rd10, %rd9, 17;\n",
             "\tmul.wide.u32 %rd11, %r14, %r12;\n", "\tcvt.u64.u32 %rd12, %r16;\n", "\tneg.s64 %rd13, %rd8;\n"]
    lines += [f"\tcvt.u16.u32 %rs{i}, %r{10 + i};\n" for i in range(8)]
    lines += ["\tsetp.lt.u32 %p1, %r10, 5;\n\tsetp.lt.u32 %p2, %r10, 9;\n"]
    for _ in range(40):
        w = rng.choice((16, 32, 64))
        s, u = f"s{w}", f"u{w}"
        guard = f"@{rng.choice(('', '!'))}%p{rng.randint(1, 2)} " if rng.random() < 0.2 else ""
        kind = rng.randrange(9)
        if kind == 0:
            op = rng.choice(("add", "sub", "mul.lo", "min", "max"))
            lines.append(f"\t{guard}{op}.{rng.choice((s, u))} {reg(w)}, {src(w)}, {src(w)};\n")
        elif kind == 1:
            lines.append(f"\t{guard}{rng.choice(('and', 'or', 'xor'))}.b{w} {reg(w)}, {src(w)}, {src(w)};\n")
        elif kind == 2:
            op = rng.choice(("shl.b", "shr.s", "shr.u"))
            lines.append(f"\t{guard}{op}{w} {reg(w)}, {src(w)}, {rng.choice(('%r17', str(rng.choice(IMMS[:8]))))};\n")
        elif kind == 3:
            lines.append(f"\t{guard}{rng.choice(('not.b', 'neg.s'))}{w} {reg(w)}, {reg(w)};\n")
        elif kind == 4:
            lines.append(f"\t{guard}mad.lo.{rng.choice((s, u))} {reg(w)}, {src(w)}, {src(w)}, {src(w)};\n")
        elif kind == 5 and w < 64:
            t = rng.choice((s, u))
            lines.append(f"\t{guard}mul.wide.{t} {reg(2 * w)}, {src(w)}, {src(w)};\n")
        elif kind == 6:
            v = rng.choice((16, 32, 64))
            dt, st = f"{rng.choice('su')}{w}", f"{rng.choice('su')}{v}"
            lines.append(f"\t{guard}cvt.{dt}.{st} {reg(w)}, {reg(v)};\n")
        elif kind == 7:
            cmp = rng.choice(("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"))
            t = rng.choice((s, u, f"b{w}")) if cmp in ("eq", "ne") else u if cmp in ("lo", "ls", "hi", "hs") else s
            lines.append(f"\tsetp.{cmp}.{t} %p{rng.randint(1, 2)}, {src(w)}, {src(w)};\n")
        else:
            lines.append(f"\tselp.{rng.choice((s, u))} {reg(w)}, {src(w)}, {src(w)}, %p{rng.randint(1, 2)};\n")
    lines.append("\tmul.wide.u32 %rd14, %r1, 112;\n\tadd.s64 %rd14, %rd4, %rd14;\n")
    outs = [f"%r{i}" for i in POOL[32]]
    for i in POOL[64]:
        lines.append(f"\tcvt.u32.u64 %r{20 + i - 8}, %rd{i};\n\tshr.s64 %rd15, %rd{i}, 32;\n"
                     f"\tcvt.u32.u64 %r{26 + i - 8}, %rd15;\n")
        outs += [f"%r{20 + i - 8}", f"%r{26 + i - 8}"]
    for i in POOL[16]:
        lines.append(f"\tcvt.u32.u16 %r{i + 1 if i else 18}, %rs{i};\n")
        outs.append(f"%r{i + 1 if i else 18}")
    lines += [f"\tst.global.u32 [%rd14+{4 * j}], {r};\n" for j, r in enumerate(outs)]
    return "".join(lines)


INT_PARAMS = [{"name": "x", "role": "input", "dtype": "f32", "shape": [64]},
              {"name": "y", "role": "output", "dtype": "f32", "shape": [32 * 28]}]


@pytest.mark.parametrize("seed", range(40))
def test_random_integer_programs_same_outcome(seed, monkeypatch):
    k = parse(HEAD + random_program(seed) + TAIL, "t.ptx").kernel()
    per_thread, lock = both(monkeypatch, k, [1, 1, 1], [32, 1, 1], INT_PARAMS)
    assert lock == per_thread


def random_float_program(seed: int) -> str:
    """Dot products (``fma`` of input elements), other real arithmetic, moves, guards, and values passed
    between threads through shared memory across barriers."""
    import random

    rng = random.Random(seed)
    lines = ["\tld.global.f32 %f2, [%rd6+128];\n", "\txor.b32 %r8, %r1, 1;\n", "\tmul.wide.u32 %rd8, %r8, 4;\n",
             "\tadd.s64 %rd9, %rd3, %rd8;\n", "\tld.global.f32 %f3, [%rd9];\n", "\tld.global.f32 %f4, [%rd3+4];\n",
             "\tmov.f32 %f5, 0f00000000;\n", "\tmov.f32 %f6, 0f3F800000;\n", "\tmov.f32 %f7, %f1;\n",
             "\tmov.f32 %f8, 0f00000000;\n", "\tsetp.lt.u32 %p1, %r1, 11;\n", "\tand.b32 %r9, %r1, 2;\n",
             "\tsetp.eq.u32 %p2, %r9, 0;\n", "\tshl.b32 %r9, %r8, 2;\n", "\tadd.s32 %r5, %r2, %r9;\n"]
    for _ in range(30):
        f = [f"%f{rng.randint(1, 8)}" for _ in range(4)]
        guard = f"@{rng.choice(('', '!'))}%p{rng.randint(1, 2)} " if rng.random() < 0.25 else ""
        kind = rng.randrange(10)
        if kind < 4:   # mostly dot products: the accumulator one of f5..f8
            lines.append(f"\t{guard}fma.rn.f32 %f{rng.randint(5, 8)}, %f{rng.randint(1, 4)}, %f{rng.randint(1, 4)}, "
                         f"%f{rng.randint(5, 8)};\n")
        elif kind == 4:
            lines.append(f"\t{guard}{rng.choice(('add', 'sub', 'mul'))}.f32 {f[0]}, {f[1]}, {f[2]};\n")
        elif kind == 5:
            lines.append(f"\t{guard}mov.f32 {f[0]}, {f[1]};\n")
        elif kind == 6:
            lines.append(f"\t{guard}fma.rn.f32 {f[0]}, {f[1]}, {f[2]}, {f[3]};\n")
        elif kind == 7:
            lines.append(f"\tst.shared.f32 [%r4], {f[0]};\n\tbar.sync 0;\n\t{guard}ld.shared.f32 {f[1]}, [%r5];\n"
                         "\tbar.sync 0;\n")
        elif kind == 8:
            lines.append(f"\t{guard}ld.global.f32 {f[0]}, [%rd9+{4 * rng.randint(0, 8)}];\n")
        else:
            lines.append(f"\t{guard}max.f32 {f[0]}, {f[1]}, {f[2]};\n")
    lines.append("\tmul.wide.u32 %rd10, %r1, 32;\n\tadd.s64 %rd10, %rd4, %rd10;\n")
    lines += [f"\tst.global.f32 [%rd10+{4 * (j - 1)}], %f{j};\n" for j in range(1, 9)]
    return "".join(lines)


FLOAT_PARAMS = [{"name": "x", "role": "input", "dtype": "f32", "shape": [64]},
                {"name": "y", "role": "output", "dtype": "f32", "shape": [32 * 8]}]


@pytest.mark.parametrize("seed", range(30))
def test_random_float_programs_same_outcome(seed, monkeypatch):
    k = parse(HEAD + random_float_program(seed) + TAIL, "t.ptx").kernel()
    per_thread, lock = both(monkeypatch, k, [1, 1, 1], [32, 1, 1], FLOAT_PARAMS)
    assert lock == per_thread
    lockstep(k, [1, 1, 1], [32, 1, 1], FLOAT_PARAMS)     # and race-free: lockstep completes
