"""Benchmark harness: each workload runs in a fresh process; prints a table, writes JSON.

``pvcert bench [--quick]`` runs the foundation workloads; other engines' scripts in
bench/ reuse ``Harness`` with their own workloads.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import resource
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Callable

Workload = Callable[[], dict]  # returns {"ops": int, "verdict": str, "note"?: str, "seconds"?: float}


@dataclass
class Row:
    workload: str
    ops: int
    seconds: float
    peak_mb: float
    verdict: str
    note: str = ""


def _child(fn: Workload, conn) -> None:
    start = time.perf_counter()
    try:
        out = fn()
    except Exception as e:  # reported as the row's verdict, the run goes on
        out = {"ops": 0, "verdict": "ERROR", "note": f"{type(e).__name__}: {e}"}
    out.setdefault("seconds", time.perf_counter() - start)  # a workload may time its own core part
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    conn.send(out)


class Harness:
    def __init__(self, title: str) -> None:
        self.title, self.rows = title, []

    def run(self, name: str, fn: Workload) -> Row:
        """Run ``fn`` in a forked process and record time and peak resident memory."""
        parent, child = mp.get_context("fork").Pipe()
        p = mp.get_context("fork").Process(target=_child, args=(fn, child))
        p.start()
        out = parent.recv()
        p.join()
        row = Row(name, out.get("ops", 0), out["seconds"], out["peak_mb"], out.get("verdict", "?"),
                  out.get("note", ""))
        self.rows.append(row)
        print(f"{row.workload:44s} {row.ops:>7d} {row.seconds:>9.3f} {row.peak_mb:>9.1f}  {row.verdict}"
              f"{'  ' + row.note if row.note else ''}", flush=True)
        return row

    def header(self) -> None:
        print(f"# {self.title} ({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()})")
        print(f"{'workload':44s} {'ops':>7s} {'time (s)':>9s} {'peak MB':>9s}  verdict")

    def write(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            json.dump({"title": self.title, "machine": platform.machine(), "cores": os.cpu_count(),
                       "rows": [asdict(r) for r in self.rows]}, f, indent=1)
        print(f"wrote {path}")


def verify_workload(make_case: Callable, cert_dir: str) -> tuple[Workload, Workload]:
    """A verify workload (which emits a certificate) and the replay of that certificate."""
    path = os.path.join(cert_dir, f"{id(make_case)}.cert.json")

    def verify() -> dict:
        from . import certificate, direct

        r = direct.verify(make_case())
        if r.verified:
            certificate.write(certificate.whole_graph_certificate(r), path)
        elements = sum(o.elements for o in r.outcomes)
        word = "VERIFIED" if r.verified else "REFUTED" if r.counterexample else "UNKNOWN"
        return {"ops": len(r.spec.nodes) + len(r.impl.nodes), "verdict": word,
                "note": f"{elements} elements" if r.verified else str(r.counterexample or "")[:60]}

    def replay() -> dict:
        from certificates.replay import replay as run_replay

        results = run_replay(path)
        return {"ops": 0, "verdict": "ACCEPT" if all(x.ok for x in results) else "REJECT"}

    return verify, replay


def main(quick: bool, json_path: str) -> int:
    from .workloads import tp_mlp

    h = Harness("pvcert foundation: whole-graph refinement (verify, then replay of its certificate)")
    h.header()
    sizes = [(2, 2, 4, 8), (4, 2, 4, 8)] if quick else [(2, 2, 4, 8), (4, 2, 4, 8), (8, 2, 4, 16),
                                                        (2, 4, 8, 16), (4, 4, 8, 32)]
    with tempfile.TemporaryDirectory() as tmp:
        for w, t, d, f in sizes:
            verify, replay = verify_workload(lambda w=w, t=t, d=d, f=f: tp_mlp(w, t, d, f), tmp)
            label = f"tp_mlp W={w} tokens={t} dim={d} hidden={f}"
            if h.run(f"{label} verify", verify).verdict == "VERIFIED":
                h.run(f"{label} replay", replay)
        verify, _ = verify_workload(lambda: tp_mlp(2, all_reduce=False), tmp)
        h.run("tp_mlp W=2 missing all_reduce (bug)", verify)
    h.write(json_path)
    return 0
