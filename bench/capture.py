"""Capture benchmark: ``python bench/capture.py [--only NAME ...]``.

Each workload runs in a fresh process (so peak memory is its own): capture of the
forward and backward (make_fx with fake tensors) of every rank, stitched into one IR
graph. Prints a table (workload, ranks, IR nodes, collectives, seconds warm and cold
(the first capture in a process also loads torch's tracing machinery), peak RSS) and
writes bench/results/capture.json. The Llama-2-7B-sized layer is built on the meta
device (no weights are allocated) and captured at full size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _hf_7b_layer():
    from examples.models import hf_models
    from verifier.capture import capture_graph

    m = hf_models.llama(layers=1, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000, device="meta")
    return capture_graph("llama2_7b_layer", m, hf_models.inputs(batch=1, seq=2048, vocab=32000), call=hf_models.call,
                         backward=True)


def _workloads():
    from examples.models.attention import Attention, TPAttention
    from examples.models.mlp import MLP, TPMLP
    from examples.models.moe import EPMoE
    from verifier.capture import capture_graph, capture_spmd

    def mega(fn, w):
        from examples.models import megatron_models as mm
        from verifier.capture.megatron import cpu_patches
        with cpu_patches():
            return capture_spmd(f"mcore_{fn}_tp{w}", getattr(mm, fn), w,
                                mm.gpt_inputs() if fn == "gpt" else {"x": (3, 1, 4)}, backward=True)

    def hf(kind):
        from examples.models import hf_models
        return capture_graph(kind, getattr(hf_models, kind)(), hf_models.inputs(), call=hf_models.call,
                             backward=True)

    return {
        "mlp_seq": lambda: capture_graph("mlp", MLP(1024, 4096), {"x": (512, 1024)}, backward=True),
        "tp_mlp_w2": lambda: capture_spmd("tp_mlp", lambda r, w: TPMLP(1024, 4096, w), 2, {"x": (512, 1024)},
                                          backward=True),
        "tp_mlp_w8": lambda: capture_spmd("tp_mlp", lambda r, w: TPMLP(1024, 4096, w), 8, {"x": (512, 1024)},
                                          backward=True),
        "sp_mlp_w4": lambda: capture_spmd("sp_mlp", lambda r, w: TPMLP(1024, 4096, w, sequence_parallel=True), 4,
                                          {"x": (128, 1024)}, backward=True),
        "ep_moe_w4": lambda: capture_spmd("ep_moe", lambda r, w: EPMoE(8, 256, 512, w), 4,
                                          {"x": (64, 256), "dispatch": (64, 8, 16)}, backward=True),
        "attention_seq": lambda: capture_graph("att", Attention(1024, 16), {"x": (256, 1024)}, backward=True),
        "tp_attention_w4": lambda: capture_spmd("tp_att", lambda r, w: TPAttention(1024, 16, w), 4,
                                                {"x": (256, 1024)}, backward=True),
        "mcore_tp_linears_tp4": lambda: mega("tp_linears", 4),
        "mcore_gpt_1layer_tp2": lambda: mega("gpt", 2),
        "mcore_gpt_1layer_tp4": lambda: mega("gpt", 4),
        "hf_llama_1layer": lambda: hf("llama"),
        "hf_gpt2_1layer": lambda: hf("gpt2"),
        "llama2_7b_layer_meta": _hf_7b_layer,
    }


def run_one(name: str) -> dict:
    warnings.filterwarnings("ignore")
    import torch  # noqa: F401  (import cost outside the timing)

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fn = _workloads()[name]
    t0 = time.perf_counter()
    try:
        cap = fn()
    except ImportError as e:
        return {"workload": name, "skipped": f"{type(e).__name__}: {e}"}
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    cap = fn()                      # again, warm (torch's tracing machinery is loaded)
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    g = cap.graph
    return {"workload": name, "ranks": g["world_size"], "nodes": len(g["nodes"]),
            "collectives": sum(1 for n in g["nodes"] if "group" in n), "tensors": len(g["tensors"]),
            "seconds": round(secs, 3), "cold_seconds": round(cold, 3), "trace_s": round(cap.stats.get("trace_s", 0.0), 3),
            "peak_rss_mib": round(peak / 1024, 1), "rss_after_import_mib": round(base / 1024, 1),
            "json_bytes": len(json.dumps(g))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return
    names = args.only or list(_workloads())
    rows = []
    for n in names:
        p = subprocess.run([sys.executable, __file__, "--one", n], capture_output=True, text=True, cwd=ROOT)
        line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            err = (p.stderr.strip().splitlines() or ["no output"])[-1]
            rows.append({"workload": n, "error": err[:200]})
    print(f"{'workload':24} {'ranks':>5} {'ops':>6} {'coll':>5} {'time s':>8} {'cold s':>7} {'peak MiB':>9}")
    for r in rows:
        if "nodes" in r:
            print(f"{r['workload']:24} {r['ranks']:>5} {r['nodes']:>6} {r['collectives']:>5} "
                  f"{r['seconds']:>8.2f} {r['cold_seconds']:>7.2f} {r['peak_rss_mib']:>9.0f}")
        else:
            print(f"{r['workload']:24} {r.get('skipped') or r.get('error')}")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    import platform
    out = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count()}, "rows": rows}
    try:
        import torch
        out["machine"]["torch"] = torch.__version__
    except ImportError:
        pass
    with open(os.path.join(ROOT, "bench", "results", "capture.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
