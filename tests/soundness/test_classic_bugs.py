"""The ten classic distributed bugs: never VERIFIED, never ACCEPTed; their correct controls verify.

Each bug is a hand-built pair (spec, impl) in the graph IR next to its correct control. Both
engines (whole-graph and per-operator) must decline the bug. Then the attacker's move: take the
certificate the engine wrote for the CONTROL and put the buggy impl into it (same tensor and node
names, fresh sha256, the bug's relations): ``replay`` must REJECT it. That makes each test fail if the checker's own
semantics ever stopped telling the two programs apart, not only if the engine did.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from verifier.ir import GraphBuilder

import forge
from forge import Pair

AR = "_c10d_functional.all_reduce.default"
AG = "_c10d_functional.all_gather_into_tensor.default"
A2A = "_c10d_functional.all_to_all_single.default"
P2P = "c10d.send_recv.default"


def _rowpar(w: int = 2, reduce_op: str = "sum", group=None, bias_everywhere: bool = False,
            skip_reduce: bool = False) -> Pair:
    """Row-parallel linear + bias (Megatron): X (4, 2w) @ W^T, W (3, 2w) split along its columns."""
    s = GraphBuilder("rowpar")
    s.input("X", [4, 2 * w], "activation")
    s.input("W", [3, 2 * w], "parameter")
    s.input("B", [3], "parameter")
    s.node("aten.linear.default", ["X", "W", "B"], "Y")
    s.output("Y")
    g = GraphBuilder("rowpar_tp", w)
    for r in range(w):
        g.input(f"x@r{r}", [4, 2], "activation", rank=r)
        g.input(f"w@r{r}", [3, 2], "parameter", rank=r)
        g.input(f"b@r{r}", [3], "parameter", rank=r)
        g.node("aten.linear.default", [f"x@r{r}", f"w@r{r}"], f"p@r{r}", rank=r, name=f"mm{r}")
        if bias_everywhere:
            g.node("aten.add.Tensor", [f"p@r{r}", f"b@r{r}"], f"q@r{r}", rank=r, name=f"bias{r}")
    src = "q" if bias_everywhere else "p"
    if skip_reduce:
        for r in range(w):
            g.node("aten.add.Tensor", [f"{src}@r{r}", f"b@r{r}"], f"y@r{r}", rank=r, name=f"out{r}")
    else:
        g.node(AR, [f"{src}@r{r}" for r in range(w)], [f"s@r{r}" for r in range(w)],
               group=group or list(range(w)), reduce_op=reduce_op, name="ar")
        for r in range(w):
            if bias_everywhere:
                g.node("aten.clone.default", [f"s@r{r}"], f"y@r{r}", rank=r, name=f"out{r}")
            else:
                g.node("aten.add.Tensor", [f"s@r{r}", f"b@r{r}"], f"y@r{r}", rank=r, name=f"out{r}")
    for r in range(w):
        g.output(f"y@r{r}")
    cols = ", ".join(f"x@r{r}" for r in range(w))
    wcols = ", ".join(f"w@r{r}" for r in range(w))
    rin = {"X": [f"concat({cols}, dim=1)"], "W": [f"concat({wcols}, dim=1)"],
           "B": [f"b@r{r}" for r in range(w)]}
    return s.build(), g.build(), rin, {"Y": [f"y@r{r}" for r in range(w)]}


def _wrong_group() -> Pair:
    """TP4 row-parallel whose all-reduce sums over ranks {0, 1} only (two TP groups where one is meant)."""
    s, _, rin, _ = _rowpar(4)
    g = _rowpar(4)[1]
    g["nodes"] = [n for n in g["nodes"] if n["name"] != "ar"]
    for grp in ([0, 1], [2, 3]):
        n = {"name": f"ar{grp[0]}", "target": AR, "inputs": [f"p@r{r}" for r in grp],
             "outputs": [f"s@r{r}" for r in grp], "attrs": {"reduce_op": "sum"}, "group": grp}
        g["nodes"].insert(4, n)
    return s, g, rin, {"Y": ["y@r0"]}


def _sp_gather(offset: int) -> Pair:
    """Sequence parallel: gather the shards, each rank keeps its own rows ``offset`` rows too far."""
    s = GraphBuilder("relu")
    s.input("X", [4, 3], "activation")
    s.node("aten.relu.default", ["X"], "Y")
    s.output("Y")
    g = GraphBuilder("sp", 2)
    for r in range(2):
        g.input(f"x@r{r}", [2, 3], "activation", rank=r)
    g.node(AG, ["x@r0", "x@r1"], ["f@r0", "f@r1"], group=[0, 1], name="ag")
    for r in range(2):
        lo = (2 * r + offset) % 4
        g.node("aten.slice.Tensor", [f"f@r{r}"], f"m@r{r}", rank=r, dim=0, start=lo, end=lo + 2, name=f"sl{r}")
        g.node("aten.relu.default", [f"m@r{r}"], f"y@r{r}", rank=r, name=f"act{r}")
        g.output(f"y@r{r}")
    return (s.build(), g.build(), {"X": ["concat(x@r0, x@r1, dim=0)"]},
            {"Y": ["concat(y@r0, y@r1, dim=0)"]})


def _off_by_one(bug: bool) -> Pair:
    """A replicated tensor, each rank takes its half by slicing: the bug starts rank 1 one row early."""
    s = GraphBuilder("neg")
    s.input("X", [4, 3], "activation")
    s.node("aten.neg.default", ["X"], "Y")
    s.output("Y")
    g = GraphBuilder("sliced", 2)
    for r in range(2):
        g.input(f"x@r{r}", [4, 3], "activation", rank=r)
        lo = 2 * r - (1 if bug and r == 1 else 0)
        g.node("aten.slice.Tensor", [f"x@r{r}"], f"m@r{r}", rank=r, dim=0, start=lo, end=lo + 2, name=f"sl{r}")
        g.node("aten.neg.default", [f"m@r{r}"], f"y@r{r}", rank=r, name=f"act{r}")
        g.output(f"y@r{r}")
    return s.build(), g.build(), {"X": ["x@r0", "x@r1"]}, {"Y": ["concat(y@r0, y@r1, dim=0)"]}


def _a2a(swap: bool) -> Pair:
    """Expert-parallel dispatch: all_to_all of row blocks, then the rows concatenated in rank order."""
    s = GraphBuilder("ident")
    s.input("X", [4, 3], "activation")
    s.node("aten.neg.default", ["X"], "Y")
    s.output("Y")
    g = GraphBuilder("a2a", 2)
    for r in range(2):
        g.input(f"x@r{r}", [2, 3], "activation", rank=r)
    g.node(A2A, ["x@r0", "x@r1"], ["t@r0", "t@r1"], group=[0, 1], name="a2a",
           output_split_sizes=[[1, 1], [1, 1]], input_split_sizes=[[1, 1], [1, 1]])
    for r in range(2):
        g.node("aten.neg.default", [f"t@r{r}"], f"y@r{r}", rank=r, name=f"act{r}")
        g.output(f"y@r{r}")
    # rank r receives row r of each rank's block: row 0 of x@r0, row 0 of x@r1 -> X rows 0 and 2
    order = ("y@r1", "y@r0") if swap else ("y@r0", "y@r1")
    rin = {"X": ["concat(x@r0, x@r1, dim=0)"]}
    expect = {"Y": [f"concat(slice({order[0]}, dim=0, start=0, end=1), slice({order[1]}, dim=0, start=0, end=1), "
                    f"slice({order[0]}, dim=0, start=1, end=2), slice({order[1]}, dim=0, start=1, end=2), dim=0)"]}
    return s.build(), g.build(), rin, expect


def _pipeline(peer: int) -> Pair:
    """Two pipeline stages: rank 0 runs stage 0 and sends to rank ``peer``; rank 1 runs stage 1 on what
    it received, or (the bug: the activation went to rank 2) on its stale receive buffer."""
    s = GraphBuilder("two_stage")
    s.input("X", [2, 3], "activation")
    s.input("Z", [2, 3], "activation")
    s.node("aten.relu.default", ["X"], "H")
    s.node("aten.mul.Tensor", ["H", "Z"], "Y")
    s.output("Y")
    g = GraphBuilder("pp", 3)
    g.input("x@r0", [2, 3], "activation", rank=0)
    g.input("z@r1", [2, 3], "activation", rank=1)
    g.input("buf@r1", [2, 3], "activation", rank=1)
    g.node("aten.relu.default", ["x@r0"], "h@r0", rank=0, name="stage0")
    g.node(P2P, ["h@r0"], [f"g@r{peer}"], group=[0, peer], name="send")
    g.node("aten.mul.Tensor", ["g@r1" if peer == 1 else "buf@r1", "z@r1"], "y@r1", rank=1, name="stage1")
    g.output("y@r1")
    return s.build(), g.build(), {"X": ["x@r0"], "Z": ["z@r1"]}, {"Y": ["y@r1"]}


def _single(spec_op: Callable[[GraphBuilder], None], impl_op: Callable[[GraphBuilder], None]) -> Pair:
    s = GraphBuilder("spec")
    s.input("X", [2, 3], "activation")
    spec_op(s)
    s.output("Y")
    g = GraphBuilder("impl", 1)
    g.input("x@r0", [2, 3], "activation")
    impl_op(g)
    g.output("y@r0")
    return s.build(), g.build(), {"X": ["x@r0"]}, {"Y": ["y@r0"]}


def _probe_only(bug: bool) -> Pair:
    """``x + relu(x - 1000)``: equal to ``x`` at every value a sampler near 0 would try."""
    def impl(g):
        g.node("aten.add.Scalar", ["x@r0"], "d@r0", other=-1000.0 if bug else 0.0, name="shift")
        g.node("aten.relu.default", ["d@r0"], "e@r0", name="ramp")
        g.node("aten.mul.Scalar", ["e@r0"], "f@r0", other=1.0 if bug else 0.0, name="gate")
        g.node("aten.add.Tensor", ["x@r0", "f@r0"], "y@r0", name="out")
    return _single(lambda s: s.node("aten.clone.default", ["X"], "Y"), impl)


def _sqrt_square(bug: bool) -> Pair:
    """``sqrt(x * x)`` claimed equal to ``x`` (the bug: false for x < 0); the control claims it equal to itself."""
    def spec(s):
        if bug:
            s.node("aten.clone.default", ["X"], "Y")
        else:
            s.node("aten.mul.Tensor", ["X", "X"], "Q")
            s.node("aten.sqrt.default", ["Q"], "Y")
    def impl(g):
        g.node("aten.mul.Tensor", ["x@r0", "x@r0"], "q@r0", name="sq")
        g.node("aten.sqrt.default", ["q@r0"], "y@r0", name="root")
    return _single(spec, impl)


# name -> (the bug, its correct control)
CASES: dict[str, tuple[Callable[[], Pair], Callable[[], Pair]]] = {
    "missing all-reduce": (lambda: _rowpar(skip_reduce=True), _rowpar),
    "wrong group": (_wrong_group, lambda: (_rowpar(4)[0], _rowpar(4)[1], _rowpar(4)[2], {"Y": ["y@r0"]})),
    "max vs sum": (lambda: _rowpar(reduce_op="max"), _rowpar),
    "wrong gather slice": (lambda: _sp_gather(2), lambda: _sp_gather(0)),
    "all-to-all order": (lambda: _a2a(True), lambda: _a2a(False)),
    "wrong pipeline peer": (lambda: _pipeline(2), lambda: _pipeline(1)),
    "off-by-one slice": (lambda: _off_by_one(True), lambda: _off_by_one(False)),
    "last-shard bias": (lambda: _rowpar(bias_everywhere=True), _rowpar),
    "probe-only identity": (lambda: _probe_only(True), lambda: _probe_only(False)),
    "sqrt(x^2)": (lambda: _sqrt_square(True), lambda: _sqrt_square(False)),
}


def _with_relations(cert: dict, bug: Pair) -> dict:
    """The control's certificate with the bug's graphs and relations in place (hashes recomputed)."""
    cert = forge.embed(cert, bug[0], bug[1])
    claim = cert["claims"][0]
    claim["input_relation"] = bug[2]
    claim["output_relation"] = {**claim["output_relation"], **bug[3]}
    return cert


@pytest.mark.parametrize("name", sorted(CASES))
def test_bug_is_never_verified(name):
    bug, _ = CASES[name]
    assert {f: forge.verified(bug(), f) for f in forge.FORMS} == {"whole-graph": False, "per-operator": False}


@pytest.mark.parametrize("name", sorted(CASES))
def test_control_verifies(name):
    _, ok = CASES[name]
    assert {f: forge.verified(ok(), f) for f in forge.FORMS} == {"whole-graph": True, "per-operator": True}


@pytest.mark.parametrize("form", forge.FORMS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_control_certificate_with_the_bug_is_rejected(name, form, tmp_path):
    bug, ok = CASES[name]
    forge.attack(bug(), ok(), form, tmp_path, _with_relations)
