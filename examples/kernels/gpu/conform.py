#!/usr/bin/env python3
"""Run the kernel corpus on a GPU and compare every checked output element with the interpreter's.

  python examples/kernels/gpu/conform.py prepare DIR [--only NAME ...]   here, no GPU: inputs and expected values
  python3 examples/kernels/gpu/conform.py run DIR [--jobs 8]              on a GPU with CuPy: launch, compare, report
  python examples/kernels/gpu/conform.py emu DIR                          the same against the CUDA sources (g++)

``prepare`` runs the engine's interpreter (``verifier.kernels.equiv.check_pair``) on each pair of both corpora whose
expected verdict is equivalent or not-equivalent, draws seeded random inputs, and evaluates each output element's
normal form at them (float64; integer data exactly, modulo 2^32). It writes one JSON file per pair. ``run`` needs only
numpy and CuPy: it loads each side's PTX as nvcc or Triton emitted it (the driver compiles it), launches the whole
grid on the same inputs, and compares the elements of the checked CTAs with the interpreter's values: a difference
beyond float32 rounding is a disagreement between the interpreter and the hardware. For each not-equivalent pair it
also reports whether the two kernels' GPU outputs differ (the bug, on hardware). Racy and deadlocking pairs are not
launched (a deadlock would hang the GPU). ``emu`` needs no GPU: it compiles each pair's CUDA sources with g++ against
``examples/kernels/emu`` (one OS thread per CUDA thread), runs them on the same inputs and compares the same way:
the interpreter's reading of the PTX against the source it was compiled from. How to run it, and its results: examples/kernels/README.md.
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CORPORA = (HERE.parent, HERE.parent / "real")
NP = {"f32": np.float32, "f16": np.float16, "s32": np.int32}
PARAM_NP = {"u64": np.uint64, "s64": np.int64, "b64": np.uint64, "u32": np.uint32, "s32": np.int32,
            "b32": np.uint32, "f32": np.float32}


def _inputs(entry: dict, rng: np.random.Generator) -> dict:
    """Seeded values for every input and output tensor (outputs: their initial contents) and f32 scalar."""
    vals = {}
    for p in entry["params"]:
        if p["role"] == "scalar":
            if p.get("dtype") == "f32":
                vals[p["name"]] = float(np.float32(rng.uniform(0.5, 1.5)))
            continue
        n = math.prod(p["shape"])
        if p["dtype"] == "s32":
            vals[p["name"]] = rng.integers(-1000, 1000, n).tolist()
        else:
            vals[p["name"]] = rng.uniform(-1, 1, n).astype(NP[p["dtype"]]).astype(float).tolist()
    return vals


def _env(vals: dict):
    """The interpreter's variable names: ``x[i]``, ``out@init[i]``, an f32 scalar's name."""
    def look(name: str):
        base, _, rest = name.partition("[")
        if not rest:
            return vals[name]
        return vals[base.removesuffix("@init")][int(rest[:-1])]
    return look


def _expected(value, look) -> tuple:
    """(kind, value) of one output element: ("f", float), ("i", int modulo 2^32) or ("skip", why)."""
    from certificates.kernel import Word
    from certificates.poly import Rat
    from certificates.solve import evaluate, variables
    try:
        if isinstance(value, Word):
            v = value.p.value(lambda n: int(look(n)))
            return "i", int(v) % (1 << value.n)
        if isinstance(value, Rat):
            return "f", evaluate(value, {a: look(a) for a in variables(value)})
    except (ValueError, ZeroDivisionError, OverflowError) as e:   # log of a negative input, say
        return "skip", f"undefined at this input: {e}"
    return "skip", type(value).__name__


def prepare(out: Path, only: list) -> None:
    from certificates.kernel import bind, shared_bytes
    from verifier.kernels.equiv import check_pair, load_pairs
    from verifier.kernels.launch import parse_file
    out.mkdir(parents=True, exist_ok=True)
    for base in CORPORA:
        for name, entry in load_pairs(base).items():
            want = entry["expected"]["verdict"]
            if want not in ("equivalent", "not-equivalent") or only and name not in only:
                continue
            report = check_pair(entry, base)
            results = getattr(report, "results", None)
            if not results or len(results) != 2:
                print(f"{name}: not prepared ({report.verdict}: {report.message})", file=sys.stderr)
                continue
            rng = np.random.default_rng(sum(map(ord, name)))
            vals = _inputs(entry, rng)
            look = _env(vals)
            sides = {}
            for side in ("reference", "optimized"):
                spec = entry[side]
                kernel = parse_file(base / spec["ptx"]).kernel(spec.get("entry"))
                params = bind(entry["params"], spec, side)
                outputs = {k: v for r in results[side] for k, v in r.outputs.items()}
                sides[side] = {
                    "ptx": str((base / spec["ptx"]).resolve().relative_to(HERE.parent.parent.parent)),
                    "entry": kernel.name, "grid": spec["grid"], "block": spec["block"],
                    "shared": shared_bytes(spec, side) or 0,
                    "params": [{"name": p["name"], "role": p["role"], "dtype": p.get("dtype"),
                                "value": p.get("value"), "ptx_type": kp.type.lstrip(".")}
                               for p, kp in zip(params, kernel.params)],
                    "expected": [[k[0], int(k[1]), *_expected(v, look)] for k, v in sorted(outputs.items())]}
            (out / f"{name}.json").write_text(json.dumps({
                "name": name, "verdict": report.verdict, "expected_verdict": want,
                "shapes": {p["name"]: p["shape"] for p in entry["params"] if p["role"] != "scalar"},
                "dtypes": {p["name"]: p["dtype"] for p in entry["params"] if p["role"] != "scalar"},
                "values": vals, "sides": sides}))
            print(f"{name}: {report.verdict}, {len(sides['reference']['expected'])} elements")


def _launch(cp, root: Path, pair: dict, side: dict) -> dict:
    """Run one kernel on the GPU; its output tensors as numpy arrays."""
    mod = cp.RawModule(path=str(root / side["ptx"]))
    fn = mod.get_function(side["entry"])
    args, tensors = [], {}
    for p in side["params"]:
        if p["role"] == "scalar":
            v = pair["values"][p["name"]] if p["dtype"] == "f32" else int(p["value"])
            args.append(PARAM_NP[p["ptx_type"]](v))
            continue
        a = cp.asarray(np.asarray(pair["values"][p["name"]], dtype=NP[pair["dtypes"][p["name"]]]))
        tensors[p["name"]] = a
        args.append(a)
    if side["shared"] > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = side["shared"]
    fn(tuple(side["grid"]), tuple(side["block"]), tuple(args), shared_mem=side["shared"])
    cp.cuda.Device().synchronize()
    return {k: cp.asnumpy(v) for k, v in tensors.items()}


def _agree(kind: str, want, got, dtype: str) -> tuple[bool, float]:
    """Whether a GPU value ``got`` is the interpreter's exact ``want`` up to ``dtype``'s rounding (and its error):
    within 1e-3 (f16: 1e-2) of max(1, |want|), room for the rounding of sums of up to a few thousand terms; a
    wrong instruction semantics is off by far more."""
    if kind == "i":
        return int(np.int64(got)) % (1 << 32) == want, 0.0
    err = abs(float(got) - want)
    eps = 1e-2 if dtype == "f16" else 1e-3
    return err <= eps * max(1.0, abs(want)), err


def _compare(spec: dict, got: dict, dtypes: dict) -> dict:
    """Each element the interpreter computed against ``got[name][i]`` (flat arrays): counts, the worst relative error
    and the first disagreements."""
    worst, n, skipped, wrong = 0.0, 0, 0, []
    for name, i, kind, want in spec["expected"]:
        if kind == "skip":
            skipped += 1
            continue
        ok, err = _agree(kind, want, got[name][i], dtypes[name])
        n, worst = n + 1, max(worst, err / max(1.0, abs(want)))
        if not ok:
            wrong.append([f"{name}[{i}]", want, float(got[name][i])])
    return {"elements": n, "skipped": skipped, "max_rel_err": worst, "disagree": len(wrong), "first": wrong[:3]}


def check(f: Path) -> dict:
    """Launch one prepared pair's two kernels and compare (run in its own process: a fault or hang stays there)."""
    import cupy as cp
    pair = json.loads(f.read_text())
    row, outs = {"name": pair["name"], "expected_verdict": pair["expected_verdict"], "sides": {}}, {}
    for side, spec in pair["sides"].items():
        try:
            outs[side] = _launch(cp, HERE.parent.parent.parent, pair, spec)
        except Exception as e:   # a module the driver refuses, a launch error: reported, not hidden
            row["sides"][side] = {"error": f"{type(e).__name__}: {e}"}
            continue
        row["sides"][side] = _compare(spec, {k: v.reshape(-1) for k, v in outs[side].items()}, pair["dtypes"])
    if len(outs) == 2:   # the two kernels on hardware: equal up to rounding, or (a planted bug) not
        ref, opt = ([float(o[k].reshape(-1)[i]) for k, i, kind, _ in pair["sides"]["reference"]["expected"]
                     if kind != "skip"] for o in (outs["reference"], outs["optimized"]))
        row["gpu_ref_vs_opt_max_rel_diff"] = max((abs(a - b) / max(1.0, abs(a)) for a, b in zip(ref, opt)),
                                                 default=0.0)
    row["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return row


def run(d: Path, jobs: int, out: Path) -> int:
    """``check`` every prepared pair, ``jobs`` processes at a time; the report as JSON lines and in ``out``."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    def one(f: Path) -> dict:
        try:
            p = subprocess.run([sys.executable, __file__, "check", str(f)], capture_output=True, text=True,
                               timeout=300)
            return json.loads(p.stdout) if p.returncode == 0 else {"name": f.stem, "error": p.stderr[-2000:]}
        except (subprocess.TimeoutExpired, ValueError) as e:
            return {"name": f.stem, "error": f"{type(e).__name__}: {e}"}
    with ThreadPoolExecutor(jobs) as pool:
        rows = list(pool.map(one, sorted(d.glob("*.json"))))
    good = [r for r in rows if "error" not in r and all(s.get("disagree") == 0 for s in r["sides"].values())]
    for r in rows:
        print(json.dumps(r))
    summary = {"pairs": len(rows), "agree": len(good), "device": next((r["device"] for r in rows if "device" in r),
                                                                       None)}
    print(json.dumps(summary))
    out.write_text(json.dumps({"summary": summary, "pairs": rows}, indent=1))
    return 0 if len(good) == len(rows) else 1


def _emu_harness(entry: str, spec: dict, sizes: dict) -> str:
    """A C++ main that reads every tensor (float32, in the kernel's parameter order; ``sizes`` by name) from argv[1],
    launches ``entry`` on the emulator and writes the tensors back to argv[2] (8192 floats of slack after each, as
    ``run_emu.py``)."""
    params = spec["params"]
    decl = ", ".join("int" if p["role"] == "scalar" else "float*" for p in params)
    lines = ["#include <cstdio>", "#include <vector>", f'extern "C" void {entry}({decl});',
             "int main(int argc, char** argv) {", '  FILE* in = std::fopen(argv[1], "rb");']
    args, back = [], []
    for i, p in enumerate(params):
        if p["role"] == "scalar":
            args.append(str(int(p["value"])))
            continue
        n = sizes[p["name"]]
        lines += [f"  std::vector<float> t{i}({n} + 8192, 0.0f);",
                  f"  if (std::fread(t{i}.data(), 4, {n}, in) != {n}) return 2;"]
        args.append(f"t{i}.data()")
        back.append(f"  std::fwrite(t{i}.data(), 4, {n}, out);")
    g, b = spec["grid"], spec["block"]
    lines += ["  std::fclose(in);",
              f"  emu::launch([&] {{ {entry}({', '.join(args)}); }}, dim3{{{g[0]}u, {g[1]}u, {g[2]}u}}, "
              f"dim3{{{b[0]}u, {b[1]}u, {b[2]}u}});", '  FILE* out = std::fopen(argv[2], "wb");', *back,
              "  return std::fclose(out);", "}"]
    return "\n".join(lines) + "\n"


def _emu_side(name: str, pair: dict, side: str, src: Path, cxx: list, build: Path) -> dict:
    """One kernel built from ``src`` with g++ on the emulator, run on the pair's inputs and compared."""
    import subprocess
    spec = pair["sides"][side]
    sizes = {p["name"]: math.prod(pair["shapes"][p["name"]]) for p in spec["params"] if p["role"] != "scalar"}
    stem = build / f"{name}_{side}"
    stem.with_suffix(".cpp").write_text(_emu_harness(spec["entry"], spec, sizes))
    made = subprocess.run(cxx + ["-x", "c++", str(src), "-x", "c++", str(stem.with_suffix(".cpp")), "-o", str(stem)],
                          capture_output=True, text=True)
    if made.returncode:
        why = next((line for line in made.stderr.splitlines() if "error" in line), "g++ failed")
        return {"error": "not built: " + why.strip()[:200]}
    np.concatenate([np.asarray(pair["values"][n], np.float32) for n in sizes]).tofile(stem.with_suffix(".in"))
    try:
        ran = subprocess.run([str(stem), str(stem.with_suffix(".in")), str(stem.with_suffix(".out"))],
                             capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"error": "no result after 120 s"}
    if ran.returncode:
        return {"error": f"exit {ran.returncode}"}
    flat = np.fromfile(stem.with_suffix(".out"), np.float32)
    return _compare(spec, dict(zip(sizes, np.split(flat, np.cumsum(list(sizes.values()))[:-1]))), pair["dtypes"])


def emu(d: Path, out: Path) -> int:
    """``check``'s comparison with each side run from its CUDA source on ``examples/kernels/emu`` (pairs with sources;
    the emulator has no tensor-core stand-ins but ``hgemm_mma``'s, so those are reported as not built)."""
    import tempfile
    emu_dir = HERE.parent / "emu"
    sys.path.insert(0, str(emu_dir))
    from run_emu import CXX   # the emulation's own compiler flags
    cxx = CXX + ["-include", str(emu_dir / "cuda_emu.h"), "-I", str(emu_dir)]
    entries = {p["name"]: p for p in json.loads((HERE.parent / "pairs.json").read_text())["pairs"]}
    rows = []
    with tempfile.TemporaryDirectory(prefix="conform_emu_") as tmp:
        for f in sorted(d.glob("*.json")):
            if f.stem in entries:   # the main corpus: pairs with CUDA sources
                pair = json.loads(f.read_text())
                rows.append({"name": f.stem, "sides": {side: _emu_side(f.stem, pair, side, HERE.parent / entries[
                    f.stem][side]["src"], cxx, Path(tmp)) for side in pair["sides"]}})
                print(json.dumps(rows[-1]), flush=True)
    built = [r for r in rows if all("error" not in s for s in r["sides"].values())]
    good = [r for r in built if all(s["disagree"] == 0 for s in r["sides"].values())]
    summary = {"pairs": len(rows), "built": len(built), "agree": len(good), "device": "emu (g++)"}
    print(json.dumps(summary))
    out.write_text(json.dumps({"summary": summary, "pairs": rows}, indent=1))
    return 0 if len(good) == len(built) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("prepare", "run", "check", "emu"))
    ap.add_argument("path", type=Path, help="the prepared folder (check: one pair's file)")
    ap.add_argument("--only", nargs="*", default=[], help="prepare: these pairs only")
    ap.add_argument("--jobs", type=int, default=8, help="run: pairs at a time")
    ap.add_argument("--report", type=Path, help="run, emu: where to write the report (default: beside the folder)")
    a = ap.parse_args()
    if a.command == "prepare":
        sys.path.insert(0, str(HERE.parent.parent.parent))
        prepare(a.path, a.only)
        return 0
    if a.command == "check":
        print(json.dumps(check(a.path)))
        return 0
    if a.command == "emu":
        return emu(a.path, a.report or a.path.parent / "emu-report.json")
    return run(a.path, a.jobs, a.report or a.path.parent / "report.json")


if __name__ == "__main__":
    sys.exit(main())
