"""User-written training steps: ``python bench/train_user.py [--quick] [--bugs] [--curves]``.

Per example of examples/train/*_user.py (a fresh process each): capture the user's step on every
rank and the same code on one device, infer the relations operator by operator, write the
certificate and replay it. The time column is inference (the engine); capture and replay are in
the note with operator and obligation counts. ``--bugs`` also runs every planted bug of each
example (``make_case(bug)``) and records its verdict and the operator it stops at; ``--curves``
runs the DDP example at 2, 4 and 8 ranks and 2, 4 and 8 micro-batches. Writes
bench/results/train_user.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples", "train"))

from verifier.bench import Harness  # noqa: E402

EXAMPLES = ("ddp_adamw_user", "ddp_module_user", "fsdp2_user", "tp_dp_user", "pipeline_user", "pipeline_1f1b_user",
            "pipeline_interleaved_user", "pipeline_dp_user")


def workload(module: str, bug: str | None, sizes: dict | None = None):
    def run() -> dict:
        import importlib

        from certificates.errors import CheckError
        from certificates.limits import Limits
        from certificates.replay import replay
        from verifier import certificate, direct
        from verifier.capture.case import capture_case, quiet_torch_logs
        from verifier.refine import infer

        t0 = time.perf_counter()
        try:
            with quiet_torch_logs():
                example = importlib.import_module(module)
                for k, v in (sizes or {}).items():   # the example's module-level sizes (a fresh process)
                    setattr(example, k, v)
                case = capture_case(example.make_case(bug))
        except CheckError as e:
            return {"verdict": "REFUSED", "seconds": time.perf_counter() - t0, "note": f"at capture: {e}"[:160]}
        t1 = time.perf_counter()
        inf = infer(case)
        seconds = time.perf_counter() - t1
        ops = len(inf.prepared.spec.nodes) + len(inf.prepared.impl.nodes)
        note = f"capture {t1 - t0:.1f} s, {len(inf.prepared.spec.nodes)} spec ops, " \
               f"{inf.obligations} obligations + {inf.reused} reused"
        if not inf.verified:
            cx = direct.refute(inf.prepared, 0, Limits())
            where = inf.failure.node.target if inf.failure and inf.failure.node else "the expectations"
            return {"ops": ops, "verdict": "REFUTED" if cx else "UNKNOWN", "seconds": seconds,
                    "note": f"{note}, stops at {where}" + (f", differs at {cx.output} (scale {cx.scale:g})"
                                                           if cx else "")}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "c.json")
            certificate.write(certificate.per_operator_certificate(inf), path)
            t2 = time.perf_counter()
            ok = all(r.ok for r in replay(path))
            note += f", replay {time.perf_counter() - t2:.2f} s ({'ACCEPT' if ok else 'REJECT'})"
        return {"ops": ops, "verdict": "VERIFIED", "seconds": seconds, "note": note}
    return run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the DDP example only")
    p.add_argument("--bugs", action="store_true", help="also each example's planted bugs")
    p.add_argument("--curves", action="store_true", help="the DDP example against ranks and micro-batches")
    p.add_argument("--json", default=os.path.join(ROOT, "bench", "results", "train_user.json"))
    args = p.parse_args()
    import importlib

    h = Harness("pvcert user training steps: inference (time); capture and replay (note)")
    h.header()
    for module in EXAMPLES[:1] if args.quick else EXAMPLES:
        h.run(module, workload(module, None))
        if args.bugs:
            for bug in sorted(importlib.import_module(module).BUGS):
                h.run(f"{module} [{bug}]", workload(module, bug))
    if args.curves:
        for world in (2, 4, 8):
            h.run(f"ddp_adamw_user world={world}",
                  workload("ddp_adamw_user", None, {"WORLD": world, "BATCH": 2 * world}))
        for micro in (2, 4, 8):
            h.run(f"ddp_adamw_user micro-batches={micro}", workload("ddp_adamw_user", None, {"MICRO": micro}))
    h.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
