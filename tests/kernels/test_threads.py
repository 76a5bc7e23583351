"""The threads-per-CTA curve (issue 17): ``equiv.at_threads`` runs ``reduce_tree_blocksize`` (a tree reduction
over dynamic shared memory, nvcc's PTX) at another block size, its slice length ``n`` and input with it; each
size verifies and replays, and a block size that disagrees with ``n`` is not equivalent."""

import json

import pytest

from certificates.replay import replay
from verifier.kernels.certificate import kernel_certificate, pair_claim
from verifier.kernels.equiv import CORPUS, at_threads, check_pair, load_pairs

PAIRS = load_pairs()


def test_at_threads_changes_the_block_its_shared_memory_n_and_x():
    p = at_threads(PAIRS["reduce_tree_blocksize"], 64)
    assert p["optimized"]["block"] == [64, 1, 1] and p["optimized"]["shared_bytes"] == 256
    assert {q["name"]: q.get("shape", q.get("value")) for q in p["params"]} == {"x": [128], "out": [2], "n": 64}
    assert p["reference"] == PAIRS["reduce_tree_blocksize"]["reference"]
    assert PAIRS["reduce_tree_blocksize"]["optimized"]["block"] == [256, 1, 1]   # the corpus entry is untouched
    assert at_threads(PAIRS["sgemm_smem"], 64) is None and at_threads(PAIRS["reduce3_sequential"], 64) is None


@pytest.mark.parametrize("t", [32, 128, 512])
def test_each_block_size_verifies_and_replays(t, tmp_path):
    pair = at_threads(PAIRS["reduce_tree_blocksize"], t)
    r = check_pair(pair)
    assert r.verdict == "equivalent", r.message
    path = tmp_path / "c.json"
    path.write_text(json.dumps(kernel_certificate([pair_claim(pair["name"], pair, CORPUS, r)])))
    assert all(x.ok for x in replay(str(path)))


def test_a_block_larger_than_the_slice_is_not_equivalent():
    pair = at_threads(PAIRS["reduce_tree_blocksize"], 64)
    pair["optimized"].update(block=[128, 1, 1], shared_bytes=512)   # reads 64 elements past its slice
    assert check_pair(pair).verdict != "equivalent"
