"""Templated training plans: ``python bench/train_template.py [--quick] [--curves] [--json PATH]``.

Per row, in a fresh process: verify the template (blocks captured at reduced shapes with
the real TP degree and verified per operator; the schedule checked rank by rank), write
the certificate, then replay it in another fresh process. Reports wall time, peak
resident memory (max RSS) of each process and the verdicts. Writes
bench/results/train_template.json. ``--quick``: the small plan only. Rows marked "user" take
their blocks from the user's own layer, loss and optimizer (examples/train/llama_user_template.py).
``--curves``: the user's plan around the 70B shape, one of layers, dp, tp, pp and micro-batches
varied at a time (bench/results/train_template_curves.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

USER = os.path.join(ROOT, "examples", "train", "llama_user_template.py")
S70 = dict(layers=80, dp=16, tp=8, pp=4, micro_batches=32)
S405 = dict(layers=126, dp=64, tp=8, pp=16, micro_batches=16)
ROWS = [("Llama 4 layers dp2 tp2 pp2 mb2", None, dict(layers=4, dp=2, tp=2, pp=2, micro_batches=2, seq=2, hidden=4)),
        ("Llama3-70B shape: 80 layers dp16 tp8 pp4 mb32", None, S70),  # blocks and claim at S=2, H=16
        ("Llama3-405B shape: 126 layers dp64 tp8 pp16 mb16", None, S405),
        ("user layer, 70B shape", USER, S70),
        ("user layer, 405B shape", USER, S405)]
CURVES = [(f"user, {k} {v}", USER, {**S70, k: v})
          for k, vs in (("layers", (16, 32, 80, 160)), ("dp", (1, 4, 16, 64)), ("tp", (1, 2, 4, 8)),
                        ("pp", (1, 2, 4, 8)), ("micro_batches", (1, 8, 32, 64))) for v in vs]

VERIFY = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from verifier.train.template import TemplateCase, verify
from verifier.capture.case import import_module
t0 = time.perf_counter()
res = verify(import_module({source!r}).make_template(**{kw!r}) if {source!r} else TemplateCase("bench", **{kw!r}))
secs = time.perf_counter() - t0
if res.ok:
    json.dump(res.cert, open({cert!r}, "w"))
print(json.dumps(dict(ok=res.ok, reason=res.reason, seconds=secs, times=res.times, events=res.events,
                      peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""

REPLAY = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from certificates.replay import replay
t0 = time.perf_counter()
rs = replay({cert!r})
print(json.dumps(dict(ok=all(r.ok for r in rs), seconds=time.perf_counter() - t0,
                      peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        return {"ok": False, "error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--curves", action="store_true", help="the user's plan against each parallel dimension")
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results", "train_template.json"))
    a = ap.parse_args(argv)
    rows = ROWS[:1] if a.quick else CURVES if a.curves else ROWS
    if a.curves and a.json.endswith("train_template.json"):
        a.json = a.json.replace("train_template.json", "train_template_curves.json")
    results = []
    print(f"{'workload':50s} {'ranks':>6s} {'events':>10s} {'verify s':>9s} {'blocks s':>9s} {'wiring s':>9s} "
          f"{'peak MB':>8s} {'replay s':>9s} {'replay MB':>9s}  verdict")
    with tempfile.TemporaryDirectory() as tmp:
        for name, source, kw in rows:
            cert = os.path.join(tmp, "cert.json")
            v = _run(VERIFY.format(root=ROOT, kw=kw, cert=cert, source=source))
            r = _run(REPLAY.format(root=ROOT, cert=cert)) if v.get("ok") else {"ok": False}
            ranks = kw["dp"] * kw["tp"] * kw["pp"]
            row = {"workload": name, "blocks": "user" if source else "reference", **kw, "ranks": ranks,
                   "verify": v, "replay": r,
                   "verdict": "VERIFIED, replays" if v.get("ok") and r.get("ok") else "FAILED"}
            results.append(row)
            t = v.get("times", {})
            print(f"{name:50s} {ranks:6d} {v.get('events', 0):10,d} {v.get('seconds', 0):9.1f} "
                  f"{t.get('blocks_s', 0):9.1f} {t.get('wiring_s', 0):9.1f} {v.get('peak_mb', 0):8.0f} "
                  f"{r.get('seconds', 0):9.1f} {r.get('peak_mb', 0):9.0f}  {row['verdict']}", flush=True)
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump({"created": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": results}, f, indent=1)
    print(f"wrote {a.json}")
    return 0 if all(r["verdict"] != "FAILED" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
