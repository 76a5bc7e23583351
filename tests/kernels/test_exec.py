"""Per-thread CTA interpreter: arithmetic over the reals, memory, barriers, races, deadlocks."""

import pytest

from certificates.errors import Unsupported
from certificates.poly import Rat, apply
from verifier.kernels.exec import DeadlockError, KernelError, RaceError, run_cta
from certificates.ptx import parse

HEAD = """.version 9.0
.target sm_80
.address_size 64
.visible .entry k(
\t.param .u64 k_param_0,
\t.param .u64 k_param_1
)
{
\t.reg .pred %p<4>;
\t.reg .f32 %f<16>;
\t.reg .b32 %r<32>;
\t.reg .b64 %rd<16>;
\t.shared .align 16 .b8 buf[256];
\tld.param.u64 %rd1, [k_param_0];
\tld.param.u64 %rd2, [k_param_1];
\tcvta.to.global.u64 %rd3, %rd1;
\tcvta.to.global.u64 %rd4, %rd2;
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd5, %r1, 4;
\tadd.s64 %rd6, %rd3, %rd5;
\tadd.s64 %rd7, %rd4, %rd5;
\tld.global.f32 %f1, [%rd6];
\tmov.u32 %r2, buf;
\tshl.b32 %r3, %r1, 2;
\tadd.s32 %r4, %r2, %r3;
"""
TAIL = "\tret;\n}\n"
PARAMS = [{"name": "x", "role": "input", "dtype": "f32", "shape": [64]},
          {"name": "y", "role": "output", "dtype": "f32", "shape": [64]}]


def run(body: str, threads: int = 2):
    k = parse(HEAD + body + TAIL, "t.ptx").kernel()
    return run_cta(k, [1, 1, 1], [threads, 1, 1], PARAMS).outputs


def x(i):
    return Rat.var(f"x[{i}]")


def test_exp_idiom_and_float_ops():
    out = run("\tmul.f32 %f2, %f1, 0f3FB8AA3B;\n\tex2.approx.f32 %f3, %f2;\n"
              "\tfma.rn.f32 %f4, %f3, %f1, 0f3F800000;\n\tmax.f32 %f5, %f4, %f1;\n"
              "\tst.global.f32 [%rd7], %f5;\n", threads=1)
    e = apply("exp", x(0))
    assert out[("y", 0)].equals(apply("max", e * x(0) + 1, x(0)))


def test_ex2_of_other_values_is_exp_times_ln2():
    out = run("\tex2.approx.f32 %f3, %f1;\n\tst.global.f32 [%rd7], %f3;\n", threads=1)
    assert out[("y", 0)].equals(apply("exp", x(0) * apply("log", 2)))


def test_shared_exchange_with_barrier_and_vector_punning():
    out = run("\tmov.b32 %r5, %f1;\n\tst.shared.u32 [%r4], %r5;\n\tbar.sync 0;\n"
              "\txor.b32 %r6, %r3, 4;\n\tadd.s32 %r7, %r2, %r6;\n\tld.shared.f32 %f2, [%r7];\n"
              "\tadd.f32 %f3, %f1, %f2;\n\tst.global.f32 [%rd7], %f3;\n")
    assert out[("y", 0)].equals(x(0) + x(1)) and out[("y", 1)].equals(x(0) + x(1))


def test_v4_store_then_scalar_loads():
    out = run("\tsetp.ne.s32 %p1, %r1, 0;\n\t@%p1 bra $L_END;\n"
              "\tld.global.v4.f32 {%f2, %f3, %f4, %f5}, [%rd3];\n"
              "\tst.shared.v4.f32 [buf], {%f2, %f3, %f4, %f5};\n"
              "\tld.shared.f32 %f6, [buf+12];\n\tst.global.f32 [%rd7], %f6;\n$L_END:\n", threads=1)
    assert out[("y", 0)].equals(x(3))


def test_missing_barrier_is_a_race_naming_both_accesses():
    body = ("\tst.shared.f32 [%r4], %f1;\n"
            "\txor.b32 %r6, %r3, 4;\n\tadd.s32 %r7, %r2, %r6;\n\tld.shared.f32 %f2, [%r7];\n"
            "\tst.global.f32 [%rd7], %f2;\n")
    with pytest.raises(RaceError) as e:
        run(body)
    r = e.value.race
    assert {r.first.tid, r.second.tid} == {0, 1}
    assert {r.first.write, r.second.write} == {True, False}
    assert "st.shared.f32" in str(e.value) and "ld.shared.f32" in str(e.value)


