"""Expert-parallel mixture of experts with all_to_all (GShard-style grouped dispatch).

Routing is given as dense dispatch weights (``dispatch[t, e, c]``: token ``t`` goes to
slot ``c`` of expert ``e`` with that weight), so every shape is static; the router's
top-k (data dependent) is outside the captured layer. Expert ``e`` computes
``gelu(x @ w1[e]) @ w2[e]``.

Sequential: all groups ``g`` (one per rank in the parallel version) and all experts.
Expert-parallel (world W, E/W experts per rank): rank r dispatches its tokens into
``[E, C, D]``, an all_to_all sends each expert's slots to the expert's owner, the local
experts run on ``[W, E/W, C, D]``, a second all_to_all returns the results, and the
rank combines them for its tokens. Backward: the all_to_alls' backward are all_to_alls.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from verifier.train.mappings import all_to_all_ep


class MoE(nn.Module):
    def __init__(self, experts: int, d: int, h: int) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(experts, d, h) * 0.1)
        self.w2 = nn.Parameter(torch.randn(experts, h, d) * 0.1)

    def forward(self, x, dispatch):
        # x [G, T, D], dispatch [G, T, E, C]
        xe = torch.einsum("gtec,gtd->gecd", dispatch, x)
        h = F.gelu(torch.einsum("gecd,edh->gech", xe, self.w1))
        y = torch.einsum("gech,ehd->gecd", h, self.w2)
        return torch.einsum("gtec,gecd->gtd", dispatch, y)


class EPMoE(nn.Module):
    def __init__(self, experts: int, d: int, h: int, world: int) -> None:
        super().__init__()
        self.world, self.local = world, experts // world
        self.w1 = nn.Parameter(torch.randn(self.local, d, h) * 0.1)
        self.w2 = nn.Parameter(torch.randn(self.local, h, d) * 0.1)

    def forward(self, x, dispatch):
        # x [T, D], dispatch [T, E, C] (this rank's tokens)
        e, c, d = dispatch.shape[1], dispatch.shape[2], x.shape[1]
        xe = torch.einsum("tec,td->ecd", dispatch, x)                   # [E, C, D]
        xe = all_to_all_ep(xe)                                          # [W * E/W, C, D], source-major
        xe = xe.reshape(self.world, self.local, c, d)
        h = F.gelu(torch.einsum("secd,edh->sech", xe, self.w1))
        y = torch.einsum("sech,ehd->secd", h, self.w2).reshape(e, c, d)
        y = all_to_all_ep(y)                                            # back to the token owners
        return torch.einsum("tec,ecd->td", dispatch, y)
