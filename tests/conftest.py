import copy
import json
import os
import random
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


def mutations(obj, seed: int, count: int, values: list):
    """Deterministic edits: ``count`` copies of ``obj`` with one leaf replaced, as (path, copy)."""
    leaves = []

    def walk(x, path):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, path + [k])
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, path + [i])
        else:
            leaves.append(path)

    walk(obj, [])
    rng = random.Random(seed)
    for _ in range(count):
        c, path = copy.deepcopy(obj), rng.choice(leaves)
        box = c
        for k in path[:-1]:
            box = box[k]
        box[path[-1]] = rng.choice(values)
        yield path, c
