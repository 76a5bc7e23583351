"""GEMM pairs at other reduction lengths K (issue 17): the same PTX with ``A`` [M, K], ``B`` [K, N]
and the scalar ``K`` changed (``equiv.at_k``, ``bench/kernels.py --k``). Long dot products are
built lazily (``certificates.poly``); a planted bug must still be found and a certificate replayed."""

import json
import os

import pytest

from certificates.replay import replay
from verifier.kernels.certificate import kernel_certificate, pair_claim
from verifier.kernels.equiv import CORPUS, at_k, check_pair, load_pairs

PAIRS = load_pairs()
SLOW = pytest.mark.skipif(os.environ.get("PVCERT_SLOW") != "1", reason="benchmark-sized: set PVCERT_SLOW=1")


def test_at_k_changes_only_the_reduction_length():
    p = at_k(PAIRS["sgemm_smem"], 48)
    shapes = {q["name"]: q.get("shape", q.get("value")) for q in p["params"]}
    assert shapes == {"A": [128, 48], "B": [48, 128], "C": [128, 128], "M": 128, "N": 128, "K": 48}
    assert p["reference"] == PAIRS["sgemm_smem"]["reference"] and p["name"] == "sgemm_smem@K=48"
    assert PAIRS["sgemm_smem"]["params"][0]["shape"] == [128, 16]     # the corpus entry is untouched
    assert at_k(PAIRS["reduce_ref_self"], 48) is None


def test_planted_tile_offset_bug_is_found_at_k_32():
    r = check_pair(at_k(PAIRS["bug_sgemm_2d_tile_offset"], 32))
    assert r.verdict == "not-equivalent", r.message


def certify_and_replay(name: str, k: int, tmp_path) -> str:
    pair = at_k(PAIRS[name], k)
    r = check_pair(pair)
    assert r.verdict == "equivalent", r.message
    path = tmp_path / "c.json"
    path.write_text(json.dumps(kernel_certificate([pair_claim(pair["name"], pair, CORPUS, r)])))
    res = replay(str(path))
    assert all(x.ok for x in res), [x.detail for x in res]
    return res[0].detail


def test_sgemm_pair_at_k_32_verifies_and_replays(tmp_path):
    assert "4096 of 16384 output elements equal over the reals" in certify_and_replay("sgemm_coalesced", 32, tmp_path)


@SLOW
@pytest.mark.slow
@pytest.mark.parametrize("name", ["sgemm_smem", "sgemm_2d_blocktile"])
def test_sgemm_pair_at_k_256_verifies_and_replays(name, tmp_path):
    assert "4096 of 16384 output elements equal over the reals" in certify_and_replay(name, 256, tmp_path)


def short_k_pair(k: int) -> dict:
    """Naive SGEMM against itself with the optimized side's ``K`` bound to ``k - 1``: each output's
    dot product loses its last product (and reads ``A`` at another row stride)."""
    pair = at_k(PAIRS["sgemm_naive_self"], k)
    pair["params"].append({"name": "K1", "role": "scalar", "dtype": "s32", "value": k - 1})
    pair["reference"]["params"], pair["optimized"]["params"] = ["A", "B", "C", "M", "N", "K"], ["A", "B", "C", "M", "N", "K1"]
    return pair


def test_long_dot_products_differing_are_refuted_and_a_forged_certificate_rejected(tmp_path):
    """At K = 40 every output is an array-form dot product (``certificates.kernel.Dot``): the engine
    refutes the pair, and a certificate claiming it (the engine's own schedules and outputs) is rejected
    by replay when it decides the outputs."""
    pair = short_k_pair(40)
    r = check_pair(pair)
    assert r.verdict == "not-equivalent", r.message
    assert {type(v).__name__ for v in r.results["reference"][0].outputs.values()} == {"Dot"}
    r.verdict = "equivalent"   # forged: the engine's own schedules, witnesses and outputs
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(kernel_certificate([pair_claim(pair["name"], pair, CORPUS, r)])))
    res = replay(str(path))
    assert not res[0].ok and "differs" in res[0].detail, res[0].detail
