"""Kernel checker on what CUTLASS's PTX uses (issue 13, the CUTLASS GEMM of the real corpus):
the null test of a tensor pointer, uninitialized module variables, bare register names in
inline-asm scopes, the ``.L2::<n>B`` prefetch hint. For each, the program that would fool the
rule is not "equivalent" and its certificate (engine-written for a benign twin, then tampered)
is REJECTed; the sound neighbours still verify."""

from __future__ import annotations

import pytest

from certificates.errors import Unsupported
from certificates.ptx import parse
from test_kernel_soundness import STORE, SUM, certify, check, kernel, outcome, rejected, with_ptx

BENIGN = SUM + STORE


# ------------------------------------------------------------------ ptr != nullptr

def null_test(ptr: str, cmp: str = "ne") -> str:
    """``out = x + y`` if ``ptr <cmp> 0``, else ``out = x``."""
    return (f"\tsetp.{cmp}.s64 %p1, {ptr}, 0;\n\tmov.f32 %f3, %f1;\n"
            "\t@%p1 add.f32 %f3, %f1, %f2;\n" + STORE)


@pytest.mark.parametrize("ptr", ["%rd4", "%rd1", "%rd10"], ids=["global", "generic", "offset"])
def test_tensor_pointer_is_not_null(tmp_path, ptr):
    ok, detail = outcome(certify(tmp_path, BENIGN, null_test(ptr), threads=2), tmp_path)
    assert ok, detail


@pytest.mark.parametrize("forge, cmp", [
    ("\tadd.s64 %rd11, %rd4, -1099511627776;\n", "ne"),    # outside x: may be 0 under some layout
    ("\tadd.s64 %rd11, %rd4, 0;\n", "lt"),                 # an order, not (in)equality
], ids=["out-of-bounds", "order"])
def test_other_pointer_tests_are_refused(tmp_path, forge, cmp):
    attack = forge + null_test("%rd11", cmp)
    _, r = check(tmp_path, BENIGN, attack, threads=2)
    assert r.verdict == "unsupported" and "layout-dependent" in r.message, r.message
    rejected(with_ptx(certify(tmp_path, BENIGN, BENIGN, threads=2), attack), tmp_path, "layout-dependent")


# ------------------------------------------------------------------ module variables

def module(decl: str, body: str) -> str:
    return kernel(body).replace(".address_size 64\n", f".address_size 64\n{decl}\n", 1)


def test_unused_uninitialized_global_is_accepted_and_a_use_refused():
    decl = ".global .align 1 .b8 tag[1];"
    parse(module(decl, BENIGN), "t.ptx").kernel()
    with pytest.raises(Unsupported, match="tag without a byte initializer"):
        parse(module(decl, "\tmov.u64 %rd11, tag;\n" + BENIGN), "t.ptx").kernel()


# ------------------------------------------------------------------ inline-asm scopes

SCOPED = ("\t{\n\t.reg .pred p;\n\t.reg .pred %p;\n\tsetp.ne.s32 p, %r1, 0;\n\tsetp.eq.s32 %p, %r1, 0;\n"
          "\tmov.f32 %f3, %f1;\n\t@{g} add.f32 %f3, %f1, %f2;\n\t}}\n" + STORE)
BY_TID = "\tsetp.ne.s32 %p1, %r1, 0;\n\tmov.f32 %f3, %f1;\n\t@%p1 add.f32 %f3, %f1, %f2;\n" + STORE


def test_bare_scoped_register_is_its_own_register(tmp_path):
    ok, detail = outcome(certify(tmp_path, BY_TID, SCOPED.replace("{g}", "p").replace("}}", "}"), threads=2),
                         tmp_path)
    assert ok, detail
    wrong = SCOPED.replace("{g}", "%p").replace("}}", "}")       # the other predicate of the scope
    assert check(tmp_path, BY_TID, wrong, threads=2)[1].verdict == "not-equivalent"
    ok, detail = outcome(with_ptx(certify(tmp_path, BY_TID, BY_TID, threads=2), wrong), tmp_path)
    assert not ok, detail


# ------------------------------------------------------------------ ld qualifiers with '::'

def test_l2_prefetch_size_is_a_hint(tmp_path):
    body = "\tld.global.L2::128B.f32 %f4, [%rd9];\n" + BENIGN.replace("%f2", "%f4")
    ok, detail = outcome(certify(tmp_path, BENIGN, body), tmp_path)
    assert ok, detail


@pytest.mark.parametrize("op", ["ld.global.L2::cache_hint.f32 %f4, [%rd9], %rd4",
                                "ld.shared::cluster.f32 %f4, [buf]", "ld.global.L2::96B.f32 %f4, [%rd9]"])
def test_other_qualifiers_with_colons_are_refused(op):
    with pytest.raises(Unsupported, match="unsupported PTX instruction"):
        parse(kernel(f"\t{op};\n" + BENIGN), "t.ptx").kernel()
