"""Megatron-style GPT block(s) with tensor and sequence parallelism, forward and backward.

``make_case(layers, world)`` (defaults: 1 layer, 2 ranks) for the benchmarks; tiny shapes
(head dim 1, sequence = ranks * 1) since every obligation is checked exactly.
"""

from examples.models.gpt import GPT
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard


def make_case(layers: int = 1, world: int = 2) -> CaptureCase:
    s, d, heads, f = world, world, world, 2 * world
    rel, expect = {"x": shard("x", dim=0), "d_out": shard("d_out", dim=0)}, {}
    for i in range(layers):
        p = f"blocks.{i}."
        for n in ("ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias", "attn.o.bias", "mlp.fc2.bias"):
            rel[p + n], expect["grad." + p + n] = replicate(p + n), f"sum({', '.join(f'grad.{p}{n}@r{r}' for r in range(world))})"
        for n in ("attn.q", "attn.k", "attn.v", "mlp.fc1"):
            for k in ("weight", "bias"):
                rel[f"{p}{n}.{k}"], expect[f"grad.{p}{n}.{k}"] = shard(f"{p}{n}.{k}", dim=0), shard(f"grad.{p}{n}.{k}", dim=0)
        for n in ("attn.o.weight", "mlp.fc2.weight"):
            rel[p + n], expect["grad." + p + n] = shard(p + n, dim=1), shard("grad." + p + n, dim=1)
    expect.update({"out": shard("out", dim=0), "grad.x": shard("grad.x", dim=0)})
    return CaptureCase(name=f"gpt_{layers}l_tp{world}_sp", spec=lambda: GPT(layers, d, heads, f),
                       impl=lambda rank, w: GPT(layers, d, heads, f, w), world_size=world,
                       inputs={"x": (s, d)}, impl_inputs={"x": (s // world, d)}, backward=True,
                       input_relation=rel, expect=expect)
