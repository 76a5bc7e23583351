"""The compiled fast paths (issue 17) change no outcome: every kernel below gives, with them and
without them, the same outputs, schedule and witness or the same error, in the engine (straight-line
runs of ``_compile``/``_compile_load``/``_compile_shared`` (a register or a variable's name)/``_compile_setp``/``_compile_cvt``: ``CTA._block``) and in the
checker (``certificates.kernel.quick`` and its runs)."""

import pytest

import certificates.kernel as ck
from certificates.errors import CheckError
from certificates.kernel import Printer, Replay
from certificates.limits import Limits
from certificates.ptx import parse
from verifier.kernels import exec as ex

from test_exec import HEAD, PARAMS, TAIL

STORE = "\tst.shared.f32 [%r4], %f1;\n"
BAR = "\tbar.sync 0;\n"
NEXT = "\txor.b32 %r8, %r1, 1;\n\tshl.b32 %r9, %r8, 2;\n\tadd.s32 %r5, %r2, %r9;\n"   # the other thread's slot
OUT = "\tst.global.f32 [%rd7], %f2;\n"
CASES = {
    "ordered": STORE + BAR + NEXT + "\tld.shared.f32 %f2, [%r5];\n" + OUT,
    "raw race": STORE + NEXT + "\tld.shared.f32 %f2, [%r5];\n" + OUT,
    "war race": NEXT + "\tld.shared.f32 %f2, [%r5];\n" + STORE + OUT,
    "waw race": "\tst.shared.f32 [%r2], %f1;\n\tmov.f32 %f2, %f1;\n" + OUT,
    "same value, one warp": "\tmov.f32 %f3, 0f3F800000;\n\tst.shared.f32 [%r2], %f3;\n\tmov.f32 %f2, %f3;\n" + OUT,
    "misaligned": STORE + BAR + "\tld.shared.f32 %f2, [%r4+2];\n" + OUT,
    "out of bounds": STORE + BAR + "\tld.shared.f32 %f2, [%r4+256];\n" + OUT,
    "never written": "\tld.shared.f32 %f2, [%r4+8];\n" + OUT,
    "halves": "\tst.shared.b16 [%r4], %rs1;\n\tst.shared.b16 [%r4+2], %rs1;\n" + BAR
              + "\tld.shared.f32 %f2, [%r4];\n\tst.global.f32 [%rd7], %f2;\n",
    "int bits as float": "\tst.shared.f32 [%r4], %r3;\n" + BAR + "\tld.shared.f32 %f2, [%r4];\n" + OUT,
    "reread after a store": STORE + "\tadd.f32 %f4, %f1, %f1;\n\tst.shared.f32 [%r4], %f4;\n"
                            "\tld.shared.f32 %f2, [%r4];\n\tfma.rn.f32 %f2, %f2, %f1, %f4;\n" + OUT,
    "setp and address add": "\tmov.u32 %r6, -5;\n\tsetp.lt.u32 %p1, %r6, 3;\n\tsetp.lt.s32 %p2, %r6, 3;\n"
                            "\tselp.f32 %f2, %f1, 0f40000000, %p1;\n\tselp.f32 %f3, %f1, 0f40400000, %p2;\n"
                            "\tadd.f32 %f2, %f2, %f3;\n\tadd.s64 %rd8, %rd7, -4;\n\tadd.s64 %rd9, %rd8, 4;\n"
                            "\tst.global.f32 [%rd9], %f2;\n",
    "word split, halves apart": "\tsetp.eq.u32 %p3, %r1, 0;\n\t@%p3 st.shared.f32 [%r2], %f1;\n" + BAR
                                + "\t@%p3 st.shared.b16 [%r2+2], %rs1;\n\t@!%p3 ld.shared.b16 %rs2, [%r2];\n"
                                + "\tst.global.f32 [%rd7], %f1;\n",
    "word split, race on a half": "\tsetp.eq.u32 %p3, %r1, 0;\n\t@%p3 st.shared.f32 [%r2], %f1;\n" + BAR
                                  + "\t@!%p3 st.shared.b16 [%r2+2], %rs1;\n\t@%p3 ld.shared.f32 %f2, [%r2];\n"
                                  + "\tst.global.f32 [%rd7], %f1;\n",
    "by name, ordered": "\tsetp.eq.u32 %p3, %r1, 0;\n\t@%p3 st.shared.f32 [buf+8], %f1;\n" + BAR
                        + "\tld.shared.f32 %f2, [buf+8];\n" + OUT,
    "by name, race": "\tst.shared.f32 [buf+8], %f1;\n\tld.shared.f32 %f2, [buf+8];\n" + OUT,
    "by name, misaligned": STORE + BAR + "\tld.shared.f32 %f2, [buf+2];\n" + OUT,
    "by name, out of bounds": STORE + BAR + "\tld.shared.f32 %f2, [buf+256];\n" + OUT,
    "wrapping add": "\tmov.u32 %r6, 2147483647;\n\tadd.s32 %r7, %r6, %r6;\n\tsetp.eq.s32 %p1, %r7, -2;\n"
                    "\tselp.f32 %f2, %f1, 0f40000000, %p1;\n" + OUT,
}


