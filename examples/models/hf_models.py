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


BUGS = {"no_all_reduce": "the MLP's row-parallel down_proj keeps its output partial "
                         "(RowwiseParallel(output_layouts=Partial()): each rank adds its own partial sum to the residual)",
        "attention_scale": "the softmax scale from the head size as read off the rank's sharded q_proj "
                           "(q_proj.out_features / num_heads = head_dim / TP), not head_dim",
        "o_proj_no_all_reduce": "the attention's row-parallel o_proj keeps its output partial (the missing "
                                "all-reduce before the attention's residual add)"}
# Not silent, so not planted: k_proj/v_proj left replicated while the queries are sharded fails in SDPA (the
# library repeats each key/value head num_attention_heads // num_key_value_heads times, for the global count).


def llama_tp(rank: int, world: int, seed: int = 0, call_as=call, build=None, bug: str | None = None, **kw):
    """The Llama (or ``build(**kw)``, a model of the same layout) with every decoder layer tensor-parallel
    through DTensor (torch's ColwiseParallel / RowwiseParallel); embeddings, norms and the head stay replicated.
    ``bug``: one of ``BUGS``, planted in every decoder layer (silent: the model runs, its numbers are wrong)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Partial
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}: one of {', '.join(BUGS)}")
    torch.manual_seed(seed)
    m = (build or llama)(**kw)
    mesh = init_device_mesh("cpu", (world,))
    style = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
    for layer in m.model.layers:
        plan = {k: style[v]() for k, v in LLAMA_TP_PLAN.items()}
        if bug == "no_all_reduce":
            plan["mlp.down_proj"] = RowwiseParallel(output_layouts=Partial())
        elif bug == "o_proj_no_all_reduce":
            plan["self_attn.o_proj"] = RowwiseParallel(output_layouts=Partial())
        parallelize_module(layer, mesh, plan)
        if bug == "attention_scale":
            attn = layer.self_attn
            attn.scaling = (attn.q_proj.weight.to_local().shape[0] // attn.config.num_attention_heads) ** -0.5
    return m, call_as
