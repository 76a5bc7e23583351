"""PTX front end: the nvcc 13 corpus parses; bad input is rejected on the right line."""

from pathlib import Path

import pytest

from certificates.errors import Malformed, Unsupported
from certificates.ptx import FImm, Mem, Pair, Reg, Sym, Vec, parse
from verifier.kernels.launch import parse_file

PTX = Path(__file__).resolve().parents[2] / "examples" / "kernels" / "ptx"
FILES = sorted(PTX.glob("*.ptx"))


def test_corpus_present():
    assert len(FILES) == 62   # with reduce_ref_n and reduce_tree_n (the threads-per-CTA curve), issue 17's attention kernels


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_corpus_file_parses(path):
    mod = parse_file(path)
    assert mod.version == "9.0" and mod.target == "sm_80" and mod.address_size == 64
    k = mod.kernel(path.stem)
    assert k.instrs and k.instrs[-1].op == "ret"
    assert all(0 <= i <= len(k.instrs) for i in k.labels.values())
    assert all(ins.index == n for n, ins in enumerate(k.instrs))


def test_reduce5_counts_and_shapes():
    k = parse_file(PTX / "reduce5_unroll_last_warp.ptx").kernel()
    assert len(k.instrs) == 70            # 69 counted by check.py + the final ret
    assert len(k.labels) == 5
    assert [p.type for p in k.params] == ["u64", "u64"]
    assert k.regs["%f25"] == ".f32" and "%f26" not in k.regs and k.regs["%p5"] == ".pred"
    (sdata,) = k.shared
    assert (sdata.size, sdata.align, sdata.extern) == (512, 4, False)
    ld = next(i for i in k.instrs if i.opcode == "ld.volatile.shared.f32" and "+128" in i.text)
    assert ld.operands[1] == Mem(Reg("%r12"), 128)
    bra = next(i for i in k.instrs if i.op == "bra")
    assert bra.guard == ("%p1", False) and bra.operands == [Sym("$L__BB0_4")]
    assert k.labels["$L__BB0_1"] == 23


def test_vectors_pairs_and_float_literals():
    k = parse_file(PTX / "softmax_online_warp.ptx").kernel()
    shfl = next(i for i in k.instrs if i.op == "shfl")
    assert shfl.operands[0] == Pair(Reg("%r14"), Reg("%p1"))
    mul = next(i for i in k.instrs if i.opcode == "mul.f32")
    assert mul.operands[2] == FImm(0x3FB8AA3B, 32)
    k = parse_file(PTX / "sgemm_vectorized.ptx").kernel()
    v4 = next(i for i in k.instrs if i.opcode == "ld.global.nc.v4.u32")
    assert isinstance(v4.operands[0], Vec) and len(v4.operands[0].items) == 4


def test_inline_asm_scopes_and_pragma():
    k = parse_file(PTX / "attention_naive_half.ptx").kernel()
    cvts = [i for i in k.instrs if i.opcode == "cvt.f32.f16"]
    assert len(cvts) == 96
    k = parse_file(PTX / "stencil_pingpong.ptx").kernel()
    assert not any(i.text.startswith(".pragma") for i in k.instrs)
    k = parse_file(PTX / "hgemm_mma.ptx").kernel()
    assert sum(i.op == "mma" for i in k.instrs) == 40
    assert sum(i.op == "ldmatrix" for i in k.instrs) == 30


HEAD = ".version 9.0\n.target sm_80\n.address_size 64\n\n"


def _kernel(body: str) -> str:
    return HEAD + (".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n"
                   "\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n" + body + "\tret;\n}\n")


