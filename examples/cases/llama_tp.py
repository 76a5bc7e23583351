"""Megatron-style tensor-parallel Llama block (RMSNorm, RoPE, SwiGLU), forward and backward.
``make_case(world)`` (default 2 ranks); tiny shapes: one head of dim 2 per rank."""

from examples.models.llama import LlamaBlock
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard


def make_case(world: int = 2) -> CaptureCase:
    s, heads = 2, world
    d, f = 2 * heads, 2 * world
    rel = {"x": replicate("x"), "d_out": replicate("d_out"), "cos": replicate("cos"), "sin": replicate("sin")}
    expect = {"out": replicate("out"), "grad.x": replicate("grad.x")}
    for n in ("n1.weight", "n2.weight"):  # replicated inputs: every rank computes the full gradient
        rel[n], expect["grad." + n] = replicate(n), replicate("grad." + n)
    for n in ("q", "k", "v", "gate", "up"):
        rel[n + ".weight"], expect[f"grad.{n}.weight"] = shard(n + ".weight", dim=0), shard(f"grad.{n}.weight", dim=0)
    for n in ("o", "down"):
        rel[n + ".weight"], expect[f"grad.{n}.weight"] = shard(n + ".weight", dim=1), shard(f"grad.{n}.weight", dim=1)
    return CaptureCase(name=f"llama_tp{world}", spec=lambda: LlamaBlock(d, heads, f, s),
                       impl=lambda rank, w: LlamaBlock(d, heads, f, s, w), world_size=world,
                       inputs={"x": (s, d)}, backward=True, input_relation=rel, expect=expect)
