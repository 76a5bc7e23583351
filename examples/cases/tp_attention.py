"""Tensor-parallel self-attention on 2 ranks (heads split: q/k/v column-parallel, output
projection row-parallel + all_reduce), forward. The backward captures (tests/capture)
but its whole-graph symbolic check (softmax backward) takes over 10 minutes today."""

from examples.models.attention import Attention, TPAttention
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard

S, D, HEADS, W = 2, 2, 2, 2

_col = {f"{p}.{k}": shard(f"{p}.{k}", dim=0) for p in "qkv" for k in ("weight", "bias")}

CASE = CaptureCase(
    name="tp_attention",
    spec=lambda: Attention(D, HEADS),
    impl=lambda rank, world: TPAttention(D, HEADS, world),
    world_size=W,
    inputs={"x": (S, D)},
    input_relation={"x": replicate("x"), **_col,
                    "o.weight": shard("o.weight", dim=1), "o.bias": replicate("o.bias")},
    expect={"out": replicate("out")},
)
