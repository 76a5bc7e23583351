"""Functional Llama-style and DeepSeek-style MoE layers for training-step capture.

Layers are plain functions of a parameter dict (local shards) and an activation
``[b, S, D]`` (batch first: a rank's tokens are a contiguous block of the global ones), so one definition serves the
sequential step (``tp = 1``) and every rank of a parallel plan. ``Par`` carries the
rank's groups: tensor parallelism (column/row parallel with Megatron-style regions)
and expert parallelism (all_to_all over the EP group).

Parameter tables (``llama_params`` / ``moe_params``) give each parameter's full shape
and how it is split: ``("tp", d)`` sharded on dim ``d`` over TP, ``("ep", 0)`` experts
over EP, ``None`` replicated.

Sequence parallelism (``Par.sp``, Megatron style, over the TP group): in the norm/residual
regions a rank holds ``S / tp`` consecutive tokens (dim 1 of ``[b, S, D]``); the
column-parallel projections are entered with an all_gather along the sequence (backward:
reduce_scatter) and the row-parallel ones left with a reduce_scatter along the sequence
(backward: all_gather). RMSNorm weights see only the rank's tokens, so their gradients are
partial over TP (the plan all_reduces them). RoPE is applied where the sequence is full
(inside attention, after the all_gather) unless ``Par.rope == "sharded"``: then q, k, v are
projected from the rank's sequence shard with the all-gathered column weights (backward:
reduce_scatter of the weight gradient), rotated with the rank's rows of the tables
(``rope_offset = t * S/tp``), and moved to (full sequence, local heads) with an all_to_all
over TP (DeepSpeed-Ulysses inside the TP group).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .mappings import all_to_all_ep, copy_to_tp, gather_from_sp, reduce_from_tp, reduce_scatter_to_sp
from .routing import route


@dataclass(frozen=True)
class ModelConfig:
    """Shapes of the model: ``kind`` is ``llama``, ``moe`` (attention + routed/shared experts)
    or ``bn`` (MLP blocks with batch norm, no attention)."""

    kind: str = "llama"
    layers: int = 2
    hidden: int = 4
    heads: int = 2
    ffn: int = 4
    seq: int = 2
    experts: int = 2
    capacity: int = 1
    expert_ffn: int = 2
    topk: int = 0                 # MoE: 0 = routing declared as an input; k = top-k computed in the graph

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
    sp: bool = False              # sequence parallel over the TP group (activations [b, S/tp, D])
    rope: str = "gathered"        # under SP: "gathered" (full sequence, Megatron) | "sharded" (Ulysses)
    rope_offset: int = 0          # first table row of this rank's sequence shard (sharded RoPE)
    route_nodes: int = 1          # computed routing: experts in this many blocks (nodes) ...
    route_limit: int = 1          # ... of which a token may use this many (node-limited routing)


Split = tuple[str, int] | None


def llama_params(c: ModelConfig, layer: int) -> dict[str, tuple[tuple[int, ...], Split]]:
    d, f, p = c.hidden, c.ffn, f"layers.{layer}."
    if c.kind == "bn":
        return {p + "up": ((f, d), ("tp", 0)), p + "bn_w": ((f,), ("tp", 0)), p + "bn_b": ((f,), ("tp", 0)),
                p + "down": ((d, f), ("tp", 1))}
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


def rope(x, cos, sin):
    """Rotate pairs (i, i + hd/2) of every head of ``x [S, h, hd]`` by the position's angle."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos.unsqueeze(1) + rotated * sin.unsqueeze(1)


