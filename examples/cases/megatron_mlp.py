"""megatron-core (PyPI) transformer MLP (``megatron.core.transformer.mlp.MLP`` of the local layer spec: column-parallel
FC1, GELU or SwiGLU, row-parallel FC2 and its all-reduce) with tensor parallelism against the same module at TP=1,
forward and backward, captured on CPU with the patches of verifier/capture/megatron.py, on ``[sequence, batch,
hidden]`` as the transformer layer calls it. ``make_case(world, size=FULL)``: GPT-2 small's widths at sequence 1024;
``size=LLAMA``: Llama-2-7B's MLP (SwiGLU, no biases). Relations: FC1 rows sharded (SwiGLU: rank r holds [gate_r;
up_r], so the TP=1 weight [gate; up] interleaves the ranks' halves), FC2 columns sharded, FC2's bias replicated
(added after the all-reduce). Needs megatron-core."""
import torch

from examples.models import megatron_models as mm
from verifier.capture.case import CaptureCase
from verifier.capture.megatron import cpu_patches
from verifier.capture.relations import replicate, shard
from verifier.capture.trace import InputSpec

FULL = dict(seq=1024, hidden=768, ffn=3072)                   # GPT-2 small
LLAMA = dict(seq=1024, hidden=4096, ffn=11008, swiglu=True)   # Llama-2-7B


def halves(t: str, world: int, rows: int) -> str:
    """The TP=1 ``[gate; up]`` rows of ``t`` from the ranks' ``[gate_r; up_r]`` (``rows`` per rank)."""
    h = rows // 2
    parts = [f"slice({t}@r{r}, dim=0, start={a}, end={b})" for a, b in ((0, h), (h, rows)) for r in range(world)]
    return f"concat({', '.join(parts)}, dim=0)"


def make_case(world: int = 2, bug: str | None = None, size: dict | None = None) -> CaptureCase:
    """``size``: seq, hidden, ffn (and ``swiglu``); default: the smallest sizes ``world`` allows."""
    size = dict(size or dict(seq=2, hidden=4, ffn=4 * world))
    seq, swiglu, ffn = size.pop("seq"), size.get("swiglu", False), size["ffn"]
    rel = {"linear_fc2.weight": shard("linear_fc2.weight", dim=1)}
    if swiglu:
        rel["linear_fc1.weight"] = halves("linear_fc1.weight", world, 2 * ffn // world)
    else:
        rel.update({"linear_fc1.weight": shard("linear_fc1.weight", dim=0),
                    "linear_fc1.bias": shard("linear_fc1.bias", dim=0),
                    "linear_fc2.bias": replicate("linear_fc2.bias")})
    grads = {f"grad.{k}": halves(f"grad.{k}", world, 2 * ffn // world) if isinstance(v, str) else
             type(v)(v.kind, f"grad.{k}", v.dim) for k, v in rel.items()}
    tag = ("_llama" if swiglu else "") + ("_full" if seq >= 1024 else "") + (f"_{bug}" if bug else "")
    return CaptureCase(
        name="megatron_mlp" + tag,
        spec=lambda: mm.mlp(0, 1, **size),
        impl=lambda rank, w: mm.mlp(rank, w, **size, bug=bug),
        world_size=world,
        inputs={"x": InputSpec((seq, 1, size["hidden"]), torch.float32)},
        spec_distributed=True,
        backward=True,
        context=cpu_patches,
        input_relation={"x": replicate("x"), "d_out": replicate("d_out"), **rel},
        expect={"out": replicate("out"), "grad.x": replicate("grad.x"), **grads},
    )


CASE = make_case()
