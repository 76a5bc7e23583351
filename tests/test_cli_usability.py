"""Command-line behaviour a new user meets first: ``--version``, a closed pipe, torch's logs."""

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, run_pvcert

SHAPE_BUG = '''
import torch
import torch.nn as nn
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate


class M(nn.Module):
    def forward(self, x):
        return x @ torch.ones(3, 3)


CASE = CaptureCase(name="shape", spec=lambda: M(), impl=lambda rank, world: M(), world_size=2,
                   inputs={"x": (4,)}, input_relation={"x": replicate("x")}, expect={"out": replicate("out")})
'''


def test_version_names_the_release_and_commit():
    r = run_pvcert("--version")
    assert r.returncode == 0 and re.fullmatch(r"pvcert \d+\.\d+\.\d+( \(git [0-9a-f]{12}\))?\n", r.stdout), r.stdout


def test_closed_pipe_is_quiet():
    """``pvcert ops | head -1``: no traceback, no "internal error", and not exit 0 (nothing claimed)."""
    read, write = os.pipe()
    os.close(read)   # the reader has already left (as `head` has once it printed its line): every write fails
    p = subprocess.Popen([sys.executable, "-m", "verifier.cli", "ops"], cwd=ROOT, stdout=write,
                         stderr=subprocess.PIPE)
    os.close(write)
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141 and err == "", err


def test_capture_failure_is_one_line_without_torch_logs(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "shape.py").write_text(SHAPE_BUG)
    r = run_pvcert("verify", str(tmp_path / "shape.py"))
    lines = [x for x in r.stderr.splitlines() if not re.fullmatch(r"pvcert: .* \(\d+ s\)", x)]   # progress on a slow machine
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "MALFORMED" in r.stderr and "same reduction dim" in r.stderr and "fake_tensor" not in r.stderr
