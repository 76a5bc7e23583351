"""A 1-layer transformers Llama called the way users call it: ``model(input_ids)``, its default SDPA
attention (``F.scaled_dot_product_attention``), the causal mask and the positions built by the library
inside the graph, grouped-query attention (4 query heads, 2 key/value heads); the decoder layer
tensor-parallel through DTensor (q/k/v, gate/up colwise; o, down rowwise) on 2 ranks, forward and backward.

SDPA is traced as its ops (``verifier/capture/decomp.py``: the masked positions' ``exp`` dropped, no
infinite value; with ``enable_gqa`` each key/value head serves its group of query heads). The token ids
range over the vocabulary (4) and are enumerated; ``make_case(world, bug, size)``: 2 ranks by default, ``bug``
one of ``hf_models.BUGS`` planted in the tensor-parallel model only, ``size`` the vocabulary, sequence, hidden
size, heads, key/value heads and MLP width (default ``SMALL``; ``FULL``: real sizes, too large to prove, so
``pvcert verify`` runs both graphs at full size, docs/stages.md). Needs transformers.
"""

import torch

from examples.cases.hf_llama_tp import REPLICATED
from examples.models import hf_models as hf
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate
from verifier.capture.trace import InputSpec

SEQ, VOCAB = 3, 4
SMALL = dict(vocab=VOCAB, seq=SEQ, hidden=8, heads=4, kv_heads=2, ffn=8)
SIZES = dict(heads=4, kv_heads=2, vocab=VOCAB, hidden=8, ffn=8, attn="sdpa")
# Real sizes: Llama's 32000-token vocabulary, sequence 1024, GPT-2 small's width (hidden 768, 12 query heads of
# 64) with 4 key/value heads (GQA) and the MLP width 2048 (8/3 x hidden). The largest that runs forward and
# backward at full size in about 2 minutes on 2 cores for the correct model (four draws) and under 6 GB; hidden
# 1024 (16/4 heads, MLP 2816) took 2 min 50 s and 5.4 GB (docs/benchmarks.md).
FULL = dict(vocab=32000, seq=1024, hidden=768, heads=12, kv_heads=4, ffn=2048)


def make_case(world: int = 2, bug: str | None = None, size: dict | None = None) -> CaptureCase:
    size = dict(size or SMALL)
    seq, vocab = size.pop("seq"), size["vocab"]
    model = dict(size, attn="sdpa")

    def spec():
        torch.manual_seed(0)
        return hf.llama(**model), hf.call_plain

    tag = "" if dict(size, seq=seq) == SMALL else \
        "_full" if dict(size, seq=seq) == FULL else f"_h{size['hidden']}_s{seq}_v{vocab}"
    return CaptureCase(
        name=f"hf_llama_sdpa_tp{world}{tag}" + (f"_{bug}" if bug else ""), spec=spec,
        impl=lambda rank, w: hf.llama_tp(rank, w, call_as=hf.call_plain, bug=bug, **model), world_size=world,
        inputs={"input_ids": InputSpec((1, seq), torch.int64, range=(0, vocab))}, backward=True,
        input_relation={n: replicate(n) for n in ["input_ids", "d_out"] + REPLICATED},
        expect={"out": replicate("out"), **{f"grad.{n}": replicate(f"grad.{n}") for n in REPLICATED
                                            if "rotary_emb" not in n}})
