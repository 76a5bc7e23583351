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


def _dims(v, where: str, path: str, lo: int) -> None:
    if not (isinstance(v, list) and len(v) == 3 and all(type(x) is int and x >= lo for x in v)):
        raise Malformed(path, f"{where}: needs three integers >= {lo}")


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
    for i, p in enumerate(params):
        w = f"params[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            raise Malformed(path, f"{w}: needs a name")
        if p.get("role") == "scalar":
            if type(p.get("value")) is not int:
                raise Malformed(path, f"{w} ({p['name']}): a scalar needs an integer value")
        elif p.get("role") in ("input", "output"):
            if p.get("dtype") not in ("f32", "f16", "s32"):
                raise Malformed(path, f"{w} ({p['name']}): dtype must be f32, f16 or s32")
            if not isinstance(p.get("shape"), list) or not all(type(d) is int and d >= 0 for d in p["shape"]):
                raise Malformed(path, f"{w} ({p['name']}): shape must be a list of integers")
        else:
            raise Malformed(path, f"{w} ({p['name']}): role must be input, output or scalar")
    _dims(entry.setdefault("check_cta", [0, 0, 0]), "check_cta", path, 0)
    for side in ("reference", "optimized"):
        s = entry.get(side)
        if not isinstance(s, dict) or not isinstance(s.get("ptx"), str):
            raise Malformed(path, f"{side}: needs a 'ptx' path")
        if not (Path(path).parent / s["ptx"]).is_file():
            raise Malformed(path, f"{side}.ptx: no file {s['ptx']}")
        _dims(s.get("grid"), f"{side}.grid", path, 1)
        _dims(s.get("block"), f"{side}.block", path, 1)
        if any(c >= g for c, g in zip(entry["check_cta"], s["grid"])):
            raise Malformed(path, f"check_cta {entry['check_cta']} lies outside {side}.grid {s['grid']}")
    return entry
