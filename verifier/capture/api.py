"""Whole-graph capture: one device (the spec) or every rank of an SPMD program (the impl)."""

from __future__ import annotations

import time
import tracemalloc
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .convert import CaptureError, RankProgram
from .dist import fake_world, traceable_collectives
from .stitch import build_graph
from .trace import capture_module


@dataclass
class Capture:
    graph: dict                                   # the IR graph's JSON value (validated)
    programs: list[RankProgram]
    seconds: float
    peak_bytes: int = 0
    stats: dict[str, Any] = field(default_factory=dict)

    def op_counts(self, rank: int | None = None) -> dict[str, int]:
        """Targets of the graph's nodes (of one rank's plain nodes, or all nodes)."""
        out: dict[str, int] = {}
        for n in self.graph["nodes"]:
            if rank is not None and n.get("rank") != rank and rank not in n.get("group", []):
                continue
            out[n["target"]] = out.get(n["target"], 0) + 1
        return out

    def relations(self) -> dict[str, list[str]]:
        """Clean expressions of every DTensor input/output from its placements, over every rank's
        view (a DTensor on a sub-mesh, e.g. ``mesh["tp"]`` of a 2-D mesh, gives one per sub-mesh)."""
        from .relations import placements_relation

        out: dict[str, list[str]] = {}
        for prog in self.programs:
            for name, (placements, mesh, *_rest) in prog.placements.items():
                seen = out.setdefault(name, [])
                seen += [e for e in placements_relation(name, placements, mesh) if e not in seen]
        return out

    def collectives(self) -> list[dict]:
        return [n for n in self.graph["nodes"] if "group" in n]


def _module_and_call(built):
    if isinstance(built, tuple):
        return built[0], built[1]
    return built, None


def capture_graph(name: str, module: torch.nn.Module, inputs: dict[str, Any], *, call=None,
                  measure_memory: bool = False, **kw) -> Capture:
    """A single-device graph (no rank suffixes): the specification side."""
    if measure_memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    try:
        cap = capture_module(module, inputs, call=call, where=name, **kw)
        graph = build_graph(name, [cap.program], world=1, suffix=False)
    finally:
        peak = tracemalloc.get_traced_memory()[1] if measure_memory else 0
        if measure_memory:
            tracemalloc.stop()
    return Capture(graph, [cap.program], time.perf_counter() - t0, peak, cap.stats)


def capture_spmd(name: str, build: Callable[[int, int], Any], world: int,
                 inputs: dict[str, Any] | Callable[[int], dict[str, Any]], *, suffix: bool = True,
                 measure_memory: bool = False, **kw) -> Capture:
    """Capture ``build(rank, world)`` on every rank under a fake process group and stitch.

    ``build`` runs with ``torch.distributed`` initialized for that rank (so it may create
    process groups, e.g. Megatron's ``initialize_model_parallel``) and returns the rank's
    module, or ``(module, call)``. ``inputs`` and ``output_names`` may depend on the rank.
    """
    if not 1 <= world <= 4096:
        raise CaptureError(f"{name}: world size {world}")
    if measure_memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    progs = []
    stats = {"trace_s": 0.0, "convert_s": 0.0}
    try:
        for r in range(world):
            with fake_world(r, world):
                module, call = _module_and_call(build(r, world))
                ins = inputs(r) if callable(inputs) else inputs
                kr = {**kw, "output_names": kw["output_names"](r)} if callable(kw.get("output_names")) else kw
                with traceable_collectives():
                    cap = capture_module(module, ins, call=call, rank=r, where=f"{name} rank {r}", **kr)
                progs.append(cap.program)
                for k in stats:
                    stats[k] += cap.stats[k]
        t1 = time.perf_counter()
        graph = build_graph(name, progs, world, suffix=suffix)
        stats["stitch_s"] = time.perf_counter() - t1
    finally:
        peak = tracemalloc.get_traced_memory()[1] if measure_memory else 0
        if measure_memory:
            tracemalloc.stop()
    return Capture(graph, progs, time.perf_counter() - t0, peak, stats)
