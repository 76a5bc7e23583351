"""A 1-layer transformers Llama (random init from a small config, no download) whose
decoder layer is tensor-parallel through DTensor (q/k/v, gate/up colwise; o, down
rowwise), against the same model on one device, forward and backward.
``make_case(world)`` (2 by default). The relations of the parallelized parameters and
their gradients come from the DTensor placements; everything else is replicated.
Needs transformers."""

import torch

from examples.models import hf_models as hf
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate

SEQ, VOCAB = 2, 4
SIZES = dict(heads=4, kv_heads=4, vocab=VOCAB, hidden=8, ffn=8)
REPLICATED = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.rotary_emb.inv_freq",
              "model.rotary_emb.original_inv_freq",
              "model.layers.0.input_layernorm.weight", "model.layers.0.post_attention_layernorm.weight"]


def make_case(world: int = 2) -> CaptureCase:
    def spec():
        torch.manual_seed(0)
        return hf.llama(**SIZES), hf.call

    inputs = ["input_ids", "position_ids", "attention_mask", "d_out"]
    return CaptureCase(
        name=f"hf_llama_tp{world}", spec=spec, impl=lambda rank, w: hf.llama_tp(rank, w, **SIZES),
        world_size=world, inputs=hf.inputs(seq=SEQ, vocab=VOCAB), backward=True,
        input_relation={n: replicate(n) for n in inputs + REPLICATED},
        expect={"out": replicate("out"), **{f"grad.{n}": replicate(f"grad.{n}") for n in REPLICATED
                                            if "rotary_emb" not in n}})