def test_scoped_registers_extern_shared_and_guards():
    src = _kernel("\t.extern .shared .align 16 .b8 smem[];\n"
                  "\t{ .reg .b32 %t; mov.u32 %t, 1; mov.u32 %r1, %t; }\n"
                  "\t{\n\t.reg .b32 %t;\n\tmov.u32 %t, 2;\n\t}\n"
                  "\t@!%p1 bra $L1;\n$L1:\n\t/* block\n comment */ mov.u32 %r2, smem; // tail\n")
    k = parse(src, "t.ptx").kernel("k")
    names = [i.operands[0].name for i in k.instrs if i.op == "mov"]
    assert names[0] == "%t@1" and names[2] == "%t@2"
    assert k.instrs[1].operands[1] == Reg("%t@1")
    assert k.vars["smem"].extern and k.vars["smem"].size == 0 and k.vars["smem"].align == 16
    assert k.instrs[3].guard == ("%p1", True)
    assert k.labels["$L1"] == 4


@pytest.mark.parametrize("body,line,needle", [
    ("\tadd.s32 %r1, %r9, 1;\n", 11, "undeclared register %r9"),
    ("\tmov.u32 %r1, 1;\n\tbra $NOWHERE;\n", 12, "unknown label $NOWHERE"),
    ("\tadd.s32 %r1, [%r2+, 1;\n", 11, "add.s32"),
    ("\tmov.u32 %r1, 1;\n\tst.shared.f32 [%r1], 1.5;\n", 12, "decimal float literal"),
    ("\tmov.u32 %r1 1\n", 11, "bad register"),
])
def test_malformed_rejected_with_line(body, line, needle):
    with pytest.raises(Malformed) as e:
        parse(_kernel(body), "bad.ptx")
    assert e.value.where == f"bad.ptx:{line}", str(e.value)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("instr", [
    "cp.async.ca.shared.global [%r1], [%rd1], 16;",
    "mbarrier.init.shared.b64 [%r1], 1;",
    "wgmma.fence.sync.aligned;",
    "atom.shared.add.u32 %r1, [%r2], 1;",
    "red.global.add.f32 [%rd1], %f1;",
])
def test_unsupported_rejected_with_line(instr):
    src = _kernel("\tmov.u32 %r1, 0;\n\t" + instr + "\n")
    with pytest.raises(Unsupported) as e:
        parse(src, "u.ptx")
    msg = str(e.value)
    assert msg.startswith("u.ptx:12:"), msg
    assert instr.split()[0].rstrip(";") in msg


def test_missing_headers_and_braces():
    with pytest.raises(Malformed, match="missing .version"):
        parse(".visible .entry k()\n{\nret;\n}\n", "h.ptx")
    with pytest.raises(Malformed, match="h.ptx"):
        parse(HEAD + ".visible .entry k()\n{\n\tret;\n", "h.ptx")
    with pytest.raises(Malformed, match="no .entry"):        # a .func alone (it is inlined into callers)
        parse(HEAD + ".func f()\n{\n\tret;\n}\n", "h.ptx")


def test_operand_count_checked():
    with pytest.raises(Malformed, match=r"bad.ptx:11: `add.s32` takes 3 operands, got 2"):
        parse(_kernel("\tadd.s32 %r1, %r2;\n"), "bad.ptx")
    with pytest.raises(Malformed, match="memory"):
        parse(_kernel("\tld.shared.u32 %r1, %r2;\n"), "bad.ptx")


def test_mutated_corpus_never_crashes():
    """Random one-character edits of the reduction kernels: parse + execute either work
    or fail with a one-line pvcert error (never a Python exception)."""
    import random

    from certificates.errors import CheckError
    from verifier.kernels.exec import run_cta

    rng = random.Random(7)
    files = sorted(PTX.glob("reduce[1-8]*.ptx"))
    params = [{"name": "x", "role": "input", "dtype": "f32", "shape": [512]},
              {"name": "out", "role": "output", "dtype": "f32", "shape": [2]}]
    for _ in range(60):
        f = rng.choice(files)
        lines = f.read_text().split("\n")
        i = rng.randrange(len(lines))
        if not lines[i].strip():
            continue
        j = rng.randrange(len(lines[i]))
        lines[i] = lines[i][:j] + rng.choice("%{}[]+;,.@!0123456789abxrp ") + lines[i][j + 1:]
        try:
            run_cta(parse("\n".join(lines), f.name).kernel(), [2, 1, 1], [64, 1, 1], params)
        except CheckError as e:
            assert "\n" not in str(e)
