"""Every bundled PyTorch case verifies with the per-operator engine and its certificate replays."""

import glob
import os

import pytest

from conftest import ROOT

pytest.importorskip("torch")

CASES = sorted(glob.glob(os.path.join(ROOT, "examples", "cases", "*.py")))
NEEDS = {"megatron_gpt.py": "megatron.core", "megatron_mlp.py": "megatron.core", "hf_llama_tp.py": "transformers",
         "hf_llama_mlp_tp.py": "transformers"}


@pytest.mark.parametrize("path", CASES, ids=os.path.basename)
def test_bundled_case_verifies_and_replays(path, tmp_path, capsys):
    if os.path.basename(path) in NEEDS:
        pytest.importorskip(NEEDS[os.path.basename(path)])
    from verifier.cli import main

    cert = tmp_path / "c.json"
    assert main(["verify", path, "--emit-cert", str(cert)]) == 0, capsys.readouterr().out[-3000:]
    assert main(["replay", str(cert)]) == 0, capsys.readouterr().out[-3000:]
    assert "ACCEPT" in capsys.readouterr().out


def test_transformers_llama_dtensor_tp4(tmp_path, capsys):
    """A transformers Llama layer parallelized with DTensor at TP=4, forward and backward."""
    pytest.importorskip("transformers")
    from verifier.cli import main

    p = tmp_path / "case.py"
    p.write_text("from examples.cases import hf_llama_tp\nCASE = hf_llama_tp.make_case(4)\n")
    assert main(["verify", str(p)]) == 0, capsys.readouterr().out[-3000:]
