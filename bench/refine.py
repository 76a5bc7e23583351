"""Refinement benchmark: ``python bench/refine.py [--quick | --full | --curve | --vocab-curve]``.

Per workload (a fresh process each): capture the PyTorch case (forward and backward),
infer the clean relations operator by operator, write the per-operator certificate and
replay it with the checker. The time column is inference alone (what ENTANGLE's figures
measure); capture and replay times are in the note. Writes bench/results/refine.json.

Peer figures (ENTANGLE on this kind of machine, 2 cores): GPT 1 layer TP2 11 s, TP8 65 s,
8 layers TP2 50 s; Llama-3 1 layer TP2 8 s.
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


def workload(make, *args):
    def run() -> dict:
        from certificates import symint
        from certificates.precise import PRECISE
        from certificates.replay import replay
        from verifier import certificate
        from verifier.capture.case import capture_case
        from verifier.refine import infer

        t0 = time.perf_counter()
        case = capture_case(make(*args))
        t1 = time.perf_counter()
        inf = infer(case, check=symint.check, precise=PRECISE)   # as pvcert verify and its replay
        t2 = time.perf_counter()
        note = f"capture {t1 - t0:.1f} s"
        if inf.verified:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "c.json")
                certificate.write(certificate.per_operator_certificate(inf), path)
                t3 = time.perf_counter()
                ok = all(r.ok for r in replay(path))
                note += f", replay {time.perf_counter() - t3:.2f} s ({'ACCEPT' if ok else 'REJECT'})"
        note += f", {inf.obligations} obligations + {inf.reused} reused"
        ops = len(inf.prepared.spec.nodes) + len(inf.prepared.impl.nodes)
        return {"ops": ops, "verdict": "VERIFIED" if inf.verified else "REJECT", "seconds": t2 - t1,
                "note": note}
    return run


def full_size(case_module: str, call: str):
    """``pvcert verify`` on ``case_module.call`` as a user runs it (at full size: reduced by stages, or the full-size
    search for a counterexample where a stage cannot be reduced)."""
    def run() -> dict:
        import contextlib
        import io
        import re

        from verifier import cli

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "case.py")
            with open(path, "w") as f:
                names = ", ".join(["make_case"] + [n for n in ("FULL", "LLAMA") if n in call])
                f.write(f"from {case_module} import {names}\nCASE = {call}\n")
            out, t0, cert = io.StringIO(), time.perf_counter(), os.path.join(tmp, "c.json")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                code = cli.main(["verify", path, "--emit-cert", cert])
            seconds, text = time.perf_counter() - t0, out.getvalue()
            if code == 0:   # the certificate replayed as an auditor does (the checker's own process)
                from certificates.replay import replay
                t1 = time.perf_counter()
                ok = all(r.ok for r in replay(cert))
                text += f"\nreplay {time.perf_counter() - t1:.2f} s ({'ACCEPT' if ok else 'REJECT'})"
        at = re.search(r"located by value at full size: spec operator '([^']+)' \((.*?)\) is", text)
        found = re.search(r"no counterexample at full size \(([^)]*)\)", text)
        verdict = {0: "VERIFIED", 1: "REFUTED", 3: "LIMIT", 4: "UNKNOWN"}.get(code, f"exit {code}")
        staged = re.search(r"VERIFIED \S+: (.*)\n", text)
        note = (f"located at '{at.group(1)}' ({at.group(2)})" if at else
                f"no counterexample at full size ({found.group(1)})" if found else
                f"{staged.group(1)}; {text.strip().splitlines()[-1]}" if staged else text.strip().splitlines()[-1][:200])
        return {"ops": 0, "verdict": verdict, "seconds": seconds, "note": note}
    return run


HF_FULL = [("Llama (SDPA, GQA 12/4 heads, hidden 768), DTensor TP2, fwd+bwd", "examples.cases.hf_llama_sdpa_tp"),
           ("Qwen2 (SDPA, GQA 16/4 heads, hidden 1024), DTensor TP2, fwd", "examples.cases.hf_qwen2_sdpa_tp")]
HF_BUGS = [None, "no_all_reduce", "o_proj_no_all_reduce", "attention_scale"]   # examples/models/hf_models.py


def hf_full_size() -> list:
    """The transformers models called normally at vocabulary 32000, sequence 1024, hidden 768 (Llama, forward and
    backward) or 1024 (Qwen2, forward): ``FULL`` of each case, correct and with each planted bug of ``hf_models.BUGS``."""
    return [(f"transformers {name} full size{', ' + bug if bug else ''}",
             full_size(module, f"make_case(2, bug={bug!r}, size=FULL)")) for name, module in HF_FULL for bug in HF_BUGS]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the smallest workloads only")
    p.add_argument("--full", action="store_true", help="megatron-core's transformer MLP at hidden 768, sequence 1024; "
                   "megatron-core GPTModel at vocabulary 32768, sequence 1024, "
                   "hidden 768, and transformers Llama and Qwen2 at vocabulary 32000, sequence 1024, hidden 768 / 1024, "
                   "through pvcert verify: correct and with planted bugs")
    p.add_argument("--curve", action="store_true", help="megatron-core's transformer layer TP2 (hidden 768, 16 heads) "
                   "at sequence 256 to 4096 through pvcert verify: the time against sequence length")
    p.add_argument("--vocab-curve", action="store_true", help="megatron-core GPTModel TP2 (1 layer, sequence 1024, "
                   "hidden 768, 16 heads) at vocabulary 1024 to 32768 through pvcert verify: the time against vocabulary")
    p.add_argument("--json", default=None, help="default bench/results/refine.json (refine-full.json with --full, "
                   "refine-curve.json with --curve)")
    args = p.parse_args()
    name = "refine-full.json" if args.full else "refine-curve.json" if args.curve else \
        "refine-vocab.json" if args.vocab_curve else "refine.json"
    args.json = args.json or os.path.join(ROOT, "bench", "results", name)
    if args.curve:
        h = Harness("pvcert verify against sequence length: verdict, time (capture and the run included), note")
        h.header()
        for seq in (256, 512, 1024, 2048, 4096):
            h.run(f"megatron-core transformer layer (hidden 768, 16 heads) TP2, sequence {seq}, fwd+bwd",
                  full_size("examples.cases.megatron_layer", f"make_case(2, size=dict(seq={seq}, hidden=768, heads=16))"))
        h.write(args.json)
        return 0
    if args.vocab_curve:
        h = Harness("pvcert verify against vocabulary: verdict, time (capture and the run included), note")
        h.header()
        for vocab in (1024, 4096, 16384, 32768):
            h.run(f"megatron-core GPTModel 1 layer TP2, vocabulary {vocab}, sequence 1024, hidden 768, fwd+bwd",
                  full_size("examples.cases.megatron_gpt",
                            f"make_case(2, size=dict(vocab={vocab}, seq=1024, hidden=768, heads=16))"))
        h.write(args.json)
        return 0
    if args.full:
        h = Harness("pvcert verify at full size: verdict, time (capture and the full-size run included), note")
        h.header()
        for size, w, bug in [("FULL", 2, None), ("FULL", 4, None), ("FULL", 8, None), ("FULL", 2, "no_all_reduce"),
                             ("FULL", 8, "no_all_reduce"), ("LLAMA", 2, None), ("LLAMA", 8, None),
                             ("LLAMA", 2, "no_all_reduce")]:
            widths = "hidden 768, FFN 3072" if size == "FULL" else "SwiGLU, hidden 4096, FFN 11008"
            h.run(f"megatron-core transformer MLP ({widths}, sequence 1024) TP{w}, fwd+bwd{', ' + bug if bug else ''}",
                  full_size("examples.cases.megatron_mlp", f"make_case({w}, bug={bug!r}, size={size})"))
        for w, bug in [(2, None), (8, None), (2, "no_all_reduce")]:
            h.run(f"transformers LlamaMLP (hidden 4096, FFN 11008, sequence 1024), DTensor TP{w}, fwd+bwd"
                  f"{', ' + bug if bug else ''}",
                  full_size("examples.cases.hf_llama_mlp_tp", f"make_case({w}, bug={bug!r}, size=FULL)"))
        for w, bug in [(2, None), (4, None), (8, None), (2, "no_all_reduce"), (2, "attention_scale")]:
            h.run(f"megatron-core transformer layer (hidden 768, 16 heads, sequence 1024) TP{w}, fwd+bwd"
                  f"{', ' + bug if bug else ''}",
                  full_size("examples.cases.megatron_layer", f"make_case({w}, bug={bug!r}, size=FULL)"))
        for w, bug in [(2, None), (4, None), (8, None), (2, "no_all_reduce"), (8, "no_all_reduce"),
                       (2, "attention_scale"), (8, "attention_scale")]:
            h.run(f"megatron-core GPTModel full size TP{w}{', ' + bug if bug else ''}",
                  full_size("examples.cases.megatron_gpt", f"make_case({w}, bug={bug!r}, size=FULL)"))
        for w, bug in [(2, None), (4, None), (8, None), (2, "no_all_reduce")]:
            h.run(f"vLLM-style layer on 5 declared custom ops (Llama-3-8B widths, 1024 tokens) TP{w}, inference"
                  f"{', ' + bug if bug else ''}",
                  full_size("examples.cases.vllm_layer", f"make_case({w}, bug={bug!r}, size=FULL)"))
        for layers in (2, 4, 8):
            h.run(f"megatron-core GPTModel full size, {layers} layers, TP2",
                  full_size("examples.cases.megatron_gpt", f"make_case(2, size=FULL, layers={layers})"))
        try:
            import transformers  # noqa: F401
            for name, run in hf_full_size():
                h.run(name, run)
        except ImportError:
            print("transformers not installed: its workloads are skipped")
        h.write(args.json)
        return 0
    from examples.cases.gpt_tp_sp import make_case as gpt
    from examples.cases.llama_tp import make_case as llama

    from examples.cases.vllm_layer import make_case as vllm

    runs = [("GPT block TP2+SP, fwd+bwd", gpt, 1, 2), ("Llama block TP2, fwd+bwd", llama, 2)]
    if not args.quick:
        runs += [("vLLM-style layer on 5 declared custom ops TP2, inference", vllm, 2)]
        runs += [("GPT block TP4+SP, fwd+bwd", gpt, 1, 4), ("GPT block TP8+SP, fwd+bwd", gpt, 1, 8),
                 ("GPT 8 blocks TP2+SP, fwd+bwd", gpt, 8, 2), ("Llama block TP4, fwd+bwd", llama, 4),
                 ("Llama block TP8, fwd+bwd", llama, 8)]
        try:
            import megatron.core  # noqa: F401
            from examples.cases.megatron_gpt import make_case as mcore
            runs += [(f"megatron-core GPTModel 1 layer TP{w}, fwd+bwd", mcore, w) for w in (2, 4, 8)]
        except ImportError:
            print("megatron-core not installed: its workloads are skipped")
        try:
            import transformers  # noqa: F401
            from examples.cases.hf_llama_tp import make_case as hf_llama
            runs += [(f"transformers Llama 1 layer, DTensor TP{w}, fwd+bwd", hf_llama, w) for w in (2, 4)]
            from examples.cases.hf_llama_sdpa_tp import make_case as hf_sdpa
            runs += [("transformers Llama called normally (SDPA, GQA, in-graph mask) TP2, fwd+bwd", hf_sdpa, 2)]
            from examples.cases.hf_qwen2_sdpa_tp import make_case as hf_qwen2
            runs += [("transformers Qwen2 called normally (SDPA, GQA, qkv biases) TP2, fwd", hf_qwen2, 2)]
        except ImportError:
            print("transformers not installed: its workloads are skipped")
    h = Harness("pvcert refinement: per-operator inference (time), capture and replay (note)")
    h.header()
    for name, make, *a in runs:
        h.run(name, workload(make, *a))
    h.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