def test_write_write_race_on_global():
    with pytest.raises(RaceError, match="global"):
        run("\tst.global.f32 [%rd4], %f1;\n")


def test_deadlock_when_a_thread_skips_the_barrier():
    body = "\tsetp.eq.s32 %p1, %r1, 1;\n\t@%p1 bra $L_END;\n\tbar.sync 0;\n$L_END:\n"
    with pytest.raises(DeadlockError, match="bar.sync 0"):
        run(body)


def test_barrier_matched_by_count_not_by_pc_across_warps():
    body = ("\tst.shared.f32 [%r4], %f1;\n\tsetp.ge.s32 %p1, %r1, 32;\n\t@%p1 bra $L_B;\n"
            "\tbar.sync 0;\n\tbra.uni $L_C;\n$L_B:\n\tbar.sync 0;\n$L_C:\n"
            "\txor.b32 %r6, %r3, 128;\n\tadd.s32 %r7, %r2, %r6;\n\tld.shared.f32 %f2, [%r7];\n"
            "\tst.global.f32 [%rd7], %f2;\n")
    out = run(body, threads=64)
    assert out[("y", 0)].equals(x(32)) and out[("y", 32)].equals(x(0))


def test_lanes_of_one_warp_at_different_bar_sync_rejected():
    body = ("\tsetp.eq.s32 %p1, %r1, 1;\n\t@%p1 bra $L_B;\n"
            "\tbar.sync 0;\n\tbra.uni $L_C;\n$L_B:\n\tbar.sync 0;\n$L_C:\n")
    with pytest.raises(KernelError, match="different aligned barriers"):
        run(body)


def test_shfl_down_and_bfly():
    body = ("\tmov.b32 %r5, %f1;\n"
            "\tshfl.sync.down.b32 %r6|%p1, %r5, 1, 31, -1;\n\tmov.b32 %f2, %r6;\n"
            "\tshfl.sync.bfly.b32 %r7|%p2, %r5, 2, 31, -1;\n\tmov.b32 %f3, %r7;\n"
            "\tselp.b32 %r8, 1, 0, %p1;\n\tcvt.rn.f32.s32 %f4, %r8;\n"
            "\tadd.f32 %f5, %f2, %f3;\n\tadd.f32 %f6, %f5, %f4;\n\tst.global.f32 [%rd7], %f6;\n")
    out = run(body, threads=32)
    assert out[("y", 0)].equals(x(1) + x(2) + 1)
    assert out[("y", 31)].equals(x(31) + x(29))          # no lane 32: own value, p false


def test_warp_sync_orders_lanes_and_partial_mask_deadlocks():
    ok = ("\tst.shared.f32 [%r4], %f1;\n\tbar.warp.sync -1;\n"
          "\txor.b32 %r6, %r3, 4;\n\tadd.s32 %r7, %r2, %r6;\n\tld.shared.f32 %f2, [%r7];\n"
          "\tst.global.f32 [%rd7], %f2;\n")
    assert run(ok, threads=32)[("y", 1)].equals(x(0))
    bad = "\tsetp.gt.u32 %p1, %r1, 15;\n\t@%p1 bra $L_END;\n\tbar.warp.sync -1;\n$L_END:\n"
    with pytest.raises(DeadlockError, match="bar.warp.sync"):
        run(bad, threads=32)


def test_out_of_bounds_and_unsupported():
    with pytest.raises(KernelError, match="out of bounds"):
        run("\tld.shared.f32 %f2, [%r4+256];\n", threads=1)
    with pytest.raises(Unsupported, match="data-dependent"):
        run("\tmov.b32 %r5, %f1;\n\tadd.s32 %r6, %r5, 1;\n", threads=1)
    with pytest.raises(Unsupported, match="symbolic float comparison"):
        run("\tsetp.gt.f32 %p1, %f1, 0f00000000;\n", threads=1)


