"""Pipeline parallelism (forward): stage r holds layer r, receives its input from stage
r-1 and sends its output to stage r+1 with ``torch.distributed.send``/``recv``."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn


class Layers(nn.Module):
    """The sequential model: ``stages.i`` = Linear + ReLU, for i < n."""

    def __init__(self, n: int, d: int) -> None:
        super().__init__()
        self.stages = nn.ModuleList(nn.Linear(d, d) for _ in range(n))

    def forward(self, x):
        for layer in self.stages:
            x = torch.relu(layer(x))
        return x


class Stage(nn.Module):
    def __init__(self, rank: int, world: int, d: int) -> None:
        super().__init__()
        self.rank, self.world = rank, world
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        if self.rank > 0:
            x = torch.empty_like(x)
            dist.recv(x, src=self.rank - 1)
        y = torch.relu(self.fc(x))
        if self.rank < self.world - 1:
            dist.send(y, dst=self.rank + 1)
        return y
