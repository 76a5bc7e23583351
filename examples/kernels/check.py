#!/usr/bin/env python3
"""Self-check for the kernel corpus (no GPU needed).

  python3 examples/kernels/check.py             validate pairs.json against src/ and ptx/
  python3 examples/kernels/check.py --features  also print the per-file PTX feature table (markdown)

Validation: pairs.json parses; every referenced .cu / .ptx exists; every entry name is a
`.visible .entry` of its PTX; both kernels of a pair have as many .param as the entry lists
parameters; tensor shapes / scalar values are well formed; verdicts are known.
"""
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERDICTS = {"equivalent", "racy", "not-equivalent", "deadlock"}
DTYPES = {"f32", "f16", "s32"}

# (column title, regex applied to instruction lines)
FEATURES = [
    ("bar.sync", r"^\s*(@!?%p\d+\s+)?(bar|barrier)(\.cta)?\.sync\b"),
    ("bar.warp.sync", r"\bbar\.warp\.sync\b"),
    ("shfl.sync", r"\bshfl\.sync\b"),
    ("vote", r"\bvote\."),
    ("wmma", r"\bwmma\."),
    ("mma.sync", r"(?<!wmma\.)\bmma\.sync\b"),
    ("ldmatrix", r"\bldmatrix\b"),
    ("ld/st.shared.v2/v4", r"\b(ld|st)\.shared\.v[24]\b"),
    ("ld/st.global.v4", r"\b(ld|st)\.global(\.nc)?\.v[24]\b"),
    ("ld.global.nc", r"\bld\.global\.nc\b"),
    ("volatile", r"\b(ld|st)\.volatile\b"),
    ("local mem", r"\b(ld|st)\.local\b"),
    ("atomics", r"\b(atom|red)\."),
    ("cp.async", r"\bcp\.async\b"),
    ("ex2.approx", r"\bex2\.approx\b"),
    ("max.f32", r"\bmax\.f32\b"),
    ("div.rn.f32", r"\bdiv\.rn\.f32\b"),
    ("f16 cvt", r"\bcvt\.[a-z]*\.?f16\.f32\b|\bcvt\.f32\.f16\b"),
    ("selp", r"\bselp\."),
    ("inline-asm {}", r"^\s*\{\s*\S"),
]


def ptx_features(path):
    lines = path.read_text().splitlines()
    body = [l.split("//")[0] for l in lines]
    found = {}
    for title, rx in FEATURES:
        n = sum(1 for l in body if re.search(rx, l))
        if n:
            found[title] = n
    # predicated instructions: @%p / @!%p guards, split into branches and others
    pb = sum(1 for l in body if re.match(r"^\s*@!?%p\d+\s+bra", l))
    po = sum(1 for l in body if re.match(r"^\s*@!?%p\d+\s+(?!bra)\S", l))
    if pb:
        found["pred. bra"] = pb
    if po:
        found["pred. other"] = po
    # loops: a branch whose target label is defined earlier in the file
    labels = {}
    back = 0
    for i, l in enumerate(body):
        m = re.match(r"^\s*(\$?[\w$]+):", l)
        if m:
            labels[m.group(1)] = i
        m = re.search(r"\bbra(\.uni)?\s+(\$?[\w$]+)\s*;", l)
        if m and m.group(2) in labels and labels[m.group(2)] < i:
            back += 1
    if back:
        found["loops (back-edges)"] = back
    found["instr"] = sum(1 for l in body if re.match(r"^\s*(@!?%p\d+\s+)?[a-z][\w.]*\s", l) and not l.strip().startswith("."))
    return found


def entries(path):
    text = path.read_text()
    out = {}
    for m in re.finditer(r"\.visible\s+\.entry\s+(\w+)\s*\((.*?)\)", text, re.S):
        out[m.group(1)] = len(re.findall(r"\.param\b", m.group(2)))
    return out


