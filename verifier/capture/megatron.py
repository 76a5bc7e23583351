"""Small CPU patches that let megatron-core's layers be built and captured without CUDA.

- ``CudaRNGStatesTracker.add`` / ``.fork``: the tracker saves and restores CUDA RNG
  states; on CPU, ``add`` only records the name and ``fork`` is a plain context (the
  captured graph has no dropout: configs set the dropout probabilities to 0).
- ``torch.cuda.current_device`` returns ``"cpu"`` (the global memory buffer of the core
  attention allocates its scores buffer on it).
- ``make_viewless_tensor`` is the identity: it allocates ``torch.empty(1)`` and assigns
  ``.data``, which tracing cannot see (the graph would read the empty tensor; capture
  reports ``aten.empty.memory_format`` instead of producing such a graph).
- ``initialize_model_parallel`` must be called with ``create_gloo_process_groups=False``
  (gloo groups cannot be created over the fake store); ``tp_setup`` does that.
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def cpu_patches():
    import torch
    from megatron.core.tensor_parallel import random as mrandom

    cls = mrandom.CudaRNGStatesTracker
    saved = (cls.add, cls.fork, torch.cuda.current_device)

    def add(self, name, seed):
        self.states_ = getattr(self, "states_", {})
        self.states_[name] = seed

    @contextlib.contextmanager
    def fork(self, name=None):
        yield

    cls.add, cls.fork = add, fork
    torch.cuda.current_device = lambda: "cpu"
    try:
        with viewless_identity():
            yield
    finally:
        cls.add, cls.fork, torch.cuda.current_device = saved


def tp_setup(tp: int, seed: int = 1234) -> None:
    """Megatron's model-parallel state for the current (fake) rank, TP = ``tp``."""
    from megatron.core import parallel_state as ps
    from megatron.core.tensor_parallel import random as mrandom

    ps.destroy_model_parallel()
    ps.initialize_model_parallel(tensor_model_parallel_size=tp, create_gloo_process_groups=False)
    mrandom.model_parallel_cuda_manual_seed(seed)


def _viewless(inp, requires_grad=False, keep_graph=False):
    """``make_viewless_tensor`` swaps ``.data`` (invisible to tracing); the value is ``inp``."""
    return inp


@contextlib.contextmanager
def viewless_identity():
    """Replace every binding of ``megatron.core.utils.make_viewless_tensor`` by the identity."""
    import sys

    from megatron.core import utils

    orig = utils.make_viewless_tensor
    undo = []
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if isinstance(d, dict) and d.get("make_viewless_tensor") is orig:
            d["make_viewless_tensor"] = _viewless
            undo.append(d)
    try:
        yield
    finally:
        for d in undo:
            d["make_viewless_tensor"] = orig
