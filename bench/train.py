"""Training-iteration benchmark: ``python bench/train.py [--quick] [--curves] [--staged]``.

Per workload (a fresh process each): the reference parallelizer captures the sequential
training step and every rank's program (forward, backward, micro-batch accumulation,
optimizer, metrics), the per-operator engine verifies the plan against the step, the
certificate is written and replayed. The time column is verification alone (what the
peer's figure measures); capture, writing the certificate (per-operator engine) and replay
are in the note, with device ops (impl nodes) and spec operators. ``--curves`` adds time against layers, DP, TP, PP and
micro-batches; ``--staged`` also runs ``verify --staged`` (shape reduction, stage
dedup). Writes bench/results/train.json.

Peer figure (TrainVerify, this kind of machine): 2-layer Llama-3 dp2 pp2 tp2, 2
micro-batches (2,336 device ops, 279 stages): 15 s. Targets: that case <= 2 s,
32 layers <= 10 s.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from verifier.bench import Harness  # noqa: E402


def workload(module: str, staged: bool, **kw):
    def run() -> dict:
        import importlib

        from certificates.replay import replay
        from verifier import certificate
        from verifier.refine import infer
        from verifier.train.plan import plan_case

        cap = plan_case(importlib.import_module(f"examples.train.{module}").make_case(**kw))
        t0 = time.perf_counter()
        if staged:
            from verifier.stages.certificate import staged_certificate
            from verifier.stages.run import summary, verify_staged

            res = verify_staged(cap.case)
            verified, cert = res.verified, (staged_certificate(res) if res.verified else None)
            detail = f"{summary(res)['stages']} stages, {summary(res)['classes']} classes"
            seconds = time.perf_counter() - t0
        else:
            inf = infer(cap.case)
            seconds = time.perf_counter() - t0   # verification alone; writing the certificate is noted
            t1 = time.perf_counter()
            verified, cert = inf.verified, (certificate.per_operator_certificate(inf) if inf.verified else None)
            detail = f"{inf.obligations} obligations + {inf.reused} reused, certificate {time.perf_counter() - t1:.2f} s"
        note = f"capture {cap.capture_s:.1f} s, {cap.spec_ops} spec ops"
        if cert is not None:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "c.json")
                certificate.write(cert, path)
                t1 = time.perf_counter()
                ok = all(r.ok for r in replay(path))
                note += f", replay {time.perf_counter() - t1:.2f} s ({'ACCEPT' if ok else 'REJECT'})"
        return {"ops": cap.impl_ops, "verdict": "VERIFIED" if verified else "REJECT", "seconds": seconds,
                "note": f"{note}, {detail}"}
    return run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the peer's 2-layer configuration only")
    p.add_argument("--curves", action="store_true", help="time against layers, DP, TP, PP, micro-batches")
    p.add_argument("--staged", action="store_true", help="also run the staged engine on each workload")
    p.add_argument("--json", default=os.path.join(ROOT, "bench", "results", "train.json"))
    args = p.parse_args()
    ref = dict(dp=2, tp=2, pp=2, micro_batches=2)
    runs = [("Llama 2 layers dp2 tp2 pp2 mb2 (peer's case)", "llama_plan", dict(ref, layers=2))]
    if not args.quick:
        runs += [("Llama 2 layers tp2 mb4 Adam", "llama_plan", dict(dp=1, tp=2, pp=1, micro_batches=4,
                                                                     optimizer="adam")),
                 ("Llama 2 layers dp2 ZeRO-1 Adam", "llama_plan", dict(dp=2, tp=1, pp=1, micro_batches=2,
                                                                      optimizer="adam", zero1=True)),
                 ("MoE 2 layers dp2 ep2 mb2", "moe_plan", dict(dp=2, ep=2, micro_batches=2)),
                 ("Llama 32 layers dp2 tp2 pp2 mb2", "llama_plan", dict(ref, layers=32))]
    if args.curves:
        runs += [(f"curve layers={n}", "llama_plan", dict(ref, layers=n)) for n in (4, 8, 16)]
        runs += [(f"curve dp={n}", "llama_plan", dict(dp=n, tp=1, pp=1, micro_batches=2)) for n in (1, 2, 4)]
        runs += [(f"curve tp={n}", "llama_plan", dict(dp=1, tp=n, pp=1, micro_batches=2)) for n in (1, 2, 4)]
        runs += [(f"curve pp={n}", "llama_plan", dict(dp=1, tp=1, pp=n, micro_batches=2, layers=4))
                 for n in (1, 2, 4)]
        runs += [(f"curve micro-batches={n}", "llama_plan", dict(dp=1, tp=1, pp=1, micro_batches=n))
                 for n in (1, 2, 4, 8)]
    h = Harness("pvcert training iterations: plan verification (time); capture and replay (note)")
    h.header()
    for name, module, kw in runs:
        h.run(name, workload(module, False, **kw))
        if args.staged:
            h.run(name + " [staged]", workload(module, True, **kw))
    h.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
