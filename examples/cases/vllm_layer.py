"""A vLLM-style tensor-parallel decoder layer for inference, built on fused custom operators.

The fused kernels are ``torch.library.custom_op``s (here in the ``demo_vllm`` namespace, with CPU
bodies standing in for the CUDA kernels): ``rms_norm``, ``fused_add_rms_norm`` (residual add and
norm in one), ``rotary_embedding`` (q and k at once), ``silu_and_mul`` (gate and up halves of one
tensor) and ``all_reduce`` (the TP group's sum). The layer is written the vLLM way: merged
column-parallel weights (``qkv``: this rank's query heads, then its key and value heads; ``gate_up``:
its gate rows, then its up rows), row-parallel ``o`` and ``down`` followed by the custom all-reduce,
grouped-query attention (8 query heads, 2 key/value heads). The relations of the merged weights
are concatenations of slices of every rank's weight, written out by ``merged``.

pvcert cannot see inside a custom op: the case declares each one's semantics as a function of the
op's arguments written with torch ops (``DECLARED``), which capture traces in the op's place; the
claim lists every declaration (its source and sha256) as an assumption, and ``pvcert replay``
shows them. An undeclared custom op is refused at capture ("ops not in the operator registry").

    pvcert verify examples/cases/vllm_layer.py --emit-cert cert.json && pvcert replay cert.json
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed import _functional_collectives as funcol

from verifier.capture.case import CaptureCase

EPS = 1e-6
SMALL = dict(hidden=16, heads=8, kv_heads=2, head_dim=2, ffn=16, tokens=2)
# Real sizes: a Llama-3-8B decoder layer (hidden 4096, 32 query heads and 8 key/value heads of 128, MLP 14336) on
# a prefill of 1,024 tokens (docs/benchmarks.md, "Full size").
FULL = dict(hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, tokens=1024)


# ---------------------------------------------------------------- the fused kernels (custom ops)

@torch.library.custom_op("demo_vllm::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return (x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


@torch.library.custom_op("demo_vllm::fused_add_rms_norm", mutates_args=())
def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                       eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    s = x + residual
    return rms_norm(s, weight, eps), s


@torch.library.custom_op("demo_vllm::rotary_embedding", mutates_args=())
def rotary_embedding(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor,
                     sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    def rot(x):   # x [tokens, heads * head_dim], neox style: halves of each head rotated; cos [tokens, head_dim / 2]
        half = cos.shape[-1]
        t = x.unflatten(-1, (-1, 2 * half))
        a, b = t[..., :half], t[..., half:]
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.cat((a * c - b * s, b * c + a * s), dim=-1).flatten(-2)
    return rot(q), rot(k)


@torch.library.custom_op("demo_vllm::silu_and_mul", mutates_args=())
def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


@torch.library.custom_op("demo_vllm::all_reduce", mutates_args=())
def all_reduce(x: torch.Tensor, group_name: str) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out, group=dist.distributed_c10d._resolve_process_group(group_name))
    return out


for _op, _fake in ((rms_norm, lambda x, w, eps: torch.empty_like(x)),
                   (fused_add_rms_norm, lambda x, r, w, eps: (torch.empty_like(x), torch.empty_like(x))),
                   (rotary_embedding, lambda q, k, c, s: (torch.empty_like(q), torch.empty_like(k))),
                   (silu_and_mul, lambda x: x.new_empty(x.shape[:-1] + (x.shape[-1] // 2,))),
                   (all_reduce, lambda x, g: torch.empty_like(x))):
    _op.register_fake(_fake)


# ---------------------------------------------------------------- their declared semantics

def declared_rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def declared_fused_add_rms_norm(x, residual, weight, eps):
    s = x + residual
    return declared_rms_norm(s, weight, eps), s


def declared_rotary_embedding(q, k, cos, sin):
    def rot(x):
        half = cos.shape[-1]
        t = x.unflatten(-1, (-1, 2 * half))
        a, b = t[..., :half], t[..., half:]
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.cat((a * c - b * s, b * c + a * s), dim=-1).flatten(-2)
    return rot(q), rot(k)


def declared_silu_and_mul(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def declared_all_reduce(x, group_name):
    return funcol.wait_tensor(funcol.all_reduce(x, "sum", group_name))


DECLARED = {"demo_vllm::rms_norm": declared_rms_norm, "demo_vllm::fused_add_rms_norm": declared_fused_add_rms_norm,
            "demo_vllm::rotary_embedding": declared_rotary_embedding, "demo_vllm::silu_and_mul": declared_silu_and_mul,
            "demo_vllm::all_reduce": declared_all_reduce}


# ---------------------------------------------------------------- the layer

class DecoderLayer(nn.Module):
    """One rank's share of the layer over ``tp`` ranks (``tp = 1``: the whole layer) at ``size`` (``SMALL``)."""

    def __init__(self, tp: int = 1, bug: str | None = None, size: dict | None = None) -> None:
        super().__init__()
        n = size or SMALL
        self.tp, self.bug, self.head_dim = tp, bug, n["head_dim"]
        self.q_heads, self.kv_heads = n["heads"] // tp, max(1, n["kv_heads"] // tp)   # tp > kv heads: copies
        self.input_norm = nn.Parameter(torch.ones(n["hidden"]))
        self.post_norm = nn.Parameter(torch.ones(n["hidden"]))
        self.qkv = nn.Parameter(torch.empty((self.q_heads + 2 * self.kv_heads) * n["head_dim"], n["hidden"]))
        self.o = nn.Parameter(torch.empty(n["hidden"], self.q_heads * n["head_dim"]))
        self.gate_up = nn.Parameter(torch.empty(2 * n["ffn"] // tp, n["hidden"]))
        self.down = nn.Parameter(torch.empty(n["hidden"], n["ffn"] // tp))
        self.group = dist.group.WORLD.group_name if tp > 1 else None

    def reduce(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.demo_vllm.all_reduce(x, self.group) if self.tp > 1 and self.bug != "no_all_reduce" else x

    def forward(self, x: torch.Tensor, residual: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        h, residual = torch.ops.demo_vllm.fused_add_rms_norm(x, residual, self.input_norm, EPS)
        d = self.head_dim
        q, k, v = F.linear(h, self.qkv).split([self.q_heads * d, self.kv_heads * d, self.kv_heads * d], dim=-1)
        q, k = torch.ops.demo_vllm.rotary_embedding(q, k, cos, sin)
        q = q.unflatten(-1, (self.q_heads, d)).transpose(0, 1)           # [heads, tokens, head_dim]
        k, v = (t.unflatten(-1, (self.kv_heads, d)).transpose(0, 1).repeat_interleave(self.q_heads // self.kv_heads, 0)
                for t in (k, v))
        ctx = (q @ k.transpose(1, 2) * d ** -0.5).softmax(-1) @ v
        h = self.reduce(F.linear(ctx.transpose(0, 1).flatten(1), self.o))
        h, residual = torch.ops.demo_vllm.fused_add_rms_norm(h, residual, self.post_norm, EPS)
        out = self.reduce(F.linear(torch.ops.demo_vllm.silu_and_mul(F.linear(h, self.gate_up)), self.down))
        return out, residual


def merged(name: str, parts: list[tuple[int, list[int]]], dim: int = 0) -> str:
    """The full merged weight from the ranks': each part (rows per rank, the ranks holding its pieces in
    order) concatenated over those ranks."""
    pieces, lo = [], 0
    for n, ranks in parts:
        pieces += [f"slice({name}@r{r}, dim={dim}, start={lo}, end={lo + n})" for r in ranks]
        lo += n
    return f"concat({', '.join(pieces)}, dim={dim})"


BUGS = {"no_all_reduce": "the row-parallel outputs are not all-reduced"}


def make_case(tp: int = 2, bug: str | None = None, size: dict | None = None) -> CaptureCase:
    """The layer on ``tp`` ranks (1, 2, 4 or 8; beyond the key/value heads each is held by several ranks, and
    the merged weight has one equation per copy) against one device; ``bug``: one of ``BUGS``; ``size``: ``SMALL``
    (default) or ``FULL`` (too large to decide element by element: ``pvcert verify`` reduces it, docs/stages.md)."""
    n = size or SMALL
    heads, kv_heads, hd, ffn = n["heads"], n["kv_heads"], n["head_dim"], n["ffn"]
    if heads % tp or tp % kv_heads and kv_heads % tp:
        raise ValueError(f"tp={tp} must divide the {heads} query heads and divide or be a multiple of the {kv_heads} "
                         "key/value heads")
    rep = lambda t: [f"{t}@r{r}" for r in range(tp)]   # noqa: E731
    q, kv, copies = heads // tp * hd, max(1, kv_heads // tp) * hd, max(1, tp // kv_heads)
    ranks, kv_ranks = list(range(tp)), [list(range(j, tp, copies)) for j in range(copies)]   # one copy of each
    act, table = (n["tokens"], n["hidden"]), (n["tokens"], hd // 2)
    rel = {"x": rep("x"), "residual": rep("residual"), "cos": rep("cos"), "sin": rep("sin"),
           "input_norm": rep("input_norm"), "post_norm": rep("post_norm"),
           "qkv": [merged("qkv", [(q, ranks), (kv, held), (kv, held)]) for held in kv_ranks],
           "gate_up": [merged("gate_up", [(ffn // tp, ranks)] * 2)],
           "o": [f"concat({', '.join(f'o@r{r}' for r in range(tp))}, dim=1)"],
           "down": [f"concat({', '.join(f'down@r{r}' for r in range(tp))}, dim=1)"]}
    tag = "" if n == SMALL else "_full" if n == FULL else "_" + "_".join(f"{k}{v}" for k, v in n.items())
    return CaptureCase(f"vllm_layer_tp{tp}{tag}", spec=lambda: DecoderLayer(size=n),
                       impl=lambda r, w: DecoderLayer(w, bug, n),
                       world_size=tp, inputs={"x": act, "residual": act, "cos": table, "sin": table},
                       input_relation=rel, expect={"out": rep("out"), "residual_out": rep("residual_out")},
                       output_names=["out", "residual_out"], declared=DECLARED, spec_distributed=True)
