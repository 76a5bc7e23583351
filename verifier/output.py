"""Machine-readable results of ``verify``, ``kernels`` and ``replay``: one ``Record`` per run, rendered
as JSON (``--json``; schema docs/schema/output-v1.json) or JUnit XML (``--junitxml``); docs/output.md."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from certificates.errors import LIMIT, CheckError

from .verdict import Counterexample

SCHEMA = "pvcert-output/1"
FAILED, SKIPPED = {"REFUTED", "REJECT"}, {"UNKNOWN"}   # JUnit: failure / skipped; ERROR: error


@dataclass
class Record:
    """What one command found; the Python API's result (``pvcert.verify``) too."""

    command: str                          # verify, kernels or replay
    subject: str                          # the case, corpus / launch file, or certificate
    name: str | None = None               # the case's name
    verdict: str | None = None            # VERIFIED REFUTED UNKNOWN | ACCEPT REJECT | ERROR
    exit_code: int = 0
    results: list[dict] = field(default_factory=list)      # per claim / pair: name, verdict, detail
    timing: dict[str, float] = field(default_factory=dict)  # seconds per phase
    counterexample: dict | None = None    # REFUTED (verify): the executed counterexample
    undecided: dict | None = None         # UNKNOWN: {"tried", "help"} (JSON: "unknown")
    errors: list[dict] = field(default_factory=list)       # {kind, file, element, message}
    certificate_path: str | None = None   # where the certificate was written
    certificate: dict | None = None       # the certificate itself (API only, not in the JSON)
    provenance: dict | None = None        # the run's provenance (as written into a certificate)
    output: str = ""                      # the text the command printed (API only, not in the JSON)

    @property
    def verified(self) -> bool:
        return self.verdict == "VERIFIED"

    @property
    def refuted(self) -> bool:
        return self.verdict == "REFUTED"

    @property
    def unknown(self) -> bool:
        return self.verdict == "UNKNOWN"

    @property
    def accepted(self) -> bool:
        return self.verdict == "ACCEPT"

    def result(self, name: str, verdict: str, detail: str, **extra: Any) -> None:
        """Add one claim / pair / output result."""
        self.results.append({"name": name, "verdict": verdict, "detail": detail, **extra})

    def refute(self, cx: Counterexample) -> None:
        self.counterexample = {"seed": cx.seed, "inputs": dict(cx.inputs), "output": cx.output, "expr": cx.expr,
                               "index": list(cx.index), "want": _num(cx.want), "got": _num(cx.got),
                               "differ": cx.differ, "size": cx.size, "scale": cx.scale}

    def error(self, e: CheckError) -> None:
        """A bad input or a limit: exit 2 or 3, verdict ERROR."""
        where = getattr(e, "where", None)
        file, _, element = where.partition(": ") if where else (self.subject, "", "")
        self.verdict, self.exit_code = "ERROR", e.exit_code
        self.errors.append({"kind": "LIMIT" if e.exit_code == LIMIT else "MALFORMED", "file": file,
                            "element": element or None, "message": getattr(e, "msg", str(e))})

    def to_json(self, version: str) -> dict[str, Any]:
        return {"schema": SCHEMA, "tool": "pvcert", "version": version, "command": self.command,
                "subject": self.subject, "name": self.name, "verdict": self.verdict, "exit_code": self.exit_code,
                "results": self.results, "timing": {k: round(v, 4) for k, v in self.timing.items()},
                "counterexample": self.counterexample, "unknown": self.undecided, "errors": self.errors,
                "certificate": self.certificate_path, "provenance": self.provenance}

    def dumps(self, version: str) -> str:
        return json.dumps(self.to_json(version), indent=1)

    def junit(self) -> str:
        """One testcase per result (or one for the whole run when it has none, e.g. an error)."""
        suite = ET.Element("testsuite", name=f"pvcert {self.command}", tests="0", failures="0", errors="0",
                           skipped="0", time=f"{self.timing.get('total_s', 0.0):.3f}")
        rows = self.results or [{"name": self.name or self.subject, "verdict": self.verdict,
                                 "detail": "; ".join(e["message"] for e in self.errors)}]
        for r in rows:
            case = ET.SubElement(suite, "testcase", classname=f"pvcert.{self.command}",
                                 name=r["name"], time=f"{r.get('seconds', 0.0):.3f}")
            tag = ("failure" if r["verdict"] in FAILED else "skipped" if r["verdict"] in SKIPPED
                   else "error" if r["verdict"] == "ERROR" else None)
            if tag:
                ET.SubElement(case, tag, type=str(r["verdict"]), message=r["detail"][:500]).text = r["detail"]
                key = {"failure": "failures", "skipped": "skipped", "error": "errors"}[tag]
                suite.set(key, str(int(suite.get(key)) + 1))
        suite.set("tests", str(len(rows)))
        return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def _num(x: float) -> float | str:
    """A JSON number, or its name for inf / nan (JSON has neither)."""
    return x if math.isfinite(x) else str(x)
