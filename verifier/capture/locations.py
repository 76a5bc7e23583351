"""Where each captured operator comes from: its module path and the user's ``file:line``.

While ``make_fx`` traces, global module hooks keep the path of the innermost running
submodule (``layers.0.self_attn.o_proj``) in torch's node metadata (``nn_module_stack``)
and the tracer records each node's Python stack (``stack_trace``). Backward nodes get
the ``seq_nr`` of the forward operator they differentiate, and inherit its location.
A location is a debugging aid only: the checker validates its form and ignores it.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from typing import Iterator

import torch
import torch.fx.traceback as fx_traceback

MAX_TEXT = 300                        # bound of the graph IR's ``source`` strings
FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # pvcert's verifier/
_TORCH = os.path.dirname(os.path.abspath(torch.__file__))


@contextmanager
def module_paths(root: torch.nn.Module) -> Iterator[None]:
    """Record the innermost submodule's path on every FX node traced inside the block."""
    paths = {id(m): p for p, m in root.named_modules()}
    stack: list[str] = []

    def show() -> None:
        inner = next((p for p in reversed(stack) if p), None)
        meta = fx_traceback.get_current_meta()
        if inner is None:
            meta.pop("nn_module_stack", None)
        else:
            meta["nn_module_stack"] = {inner: (inner, type(root.get_submodule(inner)).__qualname__)}

    def pre(m, _args) -> None:
        stack.append(paths.get(id(m), ""))
        show()

    def post(m, _args, _out) -> None:
        if stack:
            stack.pop()
        show()

    hooks = [torch.nn.modules.module.register_module_forward_pre_hook(pre),
             torch.nn.modules.module.register_module_forward_hook(post, always_call=True)]
    try:
        with fx_traceback.preserve_node_meta():
            yield
    finally:
        for h in hooks:
            h.remove()


def backward_locations(outputs: list) -> None:
    """Tag the backward operators traced from ``outputs`` with their forward's ``seq_nr``."""
    try:   # torch's own hooks (AOTAutograd uses them); without them backward ops have no location
        from torch._functorch._aot_autograd.logging_utils import setup_stacktrace_preservation_hooks_from_tensors
    except ImportError:
        return
    setup_stacktrace_preservation_hooks_from_tensors(outputs)


def sources(gm: torch.fx.GraphModule) -> dict[torch.fx.Node, dict]:
    """Each call node's ``{"module", "file", "line"}`` (the keys that are known)."""
    own: dict[torch.fx.Node, dict] = {}
    first: dict[int, dict] = {}        # seq_nr -> the forward operator's location
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        loc = _own_location(n)
        if loc:
            own[n] = loc
            if not n.meta.get("autograd_backward") and n.meta.get("seq_nr") is not None:
                first.setdefault(n.meta["seq_nr"], loc)
    out = {}
    for n in gm.graph.nodes:
        if n.op == "call_function":
            inherited = first.get(n.meta.get("seq_nr")) if n.meta.get("autograd_backward") else None
            loc = {**(inherited or {}), **own.get(n, {})}
            if loc:
                out[n] = loc
    return out


def _own_location(n: torch.fx.Node) -> dict:
    loc: dict = {}
    stack = n.meta.get("nn_module_stack")
    if stack:
        module = list(stack.values())[-1][0]
        if isinstance(module, str) and module and len(module) <= MAX_TEXT:
            loc["module"] = module
    frame = user_frame(n.meta.get("stack_trace") or "")
    if frame:
        loc["file"], loc["line"] = frame
    return loc


def user_frame(trace: str) -> tuple[str, int] | None:
    """The innermost frame of ``trace`` in the user's code (not torch, site-packages or pvcert)."""
    for path, line in reversed(FRAME.findall(trace)):
        full = os.path.abspath(path)
        if full.startswith((_TORCH, _OWN)) or "site-packages" in full or "dist-packages" in full \
                or path.startswith("<"):
            continue
        shown = os.path.relpath(full) if full.startswith(os.getcwd() + os.sep) else full
        return (shown, int(line)) if len(shown) <= MAX_TEXT else None
    return None
