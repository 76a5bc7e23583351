"""Functional Llama-style and DeepSeek-style MoE layers for training-step capture.

Layers are plain functions of a parameter dict (local shards) and an activation
``[b, S, D]`` (batch first: a rank's tokens are a contiguous block of the global ones), so one definition serves the
sequential step (``tp = 1``) and every rank of a parallel plan. ``Par`` carries the
rank's groups: tensor parallelism (column/row parallel with Megatron-style regions)
and expert parallelism (all_to_all over the EP group).

Parameter tables (``llama_params`` / ``moe_params``) give each parameter's full shape
and how it is split: ``("tp", d)`` sharded on dim ``d`` over TP, ``("ep", 0)`` experts
over EP, ``None`` replicated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .llama import rope
from .mappings import all_to_all_ep, copy_to_tp, reduce_from_tp


@dataclass(frozen=True)
class ModelConfig:
    """Shapes of the model: ``kind`` is ``llama`` or ``moe`` (attention + routed/shared experts)."""

    kind: str = "llama"
    layers: int = 2
    hidden: int = 4
    heads: int = 2
    ffn: int = 4
    seq: int = 2
    experts: int = 2
    capacity: int = 1
    expert_ffn: int = 2

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


@dataclass
class Par:
    """A rank's view of the parallel groups (``None`` / size 1: not split)."""

    tp: int = 1
    tp_group: Any = None
    ep: int = 1
    ep_group: Any = None


Split = tuple[str, int] | None


def llama_params(c: ModelConfig, layer: int) -> dict[str, tuple[tuple[int, ...], Split]]:
    d, f, p = c.hidden, c.ffn, f"layers.{layer}."
    out: dict[str, tuple[tuple[int, ...], Split]] = {p + "n1": ((d,), None)}
    out.update({p + n: ((d, d), ("tp", 0)) for n in ("q", "k", "v")})
    out[p + "o"] = ((d, d), ("tp", 1))
    out[p + "n2"] = ((d,), None)
    if c.kind == "llama":
        out.update({p + "gate": ((f, d), ("tp", 0)), p + "up": ((f, d), ("tp", 0)), p + "down": ((d, f), ("tp", 1))})
    else:
        out.update(moe_params(c, layer))
    return out


def moe_params(c: ModelConfig, layer: int) -> dict[str, tuple[tuple[int, ...], Split]]:
    d, e, h, p = c.hidden, c.experts, c.expert_ffn, f"layers.{layer}."
    return {p + "router": ((e, d), None),
            p + "shared_gate": ((c.ffn, d), ("tp", 0)), p + "shared_up": ((c.ffn, d), ("tp", 0)),
            p + "shared_down": ((d, c.ffn), ("tp", 1)),
            p + "w_gate": ((e, d, h), ("ep", 0)), p + "w_up": ((e, d, h), ("ep", 0)),
            p + "w_down": ((e, h, d), ("ep", 0))}


def local_shape(shape: tuple[int, ...], split: Split, par: Par) -> tuple[int, ...]:
    if split is None:
        return shape
    n = par.tp if split[0] == "tp" else par.ep
    s = list(shape)
    if s[split[1]] % n:
        raise ValueError(f"dim {split[1]} of {shape} is not divisible by {split[0]}={n}")
    s[split[1]] //= n
    return tuple(s)


def rmsnorm(x, w, eps: float = 1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def _enter(x, par: Par):
    """Into a column-parallel layer: identity forward, all_reduce of the gradient."""
    return x if par.tp == 1 else copy_to_tp(x, par.tp_group)


def _leave(x, par: Par):
    """Out of a row-parallel layer: all_reduce of the partial sums."""
    return x if par.tp == 1 else reduce_from_tp(x, par.tp_group)


def attention(p: dict, pre: str, x, cos, sin, c: ModelConfig, par: Par):
    """``x + o(attn(rope(q), rope(k), v))`` with heads split over TP; ``x [b, S, D]``."""
    h = _enter(rmsnorm(x, p[pre + "n1"]), par)
    b, s = h.shape[0], h.shape[1]
    hl, hd = c.heads // par.tp, c.head_dim
    q, k, v = (F.linear(h, p[pre + n]).view(b, s, hl, hd) for n in ("q", "k", "v"))
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    scores = torch.einsum("bshd,bthd->bhst", q, k) * (1.0 / math.sqrt(hd))
    ctx = torch.einsum("bhst,bthd->bshd", torch.softmax(scores, dim=-1), v).reshape(b, s, hl * hd)
    return x + _leave(F.linear(ctx, p[pre + "o"]), par)


def swiglu(h, gate, up, down):
    return F.linear(F.silu(F.linear(h, gate)) * F.linear(h, up), down)


def llama_mlp(p: dict, pre: str, x, par: Par):
    h = _enter(rmsnorm(x, p[pre + "n2"]), par)
    return x + _leave(swiglu(h, p[pre + "gate"], p[pre + "up"], p[pre + "down"]), par)


def moe_ffn(p: dict, pre: str, x, dispatch, par: Par, groups: int = 1):
    """Shared expert (TP) + routed experts (EP) with router softmax gates.

    Routing is declared: ``dispatch [G, T, E, C]`` (token ``t`` of group ``g`` to slot ``c``
    of expert ``e``; the top-k choice), combined with the router's softmax probabilities.
    ``groups`` is the number of token groups held here (the sequential step holds all of
    them; a rank holds its own, ``G = 1``). Under EP the slots of each expert travel to its
    owner and back with all_to_all.
    """
    b, s, d = x.shape
    h = rmsnorm(x, p[pre + "n2"])
    shared = _leave(swiglu(_enter(h, par), p[pre + "shared_gate"], p[pre + "shared_up"], p[pre + "shared_down"]),
                    par)
    tok = h.reshape(groups, (b // groups) * s, d)
    probs = torch.softmax(torch.einsum("gtd,ed->gte", tok, p[pre + "router"]), dim=-1)
    combine = dispatch * probs.unsqueeze(-1)
    xe = torch.einsum("gtec,gtd->gecd", dispatch, tok)                   # [G, E, C, D]
    wg, wu, wd = p[pre + "w_gate"], p[pre + "w_up"], p[pre + "w_down"]
    el = wg.shape[0]
    if par.ep > 1:
        g, e, cap = xe.shape[0], xe.shape[1], xe.shape[2]
        xe = all_to_all_ep(xe.reshape(e, cap, d), par.ep_group).reshape(par.ep, el, cap, d)
    hid = F.silu(torch.einsum("gecd,edh->gech", xe, wg)) * torch.einsum("gecd,edh->gech", xe, wu)
    ye = torch.einsum("gech,ehd->gecd", hid, wd)
    if par.ep > 1:
        ye = all_to_all_ep(ye.reshape(par.ep * el, cap, d), par.ep_group).reshape(g, e, cap, d)
    routed = torch.einsum("gtec,gecd->gtd", combine, ye)
    routed = routed.reshape(b, s, d)
    return x + shared + routed


def layer(p: dict, i: int, x, cos, sin, c: ModelConfig, par: Par, dispatch=None, groups: int = 1):
    pre = f"layers.{i}."
    x = attention(p, pre, x, cos, sin, c, par)
    if c.kind == "llama":
        return llama_mlp(p, pre, x, par)
    return moe_ffn(p, pre, x, dispatch, par, groups)
