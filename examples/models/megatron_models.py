"""megatron-core (PyPI) layers built for capture on CPU (see docs/capture.md).

``tp_linears(rank, world)``: ColumnParallelLinear -> GELU -> RowParallelLinear.
``mlp(rank, world)``: the MLP of that layer spec (megatron.core.transformer.mlp.MLP: column-parallel FC1,
GELU or SwiGLU, row-parallel FC2), called on ``[sequence, batch, hidden]`` as the layer calls it.
``gpt(rank, world)``: a 1-layer GPTModel with the local (non-Transformer-Engine) layer
spec, dropout off, learned absolute positions; called with explicit position ids and
a boolean attention mask (True = masked), so no mask is built on a CUDA device.
Both call ``tp_setup`` (Megatron's parallel state for the current fake rank) and must
run inside ``verifier.capture.megatron.cpu_patches()``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from verifier.capture.megatron import tp_setup

VOCAB, SEQ, HIDDEN, HEADS = 32, 4, 16, 4


def tp_linears(rank: int, world: int, d: int = 4, f: int = 8):
    from megatron.core.model_parallel_config import ModelParallelConfig
    from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear

    tp_setup(world)
    cfg = ModelParallelConfig(tensor_model_parallel_size=world, use_cpu_initialization=True)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = ColumnParallelLinear(d, f, config=cfg, init_method=nn.init.xavier_normal_, bias=True,
                                            gather_output=False)
            self.fc2 = RowParallelLinear(f, d, config=cfg, init_method=nn.init.xavier_normal_, bias=True,
                                         input_is_parallel=True, skip_bias_add=False)

        def forward(self, x):
            h, _ = self.fc1(x)
            y, _ = self.fc2(F.gelu(h))
            return y

    return Block()


def mlp(rank: int, world: int, hidden: int = HIDDEN, ffn: int = 4 * HIDDEN, swiglu: bool = False,
        bug: str | None = None):
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.spec_utils import build_module
    from megatron.core.transformer.transformer_config import TransformerConfig

    tp_setup(world)   # the config wants attention heads (TP must divide them); the MLP has no attention
    cfg = TransformerConfig(num_layers=1, hidden_size=hidden, ffn_hidden_size=ffn, num_attention_heads=world,
                            use_cpu_initialization=True, tensor_model_parallel_size=world, hidden_dropout=0.0,
                            bias_activation_fusion=False, gradient_accumulation_fusion=False,
                            gated_linear_unit=swiglu, activation_func=F.silu if swiglu else F.gelu,
                            add_bias_linear=not swiglu)
    model = build_module(get_gpt_layer_local_spec().submodules.mlp, config=cfg)
    if bug == "no_all_reduce":
        _unreduced(model.linear_fc2)
    elif bug is not None:
        raise ValueError(f"unknown bug {bug!r}: no_all_reduce")

    def call(m, x):   # FC2's bias comes back apart (the layer adds it in its bias-dropout-add)
        out, bias = m(x)
        return out if bias is None else out + bias

    return model, call


BUGS = {"no_all_reduce": "the MLP's row-parallel FC2 leaves its partial sums unreduced (a missing all-reduce)",
        "attention_scale": "the softmax scale from the rank's projection size hidden/TP, not the head size"}


def _config(world: int, hidden: int, heads: int, layers: int = 1):
    """The transformer config of ``gpt`` and ``layer``: ``layers`` layers, dropout and fusions off, CPU initialization."""
    from megatron.core.transformer.transformer_config import TransformerConfig

    tp_setup(world)
    return TransformerConfig(num_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                             use_cpu_initialization=True, tensor_model_parallel_size=world,
                             hidden_dropout=0.0, attention_dropout=0.0, bias_dropout_fusion=False,
                             bias_activation_fusion=False, masked_softmax_fusion=False,
                             gradient_accumulation_fusion=False, apply_rope_fusion=False,
                             persist_layer_norm=False)


def _plant(layer: nn.Module, bug: str | None, hidden: int, world: int) -> None:
    """``bug`` (one of ``BUGS``) planted in a transformer ``layer``."""
    if bug == "no_all_reduce":
        _unreduced(layer.mlp.linear_fc2)
    elif bug == "attention_scale":
        layer.self_attention.core_attention.softmax_scale = 1.0 / math.sqrt(hidden // world)
    elif bug is not None:
        raise ValueError(f"unknown bug {bug!r}: one of {', '.join(BUGS)}")


def gpt(rank: int, world: int, vocab: int = VOCAB, seq: int = SEQ, hidden: int = HIDDEN, heads: int = HEADS,
        bug: str | None = None, layers: int = 1):
    """megatron-core's GPTModel of ``layers`` layers (local layer spec, learned positions); ``bug`` planted in the
    first layer."""
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec

    model = GPTModel(config=_config(world, hidden, heads, layers), transformer_layer_spec=get_gpt_layer_local_spec(),
                     vocab_size=vocab, max_sequence_length=seq, position_embedding_type="learned_absolute")
    _plant(model.decoder.layers[0], bug, hidden, world)

    def call(m, input_ids, position_ids, attention_mask):
        return m(input_ids=input_ids, position_ids=position_ids, attention_mask=attention_mask)

    return model, call


def layer(rank: int, world: int, hidden: int = HIDDEN, heads: int = HEADS, bug: str | None = None):
    """One transformer layer of the local GPT layer spec (pre-norm self-attention with a causal boolean mask, then
    the MLP), called on ``[sequence, batch, hidden]`` as the decoder calls it; ``bug`` as for ``gpt``."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.spec_utils import build_module

    model = build_module(get_gpt_layer_local_spec(), config=_config(world, hidden, heads), layer_number=1)
    _plant(model, bug, hidden, world)

    def call(m, x, attention_mask):
        out, _ = m(x, attention_mask=attention_mask)
        return out

    return model, call


def _unreduced(linear: nn.Module) -> None:
    """``linear`` (a RowParallelLinear) runs with megatron's all-reduce of its output replaced by the identity."""
    from megatron.core.tensor_parallel import layers

    forward = linear.forward

    def unreduced(*args, **kwargs):
        saved = layers.reduce_from_tensor_model_parallel_region
        layers.reduce_from_tensor_model_parallel_region = lambda x, group=None: x
        try:
            return forward(*args, **kwargs)
        finally:
            layers.reduce_from_tensor_model_parallel_region = saved
    linear.forward = unreduced


def gpt_inputs(batch: int = 1):
    from verifier.capture.trace import InputSpec

    return {"input_ids": InputSpec((batch, SEQ), torch.int64, range=(0, VOCAB)),
            "position_ids": InputSpec((batch, SEQ), torch.int64, range=(0, SEQ)),
            "attention_mask": InputSpec((batch, 1, SEQ, SEQ), torch.bool, role="mask")}
