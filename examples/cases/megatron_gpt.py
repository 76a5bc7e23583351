"""megatron-core (PyPI) 1-layer GPTModel (local layer spec) with tensor parallelism (``make_case(world)``, 2 by default)
against the same model at TP=1, forward and backward, captured on CPU with the patches
of verifier/capture/megatron.py. Relations: vocab-parallel embedding and output layer,
column-parallel QKV/FC1 (rows), row-parallel projection/FC2 (columns), replicated
layer norms, biases after the all_reduce and position embeddings; the logits are
vocab-parallel (sharded on dim 2). Needs megatron-core."""
import torch
from examples.models import megatron_models as mm
from verifier.capture.case import CaptureCase
from verifier.capture.megatron import cpu_patches
from verifier.capture.relations import replicate, shard
from verifier.capture.trace import InputSpec

S = 2  # sequence


def sizes(world):
    """Vocabulary, hidden size and heads: the smallest that ``world`` (and 4) divides."""
    n = max(world, 4)
    return n, n, n

P = "decoder.layers.0."
ROW_SHARD = ["embedding.word_embeddings.weight", "output_layer.weight", P + "self_attention.linear_qkv.weight",
             P + "self_attention.linear_qkv.bias", P + "mlp.linear_fc1.weight", P + "mlp.linear_fc1.bias"]
COL_SHARD = [P + "self_attention.linear_proj.weight", P + "mlp.linear_fc2.weight"]
REPL = ["embedding.position_embeddings.weight", P + "self_attention.linear_proj.bias", P + "mlp.linear_fc2.bias",
        P + "input_layernorm.weight", P + "input_layernorm.bias", P + "pre_mlp_layernorm.weight",
        P + "pre_mlp_layernorm.bias", "decoder.final_layernorm.weight", "decoder.final_layernorm.bias"]

def rels(prefix=""):
    r = {prefix + k: shard(prefix + k, dim=0) for k in ROW_SHARD}
    r.update({prefix + k: shard(prefix + k, dim=1) for k in COL_SHARD})
    r.update({prefix + k: replicate(prefix + k) for k in REPL})
    return r

def make_case(world=2):
    v, h, heads = sizes(world)
    return CaptureCase(
        name="megatron_gpt",
        spec=lambda: mm.gpt(0, 1, vocab=v, seq=S, hidden=h, heads=heads),
        impl=lambda rank, w: mm.gpt(rank, w, vocab=v, seq=S, hidden=h, heads=heads),
        world_size=world,
        inputs={"input_ids": InputSpec((1, S), torch.int64, range=(0, v)),
                "position_ids": InputSpec((1, S), torch.int64, range=(0, S)),
                "attention_mask": InputSpec((1, 1, S, S), torch.bool, role="mask")},
        spec_distributed=True,
        backward=True,
        context=cpu_patches,
        input_relation={"input_ids": replicate("input_ids"), "position_ids": replicate("position_ids"),
                        "attention_mask": replicate("attention_mask"), "d_out": shard("d_out", dim=2),
                        **rels()},
        expect={"out": shard("out", dim=2), **rels("grad.")},
    )

