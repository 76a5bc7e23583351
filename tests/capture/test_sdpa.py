"""``F.scaled_dot_product_attention`` (issue 15): captured through ``capture/decomp.py``'s ``_sdpa_cpu``
(no infinite values: a causal or boolean mask drops the masked positions' ``exp``), equal to torch's on
random inputs, and a tensor-parallel causal attention built on it verifies (forward and backward)."""

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from examples.models.mlp import ColumnParallelLinear, RowParallelLinear  # noqa: E402
from verifier.capture.case import CaptureCase, capture_case  # noqa: E402
from verifier.capture.decomp import _sdpa_cpu  # noqa: E402
from verifier.capture.relations import replicate, shard  # noqa: E402
from verifier.refine import infer  # noqa: E402


def test_grouped_query_attention_equals_torch():
    from verifier.capture.decomp import AboveAutograd

    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, h, 3, 2, generator=g, dtype=torch.float64) for h in (4, 2, 2))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    with AboveAutograd():
        got = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("mask", ["none", "causal", "bool", "float"])
def test_decomposition_equals_torch(mask):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    kw = {"causal": {"is_causal": True}, "none": {},
          "bool": {"attn_mask": torch.rand(5, 5, generator=g) > 0.3},
          "float": {"attn_mask": torch.randn(5, 5, generator=g, dtype=torch.float64)}}[mask]
    if mask == "bool":
        kw["attn_mask"][:, 0] = True   # every row keeps a position (an empty row is NaN in torch)
    want = F.scaled_dot_product_attention(q, k, v, **kw)
    got, lse = _sdpa_cpu(q, k, v, **kw)
    torch.testing.assert_close(got, want)
    assert lse.shape == (2, 3, 5)


class _Attention(nn.Module):
    """Causal multi-head attention on ``x [S, D]`` through SDPA; heads split over ``world`` ranks."""

    def __init__(self, d: int, heads: int, world: int = 1) -> None:
        super().__init__()
        self.heads = heads // world
        lin = (lambda: ColumnParallelLinear(d, d, world)) if world > 1 else (lambda: nn.Linear(d, d))
        self.q, self.k, self.v = lin(), lin(), lin()
        self.o = RowParallelLinear(d, d, world) if world > 1 else nn.Linear(d, d)

    def forward(self, x):
        s = x.shape[0]
        q, k, v = (p(x).view(s, self.heads, -1).transpose(0, 1) for p in (self.q, self.k, self.v))
        return self.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(0, 1).reshape(s, -1))


def test_tensor_parallel_causal_sdpa_verifies():
    col = {f"{p}.{k}": shard(f"{p}.{k}", dim=0) for p in "qkv" for k in ("weight", "bias")}
    case = capture_case(CaptureCase(
        name="tp_sdpa", spec=lambda: _Attention(4, 2), impl=lambda rank, world: _Attention(4, 2, world),
        world_size=2, inputs={"x": (3, 4)}, backward=True,
        input_relation={"x": replicate("x"), "d_out": replicate("d_out"), **col,
                        "o.weight": shard("o.weight", dim=1), "o.bias": replicate("o.bias")},
        expect={"out": replicate("out"), "grad.x": replicate("grad.x"),
                **{f"grad.{k}": shard(f"grad.{k}", dim=0) for k in col},
                "grad.o.weight": shard("grad.o.weight", dim=1), "grad.o.bias": replicate("grad.o.bias")}))
    assert any(n["target"] == "aten.tril.default" for n in case.spec["nodes"])
    inf = infer(case)
    assert inf.verified, inf.failure and inf.failure.message
