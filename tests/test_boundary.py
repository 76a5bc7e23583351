"""The trust boundary: the checker never imports the engine, pickle or eval, and runs alone."""

import ast
import json
import os
import subprocess
import sys

from conftest import ROOT, run_pvcert

CHECKER = os.path.join(ROOT, "certificates")
FORBIDDEN_MODULES = {"verifier", "pickle", "dill", "cloudpickle", "marshal", "shelve", "torch", "importlib"}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}


def checker_files():
    for dirpath, _, files in os.walk(CHECKER):
        for f in files:
            if f.endswith(".py"):
                yield os.path.join(dirpath, f)


def test_checker_imports_and_calls():
    offences = []
    for path in checker_files():
        tree = ast.parse(open(path).read(), path)
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            offences += [f"{path}:{node.lineno}: imports {n}" for n in names
                         if n.split(".")[0] in FORBIDDEN_MODULES]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
                offences.append(f"{path}:{node.lineno}: calls {node.func.id}")
    assert not offences, offences


def test_checker_stays_small():
    code = 0
    for path in checker_files():
        code += sum(1 for line in open(path) if line.strip() and not line.strip().startswith("#"))
    # 4,265 today: about 1,300 are the kernel replay (PTX parser and interpreter) and 430
    # the staged re-check of shape reductions; the bound keeps it from growing unnoticed
    assert code < 4300, f"certificates/ has {code} lines of code"


def test_replay_runs_without_engine_or_torch(tmp_path):
    cert = tmp_path / "c.json"
    r = run_pvcert("verify", "examples/tp_mlp/case.json", "--engine", "whole-graph", "--emit-cert", str(cert))
    assert r.returncode == 0, r.stderr
    # Block the engine and torch: any import of them fails loudly.
    script = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('verifier', 'torch'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from certificates.cli import main\n"
        f"sys.exit(main([{str(cert)!r}]))\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and "ACCEPT" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "certificates", str(cert)], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0 and "ACCEPT" in r.stdout


def test_verify_exit_codes(tmp_path):
    r = run_pvcert("verify", "examples/tp_mlp/case_missing_allreduce.json")
    assert r.returncode == 1 and "REJECT" in r.stdout and "Y[0, 0]" in r.stdout
    case = json.load(open(os.path.join(ROOT, "examples/tp_mlp/case.json")))
    case["spec"] = os.path.join(ROOT, "examples/tp_mlp/spec.json")
    case["impl"] = os.path.join(ROOT, "examples/tp_mlp/impl.json")
    case["expect"] = {"Y": ["y@r7"]}
    (tmp_path / "case.json").write_text(json.dumps(case))
    r = run_pvcert("verify", str(tmp_path / "case.json"))
    assert r.returncode == 2 and "'y@r7' is not a tensor of impl graph" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
