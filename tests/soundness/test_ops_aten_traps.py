"""Traps for the operators of certificates/ops_aten.py, through the checker's graph evaluator: dtype
edge values (wrap-around of the declared result), and every construct that must be refused rather
than given a meaning torch does not have (uint8 clamp bounds, uninitialized values, randomness,
undetermined scatter, orders of symbolic reals)."""

from __future__ import annotations

import numpy as np
import pytest

from certificates.errors import Unsupported
from certificates.graph import evaluate, parse_graph
from certificates.poly import Rat


def _graph(target: str, x: dict, out: dict, attrs: dict, extra: dict | None = None, more_out: dict | None = None):
    """One node ``n`` from inputs ``x`` (and ``extra``) to ``y`` (and ``more_out``)."""
    ins = {"x": {**x, "role": "index" if "range" in x else "activation"}, **(extra or {})}
    outs = {"y": out, **(more_out or {})}
    return parse_graph({
        "format": "pvcert-graph", "version": 1, "name": "trap", "world_size": 1, "inputs": list(ins),
        "outputs": ["y"], "tensors": {**ins, **outs},
        "nodes": [{"name": "n", "target": target, "inputs": list(ins), "outputs": list(outs), "attrs": attrs}]},
        "trap.json")


def _run(g, x, symbolic=False, **more):
    return evaluate(g, {"x": np.asarray(x), **more}, symbolic)["y"]


F2 = {"shape": [2], "dtype": "float32"}


def test_int8_abs_of_the_minimum_wraps_as_torch():
    g = _graph("aten.abs.default", {"shape": [2], "dtype": "int8", "range": [-128, 128]},
               {"shape": [2], "dtype": "int8"}, {})
    assert _run(g, [-128, -5]).tolist() == [-128, 5]   # torch.abs(int8 -128) is -128


def test_uint8_bitwise_not_wraps():
    g = _graph("aten.bitwise_not.default", {"shape": [3], "dtype": "uint8", "range": [0, 256]},
               {"shape": [3], "dtype": "uint8"}, {})
    assert _run(g, [0, 5, 255]).tolist() == [255, 250, 0]


def test_uint8_clamp_by_a_negative_bound_is_refused():
    """torch converts -1 to uint8 (255): clamp(min=-1) is 255 everywhere, not the identity."""
    g = _graph("aten.clamp.default", {"shape": [2], "dtype": "uint8", "range": [0, 256]},
               {"shape": [2], "dtype": "uint8"}, {"min": -1})
    with pytest.raises(Unsupported, match="node 'n'.*outside"):
        _run(g, [0, 7])


@pytest.mark.parametrize("target, attrs, more", [
    ("aten.empty_like.default", {}, None), ("aten.bernoulli.default", {}, None),
    ("aten.native_dropout.default", {"p": 0.1}, {"m": {"shape": [2], "dtype": "bool"}})])
def test_uninitialized_and_random_values_are_refused(target, attrs, more):
    with pytest.raises(Unsupported, match="node 'n'.*(uninitialized|random)"):
        _run(_graph(target, F2, F2, attrs, more_out=more), [1.0, 2.0])


def test_scatter_writing_twice_is_refused():
    extra = {"idx": {"shape": [1, 2], "dtype": "int64", "role": "index", "range": [0, 3]},
             "src": {"shape": [1, 2], "dtype": "float32", "role": "activation"}}
    g = _graph("aten.scatter.src", {"shape": [1, 3], "dtype": "float32"}, {"shape": [1, 3], "dtype": "float32"},
               {"dim": 1}, extra)
    ok = _run(g, np.zeros((1, 3)), idx=np.array([[2, 0]]), src=np.array([[5.0, 6.0]]))
    assert ok.tolist() == [[6.0, 0.0, 5.0]]
    with pytest.raises(Unsupported, match="twice"):
        _run(g, np.zeros((1, 3)), idx=np.array([[1, 1]]), src=np.array([[5.0, 6.0]]))


def test_max_dim_of_symbolic_reals_is_refused():
    g = _graph("aten.max.dim", {"shape": [2, 2], "dtype": "float32"}, F2, {"dim": 1},
               more_out={"i": {"shape": [2], "dtype": "int64"}})
    x = np.array([[Rat.var("a"), Rat.var("b")], [Rat.var("c"), Rat.var("d")]], dtype=object)
    with pytest.raises(Unsupported, match="not decided"):
        _run(g, x, symbolic=True)
    assert _run(g, [[1.0, 3.0], [4.0, 2.0]]).tolist() == [3.0, 4.0]
