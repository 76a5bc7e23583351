"""Export a tensor-parallel MLP per rank with torch.export.save, as one would on a cluster.

Writes, next to this file: ``spec.pt2`` (the one-device MLP), ``r0.pt2`` ``r1.pt2`` (the
Megatron-style TP=2 MLP, one program per rank), ``r0_missing_allreduce.pt2``
``r1_missing_allreduce.pt2`` (the same without the all_reduce: a bug), the readable forms
``spec.txt`` ``r0.txt`` ``r1.txt`` (``print_readable``), and prints each program's collective
group names (they go into ``relation.json``'s ``groups``).
Here a fake process group stands in for the cluster; on a cluster, run the rank's part in
each rank's process. Then::

    pvcert verify --spec spec.pt2 --impl r0.pt2 r1.pt2 --relation relation.json
    pvcert verify --spec spec.txt --impl r0.txt r1.txt --relation relation_readable.json
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F
from torch import nn
from torch.testing._internal.distributed.fake_pg import FakeStore

D, FF, T, WORLD = 4, 8, 3, 2
HERE = os.path.dirname(os.path.abspath(__file__))


class MLP(nn.Module):
    def __init__(self, d: int, f: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, f), nn.Linear(f, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class TPMLP(nn.Module):
    """fc1 column-parallel, fc2 row-parallel: partial sums all-reduced, then the bias."""

    def __init__(self, d: int, f: int, world: int, all_reduce: bool = True) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d, f // world)
        self.fc2 = nn.Linear(f // world, d, bias=False)
        self.bias = nn.Parameter(torch.zeros(d))
        self.all_reduce = all_reduce

    def forward(self, x):
        y = self.fc2(F.gelu(self.fc1(x)))
        if self.all_reduce:
            y = funcol.all_reduce(y, "sum", dist.group.WORLD)
        return y + self.bias


def save(module: nn.Module, name: str) -> None:
    ep = torch.export.export(module, (torch.randn(T, D),))
    torch.export.save(ep, os.path.join(HERE, name))
    if "missing" not in name:   # the readable form too, where that is all one keeps (relation_readable.json)
        with open(os.path.join(HERE, name.replace(".pt2", ".txt")), "w") as f:
            f.write(ep.graph_module.print_readable(print_output=False))
    groups = sorted({n.args[-1] for n in ep.graph.nodes if str(n.target).startswith("_c10d_functional.all_reduce")})
    print(f"{name}: collective groups {groups}")


def main() -> None:
    save(MLP(D, FF), "spec.pt2")
    for rank in range(WORLD):
        dist.init_process_group("fake", rank=rank, world_size=WORLD, store=FakeStore())
        save(TPMLP(D, FF, WORLD), f"r{rank}.pt2")
        save(TPMLP(D, FF, WORLD, all_reduce=False), f"r{rank}_missing_allreduce.pt2")
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
