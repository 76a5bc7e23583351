"""transformers' ``LlamaMLP`` (gate and up projections, SiLU, down projection; no biases) tensor-parallel through
DTensor as a TP plan writes it (``ColwiseParallel`` gate/up, ``RowwiseParallel`` down), against the same module on
one device, forward and backward. The parameters' relations and their gradients' come from the DTensor placements.
``make_case(world, bug, size)``: ``FULL`` is Llama-2-7B's MLP (hidden 4096, intermediate 11,008) on a sequence of
1,024; ``bug="no_all_reduce"`` leaves down_proj's output partial (``RowwiseParallel(output_layouts=Partial())``).
Needs transformers."""

import torch

from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate
from verifier.capture.trace import InputSpec

SMALL = dict(seq=2, hidden=4, ffn=8)
FULL = dict(seq=1024, hidden=4096, ffn=11008)


def _mlp(hidden: int, ffn: int):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP

    torch.manual_seed(0)
    return LlamaMLP(LlamaConfig(hidden_size=hidden, intermediate_size=ffn, num_attention_heads=1, num_key_value_heads=1))


def _tp(rank: int, world: int, hidden: int, ffn: int, bug: str | None):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Partial
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    m = _mlp(hidden, ffn)
    down = RowwiseParallel(output_layouts=Partial()) if bug == "no_all_reduce" else RowwiseParallel()
    parallelize_module(m, init_device_mesh("cpu", (world,)), {"gate_proj": ColwiseParallel(),
                                                              "up_proj": ColwiseParallel(), "down_proj": down})
    return m, lambda mod, x: mod(x)


def make_case(world: int = 2, bug: str | None = None, size: dict | None = None) -> CaptureCase:
    size = dict(size or SMALL)
    seq, hidden, ffn = size["seq"], size["hidden"], size["ffn"]
    tag = "_full" if size == FULL else ""
    return CaptureCase(
        name=f"hf_llama_mlp_tp{world}{tag}" + (f"_{bug}" if bug else ""),
        spec=lambda: (_mlp(hidden, ffn), lambda mod, x: mod(x)),
        impl=lambda rank, w: _tp(rank, w, hidden, ffn, bug), world_size=world,
        inputs={"x": InputSpec((1, seq, hidden), torch.float32)}, backward=True,
        input_relation={"x": replicate("x"), "d_out": replicate("d_out")},
        expect={"out": replicate("out"), "grad.x": replicate("grad.x")})


CASE = make_case()
