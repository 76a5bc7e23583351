"""Verification cases written in Python (format: docs/capture.md).

A case module defines ``CASE = CaptureCase(...)`` or ``make_case() -> CaptureCase``:
the sequential model (spec), the per-rank implementation, the world size, the example
input shapes, the input relation and the expectation. ``load_case(path)`` imports it,
captures both sides and returns a ``Case`` whose graphs and relations are plain JSON
values, checked exactly like a JSON case. Every problem raises ``Malformed(path, msg)``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from certificates.errors import Malformed

from .relations import resolve
from .sampling import mark_nonnegative


@dataclass
class Case:
    name: str
    spec: dict
    impl: dict
    input_relation: dict[str, list[str]]
    expect: dict[str, list[str]]
    approximations: list[dict] = field(default_factory=list)   # certificates/approx.py
    assumptions: list[dict] = field(default_factory=list)      # declared semantics of custom ops (shown by replay)


@dataclass
class CaptureCase:
    """What a case module declares.

    ``spec()`` builds the sequential model (or ``(module, call)``); ``impl(rank, world)`` builds rank ``rank``'s
    module (or ``(module, call)``) with ``torch.distributed`` initialized for that rank.
    ``inputs`` are the spec's example inputs (name -> shape / InputSpec); ``impl_inputs``
    those of the implementation (a dict, or a function of the rank; default: ``inputs``).
    ``input_relation`` and ``expect`` map spec tensor names to clean expressions, given
    as strings or with ``shard`` / ``replicate`` / ``partial``; DTensor parameters of the
    implementation (and their gradients) get theirs from their placements unless given.
    With ``backward``, the
    graphs also compute gradients ``grad.<param>`` and ``grad.<input>`` from seeds
    ``d_<output>`` (relate the seeds in ``input_relation``), or of ``loss`` when given.
    ``declared`` gives custom operators (``"ns::name"``, e.g. a fused kernel registered with
    ``torch.library.custom_op``) their assumed semantics: a function of the op's arguments written
    with torch ops, traced in the op's place; the claim lists each one as an assumption.
    """

    name: str
    spec: Callable[[], Any]
    impl: Callable[[int, int], Any]
    world_size: int
    inputs: dict[str, Any]
    input_relation: dict[str, Any]
    expect: dict[str, Any]
    impl_inputs: dict[str, Any] | Callable[[int], dict[str, Any]] | None = None
    backward: bool = False
    loss: Callable | None = None
    loss_inputs: dict[str, Any] | None = None
    impl_loss_inputs: dict[str, Any] | None = None
    output_names: list[str] | None = None
    impl_output_names: Callable[[int], list[str]] | None = None   # per rank (default: output_names)
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    dtensor_relations: bool = True   # DTensor parameters (and their gradients): from placements
    spec_distributed: bool = False   # build/capture the spec with torch.distributed (world 1)
    context: Callable[[], Any] | None = None   # a context manager around both captures
    declared: dict[str, Callable] = field(default_factory=dict)   # custom op "ns::name" -> its semantics


def import_module(path: str):
    """The module at ``path``, run with its own directory and the current one on ``sys.path``
    (as ``python case.py`` and ``python -m case`` would; they stay there, so ``make_case()`` may
    import the user's sibling modules later); ``Malformed`` if it fails."""
    name = "pvcert_case_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise Malformed(path, "not a Python module")
    mod = importlib.util.module_from_spec(spec)
    for p in (os.getcwd(), os.path.dirname(os.path.abspath(path))):
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        spec.loader.exec_module(mod)
    except Malformed:
        raise
    except Exception as e:
        raise Malformed(path, f"importing the case module failed: {type(e).__name__}: "
                              f"{_first_line(e)}") from None
    return mod


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0][:300] if s else type(e).__name__


def declared(path: str):
    """The module's ``CASE`` (else ``make_case()``): a ``CaptureCase``, or a training plan
    (``verifier.train.plan.TrainCase``, captured by the reference parallelizer)."""
    mod = import_module(path)
    from verifier.train.plan import TrainCase

    if hasattr(mod, "CASE"):   # first: a module that imports a make_case to build its CASE means the CASE
        c = mod.CASE
    elif hasattr(mod, "make_case"):
        try:
            c = mod.make_case()
        except Exception as e:
            raise Malformed(path, f"make_case() failed: {type(e).__name__}: {_first_line(e)}") from None
    else:
        raise Malformed(path, "a case module defines CASE or make_case()")
    if isinstance(c, TrainCase):
        return c
    if not isinstance(c, CaptureCase):
        raise Malformed(path, f"CASE must be a CaptureCase or a TrainCase, got {type(c).__name__}")
    if not isinstance(c.world_size, int) or not 1 <= c.world_size <= 4096:
        raise Malformed(path, f"world_size {c.world_size!r} must be an int in 1..4096")
    return c


