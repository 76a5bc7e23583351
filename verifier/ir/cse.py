"""Common-subexpression elimination on graph JSON values.

Captured programs repeat pure computations (a rotary table unsqueezed once per layer and
micro-batch). Merging nodes with the same target, inputs (after merging), attributes and
rank leaves the graph's meaning unchanged, and one tensor per value keeps the relations
the engine infers small. Collectives and point-to-point nodes are never merged, nor is a
node that produces a graph output (its name is part of the case).
"""

from __future__ import annotations

import json
from typing import Any


def cse(g: dict[str, Any]) -> dict[str, Any]:
    """``g`` with duplicate pure nodes removed (a new value; ``g`` is not changed)."""
    outputs = set(g["outputs"])
    alias: dict[str, str] = {}
    seen: dict[str, list[str]] = {}
    nodes = []
    for n in g["nodes"]:
        ins = [alias.get(t, t) if isinstance(t, str) else t for t in n["inputs"]]
        n = {**n, "inputs": ins}
        pure = "group" not in n and "c10d" not in n["target"] and not outputs & set(n["outputs"])
        sig = json.dumps([n["target"], ins, n.get("attrs", {}), n.get("rank", 0)], sort_keys=True) if pure else None
        kept = seen.get(sig) if sig else None
        if kept is not None and len(kept) == len(n["outputs"]):
            alias.update(zip(n["outputs"], kept))
            continue
        if sig:
            seen[sig] = n["outputs"]
        nodes.append(n)
    used = set(g["inputs"]) | outputs | {t for n in nodes for t in n["inputs"] + n["outputs"] if isinstance(t, str)}
    return {**g, "nodes": nodes, "tensors": {k: v for k, v in g["tensors"].items() if k in used}}
