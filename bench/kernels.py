"""Kernel-equivalence benchmark: ``python bench/kernels.py [--quick] [--corpus DIR] [--k K,...] [NAME ...]``.

Every pair of examples/kernels/pairs.json (or DIR/pairs.json; CTA 0 of the launch) in a fresh process:
parse both PTX kernels, execute them symbolically with race and deadlock detection,
decide every output element over the reals; for an equivalent pair, write its certificate
and replay it. Prints a table (pair, instructions, engine time, peak memory, verdict,
expected; engine, certificate and replay CPU) and writes bench/results/kernels.json (kernels-<DIR name>.json).
``--k 16,64,256`` runs the GEMM pairs (a scalar ``K`` and tensors ``A`` [M, K], ``B`` [K, N]) at each
reduction length instead (same PTX; rows ``NAME@K=...``, bench/results/kernels-k.json); ``--threads 32,...,1024``
the pairs with a dynamic-shared-memory side (``reduce_tree_blocksize``) at each number of threads per CTA
(rows ``NAME@threads=...``, bench/results/kernels-threads.json). ``--repeat N`` runs each pair N times, each in a
fresh process, and prints the least engine, certificate and replay CPU times (this machine's speed drifts).

Peer figures (Volta, 24 cores): reductions 0.007 s, 64x64-tile SGEMM 500-570 s (K=4096),
attention 80-170 s; a public reconstruction on this kind of machine (1 thread):
reductions 0.01 s, SGEMM pairs 121-145 s at 2.4 GB.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from verifier.bench import Harness  # noqa: E402


# The replay's own CPU time, as the engine's is measured: in a fresh process, after its imports
# (certificates.replay.replay is what `python -m certificates FILE` runs in its child process; the
# kernel checker, certificates.kernel_claim and what it imports, imported first, as the engine's modules
# are before its clock starts). Both columns are the CPU time of the thread that checks (time.thread_time):
# the process's would also count OpenBLAS's worker thread, which spins for about 0.1 s after numpy is
# imported (no BLAS call needed), 10-20 ms into a replay whose process imported numpy just before.
REPLAY = ("import sys, time\nimport certificates.kernel_claim\nfrom certificates.replay import replay\n"
          "c = time.thread_time()\nrs = replay(sys.argv[1])\nok = bool(rs) and all(r.ok for r in rs)\n"
          "print('ACCEPT' if ok else 'REJECT', time.thread_time() - c)")


def workload(pair: dict, base: str):
    def run() -> dict:
        import json
        import tempfile
        import time

        from certificates.errors import CheckError
        from verifier.kernels.launch import parse_file
        from verifier.kernels.certificate import kernel_certificate, pair_claim
        from verifier.kernels.equiv import check_pair

        import resource
        import subprocess

        t0, c0 = time.perf_counter(), time.thread_time()
        report = check_pair(pair, Path(base))
        seconds, cpu = time.perf_counter() - t0, time.thread_time() - c0
        engine_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        try:
            ops = sum(len(parse_file(Path(base) / pair[s]["ptx"]).kernel(pair[s].get("entry")).instrs)
                      for s in ("reference", "optimized"))
        except CheckError:  # refused while parsing (cp.async): the verdict says so
            ops = 0
        expected = (pair.get("expected") or {}).get("verdict")
        note = f"expected {expected}" + ("" if expected == report.verdict else "  MISMATCH")
        note += f"; engine CPU {cpu:.3f} s, peak {engine_mb:.0f} MB"
        verdict = report.verdict
        if verdict == "equivalent":
            c0 = time.thread_time()   # the engine writing its certificate: outputs printed or digested, saved
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(kernel_certificate([pair_claim(pair["name"], pair, Path(base), report)]), f)
            note += f"; certificate CPU {time.thread_time() - c0:.3f} s"
            t0 = time.perf_counter()   # the checker in its own process: its CPU after start-up, wall, peak
            done = subprocess.run([sys.executable, "-c", REPLAY, f.name], capture_output=True, cwd=ROOT, text=True)
            use = resource.getrusage(resource.RUSAGE_CHILDREN)
            ok, work = (done.stdout.split() + ["REJECT", "nan"])[:2]
            note += f"; replay CPU {float(work):.3f} s ({time.perf_counter() - t0:.2f} s with process start, " \
                f"peak {use.ru_maxrss / 1024:.0f} MB) {ok}"
            os.unlink(f.name)
        return {"ops": ops, "verdict": verdict, "seconds": seconds, "note": note}
    return run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*")
    p.add_argument("--quick", action="store_true", help="reductions and softmax only")
    p.add_argument("--corpus", help="folder with pairs.json (default examples/kernels)")
    p.add_argument("--k", type=lambda v: [int(x) for x in v.split(",")],
                   help="GEMM pairs at these reduction lengths K (comma-separated)")
    p.add_argument("--threads", type=lambda v: [int(x) for x in v.split(",")],
                   help="pairs with a dynamic-shared-memory side at these threads per CTA (comma-separated)")
    p.add_argument("--repeat", type=int, default=1,
                   help="run each pair this many times (each in a fresh process) and print the least CPU times")
    p.add_argument("--json")
    args = p.parse_args()
    from verifier.kernels.equiv import CORPUS, at_k, at_threads, load_pairs

    base = os.path.abspath(args.corpus) if args.corpus else str(CORPUS)
    stem = f"kernels-{os.path.basename(base)}" if args.corpus else "kernels-k" if args.k else \
        "kernels-threads" if args.threads else "kernels"
    args.json = args.json or os.path.join(ROOT, "bench", "results", f"{stem}.json")
    pairs = load_pairs(Path(base))
    names = args.names or sorted(n for n in pairs if not args.quick or "reduce" in n or "softmax" in n)
    if args.k:   # equivalent GEMM pairs only: a planted bug's verdict at another K is not recorded
        pairs = {q["name"]: q for n in names for k in args.k if pairs[n].get("expected", {}).get("verdict")
                 == "equivalent" and (q := at_k(pairs[n], k)) is not None}
        names = list(pairs)
    if args.threads:   # the same for threads per CTA (bench/kernels.py --threads 32,...,1024 reduce_tree_blocksize)
        pairs = {q["name"]: q for n in names for t in args.threads if (q := at_threads(pairs[n], t)) is not None}
        names = list(pairs)
    h = Harness("pvcert kernels: CTA 0 symbolic execution, race/deadlock detection, equivalence over the reals")
    h.header()
    for n in names:
        notes = [h.run(n, workload(pairs[n], base)).note for _ in range(args.repeat)]
        if args.repeat > 1:   # the machine's speed drifts: the least of each column over the runs
            least = {c: min(float(m[1]) if (m := re.search(rf"{c} CPU ([0-9.]+) s", x)) else math.inf for x in notes)
                     for c in ("engine", "certificate", "replay")}
            shown = ", ".join(f"{c} CPU {v:.3f} s" for c, v in least.items() if v < math.inf)
            met = "" if least["replay"] == math.inf else f"; replay <= engine: {least['replay'] <= least['engine']}"
            print(f"{n}: least of {args.repeat} runs: {shown}{met}", flush=True)
    h.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
