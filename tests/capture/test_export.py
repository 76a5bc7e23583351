"""Forward-only capture through torch.export, for one device and per rank."""

import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from examples.models.attention import Attention  # noqa: E402
from examples.models.mlp import MLP, TPMLP  # noqa: E402
from capture_helpers import collectives, counts, roundtrip  # noqa: E402
from verifier.capture import CaptureError  # noqa: E402
from verifier.capture.export import capture_export, capture_export_spmd  # noqa: E402


def test_export_sequential():
    cap = capture_export("mlp", MLP(4, 8), {"x": (3, 4)})
    roundtrip(cap.graph)
    assert counts(cap.graph) == {"aten.linear.default": 2, "aten.gelu.default": 1}
    assert cap.graph["inputs"] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "x"]
    cap = capture_export("att", Attention(8, 4), {"x": (3, 8)})
    roundtrip(cap.graph)
    assert counts(cap.graph)["aten.bmm.default"] == 2


def test_export_tp_mlp_per_rank():
    cap = capture_export_spmd("tp_mlp", lambda r, w: TPMLP(4, 8, w), 2, {"x": (3, 4)})
    roundtrip(cap.graph)
    (ar,) = collectives(cap.graph)
    assert ar["target"] == "_c10d_functional.all_reduce.default" and ar["group"] == [0, 1]


def test_export_data_dependent_refused():
    class M(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x

    with pytest.raises(CaptureError, match="ddcf: tracing failed"):
        capture_export("ddcf", M(), {"x": (2,)})
