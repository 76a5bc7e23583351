"""Launch descriptions: one kernel pair as JSON (the format of a ``pairs.json`` entry).

``{"name", "params": [...], "check_cta": [x, y, z], "reference": {"ptx", "entry", "grid",
"block"}, "optimized": {...}}``; tensors are ``{"name", "role": "input" | "output",
"dtype": "f32" | "f16" | "s32", "shape"}``, scalars ``{"name", "role": "scalar",
"value"}``; PTX paths are relative to the file. Errors name the file and the field.
"""

from __future__ import annotations

import json
from pathlib import Path

from certificates.errors import Malformed
from certificates.kernel import bind, check_dims, check_params, shared_bytes
from certificates.ptx import Module, parse


def parse_file(path) -> Module:
    """Parse the PTX file at ``path`` (the checker reads PTX only from a certificate)."""
    try:
        src = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise Malformed(str(Path(path)), f"cannot read PTX: {e}") from None
    return parse(src, str(Path(path)))


def load_launch(path: str) -> dict:
    """Read and check one launch description."""
    try:
        entry = json.loads(Path(path).read_text())
    except OSError as e:
        raise Malformed(path, f"cannot read: {e.strerror}") from None
    except ValueError as e:
        raise Malformed(path, f"not JSON: {e}") from None
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise Malformed(path, "needs an object with a 'name'")
    params = entry.get("params")
    if not isinstance(params, list) or not params:
        raise Malformed(path, "params: needs a non-empty list")
    check_params(params, path)
    cta = entry.setdefault("check_cta", [0, 0, 0])
    if cta != "all" and not (isinstance(cta, list) and len(cta) == 3 and all(type(x) is int and x >= 0 for x in cta)):
        raise Malformed(path, 'check_cta: needs three integers >= 0 or "all"')
    for side in ("reference", "optimized"):
        s = entry.get(side)
        if not isinstance(s, dict) or not isinstance(s.get("ptx"), str):
            raise Malformed(path, f"{side}: needs a 'ptx' path")
        if not (Path(path).parent / s["ptx"]).is_file():
            raise Malformed(path, f"{side}.ptx: no file {s['ptx']}")
        check_dims(s.get("grid"), f"{path}: {side}.grid")
        check_dims(s.get("block"), f"{path}: {side}.block")
        bind(params, s, f"{path}: {side}")
        shared_bytes(s, f"{path}: {side}")
        if cta != "all" and any(c >= g for c, g in zip(cta, s["grid"])):
            raise Malformed(path, f"check_cta {entry['check_cta']} lies outside {side}.grid {s['grid']}")
    return entry
