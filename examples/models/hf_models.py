"""transformers models from small configs with random init (no download): a 1-layer
Llama and a 1-layer GPT-2, eager attention, dropout off. They are called with explicit
position ids and a 4-D additive float attention mask, so the library builds no mask
from ``arange``/``cumsum`` inside the graph."""

from __future__ import annotations

import torch

VOCAB, SEQ = 32, 4


def llama(layers: int = 1, hidden: int = 16, heads: int = 4, kv_heads: int = 2, ffn: int = 32, device=None,
          vocab: int = VOCAB, attn: str = "eager"):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=4096,
                      attn_implementation=attn)
    with torch.device(device or "cpu"):
        return LlamaForCausalLM(cfg)


def qwen2(layers: int = 1, hidden: int = 8, heads: int = 4, kv_heads: int = 2, ffn: int = 8, vocab: int = VOCAB,
          attn: str = "sdpa"):
    """A Qwen2 (q/k/v projections with biases, grouped-query attention), default SDPA attention."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=4096,
                      attn_implementation=attn)
    return Qwen2ForCausalLM(cfg)


def gpt2(layers: int = 1, hidden: int = 16, heads: int = 4):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=VOCAB, n_embd=hidden, n_layer=layers, n_head=heads, n_positions=64,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, attn_implementation="eager",
                     bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(cfg)


def call(m, input_ids, position_ids, attention_mask):
    return m(input_ids=input_ids, position_ids=position_ids, attention_mask=attention_mask,
             use_cache=False).logits


def call_plain(m, input_ids):
    """The model called as users call it: the library builds positions and the causal mask in the graph."""
    return m(input_ids, use_cache=False).logits


def inputs(batch: int = 1, seq: int = SEQ, vocab: int = VOCAB):
    from verifier.capture.trace import InputSpec

    return {"input_ids": InputSpec((batch, seq), torch.int64, range=(0, vocab)),
            "position_ids": InputSpec((batch, seq), torch.int64, range=(0, seq)),
            "attention_mask": InputSpec((batch, 1, seq, seq), torch.float32, role="mask")}


LLAMA_TP_PLAN = {"self_attn.q_proj": "colwise", "self_attn.k_proj": "colwise", "self_attn.v_proj": "colwise",
                 "self_attn.o_proj": "rowwise", "mlp.gate_proj": "colwise", "mlp.up_proj": "colwise",
                 "mlp.down_proj": "rowwise"}


def llama_tp(rank: int, world: int, seed: int = 0, call_as=call, build=None, **kw):
    """The Llama (or ``build(**kw)``, a model of the same layout) with every decoder layer tensor-parallel
    through DTensor (torch's ColwiseParallel / RowwiseParallel); embeddings, norms and the head stay replicated."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(seed)
    m = (build or llama)(**kw)
    mesh = init_device_mesh("cpu", (world,))
    style = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
    for layer in m.model.layers:
        parallelize_module(layer, mesh, {k: style[v]() for k, v in LLAMA_TP_PLAN.items()})
    return m, call_as
