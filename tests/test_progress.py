"""Progress on stderr (docs/output.md): plain lines when stderr is not a terminal (at most one per
``PVCERT_PROGRESS_EVERY`` seconds per phase; none for a quick run), a rich bar on a terminal, nothing
with ``-q``; stdout never carries progress."""

import io
import os
import re
import subprocess
import sys
import time

from conftest import ROOT
from verifier.progress import Progress

OK = "examples/tp_mlp/case.json"


def _pvcert(*args: str, every: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **({"PVCERT_PROGRESS_EVERY": every} if every else {})}
    return subprocess.run([sys.executable, "-m", "verifier.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


def test_plain_lines_off_a_terminal_and_quiet(tmp_path):
    cert = str(tmp_path / "c.json")
    r = _pvcert("verify", OK, "--emit-cert", cert)
    assert r.returncode == 0 and r.stderr == "", r.stderr   # a quick run: no progress line
    r = _pvcert("replay", cert, every="0.001")   # a replay takes milliseconds: lines at this rate
    lines = r.stderr.splitlines()
    assert r.returncode == 0 and lines and all(re.fullmatch(r"pvcert: replay \(\d+ s\)", x) for x in lines), lines
    assert "pvcert:" not in r.stdout and "ACCEPT" in r.stdout
    r = _pvcert("replay", cert, "-q", every="0.02")
    assert r.returncode == 0 and r.stderr == "" and "ACCEPT" in r.stdout, r.stderr
    r = _pvcert("verify", OK, "-q", "--json", every="0.001")
    assert r.returncode == 0 and "pvcert:" not in r.stderr and r.stdout.startswith("{"), r.stderr


def test_plain_lines_are_throttled_and_carry_counts():
    out = io.StringIO()
    p = Progress(stream=out, every=0.05)
    with p.phase("inference", 10):
        for k in range(10):
            p.update(k + 1, 10, f"op{k}")
            time.sleep(0.012)
    lines = out.getvalue().splitlines()
    assert 1 <= len(lines) <= 3 and all(re.fullmatch(r"pvcert: inference \d+/10 \(\d+ s\)", x) for x in lines), lines
    quiet = io.StringIO()
    with Progress(quiet=True, stream=quiet, every=0.001).phase("capture") as q:
        q.update(1, 2)
        time.sleep(0.02)
    assert quiet.getvalue() == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rich_bar_on_a_terminal():
    term = _Terminal()
    p = Progress(stream=term)
    assert p.tty
    with p.phase("inference", 4):
        for k in range(4):
            p.update(k + 1, 4, "aten.mm.default")
    assert "inference aten.mm.default" in term.getvalue() and "4/4" in term.getvalue()
