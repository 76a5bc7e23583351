"""Every malformed graph gets one error naming the file and the element (exit 2 on the CLI)."""

import copy
import json

import pytest

from certificates.errors import LimitExceeded, Malformed
from certificates.graph import parse_graph
from certificates.limits import parse_json
from conftest import run_pvcert


def broken(g: dict, edit) -> dict:
    g = copy.deepcopy(g)
    edit(g)
    return g


def node(g, name):
    return next(n for n in g["nodes"] if n["name"] == name)


CASES = {
    "unknown op": (lambda g: node(g, "n0").update(target="aten.frobnicate.default"),
                   "node 'n0': unknown op 'aten.frobnicate.default'"),
    "dangling tensor": (lambda g: node(g, "n1").update(inputs=["nowhere@r0"]),
                        "tensor 'nowhere@r0' is not declared"),
    "undefined producer": (lambda g: (g["tensors"].update({"ghost@r0": {"shape": [2, 4], "dtype": "float32"}}),
                                      node(g, "n1").update(inputs=["ghost@r0"])),
                           "input 'ghost@r0' is dangling"),
    "shape mismatch": (lambda g: g["tensors"]["h@r0"].update(shape=[2, 5]),
                       "output 'h@r0' declared [2, 5] but the op gives [2, 4]"),
    "operand shapes": (lambda g: g["tensors"]["w1@r0"].update(shape=[4, 3]),
                       "node 'n0' (aten.linear.default): linear of input (2, 4) and weight (4, 3)"),
    "cycle": (lambda g: node(g, "n0").update(inputs=["x@r0", "a@r0"], target="aten.add.Tensor",
                                            attrs={}) or g["tensors"]["h@r0"].update(shape=[2, 4]),
              "nodes form a cycle"),
    "self loop": (lambda g: node(g, "n1").update(inputs=["a@r0"]), "nodes form a cycle (through 'n1'"),
    "duplicate node name": (lambda g: node(g, "n1").update(name="n0"), "duplicate node name 'n0'"),
    "produced twice": (lambda g: node(g, "n1").update(outputs=["h@r0"]), "tensor 'h@r0' is already produced"),
    "node rank outside world": (lambda g: node(g, "n0").update(rank=7), "rank 7 outside the world of size 2"),
    "tensor rank outside world": (lambda g: g["tensors"]["x@r0"].update(rank=2), "rank 2 outside the world"),
    "tensor on wrong rank": (lambda g: node(g, "n0").update(rank=1), "lives on rank 0, the node runs on rank 1"),
    "group size mismatch": (lambda g: node(g, "all_reduce").update(group=[0, 1, 2]) or g.update(world_size=3),
                            "group [0, 1, 2] has 3 members but the node has 2 inputs"),
    "group order mismatch": (lambda g: node(g, "all_reduce").update(group=[1, 0]),
                             "tensor 'p@r0' lives on rank 0, its group member is rank 1"),
    "group outside world": (lambda g: node(g, "all_reduce").update(group=[0, 5]), "rank outside the world"),
    "group repeated rank": (lambda g: node(g, "all_reduce").update(group=[0, 0]), "must list distinct ranks"),
    "collective with rank": (lambda g: node(g, "all_reduce").update(rank=0), "names its 'group', not a 'rank'"),
    "missing attribute": (lambda g: g["nodes"].append({"name": "bad", "target": "aten.view.default", "rank": 0,
                                                       "inputs": ["x@r0"], "outputs": ["v@r0"]})
                          or g["tensors"].update({"v@r0": {"shape": [8], "dtype": "float32"}}),
                          "node 'bad' (aten.view.default): missing attribute 'size'"),
    "unknown attribute": (lambda g: node(g, "n1").update(attrs={"approximate": "none", "colour": 1}),
                          "unknown attribute 'colour'"),
    "unknown dtype": (lambda g: g["tensors"]["x@r0"].update(dtype="float8"), "unknown dtype 'float8'"),
    "negative dim": (lambda g: g["tensors"]["x@r0"].update(shape=[2, -4]), "shape must be a list"),
    "input without role": (lambda g: g["tensors"]["x@r0"].pop("role"), "input 'x@r0': missing 'role'"),
    "bad tensor name": (lambda g: g["tensors"].update({"x y": {"shape": [1], "dtype": "float32"}}),
                        "tensor 'x y': bad name"),
    "name/rank disagree": (lambda g: g["tensors"]["x@r1"].update(rank=0), "name says rank 1 but 'rank' is 0"),
    "wrong format": (lambda g: g.update(format="onnx"), "not a pvcert-graph version 1 file"),
    "unknown field": (lambda g: g.update(colour="red"), "graph: unknown field 'colour'"),
    "unlisted output": (lambda g: g["outputs"].append("zz@r0"), "outputs: 'zz@r0' is not a declared tensor"),
    "wrong input count": (lambda g: node(g, "n1").update(inputs=["h@r0", "h@r0"]), "takes 1..1 inputs"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_graph_is_named(case, impl_graph):
    edit, expected = CASES[case]
    with pytest.raises(Malformed) as e:
        parse_graph(broken(impl_graph, edit), "impl.json")
    msg = str(e.value)
    assert msg.startswith("impl.json: "), msg
    assert expected in msg, msg
    assert "\n" not in msg


def test_valid_example_graphs(spec_graph, impl_graph):
    g = parse_graph(impl_graph, "impl.json")
    assert g.world_size == 2 and [n.name for n in g.nodes][-1] == "all_reduce"
    assert parse_graph(spec_graph, "spec.json").outputs == ["Y"]


def test_nodes_in_any_order_are_sorted(impl_graph):
    g = copy.deepcopy(impl_graph)
    g["nodes"].reverse()
    order = [n.name for n in parse_graph(g, "impl.json").nodes]
    assert order.index("n0") < order.index("n1") < order.index("n2") < order.index("all_reduce")


def test_the_order_does_not_depend_on_node_names(impl_graph):
    """A graph in topological order keeps it; out of order, it is sorted by places, whatever the nodes are called
    (here names sorting against the places)."""
    assert [n.name for n in parse_graph(impl_graph, "impl.json").nodes] == [n["name"] for n in impl_graph["nodes"]]
    g = copy.deepcopy(impl_graph)
    g["nodes"].reverse()
    renamed = copy.deepcopy(g)
    for i, n in enumerate(renamed["nodes"]):
        n["name"] = f"z{i:03d}"

    def places(graph: dict) -> list[int]:
        at = {n["name"]: i for i, n in enumerate(graph["nodes"])}
        return [at[n.name] for n in parse_graph(graph, "impl.json").nodes]

    assert places(g) == places(renamed)


def test_bad_json_and_duplicates():
    with pytest.raises(Malformed, match="g.json: invalid JSON"):
        parse_json('{"format": ', "g.json")
    with pytest.raises(Malformed, match="duplicate key 'x'"):
        parse_json('{"tensors": {"x": 1, "x": 2}}', "g.json")
    with pytest.raises(Malformed, match="non-finite"):
        parse_json('{"v": NaN}', "g.json")
    with pytest.raises(LimitExceeded, match="nested deeper"):
        parse_json("[" * 10000 + "]" * 10000, "g.json")


@pytest.mark.parametrize("case", ["unknown op", "cycle", "shape mismatch", "group order mismatch"])
def test_cli_validate_one_line_exit_2(case, impl_graph, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(broken(impl_graph, CASES[case][0])))
    r = run_pvcert("validate", str(path))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in r.stderr, r.stderr
    r = run_pvcert("validate", str(path), "--debug")
    assert r.returncode == 2 and "Traceback" in r.stderr


def test_cli_validate_ok_and_bad_json(tmp_path):
    r = run_pvcert("validate", "examples/tp_mlp/impl.json", "examples/tp_mlp/spec.json")
    assert r.returncode == 0 and "world 2, 7 nodes (1 collective)" in r.stdout
    bad = tmp_path / "trunc.json"
    bad.write_text('{"format": "pvcert-graph", "version": 1, "tens')
    r = run_pvcert("validate", str(bad))
    assert r.returncode == 2 and f"{bad}: invalid JSON" in r.stderr
    r = run_pvcert("validate", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "cannot read" in r.stderr
