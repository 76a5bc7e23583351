"""A 1-layer transformers Qwen2 called the way users call it: ``model(input_ids)``, default SDPA attention,
q/k/v projections with biases, grouped-query attention (4 query heads, 2 key/value heads), the causal mask
and positions built in the graph; the decoder layer tensor-parallel through DTensor on 2 ranks (the same
plan as Llama's: q/k/v, gate/up colwise with their biases sharded; o, down rowwise), forward only.
``make_case(world)`` (2 by default). Needs transformers.
"""

import torch

from examples.cases.hf_llama_tp import REPLICATED
from examples.models import hf_models as hf
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate
from verifier.capture.trace import InputSpec

SEQ, VOCAB = 3, 4


def make_case(world: int = 2) -> CaptureCase:
    def spec():
        torch.manual_seed(0)
        return hf.qwen2(vocab=VOCAB), hf.call_plain

    return CaptureCase(
        name=f"hf_qwen2_sdpa_tp{world}", spec=spec,
        impl=lambda rank, w: hf.llama_tp(rank, w, call_as=hf.call_plain, build=hf.qwen2, vocab=VOCAB),
        world_size=world, inputs={"input_ids": InputSpec((1, SEQ), torch.int64, range=(0, VOCAB))},
        input_relation={n: replicate(n) for n in ["input_ids"] + REPLICATED}, expect={"out": replicate("out")})
