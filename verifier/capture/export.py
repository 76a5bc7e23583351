"""Forward-only capture through ``torch.export`` (an alternative front end).

``capture_export(name, module, inputs)`` exports ``module(**inputs)`` with
``torch.export.export`` (strict=False), runs the decompositions to ATen, and converts
the graph like ``make_fx`` graphs. Limits (docs/capture.md):

- forward only: a backward through ``torch.export`` joint graphs would silently replace
  custom ``autograd.Function`` backwards (Megatron's communication regions), so the
  ``make_fx`` + ``torch.autograd.grad`` path is the one for training graphs;
- one rank per call; collectives must be functional (``_c10d_functional``) or go
  through the patched ``torch.distributed`` API, and are matched by ``build_graph``;
- export specializes shapes to the example inputs and refuses data-dependent control
  flow (reported as a one-line capture error).
"""

from __future__ import annotations

import time

import torch
from torch._subclasses import FakeTensorMode

from .api import Capture
from .convert import CaptureError, Converter, Input, dtype_name
from .decomp import DECOMPOSITIONS
from .dist import group_ranks, traceable_collectives
from .stitch import build_graph
from .trace import _failed, _flat_out, as_spec


def export_program(module: torch.nn.Module, inputs: dict, *, rank: int = 0, where: str = "",
                   output_names: list[str] | None = None):
    from torch.export.graph_signature import InputKind

    where = where or type(module).__name__
    specs = {k: as_spec(v) for k, v in inputs.items()}
    mode = FakeTensorMode(allow_non_fake_inputs=True)   # fake inputs: nothing allocated
    example = {k: s.example(mode) for k, s in specs.items()}
    t0 = time.perf_counter()
    try:
        with traceable_collectives():
            ep = torch.export.export(module, (), example, strict=False)
            ep = ep.run_decompositions(DECOMPOSITIONS)
    except CaptureError:
        raise
    except Exception as e:
        raise _failed(e, where) from e
    gm = ep.graph_module
    in_specs = []
    for s in ep.graph_signature.input_specs:
        ph = next(n for n in gm.graph.nodes if n.op == "placeholder" and n.name == s.arg.name)
        val = ph.meta["val"]
        if s.kind == InputKind.USER_INPUT:
            spec = specs[s.arg.name] if s.arg.name in specs else None
            name = s.arg.name
            role = spec.role_name() if spec else "activation"
            rng = spec.range if spec else None
        else:
            name, role, rng = s.target, "parameter" if s.kind == InputKind.PARAMETER else "buffer", None
        in_specs.append(Input(name, tuple(val.shape), dtype_name(val.dtype, where), role, rng))
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    n_out = len(_flat_out_nodes(out_node.args[0]))
    names = output_names or (["out"] if n_out == 1 else [f"out{i}" for i in range(n_out)])
    prog = Converter(gm, rank, where, in_specs, names, group_ranks).run()
    return prog, time.perf_counter() - t0


def _flat_out_nodes(a):
    if isinstance(a, (list, tuple)):
        return [x for y in a for x in _flat_out_nodes(y)]
    return [a]


def capture_export(name: str, module: torch.nn.Module, inputs: dict, **kw) -> Capture:
    """A single-device forward graph through ``torch.export``."""
    t0 = time.perf_counter()
    prog, _ = export_program(module, inputs, where=name, **kw)
    graph = build_graph(name, [prog], world=1, suffix=False)
    return Capture(graph, [prog], time.perf_counter() - t0)


def capture_export_spmd(name: str, build, world: int, inputs, **kw) -> Capture:
    """Every rank's forward through ``torch.export`` under a fake process group, stitched."""
    from .dist import fake_world

    t0 = time.perf_counter()
    progs = []
    for r in range(world):
        with fake_world(r, world):
            built = build(r, world)
            module = built[0] if isinstance(built, tuple) else built
            ins = inputs(r) if callable(inputs) else inputs
            progs.append(export_program(module, ins, rank=r, where=f"{name} rank {r}", **kw)[0])
    graph = build_graph(name, progs, world)
    return Capture(graph, progs, time.perf_counter() - t0)


__all__ = ["capture_export", "capture_export_spmd", "export_program", "_flat_out"]
