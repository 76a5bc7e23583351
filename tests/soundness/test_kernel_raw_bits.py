"""Raw bits read as a float take the format of the instruction's source type (PTX: ``cvt.f32.f16 d, a``
reads ``a`` as an f16). Until 2026-11-29 the engine and the checker read every raw register as f32 bits:
``mov.b16 %rs1, 0x3C00; cvt.f32.f16`` (f16 1.0) was 15360 * 2^-149, so a kernel multiplying by it and one
multiplying by the f32 constant ``0f00003C00`` were "equivalent" (a false ACCEPT); bf16 bits are refused."""

from __future__ import annotations

from certificates.errors import Unsupported
from certificates.kernel import typed
from certificates.poly import Rat
from test_kernel_reach import STORE, certify, entry, forged, kernel, rejected, with_ptx
from verifier.kernels.equiv import check_pair

import pytest

HALF_ONE = "\t.reg .b16 %rs<4>;\n\tmov.b16 %rs1, 15360;\n\tcvt.f32.f16 %f4, %rs1;\n\tmul.f32 %f3, %f1, %f4;\n" + STORE
TINY = "\tmul.f32 %f3, %f1, 0f00003C00;\n" + STORE     # the same bits read as an f32: 15360 * 2^-149
IDENTITY = "\tmov.f32 %f3, %f1;\n" + STORE


def test_f16_bits_are_an_f16_value():
    assert typed(15360, "f16").equals(Rat.of(1)) and typed(0xC000, "f16").equals(Rat.of(-2))
    with pytest.raises(Unsupported, match="bf16"):
        typed(0x3F80, "bf16")


def test_f16_one_is_one_not_the_f32_denormal(tmp_path):
    assert check_pair(entry(tmp_path, kernel(IDENTITY), kernel(HALF_ONE)), tmp_path).verdict == "equivalent"
    assert check_pair(entry(tmp_path, kernel(TINY), kernel(HALF_ONE)), tmp_path).verdict == "not-equivalent"


def test_replay_reads_the_bits_as_f16(tmp_path):
    """A certificate of ``x`` against ``x * tiny`` as the engine would write it had it found them equal, and
    one of ``x`` against ``x * cvt(f16 1.0)`` whose optimized PTX is swapped for ``x * tiny``: both REJECT."""
    rejected(forged(tmp_path, entry(tmp_path, kernel(IDENTITY), kernel(TINY))), tmp_path, "out[0]")
    cert = certify(tmp_path, entry(tmp_path, kernel(IDENTITY), kernel(HALF_ONE)))
    rejected(with_ptx(cert, kernel(TINY)), tmp_path, "the certified normal form is not the replay")


def test_bf16_bits_refused(tmp_path):
    body = "\t.reg .b16 %rs<4>;\n\tmov.b16 %rs1, 16256;\n\tcvt.f32.bf16 %f4, %rs1;\n\tmul.f32 %f3, %f1, %f4;\n" + STORE
    report = check_pair(entry(tmp_path, kernel(IDENTITY), kernel(body)), tmp_path)
    assert report.verdict == "unsupported" and "bf16" in report.message
