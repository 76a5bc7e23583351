"""``refinement._compare`` holds a pair of symbolic elements at once when their numerators and denominators have the
same terms (the first case of ``Rat.equals``); everything else goes to ``decide``. The program that would fool a
shortcut that looked at less: equal numerators over different denominators (``x / (y^2 + 1)`` against
``x / (z^2 + 1)``; ACCEPTed with the denominators left out of the test); and another constant in the divisor, whose
normal form moves it into the numerator too."""

import pytest

from certificates import refinement
from certificates.graph import parse_graph
from certificates.refinement import parse_relation
from verifier.ir import GraphBuilder


def _divide(spec_by: tuple[str, int], impl_by: tuple[str, int]):
    """Spec ``x / (v * v + c)`` for ``(v, c) = spec_by``, impl the same for ``impl_by``, over inputs x, y, z (the
    divisors are evidently positive: nothing is assumed, the outputs alone decide)."""
    graphs = []
    for name, (v, c), sfx in (("s", spec_by, ""), ("i", impl_by, "@r0")):
        g = GraphBuilder(name)
        ins = {n: g.input(f"{n}{sfx}", [3], "activation") for n in "xyz"}
        sq = g.node("aten.mul.Tensor", [ins[v], ins[v]], f"sq{sfx}")
        d = g.node("aten.add.Tensor", [sq], f"d{sfx}", attrs={"other": c, "alpha": 1})
        g.output(g.node("aten.div.Tensor", [ins["x"], d], f"out{sfx}"))
        graphs.append(parse_graph(g.build(), name))
    spec, impl = graphs
    rin = parse_relation({v: [f"{v}@r0"] for v in "xyz"}, spec, impl, "rel", True)
    return spec, impl, rin, parse_relation({"out": ["out@r0"]}, spec, impl, "out", False)


def test_equal_normal_forms_hold_at_once():
    out = refinement.check(*_divide(("y", 1), ("y", 1)))
    assert all(o.holds for o in out) and out[0].methods == {"normal-form": 3}


@pytest.mark.parametrize("spec_by, impl_by", [(("y", 1), ("z", 1)), (("y", 1), ("y", 2))])
def test_equal_numerators_over_other_denominators_are_refuted(spec_by, impl_by):
    out = refinement.check(*_divide(spec_by, impl_by))
    assert not out[0].holds and "differ" in out[0].failure, out[0].failure
