"""pvcert installs from a wheel into a fresh virtual environment outside the checkout and verifies a
user's own cases (a PyTorch TP MLP importing a sibling module, and a JSON case) written in a temporary
directory; the certificate replays. The checkout is not importable there (``verifier.__file__`` is in
the new environment). numpy / z3 / cvc5 / torch come from the test's environment through a ``.pth``
line (no download); the wheel is installed with ``--no-deps``."""

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

MODELS = '''
import torch.nn as nn
import torch.nn.functional as F

from verifier.train.mappings import copy_to_tp, reduce_from_tp


class MLP(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.up, self.down = nn.Linear(d, f), nn.Linear(f, d)

    def forward(self, x):
        return self.down(F.relu(self.up(x)))


class TPMLP(nn.Module):
    def __init__(self, d, f, world):
        super().__init__()
        self.up, self.down = nn.Linear(d, f // world), nn.Linear(f // world, d, bias=False)
        self.bias = nn.Parameter(self.down.weight.new_zeros(d))

    def forward(self, x):
        return reduce_from_tp(self.down(F.relu(self.up(copy_to_tp(x))))) + self.bias
'''

CASE = '''
from mymodels import MLP, TPMLP
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard

CASE = CaptureCase(
    name="user_tp_mlp", spec=lambda: MLP(2, 4), impl=lambda rank, world: TPMLP(2, 4, world), world_size=2,
    inputs={"x": (2, 2)}, backward=True,
    input_relation={"x": replicate("x"), "d_out": replicate("d_out"), "up.weight": shard("up.weight", dim=0),
                    "up.bias": shard("up.bias", dim=0), "down.weight": shard("down.weight", dim=1),
                    "down.bias": replicate("bias")},
    expect={"out": replicate("out"), "grad.x": replicate("grad.x"), "grad.down.bias": replicate("grad.bias")},
)
'''


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_wheel_installs_outside_the_checkout_and_verifies_user_cases(tmp_path):
    pytest.importorskip("torch")
    src = tmp_path / "src"   # a copy: building never writes into the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), src / name)
    for pkg in ("verifier", "certificates"):
        shutil.copytree(os.path.join(ROOT, pkg), src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"),
                    str(src)], check=True, capture_output=True, timeout=120)
    [wheel] = (tmp_path / "dist").glob("pvcert-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    subprocess.run([*pip, "--python", str(venv / "bin" / "python"), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, capture_output=True, timeout=120)
    [purelib] = (venv / "lib").glob("python3*/site-packages")
    (purelib / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")   # after the wheel's own

    user = tmp_path / "user"
    user.mkdir()
    (user / "mymodels.py").write_text(MODELS)
    (user / "case.py").write_text(CASE)
    shutil.copy(os.path.join(ROOT, "examples/tp_mlp/spec.json"), user / "spec.json")
    shutil.copy(os.path.join(ROOT, "examples/tp_mlp/impl.json"), user / "impl.json")
    shutil.copy(os.path.join(ROOT, "examples/tp_mlp/case.json"), user / "case.json")

    r = _run(venv, user, "python", "-c", "import verifier, certificates; print(verifier.__file__, "
             "certificates.__file__); import examples")
    assert r.returncode != 0 and "No module named 'examples'" in r.stderr, r.stdout + r.stderr
    assert all(p.startswith(str(purelib)) for p in r.stdout.split()), r.stdout
    for case in ("case.py", "case.json"):
        r = _run(venv, user, "pvcert", "verify", case, "--emit-cert", "cert.json")
        assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
        r = _run(venv, user, "pvcert", "replay", "cert.json")
        assert r.returncode == 0 and "ACCEPT" in r.stdout, r.stdout + r.stderr
