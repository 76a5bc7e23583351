"""The documented commands for every user-written training step (docs/training.md): ``pvcert verify
examples/train/<example>.py --emit-cert`` says VERIFIED, then ``pvcert replay`` says ACCEPT."""

import pytest

from conftest import run_pvcert

EXAMPLES = ["ddp_adamw_user", "ddp_module_user", "fsdp2_user", "tp_dp_user", "pipeline_user", "pipeline_1f1b_user"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_documented_commands(example, tmp_path):
    pytest.importorskip("torch")
    cert = tmp_path / "cert.json"
    v = run_pvcert("verify", f"examples/train/{example}.py", "--emit-cert", str(cert), timeout=300)
    assert v.returncode == 0 and f"VERIFIED {example}" in v.stdout, v.stdout + v.stderr
    r = run_pvcert("replay", str(cert), timeout=300)
    assert r.returncode == 0 and "ACCEPT" in r.stdout, r.stdout + r.stderr
