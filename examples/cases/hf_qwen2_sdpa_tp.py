"""A 1-layer transformers Qwen2 called the way users call it: ``model(input_ids)``, default SDPA attention,
q/k/v projections with biases, grouped-query attention (4 query heads, 2 key/value heads), the causal mask
and positions built in the graph; the decoder layer tensor-parallel through DTensor on 2 ranks (the same
plan as Llama's: q/k/v, gate/up colwise with their biases sharded; o, down rowwise), forward only.
``make_case(world, bug, size)``: 2 ranks by default, ``bug`` one of ``hf_models.BUGS`` planted in the
tensor-parallel model only, ``size`` as in hf_llama_sdpa_tp (default ``SMALL``; ``FULL``: real sizes, run at full
size by ``pvcert verify``). Needs transformers.
"""

import torch

from examples.cases.hf_llama_tp import REPLICATED
from examples.models import hf_models as hf
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate
from verifier.capture.trace import InputSpec

SEQ, VOCAB = 3, 4
SMALL = dict(vocab=VOCAB, seq=SEQ, hidden=8, heads=4, kv_heads=2, ffn=8)
# Real sizes, forward only: a 32000-token vocabulary, sequence 1024, hidden 1024 with 16 query heads of 64 and
# 4 key/value heads (Qwen2-0.5B's 14 and 2 would not split over 4 ranks), MLP width 2816.
FULL = dict(vocab=32000, seq=1024, hidden=1024, heads=16, kv_heads=4, ffn=2816)


def make_case(world: int = 2, bug: str | None = None, size: dict | None = None) -> CaptureCase:
    size = dict(size or SMALL)
    seq, vocab = size.pop("seq"), size["vocab"]

    def spec():
        torch.manual_seed(0)
        return hf.qwen2(**size), hf.call_plain

    tag = "" if dict(size, seq=seq) == SMALL else "_full" if dict(size, seq=seq) == FULL else \
        f"_h{size['hidden']}_s{seq}_v{vocab}"
    return CaptureCase(
        name=f"hf_qwen2_sdpa_tp{world}{tag}" + (f"_{bug}" if bug else ""), spec=spec,
        impl=lambda rank, w: hf.llama_tp(rank, w, call_as=hf.call_plain, build=hf.qwen2, bug=bug, **size),
        world_size=world, inputs={"input_ids": InputSpec((1, seq), torch.int64, range=(0, vocab))},
        input_relation={n: replicate(n) for n in ["input_ids"] + REPLICATED}, expect={"out": replicate("out")})
