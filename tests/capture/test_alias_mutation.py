"""An in-place update through a same-tensor alias (``detach``, a view to the same shape: what a
DTensor gradient's ``to_local()`` is) or through a reshape of its storage changes the tensor itself:
the captured graph computes what eager PyTorch computes, it never drops the update as dead code; an
update through a partial view (a row, a slice) that is read later through another view is refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from certificates.graph import evaluate, parse_graph
from verifier.capture.api import capture_graph
from verifier.capture.convert import CaptureError


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



class ThroughReshape(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        y.view(-1).mul_(3)                  # a reshape of y's storage: y becomes 6x
        z = y.view(3, 2)
        z.copy_(z.masked_fill(z > 20, 0))   # Megatron's backward: a masked fill written through a view
        return y + 1


class ThroughSelect(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        y[0].mul_(3)                        # one row of y: not a reshape
        return y + 1


def test_update_through_a_reshape_view_is_kept():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    eager = ThroughReshape()(torch.tensor(x)).numpy()
    assert np.allclose(_run(ThroughReshape(), x), eager)
    assert not np.allclose(eager, 6 * x + 1)   # the masked fill changed values


def test_update_through_a_partial_view_read_later_is_refused():
    """It was dropped as dead code (the graph computed 2x + 1, eager computes another value)."""
    with pytest.raises(CaptureError, match="mutation through aliases"):
        capture_graph("m", ThroughSelect(), {"x": (2, 3)})