def outcome(fn):
    try:
        return "ok", fn()
    except CheckError as e:
        return type(e).__name__, str(e)


def engine(k, fast: bool, params=PARAMS):
    cta = ex.CTA(k, [1, 1, 1], [2, 1, 1], params)
    if not fast:
        cta._block = lambda pc: None      # every instruction through the general path (_step)
    with ck.no_gc():
        r = cta.run()
    return r


def checker(k, schedule, fast: bool, monkeypatch, params=PARAMS):
    if not fast:
        monkeypatch.setattr(ck, "quick", lambda ins, inputs, r: None)
    r = Replay(k, [1, 1, 1], [2, 1, 1], params, (0, 0, 0), Limits(), "")
    got = r.run(schedule)
    monkeypatch.undo()
    p = Printer()
    return {key: p.text(v) for key, v in sorted(got.items())}, sorted(r.witness), sorted(r.shadow["global"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_paths_change_no_outcome(name, monkeypatch):
    body = "\t.reg .b16 %rs<4>;\n\tmov.b16 %rs1, 7;\n" + CASES[name]
    k = parse(HEAD + body + TAIL, "t.ptx").kernel()
    p = Printer()
    runs = []
    for fast in (True, False):
        kind, r = outcome(lambda: engine(parse(HEAD + body + TAIL, "t.ptx").kernel(), fast))
        runs.append((kind, r) if kind != "ok" else
                    (kind, {key: p.text(v) for key, v in sorted(r.outputs.items())}, r.schedule, sorted(r.witness)))
    assert runs[0] == runs[1]
    schedule = runs[0][2] if runs[0][0] == "ok" else \
        [["run", 0, 1], ["bar", 0, None, [[0, 1]]], ["run", 0, 1]] if BAR in body else [["run", 0, 1]]
    fast, slow = (outcome(lambda: checker(k, schedule, f, monkeypatch)) for f in (True, False))
    assert fast == slow and (fast[0] == "ok") == (runs[0][0] == "ok")
    if fast[0] == "ok":   # the engine's word shadows find the checker's per-byte witness
        assert [list(w) for w in fast[1][1]] == [list(w) for w in runs[0][3]]


# f16 inputs (issue 17's tensor-core rows): 16-bit loads of an element already loaded, and f16 <-> f32 cvt
HALF = HEAD.replace("k_param_1\n)", "k_param_1,\n\t.param .u64 k_param_2\n)").replace(
    "\tld.global.f32 %f1, [%rd6];\n", "\tld.param.u64 %rd10, [k_param_2];\n\tcvta.to.global.u64 %rd11, %rd10;\n"
    "\tmul.wide.u32 %rd12, %r1, 2;\n\tadd.s64 %rd13, %rd11, %rd12;\n\tmov.f32 %f1, 0f3F800000;\n") \
    + "\t.reg .b16 %rs<8>;\n"
HALF_PARAMS = PARAMS + [{"name": "h", "role": "input", "dtype": "f16", "shape": [64]}]
TWICE = "\tld.global.nc.u16 %rs1, [%rd13];\n\tld.global.nc.u16 %rs2, [%rd13];\n"
HALF_CASES = {
    "loaded twice, converted": TWICE + "\tcvt.f32.f16 %f2, %rs1;\n\tcvt.f32.f16 %f3, %rs2;\n"
                               "\tfma.rn.f32 %f2, %f2, %f3, %f1;\n\tcvt.rn.f16.f32 %rs3, %f2;\n"
                               "\tcvt.f32.f16 %f4, %rs3;\n\tst.global.f32 [%rd7], %f4;\n",
    "raw bits converted": "\tmov.b16 %rs4, 15360;\n\tcvt.f32.f16 %f2, %rs4;\n\tst.global.f32 [%rd7], %f2;\n",
    "16 bits of an f32 input": "\tld.global.u16 %rs1, [%rd6];\n\tld.global.u16 %rs2, [%rd6];\n"
                               "\tcvt.f32.f16 %f2, %rs2;\n\tst.global.f32 [%rd7], %f2;\n",
    "misaligned second load": TWICE + "\tld.global.nc.u16 %rs3, [%rd13+1];\n\tcvt.f32.f16 %f2, %rs3;\n"
                              "\tst.global.f32 [%rd7], %f2;\n",
    "out of bounds after a load": TWICE + "\tld.global.nc.u16 %rs3, [%rd13+128];\n\tcvt.f32.f16 %f2, %rs3;\n"
                                  "\tst.global.f32 [%rd7], %f2;\n",
    "f32 load of two halves": TWICE + "\tld.global.nc.f32 %f2, [%rd13];\n\tst.global.f32 [%rd7], %f2;\n",
}


@pytest.mark.parametrize("name", sorted(HALF_CASES))
def test_f16_fast_paths_change_no_outcome(name, monkeypatch):
    text = HALF + HALF_CASES[name] + TAIL
    p = Printer()
    runs = []
    for fast in (True, False):
        kind, r = outcome(lambda: engine(parse(text, "t.ptx").kernel(), fast, HALF_PARAMS))
        runs.append((kind, r) if kind != "ok" else
                    (kind, {key: p.text(v) for key, v in sorted(r.outputs.items())}, r.schedule))
    assert runs[0] == runs[1]
    schedule = runs[0][2] if runs[0][0] == "ok" else [["run", 0, 1]]
    k = parse(text, "t.ptx").kernel()
    fast, slow = (outcome(lambda: checker(k, schedule, f, monkeypatch, HALF_PARAMS)) for f in (True, False))
    assert fast == slow and (fast[0] == "ok") == (runs[0][0] == "ok")
    if fast[0] == "ok":
        assert list(fast[1][0].values()) == list(runs[0][1].values())


@pytest.mark.parametrize("side", ["engine", "checker"])
def test_full_barrier_join_is_each_threads_own_clock(side):
    """A barrier of all n threads takes each one's own entry as the join (clocks change only by ticks and joins,
    so no thread holds more of thread i than i does), in the engine (``CTA._sync``) and the checker
    (``Replay.sync``): the same clocks as the n^2 join, after random warp-sized and full barriers."""
    import random

    k = parse(HEAD + TAIL, "t.ptx").kernel()
    if side == "engine":
        cta = ex.CTA(k, [1, 1, 1], [96, 1, 1], PARAMS)
        threads, sync = cta.threads, cta._sync
    else:
        r = Replay(k, [1, 1, 1], [96, 1, 1], PARAMS, (0, 0, 0), Limits(), "")
        threads, sync = r.th, r.sync
    rng = random.Random(5)
    for _ in range(40):
        group = threads if rng.random() < 0.3 else rng.sample(threads, rng.randint(1, 95))
        want = [max(t.vc[i] + (i == t.lin) for t in group) for i in range(len(threads))]
        sync(group)
        assert all(t.vc == want for t in group)
