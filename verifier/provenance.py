"""Provenance of a certificate (``header.provenance``, docs/certificates.md): sha256 of the user's
source files, the versions of python / torch / transformers / megatron-core / pvcert, pvcert's git
commit. For auditors only: the checker displays it and never trusts it; it is not part of any claim."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path
from typing import Any

from . import __version__

ROOT = Path(__file__).resolve().parents[1]   # the checkout (or site-packages) holding verifier/
PACKAGES = ("torch", "transformers", "megatron-core", "pvcert")


def git_commit() -> str | None:
    """pvcert's git commit when it runs from a checkout."""
    if not (ROOT / ".git").exists():
        return None
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                           text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def user_sources(case: str, before: set[str], graphs: tuple[dict, ...] = ()) -> list[str]:
    """The user's files behind a case: the case file, the graphs a JSON case names; for a Python case
    the files its traced operators come from (``graphs``' node ``source``) and each module loaded by
    capture (not in ``before``) or living beside the case, outside Python's library, any site-packages
    and pvcert's own packages."""
    out = [os.path.abspath(case)]
    if case.endswith(".json"):
        try:
            obj = json.loads(Path(case).read_text())
            out += [os.path.abspath(os.path.join(os.path.dirname(case), obj[k])) for k in ("spec", "impl")
                    if isinstance(obj.get(k), str)]
        except (OSError, ValueError, AttributeError):
            pass
        return out
    system = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    system |= {str(ROOT / d) for d in ("verifier", "certificates", "pvcert")}
    here = os.path.dirname(out[0])
    traced = {n["source"]["file"] for g in graphs for n in g.get("nodes", [])
              if isinstance(n.get("source"), dict) and isinstance(n["source"].get("file"), str)}
    out += sorted(os.path.abspath(f) for f in traced if os.path.isfile(f))
    for name, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None)
        if not isinstance(f, str) or not f.endswith(".py") or not os.path.isabs(f):   # torch.ops: '_ops.py'
            continue
        f = os.path.realpath(f)
        installed = {"site-packages", "dist-packages"} & set(Path(f).parts)
        if (name not in before or os.path.dirname(f) == here) and not installed and \
                not any(f.startswith(p + os.sep) for p in system):
            out.append(f)
    return sorted(set(out), key=out.index)


def provenance(sources: list[str]) -> dict[str, Any]:
    """Where a certificate came from, for auditors (display only: the checker never trusts it);
    ``sources`` (the case first) are named relative to the case's folder."""
    files = {}
    for f in sources:
        try:
            files[os.path.relpath(f, os.path.dirname(sources[0]))] = hashlib.sha256(Path(f).read_bytes()).hexdigest()
        except (OSError, ValueError):
            continue
    versions = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    versions.setdefault("pvcert", __version__)
    return {"sources": files, "versions": versions, "pvcert_git": git_commit()}
