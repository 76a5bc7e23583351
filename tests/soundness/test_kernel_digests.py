"""Output digests of kernel claims (``certificates.kernel_claim``): checked after the comparison, one digest serving
both sides only where their normal forms are the same as built. A checker that shared it wherever the outputs are
merely equal (after the ``exp`` shift) would ACCEPT an optimized side certified with the reference's digests."""

from __future__ import annotations

import json

import pytest

import verifier.kernels.certificate as kc
from certificates.replay import replay
from verifier.kernels.certificate import kernel_certificate, pair_claim
from verifier.kernels.equiv import CORPUS, check_pair, load_pairs

NAME = "flash_attn_causal_diag"   # 1,008 of its 1,024 outputs are equal only after the shift


def outputs(ev: dict) -> dict:
    return {k: v for c in ev["ctas"] for k, v in c["outputs"].items()} if "ctas" in ev else ev["outputs"]


@pytest.fixture(scope="module")
def cert() -> dict:
    budget, kc.TEXT_BUDGET = kc.TEXT_BUDGET, 0   # every output a digest
    try:
        pair = load_pairs()[NAME]
        return kernel_certificate([pair_claim(NAME, pair, CORPUS, check_pair(pair))])
    finally:
        kc.TEXT_BUDGET = budget


def verdict(cert: dict, tmp_path) -> tuple[bool, str]:
    (tmp_path / "c.json").write_text(json.dumps(cert))
    res = replay(str(tmp_path / "c.json"))
    return all(r.ok for r in res), "; ".join(r.detail for r in res)


def test_digests_of_outputs_equal_only_after_the_shift_are_each_sides_own(cert, tmp_path):
    ev = cert["evidence"][NAME]
    ref, opt = outputs(ev["reference"]), outputs(ev["optimized"])
    differ = [k for k in ref if ref[k] != opt[k]]
    assert len(differ) > 1000 and all(set(v) == {"sha256"} for v in ref.values())
    ok, detail = verdict(cert, tmp_path)
    assert ok, detail
    for c in ev["optimized"]["ctas"]:   # the optimized side certified with the reference's digests
        c["outputs"] = {k: ref[k] for k in c["outputs"]}
    ok, detail = verdict(cert, tmp_path)
    assert not ok and "optimized" in detail and "the certified normal form is not the replay's" in detail


def test_a_digest_names_each_exponent_by_the_blake2b_of_its_text():
    """The digest of a ``Rat`` is the sha256 of its text with atoms and exponents anonymized: an exponent is written
    as 16 hex digits of the blake2b of its own text (docs/kernels.md), so outputs whose exponents differ in one term
    have different digests, and the digest is that text's, recomputable without the table."""
    import hashlib

    from certificates.kernel import Printer, anon
    from certificates.poly import Rat, apply

    q, k, v = Rat.var("Q[0]"), Rat.var("K[0]"), Rat.var("V[0]")
    m = apply("max", q * k, q)
    a, b = v * apply("exp", q * k - m), v * apply("exp", q * k * 2 - m)
    expo = (q * k - m).n.text(anon)   # the exponent's own text, its atom max(...) anonymized
    want = "V[0]*exp(" + hashlib.blake2b(expo.encode(), digest_size=8).hexdigest() + ")"
    assert Printer().digest(a) == hashlib.sha256(want.encode()).hexdigest()
    assert Printer().digest(a) != Printer().digest(b)
