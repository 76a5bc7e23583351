"""The real-style corpus (examples/kernels/real/pairs.json, PTX as nvcc 13 emits it with
-lineinfo and no fast math): every pair gets its expected verdict (a refusal names its
construct), and every equivalent pair's engine-written certificate replays (ACCEPT)."""

from __future__ import annotations

import json

import pytest

from certificates.replay import replay
from verifier.kernels.certificate import kernel_certificate, pair_claim
from verifier.kernels.equiv import CORPUS, check_pair, load_pairs

REAL = CORPUS / "real"
PAIRS = load_pairs(REAL)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_real_pair(name, tmp_path):
    entry = PAIRS[name]
    expected = entry["expected"]
    report = check_pair(entry, REAL)
    assert report.verdict == expected["verdict"], report.message
    if report.verdict != "equivalent":
        assert expected["refused"] in report.message, report.message
        return
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(kernel_certificate([pair_claim(name, entry, REAL, report)])))
    res = replay(str(path))
    assert res and all(r.ok for r in res), "; ".join(r.detail for r in res)


def test_every_kernel_is_compiled_with_lineinfo():
    for entry in PAIRS.values():
        for side in ("reference", "optimized"):
            assert ".loc" in (REAL / entry[side]["ptx"]).read_text()
