"""Booleans as 0/1 variables (refinement claims; docs/refinement.md, "Booleans"). An obligation whose integer
inputs are all booleans is decided once, each boolean a variable ``b``: ``where(b, x, y) = b x + (1 - b) y``,
``not b = 1 - b``, ``a and b = a b``, ``a or b = a + b - a b`` (each exact at 0 and 1: agda/Composition/Booleans),
a cast to a float keeps ``b``; moves move it. An identity of normal forms over every real ``b`` holds at ``b`` in
{0, 1} (``specialize``), so a proof here proves the claim; anything else, or a failure, is decided by enumeration
(``refinement.check``)."""

import numpy as np

from . import graph, refinement
from .dtypes import fit
from .errors import LimitExceeded, Unsupported
from .graph import Graph
from .limits import DEFAULT, Limits
from .ops import MOVES, ShapeError, _scalar, is_sym
from .poly import Rat
from .refinement import Outcome, Relation

_OBJ = np.frompyfunc(lambda v: v if isinstance(v, Rat) else Rat.of(int(v) if isinstance(v, (bool, np.bool_)) else v),
                     1, 1)   # every element a Rat (booleans 0/1)


def _where(c, x, y):
    c, x, y = (np.asarray(_OBJ(v), dtype=object) for v in (c, x, y))
    return c * x + (1 - c) * y


def _and(xs, a):
    return _OBJ(xs[0]) * _OBJ(xs[1])


def _or(xs, a):
    return _OBJ(xs[0]) + _OBJ(xs[1]) - _and(xs, a)


def _not(xs, a):
    return 1 - _OBJ(xs[0])


# op name -> its value on 0/1 variables (boolean operands and results only): where01, not01, and01, or01
BOOLEAN = {"where": lambda xs, a: _where(*xs), "masked_fill": lambda xs, a: _where(xs[1], _scalar(a["value"]), xs[0]),
           "logical_not": _not, "bitwise_not": _not, "logical_and": _and, "bitwise_and": _and, "logical_or": _or,
           "bitwise_or": _or}


def _step(g: Graph, node, xs: list, symbolic: bool) -> list:
    """One node's outputs (``graph.evaluate``'s ``step``) where a boolean tensor may hold 0/1 variables: a node
    that reads one runs by ``BOOLEAN`` (its integer operands all booleans) or is a move; any other node, a variable
    reaching a non-boolean integer tensor, or a boolean tensor but from boolean operands alone, is refused."""
    name, ints = node.target.split(".")[1], [g.tensors[t].dtype for t in node.inputs if t and g.tensors[t].is_int]
    boolean = name != "masked_fill" and all(g.tensors[t].dtype == "bool" for t in node.inputs if t)
    sym = any(is_sym(x) and g.tensors[t].is_int for t, x in zip(node.inputs, xs))
    if sym and not (name in MOVES or name in BOOLEAN and set(ints) == {"bool"}):
        raise ShapeError("a boolean variable here is not supported (decided by enumeration)")
    outs = [BOOLEAN[name](xs, node.attrs)] if sym and name in BOOLEAN else node.op.run(xs, node.full_attrs(symbolic))
    return [np.asarray(_OBJ(v), dtype=object) if is_sym(v) and g.tensors[t].dtype == "bool" and boolean
            else fit(np.asarray(v), g.tensors[t].dtype, symbolic) for t, v in zip(node.outputs, outs)]


def evaluate(g: Graph, env: dict[str, np.ndarray], symbolic: bool, limits: Limits = DEFAULT) -> dict:
    """``graph.evaluate`` by ``_step``."""
    return graph.evaluate(g, env, symbolic, limits, _step)


def _keep_booleans(spec: Graph, impl: Graph, spec_env: dict, impl_env: dict, limits: Limits):
    """The one assignment: every boolean input element stays its variable (``refinement.check`` runs it)."""
    yield {}, spec_env, impl_env


def check(spec: Graph, impl: Graph, inputs: Relation, outputs: Relation, limits: Limits = DEFAULT,
          strict: bool = True, defined=None, solver=None) -> list[Outcome]:
    """``refinement.check``, with boolean inputs as 0/1 variables first where every integer input is boolean."""
    if {impl.tensors[t].dtype for t in impl.inputs if impl.tensors[t].is_int} == {"bool"}:
        try:
            out = refinement.check(spec, impl, inputs, outputs, limits, strict, evaluate, _keep_booleans, defined, solver)
            if all(o.holds for o in out):
                return out
        except (Unsupported, LimitExceeded):
            pass
    return refinement.check(spec, impl, inputs, outputs, limits, strict, defined=defined, solver=solver)
