import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "tp_mlp")


def run_pvcert(*args: str, cwd: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the installed command line as a user would."""
    return subprocess.run([sys.executable, "-m", "verifier.cli", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=timeout)


@pytest.fixture
def example_case() -> dict:
    with open(os.path.join(EXAMPLE, "case.json")) as f:
        return json.load(f)


@pytest.fixture
def spec_graph() -> dict:
    with open(os.path.join(EXAMPLE, "spec.json")) as f:
        return json.load(f)


@pytest.fixture
def impl_graph() -> dict:
    with open(os.path.join(EXAMPLE, "impl.json")) as f:
        return json.load(f)
