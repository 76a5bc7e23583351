"""Capture's probe run and the trace share memoized fake parameters: a step whose backward runs
without zeroing gradients first must not find the probe's ``.grad`` in the trace (it was refused:
"reads a tensor constant")."""

import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from verifier.capture.trace import capture_module  # noqa: E402


def test_a_backward_without_zero_grad_is_captured():
    model = torch.nn.Linear(3, 2)

    def call(m, x):
        with torch.enable_grad():
            ps = list(m.parameters())
            for p in ps:
                p.requires_grad_(True)
            m(x).sum().backward()
            return [p.grad * 1 for p in ps]

    prog = capture_module(model, {"x": (4, 3)}, call=call).program
    assert [i.name for i in prog.inputs] == ["weight", "bias", "x"]
    assert not any("constant" in str(i.target) for i in prog.items)