@contextlib.contextmanager
def as_written():
    """``torch.compile``'d modules and functions run as written (their original code) while
    captured: dynamo neither compiles them nor refuses the trace; ``DistributedDataParallel``
    computes as documented (``ddp.documented_ddp``: its C++ reducer cannot be traced)."""
    import torch

    from .ddp import documented_ddp

    with torch.compiler.set_stance("force_eager"), torch._dynamo.config.patch(error_on_nested_fx_trace=False), \
            documented_ddp():
        yield


def capture_case(c: CaptureCase, where: str = "") -> Case:
    """Capture both sides of a declared case."""
    import torch

    from .api import capture_graph, capture_spmd
    from .convert import CaptureError

    where = where or c.name
    kw = dict(backward=c.backward, loss=c.loss, output_names=c.output_names, **c.options)
    assumptions = []
    if c.declared:
        kw["decompositions"], assumptions = declared_ops(c.declared, where)
    try:
        with as_written(), (c.context() if c.context is not None else contextlib.nullcontext()):
            torch.manual_seed(c.seed)
            if c.spec_distributed:
                spec = capture_spmd(c.name + "_spec", lambda r, w: c.spec(), 1, c.inputs, suffix=False,
                                    loss_inputs=c.loss_inputs, **kw)
            else:
                built = c.spec()
                module, call = built if isinstance(built, tuple) else (built, None)
                spec = capture_graph(c.name + "_spec", module, c.inputs, call=call, loss_inputs=c.loss_inputs,
                                     **kw)
            if c.impl_output_names is not None:
                kw["output_names"] = c.impl_output_names
            impl = capture_spmd(c.name + "_impl", c.impl, c.world_size,
                                c.impl_inputs if c.impl_inputs is not None else c.inputs,
                                loss_inputs=c.impl_loss_inputs or c.loss_inputs, **kw)
    except CaptureError as e:
        raise Malformed(where, f"capture failed: {e}") from None
    except Exception as e:  # building the model (a missing package, a bad config, ...)
        raise Malformed(where, f"building or capturing the models failed: {type(e).__name__}: "
                               f"{_first_line(e)}") from None
    for g in (spec.graph, impl.graph):   # where the math needs it, sample non-negative
        mark_nonnegative(g)
    rels = {}
    auto = impl.relations() if c.dtensor_relations else {}
    spec_inputs, spec_outputs = set(spec.graph["inputs"]), set(spec.graph["outputs"])
    for key, val in (("input_relation", c.input_relation), ("expect", c.expect)):
        if not isinstance(val, dict):
            raise Malformed(where, f"{key} must map spec tensor names to relations")
        names = spec_inputs if key == "input_relation" else spec_outputs
        try:
            rels[key] = {k: v for k, v in auto.items() if k in names and k not in val}
            rels[key].update({k: resolve(v, c.world_size) for k, v in val.items()})
        except (TypeError, ValueError) as e:
            raise Malformed(where, f"{key}: {e}") from None
    return Case(c.name, spec.graph, impl.graph, rels["input_relation"], rels["expect"], assumptions=assumptions)


def declared_ops(declared: dict[str, Callable], where: str) -> tuple[dict, list[dict]]:
    """The trace's decomposition table with each declared custom op (every overload) replaced by its
    declared function, and the assumptions the claim states: the op and the function's source."""
    import inspect
    import textwrap

    import torch

    from .decomp import DECOMPOSITIONS

    table, assumptions = dict(DECOMPOSITIONS), []
    for name, fn in sorted(declared.items()):
        ns, _, op = name.partition("::")
        packet = getattr(getattr(torch.ops, ns, None), op, None) if ns and op else None
        if packet is None or not callable(fn):
            raise Malformed(where, f"declared: '{name}' is not a registered custom operator 'ns::name' with a function")
        table.update({getattr(packet, ov): fn for ov in packet.overloads()})
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            source = getattr(fn, "__qualname__", repr(fn))
        assumptions.append({"custom_op": name, "source": textwrap.dedent(source)})
    return table, assumptions


def load_case(path: str) -> Case:
    """Import a case module and capture it (see the module docstring)."""
    if not os.path.isfile(path):
        raise Malformed(path, "no such case file")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise Malformed(path, "a Python case is captured from PyTorch: install torch==2.13.0 "
                              "(docs/capture.md)") from None
    c = declared(path)
    with quiet_torch_logs():
        if isinstance(c, CaptureCase):
            return capture_case(c, where=path)
        from verifier.train.plan import plan_case

        return plan_case(c).case


@contextlib.contextmanager
def quiet_torch_logs():
    """Torch's own logs off while capturing (its fake-tensor logger prints a traceback for a
    failing meta kernel): a capture failure is pvcert's one line."""
    log = logging.getLogger("torch")
    was = log.level
    log.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        log.setLevel(was)
