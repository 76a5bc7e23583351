"""Booleans as 0/1 variables (refinement claims; docs/refinement.md, "Booleans"). An obligation whose integer
inputs are all booleans is decided once, each boolean a variable ``b``: ``where(b, x, y) = b x + (1 - b) y``,
``not b = 1 - b``, ``a and b = a b``, ``a or b = a + b - a b`` (each exact at 0 and 1: agda/Composition/Booleans),
a cast to a float keeps ``b``; moves move it. An identity of normal forms over every real ``b`` holds at ``b`` in
{0, 1} (``specialize``), so a proof here proves the claim; anything else, or a failure, is decided by enumeration
(``refinement.check``)."""

import numpy as np

from . import refinement
from .dtypes import DtypeError, fit
from .errors import LimitExceeded, Unsupported
from .graph import Graph
from .limits import DEFAULT, Limits
from .obligations import MOVES
from .ops import ShapeError, _scalar, is_sym
from .poly import Rat
from .refinement import Outcome, Relation

_OBJ = np.frompyfunc(lambda v: v if isinstance(v, Rat) else Rat.of(int(v) if isinstance(v, (bool, np.bool_)) else v),
                     1, 1)   # every element a Rat (booleans 0/1)


def _where(c, x, y):
    c, x, y = (np.asarray(_OBJ(v), dtype=object) for v in (c, x, y))
    return c * x + (1 - c) * y


BOOLEAN = {   # op name -> its value on 0/1 variables (boolean operands and results only): where01, not01, and01, or01
    "where": lambda xs, a: _where(*xs),
    "masked_fill": lambda xs, a: _where(xs[1], _scalar(a["value"]), xs[0]),
    "logical_not": lambda xs, a: 1 - _OBJ(xs[0]),
    "bitwise_not": lambda xs, a: 1 - _OBJ(xs[0]),
    "logical_and": lambda xs, a: _OBJ(xs[0]) * _OBJ(xs[1]),
    "bitwise_and": lambda xs, a: _OBJ(xs[0]) * _OBJ(xs[1]),
    "logical_or": lambda xs, a: _OBJ(xs[0]) + _OBJ(xs[1]) - _OBJ(xs[0]) * _OBJ(xs[1]),
    "bitwise_or": lambda xs, a: _OBJ(xs[0]) + _OBJ(xs[1]) - _OBJ(xs[0]) * _OBJ(xs[1]),
}


def evaluate(g: Graph, env: dict[str, np.ndarray], symbolic: bool, limits: Limits = DEFAULT) -> dict:
    """``graph.evaluate``, where a boolean tensor may hold 0/1 variables: a node that reads one runs by
    ``BOOLEAN`` (its integer operands all booleans) or is a move; any other node, a variable reaching a
    non-boolean integer tensor, or a boolean tensor but from boolean operands alone, is refused."""
    vals = dict(env)
    for node in g.nodes:
        limits.tick()
        xs = [vals[t] if t is not None else None for t in node.inputs]
        while xs and xs[-1] is None:
            xs.pop()
        name, ints = node.target.split(".")[1], [g.tensors[t].dtype for t in node.inputs if t and g.tensors[t].is_int]
        boolean = name != "masked_fill" and all(g.tensors[t].dtype == "bool" for t in node.inputs if t)
        sym = any(is_sym(x) and g.tensors[t].is_int for t, x in zip(node.inputs, xs))
        try:
            if sym and not (name in MOVES or name in BOOLEAN and set(ints) == {"bool"}):
                raise ShapeError("a boolean variable here is not supported (decided by enumeration)")
            outs = [BOOLEAN[name](xs, node.attrs)] if sym and name in BOOLEAN else \
                node.op.run(xs, node.full_attrs(symbolic))
            outs = [np.asarray(_OBJ(v), dtype=object) if is_sym(v) and g.tensors[t].dtype == "bool" and boolean
                    else fit(np.asarray(v), g.tensors[t].dtype, symbolic) for t, v in zip(node.outputs, outs)]
        except (ShapeError, ZeroDivisionError, DtypeError) as e:
            raise Unsupported(f"{g.name}: node '{node.name}' ({node.target}): {e}") from None
        for t, v in zip(node.outputs, outs):
            vals[t] = v
            if v.size > limits.max_elements:
                raise LimitExceeded(f"{g.name}: tensor '{t}' has {v.size} elements (limit {limits.max_elements})")
    return vals


def _keep_booleans(spec: Graph, impl: Graph, spec_env: dict, impl_env: dict, limits: Limits):
    """The one assignment: every boolean input element stays its variable (``refinement.check`` runs it)."""
    yield {}, spec_env, impl_env


def check(spec: Graph, impl: Graph, inputs: Relation, outputs: Relation, limits: Limits = DEFAULT,
          strict: bool = True) -> list[Outcome]:
    """``refinement.check``, with boolean inputs as 0/1 variables first where every integer input is boolean."""
    ints = {impl.tensors[t].dtype for t in impl.inputs if impl.tensors[t].is_int}
    if ints == {"bool"}:
        try:
            out = refinement.check(spec, impl, inputs, outputs, limits, strict, evaluate, _keep_booleans)
            if all(o.holds for o in out):
                return out
        except (Unsupported, LimitExceeded):
            pass
    return refinement.check(spec, impl, inputs, outputs, limits, strict)
