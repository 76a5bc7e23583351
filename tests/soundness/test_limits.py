"""Replay stays bounded on any certificate: hostile exponents, huge integers, FIFOs and directories.

Each certificate is small and hand-written; each replay runs as its own ``python -m certificates``
process with a hard wall-clock bound here, so a test fails (rather than hangs) if a limit is lost.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from certificates import FORMAT, VERSION
from certificates.errors import ACCEPT, LIMIT, MALFORMED
from certificates.limits import canonical_bytes
from verifier.ir import GraphBuilder

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pair(ops) -> tuple[dict, dict]:
    """Spec and a one-rank impl that both run ``ops(builder, x, out)``."""
    graphs = []
    for name, x, y in (("spec", "X", "Y"), ("impl", "x@r0", "y@r0")):
        b = GraphBuilder(name)
        b.input(x, [1], "activation")
        ops(b, x, y)
        b.output(y)
        graphs.append(b.build())
    return graphs[0], graphs[1]


def _cert(spec: dict, impl: dict, paths: dict[str, str] | None = None) -> dict:
    """A whole-graph certificate of ``Y = y@r0`` (artifacts in ``paths`` are referenced, not embedded)."""
    def art(aid: str, value: dict) -> dict:
        if aid in (paths or {}):
            return {"id": aid, "kind": "graph", "sha256": "0" * 64, "path": paths[aid]}
        return {"id": aid, "kind": "graph", "sha256": hashlib.sha256(canonical_bytes(value)).hexdigest(),
                "embedded": value}
    return {"format": FORMAT, "version": VERSION, "header": {"tool": "hand"},
            "subject": {"artifacts": [art("spec", spec), art("impl", impl)]},
            "claims": [{"id": "c", "kind": "refinement", "spec": "spec", "impl": "impl",
                        "input_relation": {"X": ["x@r0"]}, "output_relation": {"Y": ["y@r0"]}}],
            "evidence": {"c": {"method": "whole-graph", "obligations": [{"spec": "Y", "expr": "y@r0",
                                                                          "elements": 1}]}},
            "verdict": "ACCEPT"}


def _replay(cert: dict, tmp_path, *extra: str, bound: float = 60) -> tuple[int, str, float]:
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(cert))
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "certificates", str(path), *extra], cwd=ROOT,
                       capture_output=True, text=True, timeout=bound)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


def _pow(k: int):
    return lambda b, x, y: b.node("aten.pow.Tensor_Scalar", [x], y, exponent=k)


def test_huge_pow_exponent_is_a_limit(tmp_path):
    cert = _cert(*_pair(_pow(10**12)))
    assert len(json.dumps(cert)) < 2000
    code, out, secs = _replay(cert, tmp_path, "--timeout", "20")
    assert code != ACCEPT and "exceeds the bound" in out and secs < 15, out


def test_small_pow_still_replays(tmp_path):
    code, out, _ = _replay(_cert(*_pair(_pow(5))), tmp_path)
    assert code == ACCEPT, out


def _squarings(b: GraphBuilder, x: str, y: str) -> None:
    """x * 10^4000, squared 40 times: one multiplication of huge integers runs for hours."""
    r = y.partition("@")[1] + y.partition("@")[2]
    b.node("aten.mul.Scalar", [x], f"h0{r}", other=10**4000)
    for i in range(40):
        b.node("aten.mul.Tensor", [f"h{i}{r}", f"h{i}{r}"], f"h{i + 1}{r}" if i < 39 else y)


def test_time_limit_stops_a_loop_inside_a_huge_integer(tmp_path):
    code, out, secs = _replay(_cert(*_pair(_squarings)), tmp_path, "--timeout", "3")
    assert code == LIMIT and secs < 15, out
    assert len(out.strip().splitlines()) == 1 and "LIMIT" in out, out


@pytest.mark.parametrize("kind", ["fifo", "directory", "link to fifo", "device"])
def test_artifact_must_be_a_regular_file(kind, tmp_path):
    target = {"fifo": "pipe", "directory": "dir", "link to fifo": "link", "device": "/dev/zero"}[kind]
    os.mkfifo(tmp_path / "pipe")
    os.mkdir(tmp_path / "dir")
    os.symlink(tmp_path / "pipe", tmp_path / "link")
    if kind == "device":
        os.symlink("/dev/zero", tmp_path / "dev")
        target = "dev"
    code, out, secs = _replay(_cert(*_pair(_pow(2)), {"spec": target}), tmp_path, bound=30)
    assert code == MALFORMED and secs < 20, out
    assert "artifact" in out or target in out, out


def test_certificate_path_must_be_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "cert.fifo")
    p = subprocess.run([sys.executable, "-m", "certificates", str(tmp_path / "cert.fifo")], cwd=ROOT,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == MALFORMED and "not a regular file" in p.stderr, p.stderr
