"""The checker's lockstep replay (``certificates.lockstep``, issue 17) changes no outcome: on both sides of every
corpus pair (small K) and on the racy and odd kernels of test_fast_paths.py, it either declines (None: the caller
replays per thread) or gives exactly the per-thread replay's outputs (printed), witness, output bytes written and
touched; it never completes where the per-thread replay rejects. And it completes on the GEMMs."""

import pytest

from certificates.errors import CheckError
from certificates.kernel import Printer, Replay, no_gc
from certificates.limits import Limits
from certificates.lockstep import lockstep
from certificates.ptx import parse
from verifier.kernels import exec as ex
from verifier.kernels.equiv import CORPUS, at_k, load_pairs

from test_exec import HEAD, PARAMS, TAIL
from test_fast_paths import CASES, HALF, HALF_CASES, HALF_PARAMS

SIDES = [(base, name, side) for base in (CORPUS, CORPUS / "real") for name in load_pairs(base)
         for side in ("reference", "optimized")]
# lockstep must complete on these kernels (GEMMs, their references, and the small kernels it covers)
COMPLETES = {"sgemm_naive", "sgemm_coalesced", "sgemm_smem", "sgemm_1d_blocktile", "sgemm_2d_blocktile",
             "sgemm_vectorized", "sgemm_warptile", "sgemm_double_buffer", "bug_sgemm_2d_tile_offset",
             "sgemm_agent_regtile", "sgemm_tiled32_ref", "matmul_ref", "const_table_lookup",
             "dyn_smem_reverse", "dyn_smem_ref", "func_call_noinline", "func_call_ref", "local_array_buf",
             "local_array_ref", "permute_scatter_ref"}


def both(text: str, file: str, entry: str | None, launch: tuple, schedule: list) -> list:
    """Per thread, then in lockstep (``launch``: grid, block, params, cta, dynamic shared bytes): (printed outputs,
    witness, bytes written, bytes touched), an error, or None."""
    out = []
    for lock in (False, True):
        r = Replay(parse(text, file).kernel(entry), *launch[:4], Limits(), "s", launch[4])
        try:
            with no_gc():
                got = lockstep(r, schedule) if lock else r.run(schedule)
        except CheckError as e:
            out.append((type(e).__name__, str(e)))
            continue
        p = Printer()
        out.append(None if got is None else (
            {key: p.text(v) for key, v in sorted(got.items())}, sorted(r.witness), sorted(r.gmem),
            sorted(set(r.shadow["global"]) | {w + i for w in r.words["global"] for i in range(4)})))
    return out


def engine_schedule(k, launch: tuple, n: int) -> list:
    """The engine's schedule, or one running every thread to its end (for racy and deadlocking kernels)."""
    try:
        with no_gc():
            return ex.CTA(k, *launch[:4], "s", launch[4]).run().schedule
    except CheckError:
        return [["run", 0, n - 1]]


@pytest.mark.parametrize("base,name,side", SIDES, ids=[f"{b.name}:{n}:{s}" for b, n, s in SIDES])
def test_lockstep_replay_is_the_per_thread_replay(base, name, side):
    pair = load_pairs(base)[name]
    pair = at_k(pair, 16) or pair
    s = pair[side]
    by = {p["name"]: p for p in pair["params"]}
    params = [by[n] for n in s["params"]] if "params" in s else pair["params"]
    text = (base / s["ptx"]).read_text()
    launch = (s["grid"], s["block"], params, tuple(pair.get("check_cta", [0, 0, 0])), s.get("shared_bytes"))
    try:
        k = parse(text, s["ptx"]).kernel(s["entry"])
    except CheckError as e:   # refused before any replay
        pytest.skip(str(e))
    n = s["block"][0] * s["block"][1] * s["block"][2]
    thread, lock = both(text, s["ptx"], s["entry"], launch, engine_schedule(k, launch, n))
    assert lock is None or (lock == thread and type(thread[0]) is dict), (thread, lock)
    if s["entry"] in COMPLETES:
        assert lock is not None, f"{s['entry']}: lockstep declined"
    if n < 8:   # per thread is faster: lockstep declines (reductions' 1-thread references)
        assert lock is None, f"{s['entry']}: lockstep ran {n} threads"


