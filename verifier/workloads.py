"""Parametric IR workloads, shared by the bundled examples and the benchmarks."""

from __future__ import annotations

from .case import Case
from .ir import GraphBuilder


def tp_mlp(world: int = 2, tokens: int = 2, dim: int = 4, hidden: int = 8, all_reduce: bool = True) -> Case:
    """Megatron-style tensor-parallel MLP against its single-device model.

    Rank r holds rows r of W1 (column-parallel linear), GELU, columns r of W2
    (row-parallel linear), then an all_reduce sums the partial outputs. Without the
    all_reduce (a real bug class) each rank holds only its partial sum.
    """
    if hidden % world:
        raise ValueError(f"hidden size {hidden} does not divide over {world} ranks")
    s = GraphBuilder("mlp", 1)
    s.input("X", [tokens, dim], "activation")
    s.input("W1", [hidden, dim], "parameter")
    s.input("W2", [dim, hidden], "parameter")
    s.node("aten.linear.default", ["X", "W1"], "H")
    s.node("aten.gelu.default", ["H"], "A")
    s.node("aten.linear.default", ["A", "W2"], "Y")
    s.output("Y")
    name = "tp_mlp" if all_reduce else "tp_mlp_missing_allreduce"
    g = GraphBuilder(name, world)
    ranks = range(world)
    for r in ranks:
        x = g.input(f"x@r{r}", [tokens, dim], "activation", rank=r)
        w1 = g.input(f"w1@r{r}", [hidden // world, dim], "parameter", rank=r)
        w2 = g.input(f"w2@r{r}", [dim, hidden // world], "parameter", rank=r)
        g.node("aten.linear.default", [x, w1], f"h@r{r}", rank=r)
        g.node("aten.gelu.default", [f"h@r{r}"], f"a@r{r}", rank=r)
        g.node("aten.linear.default", [f"a@r{r}", w2], f"p@r{r}", rank=r)
    out = "y" if all_reduce else "p"
    if all_reduce:
        g.node("_c10d_functional.all_reduce.default", [f"p@r{r}" for r in ranks],
               [f"y@r{r}" for r in ranks], group=list(ranks), reduce_op="sum", name="all_reduce")
    g.output(*[f"{out}@r{r}" for r in ranks])

    def shards(t: str) -> str:
        return ", ".join(f"{t}@r{r}" for r in ranks)

    return Case(name, s.build(), g.build(),
                {"X": [f"x@r{r}" for r in ranks],              # replicated
                 "W1": [f"concat({shards('w1')}, dim=0)"],     # rows sharded
                 "W2": [f"concat({shards('w2')}, dim=1)"]},    # columns sharded
                {"Y": [f"{out}@r{r}" for r in ranks]})         # every rank holds Y
