"""Capture of real PyTorch programs into the Graph IR (docs/capture.md).

- ``capture_module``: one module's forward (and backward) on one rank, fake tensors.
- ``capture_graph`` / ``capture_spmd``: a one-device graph, or every rank of an SPMD
  program under a fake process group stitched into one multi-rank graph.
- ``shard`` / ``replicate`` / ``partial`` and ``placements_relation``: input relations.
- ``verifier.capture.case``: the Python case format loaded by ``pvcert verify``.

Names are imported lazily, so ``verifier.capture.case`` and ``.relations`` load without torch.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "Capture": "api", "capture_graph": "api", "capture_spmd": "api",
    "CaptureError": "convert", "RankProgram": "convert",
    "Rel": "relations", "partial": "relations", "placements_relation": "relations",
    "replicate": "relations", "shard": "relations",
    "InputSpec": "trace", "capture_module": "trace",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
