"""Capture of real PyTorch programs into the Graph IR (docs/capture.md).

- ``capture_module``: one module's forward (and backward) on one rank, fake tensors.
- ``capture_spmd``: a per-rank program under a fake process group for every rank,
  stitched into one multi-rank graph with explicit collective groups.
- ``shard`` / ``replicate`` / ``partial`` and ``placements_relation``: input relations.
- ``verifier.capture.case``: the Python case format loaded by ``pvcert verify``.
"""

from __future__ import annotations

from .api import Capture, capture_graph, capture_spmd
from .convert import CaptureError, RankProgram
from .relations import Rel, partial, placements_relation, replicate, shard
from .trace import InputSpec, capture_module

__all__ = ["Capture", "CaptureError", "InputSpec", "RankProgram", "Rel", "capture_graph", "capture_module",
           "capture_spmd", "partial", "placements_relation", "replicate", "shard"]
