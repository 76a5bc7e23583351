"""Real library code: megatron-core TP layers and a 1-layer GPTModel per rank (TP=2, 4) on
CPU, and 1-layer Llama / GPT-2 from transformers, forward and backward."""

import warnings

import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from capture_helpers import collectives, counts, producer, roundtrip  # noqa: E402
from verifier.capture import capture_graph, capture_spmd  # noqa: E402


def _megatron():
    pytest.importorskip("megatron.core", reason="megatron-core is not installed")
    warnings.filterwarnings("ignore", category=UserWarning)
    from examples.models import megatron_models
    from verifier.capture.megatron import cpu_patches
    return megatron_models, cpu_patches


def ar_count(g):
    return sum(1 for n in collectives(g) if n["target"].endswith("all_reduce.default"))


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("bwd", [False, True])
def test_megatron_tp_linears(world, bwd):
    mm, cpu_patches = _megatron()
    with cpu_patches():
        cap = capture_spmd("mcore_tp", mm.tp_linears, world, {"x": (3, 1, 4)}, backward=bwd)
    g = cap.graph
    roundtrip(g)
    assert ar_count(g) == (2 if bwd else 1)     # row-parallel forward; column-parallel input grad
    assert all(n["group"] == list(range(world)) for n in collectives(g))
    assert g["tensors"]["fc1.weight@r0"]["shape"] == [8 // world, 4]
    assert g["tensors"]["fc2.weight@r0"]["shape"] == [4, 8 // world]
    c = counts(g, 0)
    assert c["aten.gelu.default"] == 1 and c["aten.mm.default"] == (6 if bwd else 2)
    if bwd:
        assert producer(g, "grad.x@r0")["target"].endswith("all_reduce.default")


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("bwd", [False, True])
def test_megatron_gpt(world, bwd):
    mm, cpu_patches = _megatron()
    with cpu_patches():
        cap = capture_spmd("mcore_gpt", mm.gpt, world, mm.gpt_inputs(), backward=bwd)
    g = cap.graph
    roundtrip(g)
    # forward: vocab-parallel embedding, attention output (row), MLP fc2 (row);
    # backward: the copy regions before qkv, fc1 and the output layer
    assert ar_count(g) == (6 if bwd else 3)
    c = counts(g, 0)
    assert c["aten.native_layer_norm.default"] == 3 and c["aten._softmax.default"] == 1
    # backward: the softmax gradient's masked fill, written through a view of its buffer, is kept
    assert c["aten.embedding.default"] == 2 and c["aten.masked_fill.Scalar"] == (2 if bwd else 1)
    if bwd:
        assert c["aten.native_layer_norm_backward.default"] == 3
        assert c["aten.embedding_dense_backward.default"] == 2
    logits = g["tensors"]["out@r0"]["shape"]
    assert logits == [1, 4, 32 // world]         # vocab-parallel logits
    assert g["tensors"]["embedding.word_embeddings.weight@r0"]["shape"] == [32 // world, 16]


def _transformers():
    pytest.importorskip("transformers", reason="transformers is not installed")
    warnings.filterwarnings("ignore")
    from examples.models import hf_models
    return hf_models


@pytest.mark.parametrize("bwd", [False, True])
def test_llama_one_layer(bwd):
    hf = _transformers()
    cap = capture_graph("llama", hf.llama(), hf.inputs(), call=hf.call, backward=bwd)
    g = roundtrip(cap.graph)
    c = counts(cap.graph)
    assert c["aten.rsqrt.default"] == 3 and c["aten.silu.default"] == 1   # 2 RMSNorms + final norm
    assert c["aten.cos.default"] == 1 and c["aten.sin.default"] == 1     # rotary embedding
    assert c["aten.bmm.default"] == (6 if bwd else 2)
    assert c.get("aten.silu_backward.default", 0) == int(bwd)
    assert g.tensors["out"].shape == (1, 4, 32)
    if bwd:
        assert "grad.model.layers.0.self_attn.q_proj.weight" in g.outputs
        assert c["aten.constant_pad_nd.default"] == 4                   # rotate_half's slices


@pytest.mark.parametrize("bwd", [False, True])
def test_gpt2_one_layer(bwd):
    hf = _transformers()
    cap = capture_graph("gpt2", hf.gpt2(), hf.inputs(), call=hf.call, backward=bwd)
    g = roundtrip(cap.graph)
    c = counts(cap.graph)
    assert c["aten.native_layer_norm.default"] == 3 and c["aten.tanh.default"] == 1  # gelu_new
    assert c["aten.addmm.default"] == 4                                               # Conv1D
    assert c.get("aten.native_layer_norm_backward.default", 0) == (3 if bwd else 0)
    if bwd:  # lm_head is tied to wte: one parameter, one gradient
        assert "grad.transformer.wte.weight" in g.outputs
        assert not any(o.startswith("grad.lm_head") for o in g.outputs)


def test_llama2_7b_layer_on_meta_captures_in_seconds():
    """A Llama-2-7B-sized layer (hidden 4096, FFN 11008, 32 heads, vocab 32000, sequence
    2048) built on the meta device: forward and backward capture at full size."""
    import time

    hf = _transformers()
    m = hf.llama(layers=1, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000, device="meta")
    t0 = time.perf_counter()
    cap = capture_graph("llama2_7b_layer", m, hf.inputs(batch=1, seq=2048, vocab=32000), call=hf.call,
                        backward=True)
    secs = time.perf_counter() - t0
    assert secs < 60, secs
    t = cap.graph["tensors"]
    assert t["model.layers.0.mlp.up_proj.weight"]["shape"] == [11008, 4096]
    assert t["out"]["shape"] == [1, 2048, 32000]
    assert t["grad.model.embed_tokens.weight"]["shape"] == [32000, 4096]
    assert counts(cap.graph)["aten.mm.default"] == 24


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("bwd", [False, True])
def test_llama_tensor_parallel_dtensor(world, bwd):
    """transformers Llama, decoder layer parallelized with DTensor: 2 all_reduces forward
    (o_proj, down_proj), 5 more backward (input gradients of q/k/v and gate/up)."""
    hf = _transformers()
    cap = capture_spmd("llama_tp", lambda r, w: hf.llama_tp(r, w, heads=4, kv_heads=4), world,
                       hf.inputs(), backward=bwd)
    g = cap.graph
    roundtrip(g)
    assert [n["target"] for n in collectives(g)] == ["_c10d_functional.all_reduce.default"] * (7 if bwd else 2)
    assert g["tensors"]["model.layers.0.self_attn.q_proj.weight@r0"]["shape"] == [16 // world, 16]
    rel = cap.relations()
    w = "model.layers.0.mlp.down_proj.weight"
    assert rel[w] == [f"concat({', '.join(f'{w}@r{r}' for r in range(world))}, dim=1)"]
    if bwd:
        assert f"grad.{w}" in rel
