"""chain.reachable_ranges enumerates each integer tensor over the inputs it depends on alone: the same exact
hulls as over every joint assignment of all integer inputs (the reference below, the checker's earlier code,
which gave none at all past 4,096 joint assignments); the limit is now per tensor's own inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from certificates.chain import reachable_ranges
from certificates.errors import Unsupported
from certificates.graph import evaluate
from certificates.limits import Limits
from certificates.obligations import subgraph
from verifier.ir import GraphBuilder, parsed


def joint(g, limits: Limits) -> dict:
    ints = [t for t in g.inputs if g.tensors[t].is_int]
    doms = [(range(*(g.tensors[t].range or (0, 2))), math.prod(g.tensors[t].shape)) for t in ints]
    if not ints or math.prod(len(d) ** n for d, n in doms) > limits.max_assignments:
        return {}
    known, nodes = set(ints), []
    for n in g.nodes:
        if all(t is None or t in known for t in n.inputs) and all(g.tensors[t].is_int for t in n.outputs):
            nodes.append(n)
            known.update(n.outputs)
    sub, hull = subgraph(g, "integer nodes", nodes, [], ints), {}
    for combo in itertools.product(*(itertools.product(d, repeat=n) for d, n in doms)):
        env = {t: np.array(v, dtype=bool if g.tensors[t].dtype == "bool" else np.int64).reshape(g.tensors[t].shape)
               for t, v in zip(ints, combo)}
        try:
            vals = evaluate(sub, env, False, limits)
        except Unsupported:
            return {}
        for t, v in vals.items():
            if v.size:
                lo, hi = hull.get(t, (int(v.min()), int(v.max()) + 1))
                hull[t] = (min(lo, int(v.min())), max(hi, int(v.max()) + 1))
    return hull


def _graph():
    """Two integer inputs, a mask, constants and tensors that depend on one, both or neither."""
    g = GraphBuilder("ints")
    a = g.input("a", [2], "index", dtype="int64", range=(0, 5))
    b = g.input("b", [2], "index", dtype="int64", range=(-2, 3))
    m = g.input("m", [2], "mask", dtype="bool")
    r = g.node("aten.arange.start", [], "r", attrs={"start": 0, "end": 2, "dtype": "int64"}, out_dtype="int64")
    s = g.node("aten.add.Tensor", [a, r], "s")
    t = g.node("aten.mul.Tensor", [s, b], "t")
    u = g.node("aten.where.self", [m, t, r], "u", out_dtype="int64")
    lt = g.node("aten.lt.Tensor", [a, b], "lt", out_dtype="bool")
    g.output(u, lt)
    return parsed(g.build(), "ints", Limits())


@pytest.mark.parametrize("case", ["synthetic", "megatron_gpt"])
def test_the_same_hulls_as_the_joint_enumeration(case):
    if case == "synthetic":
        g = _graph()
    else:
        pytest.importorskip("megatron.core")
        from examples.cases.megatron_gpt import make_case
        from verifier.capture.case import capture_case

        g = parsed(capture_case(make_case(2)).spec, "spec", Limits())   # 1,024 joint assignments
    got, want = reachable_ranges(g, Limits()), joint(g, Limits())
    assert want and got == want


def test_no_hull_past_the_limit_of_its_own_inputs():
    g = _graph()   # a, b: 5^2 assignments each; t and lt depend on both (625), u on a, b and m (2,500)
    got = reachable_ranges(g, Limits(max_assignments=625))
    want = joint(g, Limits())
    assert {t: got[t] for t in ("a", "b", "r", "s", "t", "lt")} == {t: want[t] for t in ("a", "b", "r", "s", "t", "lt")}
    assert "u" not in got and "m" in got
    assert reachable_ranges(g, Limits(max_assignments=1)) == {"r": want["r"]}   # the constant alone
