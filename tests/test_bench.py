"""The benchmark harness prints its table and writes JSON (quick sizes only)."""

import json

from conftest import run_pvcert


def test_bench_quick_writes_table_and_json(tmp_path):
    out = tmp_path / "bench.json"
    r = run_pvcert("bench", "--quick", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "workload" in r.stdout and "peak MB" in r.stdout
    rows = json.loads(out.read_text())["rows"]
    verdicts = {row["workload"]: row["verdict"] for row in rows}
    assert verdicts["tp_mlp W=2 tokens=2 dim=4 hidden=8 verify"] == "VERIFIED"
    assert verdicts["tp_mlp W=2 tokens=2 dim=4 hidden=8 replay"] == "ACCEPT"
    assert verdicts["tp_mlp W=2 missing all_reduce (bug)"] == "REFUTED"
    assert all(row["seconds"] > 0 and row["peak_mb"] > 0 for row in rows)


def test_kernel_bench_repeats_each_pair_and_prints_the_least_times(tmp_path):
    """``bench/kernels.py --repeat 2``: each pair twice in its own process, then the least CPU time of each column."""
    import subprocess
    import sys

    from conftest import ROOT

    out = tmp_path / "k.json"
    r = subprocess.run([sys.executable, "bench/kernels.py", "--repeat", "2", "--json", str(out), "mirror_sum"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [row["workload"] for row in rows] == ["mirror_sum"] * 2
    assert {row["verdict"] for row in rows} == {"equivalent"}
    least = [line for line in r.stdout.splitlines() if line.startswith("mirror_sum: least of 2 runs:")]
    engine = min(float(row["note"].split("engine CPU ")[1].split(" s")[0]) for row in rows)
    assert len(least) == 1 and f"engine CPU {engine:.3f} s" in least[0] and "replay <= engine:" in least[0]
