#!/usr/bin/env python3
"""Run every pair of ../pairs.json on the CPU emulation (no GPU needed) and compare outputs.

  python3 examples/kernels/emu/run_emu.py [--only NAME] [--build-dir DIR]

Each src/*.cu is compiled as C++20 with g++ against cuda_emu.h (one OS thread per CUDA
thread, real std::barrier for __syncthreads/__syncwarp). For each pair both kernels run
over the whole grid on the same random inputs and every output element is compared
(relative error, tolerance 1e-4). This is a numerical smoke test of the corpus, not a
verifier: it says nothing about races it does not happen to hit. A pair whose run does not
finish within the timeout is reported as HANG (expected for the deadlock entry).
"""
import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CXX = ["g++", "-std=c++20", "-O1", "-pthread", "-w", "-DPVCERT_CPU_EMU"]


def ctype(p):
    return "int" if p["role"] == "scalar" else "float*"


def harness(pair):
    ref, opt = pair["reference"], pair["optimized"]
    params = pair["params"]
    decl = ", ".join(ctype(p) for p in params)
    lines = ['#include <cstdio>', '#include <cstdlib>', '#include <cmath>', '#include <vector>',
             f'extern "C" void {ref["entry"]}({decl});']
    if opt["entry"] != ref["entry"]:
        lines.append(f'extern "C" void {opt["entry"]}({decl});')
    lines += ['static unsigned long long st = 88172645463325252ull;',
              'static double rnd() { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return (st >> 11) * (1.0 / 9007199254740992.0); }',
              'int main() {', '  const size_t SLACK = 8192;']
    args = []
    for i, p in enumerate(params):
        if p["role"] == "scalar":
            args.append(str(p["value"]))
            continue
        n = math.prod(p["shape"])
        lines.append(f'  std::vector<float> t{i}(({n}) + SLACK, 0.0f);')
        if p["role"] == "input":
            if p["dtype"] == "f16":   # multiples of 1/64 in [-2, 2]: exact in half precision
                lines.append(f'  for (size_t k = 0; k < {n}; ++k) t{i}[k] = std::floor(rnd() * 256.0 - 128.0) / 64.0f;')
            else:
                lines.append(f'  for (size_t k = 0; k < {n}; ++k) t{i}[k] = float(rnd() * 2.0 - 1.0);')
        args.append(f"t{i}.data()")
    outs = [i for i, p in enumerate(params) if p["role"] == "output"]
    lines.append('  std::vector<std::vector<float>> res;')
    for k in (ref, opt):
        for i in outs:
            lines.append(f'  std::fill(t{i}.begin(), t{i}.end(), -777.0f);')
        g, b = k["grid"], k["block"]
        lines.append(f'  emu::launch([&] {{ {k["entry"]}({", ".join(args)}); }}, dim3{{{g[0]}u, {g[1]}u, {g[2]}u}}, dim3{{{b[0]}u, {b[1]}u, {b[2]}u}});')
        for i in outs:
            n = math.prod(params[i]["shape"])
            lines.append(f'  res.emplace_back(t{i}.begin(), t{i}.begin() + {n});')
    lines += ['  double maxerr = 0, maxref = 0; size_t bad = 0, tot = 0;',
              f'  for (size_t o = 0; o < {len(outs)}; ++o) {{',
              f'    auto& a = res[o]; auto& b = res[o + {len(outs)}];',
              '    for (size_t k = 0; k < a.size(); ++k) {',
              '      double e = std::fabs(double(a[k]) - double(b[k])); if (!(e == e)) e = 1e30;',
              '      maxerr = std::fmax(maxerr, e); maxref = std::fmax(maxref, std::fabs(a[k]));',
              '      if (e > 1e-4 * (1.0 + std::fabs(a[k]))) ++bad; ++tot; } }',
              '  std::printf("maxerr %.3g maxref %.3g mismatches %zu/%zu\\n", maxerr, maxref, bad, tot);',
              '  return bad ? 3 : 0;', '}']
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--build-dir", default="/tmp/pvcert_kernels_emu")
    ap.add_argument("--timeout", type=int, default=60)
    a = ap.parse_args()
    bd = Path(a.build_dir)
    bd.mkdir(parents=True, exist_ok=True)
    doc = json.loads((ROOT / "pairs.json").read_text())
    pairs = [p for p in doc["pairs"] if not a.only or a.only in p["name"]]
    objs = {}
    for p in pairs:
        for side in ("reference", "optimized"):
            src = ROOT / p[side]["src"]
            obj = bd / (src.stem + ".o")
            if src.stem not in objs:
                subprocess.run(CXX + ["-x", "c++", "-include", str(HERE / "cuda_emu.h"), "-I", str(HERE),
                                      "-c", str(src), "-o", str(obj)], check=True)
                objs[src.stem] = obj
    failures = 0
    for p in pairs:
        h = bd / f"h_{p['name']}.cpp"
        h.write_text(harness(p))
        exe = bd / f"h_{p['name']}"
        stems = {Path(p[s]["src"]).stem for s in ("reference", "optimized")}
        subprocess.run(CXX + ["-include", str(HERE / "cuda_emu.h"), "-I", str(HERE), str(h)]
                       + [str(objs[s]) for s in stems] + ["-o", str(exe)], check=True)
        try:
            r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=a.timeout)
            outcome = "MATCH" if r.returncode == 0 else ("DIFFER" if r.returncode == 3 else f"rc={r.returncode}")
            detail = r.stdout.strip()
        except subprocess.TimeoutExpired:
            outcome, detail = "HANG", f"no result after {a.timeout}s"
        v = p["expected"]["verdict"]
        ok = {"equivalent": outcome == "MATCH", "not-equivalent": outcome == "DIFFER",
              "deadlock": outcome == "HANG", "racy": outcome in ("MATCH", "DIFFER")}[v]
        failures += not ok
        print(f"{'ok ' if ok else 'BAD'} {p['name']:40s} expected {v:15s} emu {outcome:7s} {detail}", flush=True)
    print(f"{len(pairs) - failures}/{len(pairs)} consistent with the expected verdict")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
