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
