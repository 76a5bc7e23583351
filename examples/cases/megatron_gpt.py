"""megatron-core (PyPI) GPTModel of 1 layer (``layers``: more; local layer spec) with tensor parallelism (``make_case(world)``, 2 by default)
against the same model at TP=1, forward and backward, captured on CPU with the patches
of verifier/capture/megatron.py. Relations: vocab-parallel embedding and output layer,
column-parallel QKV/FC1 (rows), row-parallel projection/FC2 (columns), replicated
layer norms, biases after the all_reduce and position embeddings; the logits are
vocab-parallel (sharded on dim 2). Needs megatron-core."""
import torch
from examples.cases import megatron_layer
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

def rels(prefix="", layers=1):
    """Each layer's parameters as examples/cases/megatron_layer.py relates them, the embeddings and the output layer."""
    ps = [f"decoder.layers.{i}." for i in range(layers)]
    row = ["embedding.word_embeddings.weight", "output_layer.weight"] + [p + k for p in ps for k in megatron_layer.ROW]
    repl = ["embedding.position_embeddings.weight", "decoder.final_layernorm.weight", "decoder.final_layernorm.bias"]
    r = {prefix + k: shard(prefix + k, dim=0) for k in row}
    r.update({prefix + p + k: shard(prefix + p + k, dim=1) for p in ps for k in megatron_layer.COL})
    r.update({prefix + k: replicate(prefix + k) for k in repl + [p + k for p in ps for k in megatron_layer.REPL]})
    return r

FULL = dict(vocab=32768, seq=1024, hidden=768, heads=16)   # GPT-2 small's widths, 16 heads (TP 2, 4, 8), 32k vocabulary


def make_case(world=2, bug=None, size=None, layers=1):
    """``bug``: one of ``megatron_models.BUGS``, planted in the TP model's first layer; ``size``: vocab, seq, hidden and
    heads (``FULL``: real sizes; default: the smallest ``world`` allows); ``layers``: decoder layers."""
    v, h, heads = sizes(world)
    size = size or dict(vocab=v, seq=S, hidden=h, heads=heads)
    s = size["seq"]
    return CaptureCase(
        name="megatron_gpt" + ("_full" if size == FULL else "") + (f"_{layers}_layers" if layers > 1 else "")
        + (f"_{bug}" if bug else ""),
        spec=lambda: mm.gpt(0, 1, **size, layers=layers),
        impl=lambda rank, w: mm.gpt(rank, w, **size, bug=bug, layers=layers),
        world_size=world,
        inputs={"input_ids": InputSpec((1, s), torch.int64, range=(0, size["vocab"])),
                "position_ids": InputSpec((1, s), torch.int64, range=(0, s)),
                "attention_mask": InputSpec((1, 1, s, s), torch.bool, role="mask")},
        spec_distributed=True,
        backward=True,
        context=cpu_patches,
        input_relation={"input_ids": replicate("input_ids"), "position_ids": replicate("position_ids"),
                        "attention_mask": replicate("attention_mask"), "d_out": shard("d_out", dim=2),
                        **rels(layers=layers)},
        expect={"out": shard("out", dim=2), **rels("grad.", layers)},
    )

