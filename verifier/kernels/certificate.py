"""Kernel-equivalence certificates (claim kind ``kernel-equivalence``, docs/certificates.md).

Per pair: both PTX files embedded with their sha256, the launch, and per side the
schedule taken, the memory-event witness and the printed output normal forms;
``certificates/kernel.py`` replays them with its own interpreter.
"""

from __future__ import annotations

import datetime
import hashlib
from pathlib import Path

from certificates import FORMAT, VERSION
from certificates.kernel import Printer, coverage
from certificates.limits import canonical_bytes
from certificates.ptx import parse

from .. import __version__
from .equiv import Report

SIDES = ("reference", "optimized")
TEXT_BUDGET = 2**20   # bytes of printed normal forms per kernel before digests replace them (a readable size)


def _ptx_artifact(aid: str, text: str) -> dict:
    return {"id": aid, "kind": "ptx", "sha256": hashlib.sha256(canonical_bytes(text)).hexdigest(), "embedded": text}


def pair_claim(name: str, entry: dict, base: Path, report: Report) -> tuple[dict, dict, list[dict]]:
    """The claim, evidence and artifacts of one pair found ``equivalent``."""
    if report.verdict != "equivalent" or set(report.results) != set(SIDES):
        raise ValueError(f"{name}: only an equivalent pair has a certificate (verdict {report.verdict})")
    cta = entry.get("check_cta", [0, 0, 0])
    claim: dict = {"id": name, "kind": "kernel-equivalence", "params": entry["params"],
                   "cta": cta if cta == "all" else list(cta),
                   "covers": coverage(f"{t}[{i}]" for r in report.results["reference"] for t, i in r.outputs)}
    evidence: dict = {}
    arts = []
    printer = Printer()
    for side in SIDES:
        spec = entry[side]
        aid = f"{name}.{side}"
        text = (base / spec["ptx"]).read_text()
        arts.append(_ptx_artifact(aid, text))
        entry_name = spec.get("entry") or parse(text, spec["ptx"]).kernel().name
        claim[side] = {"ptx": aid, "entry": entry_name, "grid": list(spec["grid"]),
                       "block": list(spec["block"])}
        claim[side].update((k, spec[k]) for k in ("params", "shared_bytes") if k in spec)
        evs = [_evidence(res, printer) for res in report.results[side]]
        evidence[side] = {"ctas": evs} if claim["cta"] == "all" else evs[0]
    evidence["atoms"] = printer.table
    return claim, evidence, arts


def _evidence(res, printer: Printer) -> dict:
    """One CTA's schedule, witness and printed outputs, or all of them as digests (``Printer.digest``) once their
    texts pass ``TEXT_BUDGET`` (attention: 40 KB per element; SGEMM at K = 4096: about 60 KB)."""
    items, outputs, size = sorted((f"{t}[{i}]", v) for (t, i), v in res.outputs.items()), {}, 0
    table = len(printer.table)
    for k, v in items:
        outputs[k] = printer.text(v)
        size += len(outputs[k])
        if size > TEXT_BUDGET:   # digests name no atom of the table: forget the ones just printed (``@k``, k > table)
            del printer.table[table:]
            printer.ids = {a: i for a, i in printer.ids.items() if int(i[1:]) <= table}
            printer.dens.clear()   # denominators printed meanwhile may name them
            outputs = {k: {"sha256": printer.digest(v)} for k, v in items}
            break
    return {"schedule": res.schedule, "witness": sorted(list(w) for w in res.witness), "outputs": outputs}


def kernel_certificate(items: list[tuple[dict, dict, list[dict]]]) -> dict:
    """One certificate holding the claims of ``items`` (from ``pair_claim``)."""
    return {
        "format": FORMAT, "version": VERSION,
        "header": {"tool": "pvcert", "tool_version": __version__, "engine": "kernels",
                   "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")},
        "subject": {"artifacts": [a for _, _, arts in items for a in arts]},
        "claims": [c for c, _, _ in items],
        "evidence": {c["id"]: e for c, e, _ in items},
        "verdict": "ACCEPT",
    }
