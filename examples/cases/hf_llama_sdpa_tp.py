"""A 1-layer transformers Llama called the way users call it: ``model(input_ids)``, its default SDPA
attention (``F.scaled_dot_product_attention``), the causal mask and the positions built by the library
inside the graph, grouped-query attention (4 query heads, 2 key/value heads); the decoder layer
tensor-parallel through DTensor (q/k/v, gate/up colwise; o, down rowwise) on 2 ranks, forward and backward.

SDPA is traced as its ops (``verifier/capture/decomp.py``: the masked positions' ``exp`` dropped, no
infinite value; with ``enable_gqa`` each key/value head serves its group of query heads). The token ids
range over the vocabulary (4) and are enumerated; ``make_case(world)`` (2 by default). Needs transformers.
"""

import torch

from examples.cases.hf_llama_tp import REPLICATED
from examples.models import hf_models as hf
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate
from verifier.capture.trace import InputSpec

SEQ, VOCAB = 3, 4
SIZES = dict(heads=4, kv_heads=2, vocab=VOCAB, hidden=8, ffn=8, attn="sdpa")


def make_case(world: int = 2) -> CaptureCase:
    def spec():
        torch.manual_seed(0)
        return hf.llama(**SIZES), hf.call_plain

    return CaptureCase(
        name=f"hf_llama_sdpa_tp{world}", spec=spec,
        impl=lambda rank, w: hf.llama_tp(rank, w, call_as=hf.call_plain, **SIZES), world_size=world,
        inputs={"input_ids": InputSpec((1, SEQ), torch.int64, range=(0, VOCAB))}, backward=True,
        input_relation={n: replicate(n) for n in ["input_ids", "d_out"] + REPLICATED},
        expect={"out": replicate("out"), **{f"grad.{n}": replicate(f"grad.{n}") for n in REPLICATED
                                            if "rotary_emb" not in n}})
