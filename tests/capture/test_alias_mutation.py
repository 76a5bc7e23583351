"""An in-place update through a same-tensor alias (``detach``, a view to the same shape: what a
DTensor gradient's ``to_local()`` is) changes the tensor itself: the captured graph computes what
eager PyTorch computes, it never drops the update as dead code."""

from __future__ import annotations

import numpy as np
import torch

from certificates.graph import evaluate, parse_graph
from verifier.capture.api import capture_graph


class ThroughAlias(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        y.detach().view(y.shape).mul_(3)   # y itself becomes 6x
        return y + 1


def _run(module: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    g = parse_graph(capture_graph("m", module, {"x": x.shape}).graph, "m")
    return evaluate(g, {"x": x}, symbolic=False)[g.outputs[0]]


def test_update_through_a_same_tensor_alias_is_kept():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    eager = ThroughAlias()(torch.tensor(x)).numpy()
    assert np.allclose(_run(ThroughAlias(), x), eager)
    assert np.allclose(eager, 6 * x + 1)

