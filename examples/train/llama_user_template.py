"""A Llama-style decoder layer written the usual DTensor way, trained at the Llama3-70B shape (issue 16).

No pvcert code inside the model: ``DecoderLayer`` is RMSNorm, attention with rotary embeddings
(the tables ``cos``/``sin`` passed in, as transformers passes ``position_embeddings``) and a SwiGLU
MLP; ``setup(tp)`` is the launcher's code, ``parallelize_module`` over a 1-D ``tp`` mesh with
``ColwiseParallel`` q/k/v/gate/up and ``RowwiseParallel`` o/down (heads split over the ranks: the
attention reshapes with ``-1`` heads). The loss is ``F.mse_loss(h, y, reduction="sum")`` and the
optimizer ``torch.optim.SGD(lr=0.1)``.

``make_template()`` states the plan: 80 layers, dp16 tp8 pp4, 32 micro-batches (512 ranks), GPipe.
The four blocks (the layer's forward, its backward by autograd, the loss, the optimizer on a shard)
are captured from this code at the real TP degree, the lineage derived from the DTensor placements
(``verifier.train.user_template``); the schedule is checked rank by rank (docs/templates.md)::

    pvcert verify examples/train/llama_user_template.py --emit-cert cert.json && pvcert replay cert.json

The 405B shape: ``make_template(layers=126, dp=64, tp=8, pp=16, micro_batches=16)``; ``BUGS`` lists
the bug that ``make_template(bug=...)`` plants in the layer.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

from verifier.train.user_template import UserBlocks, user_template

HIDDEN, HEADS, FFN, SEQ, BATCH = 16, 8, 16, 2, 1
HEAD_DIM = HIDDEN // HEADS


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of ``x [b, s, heads, head_dim]`` with tables ``[s, head_dim]``."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


def qk_norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMS normalization over the whole q or k projection (the planted bug: under TP a rank
    normalizes over its own heads' features only)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


class Attention(nn.Module):
    def __init__(self, bug: str | None = None) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(4))
        self.bug = bug

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        if self.bug == "qk_norm_local":
            q, k = qk_norm(q), qk_norm(k)
        q, k, v = (t.view(b, s, -1, HEAD_DIM) for t in (q, k, v))   # this rank's heads
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        scores = torch.einsum("bshd,bthd->bhst", q, k) / math.sqrt(HEAD_DIM)
        ctx = torch.einsum("bhst,bthd->bshd", scores.softmax(dim=-1), v)
        return self.o(ctx.reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate, self.up = nn.Linear(HIDDEN, FFN, bias=False), nn.Linear(HIDDEN, FFN, bias=False)
        self.down = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class DecoderLayer(nn.Module):
    def __init__(self, bug: str | None = None) -> None:
        super().__init__()
        self.norm1, self.attn, self.norm2, self.mlp = RMSNorm(HIDDEN), Attention(bug), RMSNorm(HIDDEN), MLP()

    def forward(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        h = h + self.attn(self.norm1(h), cos, sin)
        return h + self.mlp(self.norm2(h))


PLAN = {"attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
        "attn.o": RowwiseParallel(), "mlp.gate": ColwiseParallel(), "mlp.up": ColwiseParallel(),
        "mlp.down": RowwiseParallel()}


def setup(tp: int, bug: str | None = None) -> nn.Module:
    """What the launcher does on each rank of a TP group: the layer, split over ``tp`` ranks."""
    layer = DecoderLayer(bug)
    if tp > 1:
        layer = parallelize_module(layer, init_device_mesh("cpu", (tp,), mesh_dim_names=("tp",)), PLAN)
    return layer


def loss(h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(h, y, reduction="sum")


def sgd(params) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=0.1)


BUGS = {"qk_norm_local": "q and k RMS-normalized over the projection: under TP each rank over its own heads only"}


def make_template(layers: int = 80, dp: int = 16, tp: int = 8, pp: int = 4, micro_batches: int = 32,
                  bug: str | None = None):
    """The plan; ``bug``: one of ``BUGS`` planted in the layer (tests/train/test_user_template.py)."""
    return user_template(f"llama_user_{layers}l_dp{dp}_tp{tp}_pp{pp}_mb{micro_batches}",
                         UserBlocks(lambda t: setup(t, bug), loss, sgd, rope_dim=HEAD_DIM), layers=layers, dp=dp,
                         tp=tp, pp=pp, micro_batches=micro_batches, seq=SEQ, hidden=HIDDEN, batch=BATCH)
