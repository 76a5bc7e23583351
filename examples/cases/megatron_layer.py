"""One megatron-core (PyPI) transformer layer (local GPT layer spec: layer norm, column-parallel QKV, core attention
with a boolean mask, row-parallel projection, layer norm, the MLP) with tensor parallelism against the same layer at
TP=1, forward and backward, captured on CPU with the patches of verifier/capture/megatron.py, on ``[sequence, batch,
hidden]`` as the decoder calls it. ``make_case(world, size=FULL)``: GPT-2 small's widths at sequence 1,024. Relations:
QKV and FC1 rows sharded, projection and FC2 columns sharded, layer norms and the biases added after an all-reduce
replicated. Needs megatron-core."""
import torch

from examples.models import megatron_models as mm
from verifier.capture.case import CaptureCase
from verifier.capture.megatron import cpu_patches
from verifier.capture.relations import replicate, shard
from verifier.capture.trace import InputSpec

FULL = dict(seq=1024, hidden=768, heads=16)   # GPT-2 small's widths, 16 heads (TP 2, 4, 8)
ROW = ["self_attention.linear_qkv.weight", "self_attention.linear_qkv.bias", "mlp.linear_fc1.weight",
       "mlp.linear_fc1.bias"]
COL = ["self_attention.linear_proj.weight", "mlp.linear_fc2.weight"]
REPL = ["self_attention.linear_proj.bias", "mlp.linear_fc2.bias", "input_layernorm.weight", "input_layernorm.bias",
        "pre_mlp_layernorm.weight", "pre_mlp_layernorm.bias"]


def rels(prefix: str = "") -> dict:
    r = {prefix + k: shard(prefix + k, dim=0) for k in ROW}
    r.update({prefix + k: shard(prefix + k, dim=1) for k in COL})
    r.update({prefix + k: replicate(prefix + k) for k in REPL})
    return r


def make_case(world: int = 2, bug: str | None = None, size: dict | None = None) -> CaptureCase:
    """``bug``: one of ``megatron_models.BUGS``; ``size``: seq, hidden, heads (default: the smallest ``world`` allows)."""
    size = size or dict(seq=2, hidden=max(world, 4), heads=max(world, 4))
    s, widths = size["seq"], dict(hidden=size["hidden"], heads=size["heads"])
    return CaptureCase(
        name="megatron_layer" + ("_full" if s >= 1024 else "") + (f"_{bug}" if bug else ""),
        spec=lambda: mm.layer(0, 1, **widths),
        impl=lambda rank, w: mm.layer(rank, w, **widths, bug=bug),
        world_size=world,
        inputs={"x": InputSpec((s, 1, size["hidden"]), torch.float32),
                "attention_mask": InputSpec((1, 1, s, s), torch.bool, role="mask")},
        spec_distributed=True,
        backward=True,
        context=cpu_patches,
        input_relation={"x": replicate("x"), "attention_mask": replicate("attention_mask"),
                        "d_out": replicate("d_out"), **rels()},
        expect={"out": replicate("out"), "grad.x": replicate("grad.x"), **rels("grad.")},
    )


CASE = make_case()
