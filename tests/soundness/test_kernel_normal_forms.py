"""Kernel claims hold by equal normal forms only (no solver is in their trusted base): ``max(x, y) + min(x, y)``
against ``x + y`` is true over the reals and z3 proves it, but the normal forms differ. The engine says ``unknown``
(never ``equivalent``), and a certificate written as if it had proved the pair is REJECTed by replay."""

from __future__ import annotations

from test_kernel_reach import STORE, entry, kernel, rejected
from verifier.kernels.certificate import kernel_certificate, pair_claim
from verifier.kernels.equiv import check_pair

SUM = kernel("\tadd.f32 %f3, %f1, %f2;\n" + STORE)
MAX_PLUS_MIN = kernel("\tmax.f32 %f4, %f1, %f2;\n\tmin.f32 %f5, %f1, %f2;\n\tadd.f32 %f3, %f4, %f5;\n" + STORE)


def test_an_identity_only_a_solver_shows_is_not_certified(tmp_path):
    e = entry(tmp_path, SUM, MAX_PLUS_MIN)
    report = check_pair(e, tmp_path)
    assert report.verdict == "unknown" and "not proved" in report.message, report.message
    report.verdict = "equivalent"   # the attacker's engine
    rejected(kernel_certificate([pair_claim("p", e, tmp_path, report)]), tmp_path,
             "kernel claims hold by equal normal forms only")