def validate():
    doc = json.loads((HERE / "pairs.json").read_text())
    errors = []
    names = set()
    for p in doc["pairs"]:
        tag = p.get("name", "?")
        if tag in names:
            errors.append(f"{tag}: duplicate name")
        names.add(tag)
        exp = p["expected"]
        if exp["verdict"] not in VERDICTS:
            errors.append(f"{tag}: unknown verdict {exp['verdict']}")
        if exp["verdict"] in ("racy", "deadlock") and exp.get("kernel") not in ("reference", "optimized"):
            errors.append(f"{tag}: {exp['verdict']} needs kernel = reference|optimized")
        for prm in p["params"]:
            if prm["dtype"] not in DTYPES or prm["role"] not in ("input", "output", "scalar"):
                errors.append(f"{tag}: bad param {prm}")
            if prm["role"] == "scalar" and not isinstance(prm.get("value"), int):
                errors.append(f"{tag}: scalar {prm['name']} needs an integer value")
            if prm["role"] != "scalar" and not (prm.get("shape") and all(isinstance(d, int) and d > 0 for d in prm["shape"])):
                errors.append(f"{tag}: tensor {prm['name']} needs a shape")
        if not any(prm["role"] == "output" for prm in p["params"]):
            errors.append(f"{tag}: no output tensor")
        for side in ("reference", "optimized"):
            k = p[side]
            for key in ("src", "ptx"):
                if not (HERE / k[key]).is_file():
                    errors.append(f"{tag}: {side} {key} {k[key]} missing")
            if (HERE / k["ptx"]).is_file():
                ents = entries(HERE / k["ptx"])
                if k["entry"] not in ents:
                    errors.append(f"{tag}: {side} entry {k['entry']} not in {k['ptx']} ({sorted(ents)})")
                elif ents[k["entry"]] != len(p["params"]):
                    errors.append(f"{tag}: {side} {k['entry']} has {ents[k['entry']]} params, pairs.json lists {len(p['params'])}")
            if (HERE / k["src"]).is_file() and f'{k["entry"]}(' not in (HERE / k["src"]).read_text():
                errors.append(f"{tag}: {side} entry {k['entry']} not found in {k['src']}")
            if len(k["grid"]) != 3 or len(k["block"]) != 3:
                errors.append(f"{tag}: {side} grid/block must have 3 dims")
            nthreads = k["block"][0] * k["block"][1] * k["block"][2]
            if not 1 <= nthreads <= 1024:
                errors.append(f"{tag}: {side} block has {nthreads} threads")
    # every .cu has a .ptx and is used by some pair
    used = {p[s]["src"] for p in doc["pairs"] for s in ("reference", "optimized")}
    for cu in sorted((HERE / "src").glob("*.cu")):
        rel = f"src/{cu.name}"
        if not (HERE / "ptx" / (cu.stem + ".ptx")).is_file():
            errors.append(f"{rel}: no ptx/{cu.stem}.ptx (run build.sh)")
        if rel not in used:
            errors.append(f"{rel}: not referenced by pairs.json")
    return doc, errors


def feature_table():
    cols = [t for t, _ in FEATURES] + ["pred. bra", "pred. other", "loops (back-edges)"]
    rows = []
    for ptx in sorted((HERE / "ptx").glob("*.ptx")):
        f = ptx_features(ptx)
        rows.append((ptx.name, f))
    present = [c for c in cols if any(c in f for _, f in rows)]
    out = ["| PTX file | instr | " + " | ".join(present) + " |",
           "|---|---:|" + "---:|" * len(present)]
    for name, f in rows:
        out.append(f"| {name} | {f['instr']} | " + " | ".join(str(f.get(c, "")) for c in present) + " |")
    absent = [c for c in cols if c not in present]
    return "\n".join(out), absent


def main():
    doc, errors = validate()
    if "--features" in sys.argv:
        table, absent = feature_table()
        print(table)
        print()
        print("Not emitted in any file: " + ", ".join(absent))
    for e in errors:
        print("ERROR:", e, file=sys.stderr)
    print(f"pairs.json: {len(doc['pairs'])} entries, {len(errors)} errors", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
