"""A node's result has the shape its graph declares, or the graph is refused: a shape rule that lets an operand's
shape pass (layer norm backward's mean and rstd) must not make values of another shape flow on."""

import numpy as np
import pytest

from certificates.errors import Unsupported
from certificates.graph import evaluate
from certificates.limits import Limits
from verifier.ir import GraphBuilder, parsed


def _ln_backward(stats: list[int]):
    g = GraphBuilder("lnb")
    for name, shape in (("G", [4]), ("X", [4]), ("M", stats), ("R", stats)):
        g.input(name, shape, "activation")
    g.node("aten.native_layer_norm_backward.default", ["G", "X", "M", "R"], ["dX", "dW", "dB"],
           normalized_shape=[4], output_mask=[True, False, False])
    g.output("dX")
    graph = parsed(g.build(), "lnb", Limits())
    env = {"G": np.ones(4), "X": np.arange(4.0), "M": np.zeros(stats), "R": np.ones(stats)}
    return graph, env


def test_a_result_of_another_shape_than_declared_is_refused():
    graph, env = _ln_backward([3, 1])   # the shape rule reads G and X only; mean, rstd (3, 1) broadcast to (3, 4)
    with pytest.raises(Unsupported, match=r"'dX' of aten.native_layer_norm_backward.default .* is \[3, 4\], "
                                          r"declared \[4\]"):
        evaluate(graph, env, False)


def test_the_declared_shape_runs():
    graph, env = _ln_backward([1])
    assert evaluate(graph, env, False)["dX"].shape == (4,)


@pytest.mark.parametrize("weight,bias", [([1], [3]), ([3], [1]), ([5], None)])
def test_batch_norm_weight_and_bias_have_one_value_per_channel(weight, bias):
    """ATen's kernel reads C values of each (a weight [1] was taken as a broadcast scalar; torch reads past its end)."""
    import certificates.ops_train  # noqa: F401 (the training family)
    g = GraphBuilder("bn")
    ins = [g.input("X", [2, 3], "activation"), g.input("W", weight, "parameter")]
    ins += [g.input("B", bias, "parameter")] if bias else []
    with pytest.raises(Exception, match=r"batch_norm weight \["):
        g.node("aten.native_batch_norm.default", ins + [None, None] if bias else ins, ["Y", "m", "r"], training=True,
               momentum=0.1, eps=1e-5)
        parsed(g.build(), "bn", Limits())
