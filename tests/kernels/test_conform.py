"""examples/kernels/gpu/conform.py without a GPU: the interpreter's values against numpy and against the CUDA sources
run on the CPU emulation, and a device's wrong outputs reported (a stand-in CuPy whose kernels write nothing)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFORM = ROOT / "examples" / "kernels" / "gpu" / "conform.py"
FAKE_CUPY = """
import numpy as np
import pytest
class _Device:
    def synchronize(self): pass
class cuda:
    Device = _Device
    class runtime:
        @staticmethod
        def getDeviceProperties(i): return {"name": b"no device"}
asarray, asnumpy = np.array, np.asarray
class RawModule:
    def __init__(self, path): open(path).close()
    def get_function(self, name): return lambda grid, block, args, shared_mem=0: None
"""


def _prepare(tmp_path: Path, *names: str) -> Path:
    out = tmp_path / "data"
    subprocess.run([sys.executable, str(CONFORM), "prepare", str(out), "--only", *names], check=True, cwd=ROOT,
                   capture_output=True)
    return out


def test_interpreter_values_are_numpys(tmp_path):
    out = _prepare(tmp_path, "sgemm_naive_self", "int_sum")
    gemm = json.loads((out / "sgemm_naive_self.json").read_text())
    a, b = (np.array(gemm["values"][n], dtype=np.float64).reshape(gemm["shapes"][n]) for n in ("A", "B"))
    for side in ("reference", "optimized"):
        got = gemm["sides"][side]["expected"]
        assert len(got) == 4096 and all(k == "f" for _, _, k, _ in got)   # one 64x64 CTA of the 128x128 output
        assert max(abs((a @ b).reshape(-1)[i] - v) for _, i, _, v in got) < 1e-12
    ints = json.loads((out / "int_sum.json").read_text())
    (_, i, kind, v), = ints["sides"]["reference"]["expected"]
    assert kind == "i" and v == sum(ints["values"]["x"][256 * i: 256 * (i + 1)]) % (1 << 32)


def test_a_device_that_disagrees_is_reported(tmp_path):
    out = _prepare(tmp_path, "int_sum")
    (tmp_path / "fake" / "cupy").mkdir(parents=True)
    (tmp_path / "fake" / "cupy" / "__init__.py").write_text(FAKE_CUPY)
    run = subprocess.run([sys.executable, str(CONFORM), "run", str(out), "--jobs", "1", "--report",
                          str(tmp_path / "report.json")], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path / "fake"), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 1, run.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summary"] == {"pairs": 1, "agree": 0, "device": "no device"}
    assert report["pairs"][0]["sides"]["reference"]["disagree"] == 1


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (the CPU emulation of the CUDA sources)")
def test_interpreter_values_are_the_sources(tmp_path):
    out = _prepare(tmp_path, "reduce3_sequential", "bug_reduce3_stride_off_by_one")
    run = subprocess.run([sys.executable, str(CONFORM), "emu", str(out), "--report", str(tmp_path / "emu.json")],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "emu.json").read_text())
    assert report["summary"]["built"] == report["summary"]["agree"] == 2
    # the planted bug's kernel, run from its source, computes what the interpreter read from its PTX
    bug = next(r for r in report["pairs"] if r["name"] == "bug_reduce3_stride_off_by_one")
    assert bug["sides"]["optimized"]["elements"] == 1 and bug["sides"]["optimized"]["disagree"] == 0
