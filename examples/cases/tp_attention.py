"""Tensor-parallel self-attention on 2 ranks (heads split: q/k/v column-parallel, output
projection row-parallel + all_reduce), forward and backward. ``pvcert verify`` (per-operator
engine) proves it in under a second; the whole-graph check of the softmax backward takes
over 10 minutes at these shapes (tests check the forward whole-graph)."""

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
    backward=True,
    input_relation={"x": replicate("x"), "d_out": replicate("d_out"), **_col,
                    "o.weight": shard("o.weight", dim=1), "o.bias": replicate("o.bias")},
    expect={"out": replicate("out"), "grad.x": replicate("grad.x"),
            **{f"grad.{k}": shard(f"grad.{k}", dim=0) for k in _col},
            "grad.o.weight": shard("grad.o.weight", dim=1), "grad.o.bias": replicate("grad.o.bias")},
)