@pytest.mark.parametrize("name", sorted(CASES) + sorted(HALF_CASES))
def test_lockstep_on_racy_and_odd_kernels(name):
    text = HALF + HALF_CASES[name] + TAIL if name in HALF_CASES else \
        HEAD + "\t.reg .b16 %rs<4>;\n\tmov.b16 %rs1, 7;\n" + CASES[name] + TAIL
    params = HALF_PARAMS if name in HALF_CASES else PARAMS
    launch = ([1, 1, 1], [2, 1, 1], params, (0, 0, 0), None)
    k = parse(text, "t.ptx").kernel()
    for schedule in (engine_schedule(k, launch, 2), [["run", 0, 1], ["bar", 0, None, [[0, 1]]], ["run", 0, 1]]):
        thread, lock = both(text, "t.ptx", None, launch, schedule)
        assert lock is None or (lock == thread and type(thread[0]) is dict), (name, thread, lock)


def test_lockstep_declines_a_schedule_the_per_thread_replay_rejects():
    pair = at_k(load_pairs()["sgemm_smem"], 16)
    s = pair["optimized"]
    text = (CORPUS / s["ptx"]).read_text()
    launch = (s["grid"], s["block"], pair["params"], (0, 0, 0), None)
    k = parse(text, s["ptx"]).kernel(s["entry"])
    good = engine_schedule(k, launch, 256)
    bad = [good[0], ["bar", 0, None, [[0, 254]]], *good[2:]], [good[0], ["bar", 1, None, [[0, 255]]], *good[2:]], \
        [good[0], ["run", 0, 255], *good[1:]], good[:-1], [["run", 0, 127], *good]
    for schedule in (good, *bad):
        thread, lock = both(text, s["ptx"], s["entry"], launch, schedule)
        assert (lock == thread) if schedule is good else (lock is None and type(thread[0]) is str), schedule[:3]


OWN, BAR = "\tst.shared.f32 [%r4], %f1;\n", "\tbar.sync 0;\n"
OTHER = "\txor.b32 %r8, %r1, 33;\n\tshl.b32 %r9, %r8, 2;\n\tadd.s32 %r5, %r2, %r9;\n"   # a thread of the other warp
READ, OUT = "\tld.shared.f32 %f2, [%r5];\n", "\tfma.rn.f32 %f3, %f2, %f1, %f2;\n\tst.global.f32 [%rd7], %f3;\n"
WARP1 = "\tsetp.lt.u32 %p1, %r1, 32;\n"
TWO_WARPS = {   # 64 threads; name -> (kernel body, lockstep completes)
    "ordered both ways": (OWN + BAR + OTHER + READ + BAR + "\tst.shared.f32 [%r4], %f2;\n" + BAR + READ + OUT, True),
    "raw race": (OWN + OTHER + READ + OUT, False),
    "war race": (OWN + BAR + OTHER + READ + "\tst.shared.f32 [%r4], %f2;\n" + OUT, False),
    "output waw race": ("\tst.global.f32 [%rd4], %f1;\n", False),
    "output rewritten after a barrier": ("\tst.global.f32 [%rd7], %f1;\n" + BAR + "\txor.b32 %r8, %r1, 33;\n"
                                         "\tmul.wide.u32 %rd8, %r8, 4;\n\tadd.s64 %rd9, %rd4, %rd8;\n"
                                         "\tst.global.f32 [%rd9], %f1;\n", True),
    "divergent warps": (WARP1 + "\t@%p1 bra $L1;\n" + OWN + "$L1:\n" + BAR + "\tor.b32 %r8, %r1, 32;\n"
                        "\tshl.b32 %r9, %r8, 2;\n\tadd.s32 %r5, %r2, %r9;\n" + READ + OUT, True),
    "barriers at two pcs": (OWN + WARP1 + "\t@%p1 bra $L1;\n" + BAR + "\tbra.uni $L2;\n$L1:\n" + BAR + "$L2:\n"
                            + OTHER + READ + OUT, True),
}


@pytest.mark.parametrize("name", sorted(TWO_WARPS))
def test_lockstep_on_two_warps(name):
    body, completes = TWO_WARPS[name]
    text = HEAD + body + TAIL
    launch = ([1, 1, 1], [64, 1, 1], PARAMS, (0, 0, 0), None)
    thread, lock = both(text, "t.ptx", None, launch, engine_schedule(parse(text, "t.ptx").kernel(), launch, 64))
    assert (lock == thread and type(thread[0]) is dict and (thread[1] or "race" in name)) if completes else \
        (lock is None and thread[0] == "Rejected"), (thread, lock)
