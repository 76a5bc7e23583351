"""Kernel equivalence (issue 5): symbolically execute CTA ``check_cta`` of a reference
and an optimized PTX kernel, reject races and deadlocks, then decide every output
element equal over the reals with ``certificates.solve.decide``.

Verdicts: ``equivalent`` | ``racy`` | ``deadlock`` | ``not-equivalent`` | ``unknown``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from certificates.errors import CheckError, Malformed, Unsupported
from certificates.kernel import (Word, bind, check_params, ctas, dot_equal, scope, shared_bytes, shift, undefined,
                                 word_equal)
from certificates.poly import Rat, side_conditions
from certificates.solve import Verdict, decide

from .exec import DeadlockError, RaceError, run_cta, static_check
from .launch import parse_file

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "kernels"


@dataclass
class Report:
    verdict: str
    kernel: str | None = None          # side that is racy / deadlocked / unsupported
    message: str = ""
    race: object = None
    deadlock: object = None
    mismatch: dict | None = None       # first differing output element
    elements: int = 0
    methods: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    results: dict = field(default_factory=dict)   # side -> [exec.Result per CTA checked]

    def __str__(self) -> str:
        return f"{self.verdict}: {self.message}" if self.message else self.verdict


def _side(spec: dict, base: Path):
    mod = parse_file(base / spec["ptx"])
    return mod.kernel(spec.get("entry"))


def check_pair(entry: dict, base: Path = CORPUS) -> Report:
    """Check one ``pairs.json`` entry (or launch description)."""
    seconds: dict = {}
    cta = entry.get("check_cta", [0, 0, 0])
    todo = ctas(entry["reference"]["grid"]) if cta == "all" else [tuple(cta)]
    if list(entry["reference"]["grid"]) != list(entry["optimized"]["grid"]):
        return Report("malformed", None, "the two launches have different grids (the claim is about one CTA of one grid)")
    results, kernels, conds = {}, {}, {}
    for side in ("reference", "optimized"):
        try:
            kernels[side] = _side(entry[side], base)
            static_check(kernels[side])
        except Unsupported as e:
            return Report("unsupported", side, str(e), seconds=seconds)
        except Malformed as e:
            return Report("malformed", side, str(e), seconds=seconds)
    for side in ("reference", "optimized"):
        spec = entry[side]
        t0 = time.perf_counter()
        try:
            mine, dyn = bind(entry["params"], spec, side), shared_bytes(spec, side)
            with side_conditions() as conds[side]:   # the partial operations' (``undefined``)
                results[side] = [run_cta(kernels[side], spec["grid"], spec["block"], mine, c, side, dyn)
                                 for c in todo]
            clash = _clash(todo, results[side])
            if clash:
                return Report("racy", side, clash, seconds=seconds)
        except RaceError as e:
            return Report("racy", side, str(e), race=e.race, seconds=seconds)
        except DeadlockError as e:
            return Report("deadlock", side, str(e), deadlock=e.deadlock, seconds=seconds)
        except Unsupported as e:
            return Report("unsupported", side, str(e), seconds=seconds)
        except CheckError as e:            # undefined behaviour, out of bounds, step limit, ...
            return Report("rejected", side, str(e), seconds=seconds)
        seconds[side] = time.perf_counter() - t0
    merged = {side: {k: v for r in results[side] for k, v in r.outputs.items()} for side in results}
    report = compare(merged["reference"], merged["optimized"], seconds)
    report.results = results
    bad, assumed = undefined(conds["reference"], conds["optimized"]) if report.verdict == "equivalent" else (None, 0)
    if bad:   # equal normal forms, but not shown defined where the reference is
        report.verdict, report.message = "unknown", f"not certifiable: the optimized kernel's condition " \
            f"{str(bad[1])[:80]} {bad[0][:-1]} 0 is not shown wherever the reference is defined (positive by its " \
            "form, or a condition of the reference's own)"
        return report
    if report.verdict in ("equivalent", "unknown"):
        total = sum(_numel(p) for p in entry["params"] if p["role"] == "output")
        where = scope(cta, entry["reference"]["grid"])
        report.message = f"{where}: {report.elements} of {total} output elements " + \
            ("equal over the reals" if report.verdict == "equivalent" else f"checked; {report.message}") + \
            (f", wherever the reference is defined ({assumed} of its partial operations assumed defined)"
             if assumed else "")
    return report


def _clash(todo: list, results: list) -> str:
    """Two CTAs accessing one output byte, one of them writing it (a race between CTAs)."""
    wrote, seen = {}, {}
    for c, r in zip(todo, results):
        a = next((a for a in r.written if a in seen), None) or next((a for a in r.touched if a in wrote), None)
        if a is not None:
            return f"CTAs {list(seen.get(a) or wrote[a])} and {list(c)} both access output byte {a:#x}, one writing it"
        wrote.update(dict.fromkeys(r.written, c))
        seen.update(dict.fromkeys(r.touched, c))
    return ""


def _numel(p: dict) -> int:
    n = 1
    for d in p["shape"]:
        n *= int(d)
    return n


def compare(ref: dict, opt: dict, seconds: dict | None = None) -> Report:
    seconds = dict(seconds or {})
    t0 = time.perf_counter()
    methods: dict[str, int] = {}
    for key in sorted(set(ref) | set(opt)):
        if key not in opt or key not in ref:
            who = "optimized" if key not in opt else "reference"
            seconds["decide"] = time.perf_counter() - t0
            return Report("not-equivalent", None,
                          f"{key[0]}[{key[1]}] is not written by the {who} kernel",
                          mismatch={"element": key}, seconds=seconds)
    unknown = None
    for key in sorted(ref):
        if isinstance(ref[key], Word) or isinstance(opt[key], Word):   # integer data, modulo 2^32
            v = Verdict(word_equal(ref[key], opt[key]), "ring modulo 2^32", values=(0, 0), witness={})
        elif dot_equal(ref[key], opt[key]) or _same_form(ref[key], opt[key]):   # equal normal forms
            v = Verdict(True, "normal-form")
        elif (ca := _constant(ref[key])) is not None and (cb := _constant(opt[key])) is not None and ca != cb:
            v = Verdict(False, "constants", values=(float(ca), float(cb)), witness={})   # beyond probe's tolerance
        else:
            v = decide(shift(ref[key]), shift(opt[key]))
            if v.holds and v.method != "normal-form":   # by a solver: true, but a kernel certificate holds by equal normal forms only
                v = Verdict(None, f"{v.method}, not certifiable")
        methods[v.method] = methods.get(v.method, 0) + 1
        if v.holds is False:
            seconds["decide"] = time.perf_counter() - t0
            how = f"reference {ca} vs optimized {cb}, both constant" if v.method == "constants" else \
                "modulo 2^32 at an integer input" if v.witness == {} else \
                f"reference {v.values[0]:.6g} vs optimized {v.values[1]:.6g} at {_short(v.witness)}"
            return Report("not-equivalent", None, f"{key[0]}[{key[1]}] differs: {how}",
                          mismatch={"element": key, "witness": v.witness, "values": v.values,
                                    "reference": str(ref[key]), "optimized": str(opt[key])},
                          elements=len(ref), methods=methods, seconds=seconds)
        if v.holds is None and unknown is None:
            unknown = key, v.method
    seconds["decide"] = time.perf_counter() - t0
    if unknown is not None:
        return Report("unknown", None, f"{unknown[0][0]}[{unknown[0][1]}]: not proved ({unknown[1]}): "
                      "the normal forms differ and the numeric probe found no counterexample",
                      elements=len(ref), methods=methods, seconds=seconds)
    return Report("equivalent", None, f"{len(ref)} output elements equal over the reals",
                  elements=len(ref), methods=methods, seconds=seconds)


def _same_form(a, b) -> bool:
    """Whether ``a`` and ``b`` are ``Rat``s with equal numerator and denominator terms (no shift needed)."""
    return isinstance(a, Rat) and isinstance(b, Rat) and a.d.t == b.d.t and a.n.t == b.n.t


def _constant(x):
    """The exact value of a constant output element (an integer or a constant real), else None."""
    return Fraction(x) if type(x) is int else x.constant() if isinstance(x, Rat) else None


def _short(w: dict | None, n: int = 6) -> str:
    if not w:
        return "{}"
    items = sorted(w.items())
    s = ", ".join(f"{k}={v:g}" for k, v in items[:n])
    return "{" + s + (f", ... ({len(items)} inputs)" if len(items) > n else "") + "}"


def load_pairs(base: Path = CORPUS) -> dict[str, dict]:
    data = json.loads((base / "pairs.json").read_text())
    for p in data["pairs"]:
        where = f"{base / 'pairs.json'}: {p['name']}"
        check_params(p["params"], where)
        for side in ("reference", "optimized"):
            bind(p["params"], p[side], f"{where}: {side}")
            shared_bytes(p[side], f"{where}: {side}")
    return {p["name"]: p for p in data["pairs"]}


def at_k(pair: dict, k: int) -> dict | None:
    """``pair`` with reduction length ``k`` (``A`` [M, k], ``B`` [k, N], scalar ``K`` = k), or None."""
    ps = {p["name"]: p for p in pair["params"]}
    if not ({"A", "B", "K"} <= ps.keys() and ps["K"]["role"] == "scalar"):
        return None
    out = json.loads(json.dumps(pair))
    for p in out["params"]:
        if p["name"] == "A":
            p["shape"][1] = k
        elif p["name"] == "B":
            p["shape"][0] = k
        elif p["name"] == "K":
            p["value"] = k
    out["name"] = f"{pair['name']}@K={k}"
    return out


def at_threads(pair: dict, t: int) -> dict | None:
    """``pair`` with ``t`` threads per CTA on its side with dynamic shared memory (one f32 each), the slice
    length scalar ``n`` = ``t`` and ``x`` one slice per CTA, or None for a pair without those."""
    ps = {p["name"]: p for p in pair["params"]}
    sides = [s for s in ("reference", "optimized") if "shared_bytes" in pair[s]]
    if not ({"x", "n"} <= ps.keys() and ps["n"]["role"] == "scalar" and len(sides) == 1):
        return None
    out = json.loads(json.dumps(pair))
    out[sides[0]].update(block=[t, 1, 1], shared_bytes=4 * t)
    for p in out["params"]:
        if p["name"] == "x":
            p["shape"] = [out[sides[0]]["grid"][0] * t]
        elif p["name"] == "n":
            p["value"] = t
    out["name"] = f"{pair['name']}@threads={t}"
    return out