def test_named_barrier_with_thread_count():
    # a count below the CTA's threads has no fixed member set (docs/kernels.md): refused;
    # a count equal to the CTA's threads is an ordinary barrier
    body = ("\tsetp.gt.u32 %p1, %r1, 31;\n\t@%p1 bra $L_END;\n"
            "\tst.shared.f32 [%r4], %f1;\n\tbar.sync 1, {n};\n"
            "\txor.b32 %r6, %r3, 4;\n\tadd.s32 %r7, %r2, %r6;\n\tld.shared.f32 %f2, [%r7];\n"
            "\tst.global.f32 [%rd7], %f2;\n$L_END:\n")
    with pytest.raises(Unsupported, match="count 32 is not the CTA's 64 threads"):
        run(body.format(n=32), threads=64)
    out = run(body.format(n=32), threads=32)
    assert out[("y", 0)].equals(x(1)) and len(out) == 32


def test_vote_ballot_and_all():
    body = ("\tsetp.lt.u32 %p1, %r1, 3;\n\tvote.sync.ballot.b32 %r5, %p1, -1;\n"
            "\tvote.sync.all.pred %p2, %p1, -1;\n\tselp.b32 %r6, 100, 0, %p2;\n\tadd.s32 %r7, %r5, %r6;\n"
            "\tcvt.rn.f32.u32 %f2, %r7;\n\tst.global.f32 [%rd7], %f2;\n")
    out = run(body, threads=32)
    assert out[("y", 5)].constant() == 7


def test_shfl_lanes_at_different_instructions_do_not_meet():
    body = ("\tmov.b32 %r5, %f1;\n\tsetp.eq.s32 %p1, %r1, 0;\n\t@%p1 bra $L_A;\n"
            "\tshfl.sync.bfly.b32 %r6|%p2, %r5, 1, 31, -1;\n\tbra.uni $L_END;\n"
            "$L_A:\n\tshfl.sync.bfly.b32 %r6|%p2, %r5, 1, 31, -1;\n$L_END:\n")
    with pytest.raises(DeadlockError, match="shfl"):
        run(body, threads=32)


def test_running_max_flattens_to_one_atom():
    """A running maximum (``max.f32`` in a loop) is one ``max`` atom over every value seen, named as
    ``apply`` names the maximum of all of them at once (argument texts are cached on each ``Rat``)."""
    running = x(0)
    for i in range(1, 6):
        running = apply("max", running, x(i))
    assert str(running) == str(apply("max", *[x(i) for i in range(6)]))
    assert str(apply("max", running, x(2) * 2 - 1)) == str(apply("max", x(2) * 2 - 1, *[x(i) for i in range(6)]))


def test_cached_input_load_keeps_the_bounds_of_its_address():
    """The engine's fast path for repeated input loads (``_compile_load``) serves an element only
    through an address of its own tensor: ``x + 2^32`` lands on the already loaded ``z[0]`` and is
    still out of bounds of ``x``."""
    ptx = """.version 9.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u64 k_param_2)
{
\t.reg .f32 %f<4>;
\t.reg .b64 %rd<8>;
\tld.param.u64 %rd1, [k_param_0];
\tld.param.u64 %rd2, [k_param_1];
\tld.param.u64 %rd3, [k_param_2];
\tld.global.f32 %f1, [%rd2];
\tld.global.f32 %f2, [%rd2];
\tadd.s64 %rd4, %rd1, 4294967296;
\tld.global.f32 %f3, [%rd4];
\tst.global.f32 [%rd3], %f3;
\tret;
}
"""
    k = parse(ptx, "t.ptx").kernel()
    params = [{"name": "x", "role": "input", "dtype": "f32", "shape": [4]},
              {"name": "z", "role": "input", "dtype": "f32", "shape": [4]},
              {"name": "y", "role": "output", "dtype": "f32", "shape": [4]}]
    with pytest.raises(KernelError, match="out of bounds"):
        run_cta(k, [1, 1, 1], [1, 1, 1], params)
    ok = ptx.replace("\tadd.s64 %rd4, %rd1, 4294967296;\n", "\tmov.u64 %rd4, %rd2;\n")
    assert run_cta(parse(ok, "t.ptx").kernel(), [1, 1, 1], [1, 1, 1], params).outputs[("y", 0)].equals(Rat.var("z[0]"))
