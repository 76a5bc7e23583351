"""Regenerate the bundled IR examples: ``python examples/make_examples.py``.

tp_mlp: a Megatron-style tensor-parallel MLP on 2 ranks (column-parallel linear,
GELU, row-parallel linear, all_reduce) against its single-device model.
tp_mlp_missing_allreduce: the same with the all_reduce dropped (a real bug class).
"""

from __future__ import annotations

import json
import os

from verifier.ir import GraphBuilder, save_graph

B, D, F, W = 2, 4, 8, 2  # tokens, model dim, hidden dim, ranks (small: checked exactly)
HERE = os.path.dirname(os.path.abspath(__file__))


def spec() -> dict:
    g = GraphBuilder("mlp", 1)
    g.input("X", [B, D], "activation")
    g.input("W1", [F, D], "parameter")
    g.input("W2", [D, F], "parameter")
    g.node("aten.linear.default", ["X", "W1"], "H")
    g.node("aten.gelu.default", ["H"], "A")
    g.node("aten.linear.default", ["A", "W2"], "Y")
    g.output("Y")
    return g.build()


def impl(all_reduce: bool = True) -> dict:
    g = GraphBuilder("tp_mlp" if all_reduce else "tp_mlp_missing_allreduce", W)
    partial = []
    for r in range(W):
        x, w1, w2 = (g.input(f"{n}@r{r}", s, "activation" if n == "x" else "parameter", rank=r)
                     for n, s in (("x", [B, D]), ("w1", [F // W, D]), ("w2", [D, F // W])))
        g.node("aten.linear.default", [x, w1], f"h@r{r}", rank=r)       # column-parallel
        g.node("aten.gelu.default", [f"h@r{r}"], f"a@r{r}", rank=r)
        g.node("aten.linear.default", [f"a@r{r}", w2], f"p@r{r}", rank=r)  # row-parallel
        partial.append(f"p@r{r}")
    if all_reduce:
        g.node("_c10d_functional.all_reduce.default", partial, [f"y@r{r}" for r in range(W)],
               group=list(range(W)), reduce_op="sum", name="all_reduce")
        g.output(*[f"y@r{r}" for r in range(W)])
    else:
        g.output(*partial)
    return g.build()


def case(impl_file: str, out: str) -> dict:
    ranks = range(W)
    return {
        "format": "pvcert-case", "version": 1, "name": "tp_mlp" if out == "y" else "tp_mlp_missing_allreduce",
        "spec": "spec.json", "impl": impl_file,
        "input_relation": {
            "X": [f"x@r{r}" for r in ranks],                                     # replicated
            "W1": [f"concat({', '.join(f'w1@r{r}' for r in ranks)}, dim=0)"],    # rows sharded
            "W2": [f"concat({', '.join(f'w2@r{r}' for r in ranks)}, dim=1)"],    # columns sharded
        },
        "expect": {"Y": [f"{out}@r{r}" for r in ranks]},                         # every rank holds Y
    }


def main() -> None:
    d = os.path.join(HERE, "tp_mlp")
    os.makedirs(d, exist_ok=True)
    save_graph(spec(), os.path.join(d, "spec.json"))
    save_graph(impl(True), os.path.join(d, "impl.json"))
    save_graph(impl(False), os.path.join(d, "impl_missing_allreduce.json"))
    for name, impl_file, out in (("case.json", "impl.json", "y"),
                                 ("case_missing_allreduce.json", "impl_missing_allreduce.json", "p")):
        with open(os.path.join(d, name), "w") as f:
            json.dump(case(impl_file, out), f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
