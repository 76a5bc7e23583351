"""Kernel-equivalence benchmark: ``python bench/kernels.py [--quick] [NAME ...]``.

Every pair of examples/kernels/pairs.json (CTA 0 of the launch) in a fresh process:
parse both PTX kernels, execute them symbolically with race and deadlock detection,
decide every output element over the reals. Prints a table (pair, instructions, time,
peak memory, verdict, expected) and writes bench/results/kernels.json.

Peer figures (Volta, 24 cores): reductions 0.007 s, 64x64-tile SGEMM 500-570 s (K=4096),
attention 80-170 s; a public reconstruction on this kind of machine (1 thread):
reductions 0.01 s, SGEMM pairs 121-145 s at 2.4 GB.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from verifier.bench import Harness  # noqa: E402


def workload(pair: dict):
    def run() -> dict:
        from verifier.kernels.equiv import CORPUS, check_pair
        from certificates.ptx import parse_file

        report = check_pair(pair)
        ops = sum(len(parse_file(CORPUS / pair[s]["ptx"]).kernel(pair[s].get("entry")).instrs)
                  for s in ("reference", "optimized"))
        expected = (pair.get("expected") or {}).get("verdict")
        return {"ops": ops, "verdict": report.verdict,
                "note": f"expected {expected}" + ("" if expected == report.verdict else "  MISMATCH")}
    return run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*")
    p.add_argument("--quick", action="store_true", help="reductions and softmax only")
    p.add_argument("--json", default=os.path.join(ROOT, "bench", "results", "kernels.json"))
    args = p.parse_args()
    from verifier.kernels.equiv import load_pairs

    pairs = load_pairs()
    names = args.names or sorted(n for n in pairs if not args.quick or "reduce" in n or "softmax" in n)
    h = Harness("pvcert kernels: CTA 0 symbolic execution, race/deadlock detection, equivalence over the reals")
    h.header()
    for n in names:
        h.run(n, workload(pairs[n]))
    h.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