def rmsnorm(x, w, eps: float = 1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def gather_seq(x, group):
    """All_gather along the sequence (dim 1 of ``[b, s, D]``); backward: reduce_scatter."""
    return gather_from_sp(x.transpose(0, 1), group).transpose(0, 1)


def reduce_scatter_seq(x, group):
    """Reduce_scatter along the sequence (dim 1); backward: all_gather."""
    return reduce_scatter_to_sp(x.transpose(0, 1), group).transpose(0, 1)


def _enter(x, par: Par):
    """Into a column-parallel layer: identity forward, all_reduce of the gradient (SP:
    all_gather along the sequence, reduce_scatter of the gradient)."""
    if par.tp == 1:
        return x
    return gather_seq(x, par.tp_group) if par.sp else copy_to_tp(x, par.tp_group)


def _leave(x, par: Par):
    """Out of a row-parallel layer: all_reduce of the partial sums (SP: reduce_scatter
    along the sequence, all_gather of the gradient)."""
    if par.tp == 1:
        return x
    return reduce_scatter_seq(x, par.tp_group) if par.sp else reduce_from_tp(x, par.tp_group)


def _ulysses_qkv(p: dict, pre: str, hn, cos, sin, c: ModelConfig, par: Par):
    """Sharded-RoPE attention inputs: ``hn [b, S/tp, D]`` (this rank's tokens) -> q, k, v
    ``[b, S, heads/tp, hd]``. The column weights are all_gathered over TP (backward:
    reduce_scatter of the partial weight gradient), q and k are rotated with rows
    ``rope_offset .. rope_offset + S/tp`` of the tables, then an all_to_all over TP trades
    head chunks for sequence chunks."""
    b, ls, tp = hn.shape[0], hn.shape[1], par.tp
    hl, hd = c.heads // tp, c.head_dim
    cs, sn = cos[par.rope_offset:par.rope_offset + ls], sin[par.rope_offset:par.rope_offset + ls]
    out = []
    for n in ("q", "k", "v"):
        y = F.linear(hn, gather_from_sp(p[pre + n], par.tp_group)).view(b, ls, c.heads, hd)
        if n != "v":
            y = rope(y, cs, sn)
        y = y.view(b, ls, tp, hl, hd).permute(2, 0, 1, 3, 4).contiguous()      # [tp (heads), b, ls, hl, hd]
        y = all_to_all_ep(y, par.tp_group)                                     # [tp (tokens), b, ls, hl, hd]
        out.append(y.permute(1, 0, 2, 3, 4).reshape(b, tp * ls, hl, hd))
    return out


def attention(p: dict, pre: str, x, cos, sin, c: ModelConfig, par: Par):
    """``x + o(attn(rope(q), rope(k), v))`` with heads split over TP; ``x [b, S, D]``."""
    hl, hd = c.heads // par.tp, c.head_dim
    if par.sp and par.tp > 1 and par.rope == "sharded":
        q, k, v = _ulysses_qkv(p, pre, rmsnorm(x, p[pre + "n1"]), cos, sin, c, par)
        b, s = q.shape[0], q.shape[1]
    else:
        h = _enter(rmsnorm(x, p[pre + "n1"]), par)
        b, s = h.shape[0], h.shape[1]
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


def moe_ffn(p: dict, pre: str, x, dispatch, par: Par, groups: int = 1, topk: int = 0, capacity: int = 1):
    """Shared expert (TP) + routed experts (EP) with router softmax gates.

    Routing is declared (``dispatch [G, T, E, C]``: token ``t`` of group ``g`` to slot ``c``
    of expert ``e``; the top-k choice) or, with ``dispatch=None``, computed from the router's
    probabilities (verifier/train/routing.py; node-limited by ``par.route_nodes/limit``);
    the dispatch is combined with the router's softmax probabilities.
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
    if dispatch is None:
        dispatch = route(probs, topk, capacity, par.route_nodes, par.route_limit)
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


def bn_mlp(p: dict, pre: str, x, par: Par):
    """``x + down(silu(batch_norm(up(x))))``: training-mode batch norm over the channels of
    ``up`` (statistics over batch and sequence), column/row parallel over TP (per-channel
    statistics stay local to a TP rank); under DP a rank normalizes with its own samples."""
    h = F.linear(_enter(x, par), p[pre + "up"]).transpose(1, 2)            # [b, f, S]
    h = F.batch_norm(h, None, None, p[pre + "bn_w"], p[pre + "bn_b"], training=True, eps=1e-5)
    return x + _leave(F.linear(F.silu(h.transpose(1, 2)), p[pre + "down"]), par)


def layer(p: dict, i: int, x, cos, sin, c: ModelConfig, par: Par, dispatch=None, groups: int = 1):
    pre = f"layers.{i}."
    if c.kind == "bn":
        return bn_mlp(p, pre, x, par)
    x = attention(p, pre, x, cos, sin, c, par)
    if c.kind == "llama":
        return llama_mlp(p, pre, x, par)
    return moe_ffn(p, pre, x, dispatch, par, groups, c.topk, c.capacity)
