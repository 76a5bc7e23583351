"""The ``refinement`` kind's entry: refinement over the core, backward and ATen operator families
(``ops``, ``ops_grad``, ``ops_index``, ``ops_aten``), booleans decided as 0/1 variables first (``symint.py``), the spec's
definedness witness with precise values (``precise.py``), z3 and cvc5 as provers (``smt.py``); training operators and approximations are
``training-refinement``'s."""

from . import ops_aten, ops_grad, smt, symint  # noqa: F401 (its operator families: FAMILIES; smt: z3, cvc5)
from .precise import PRECISE
from .chain import replay_refinement
from .graph import CORE
from .limits import Limits

FAMILIES = CORE + ("ops_aten", "ops_index")


def replay(claim: dict, evidence: dict, arts: dict, where: str, limits: Limits) -> str:
    return replay_refinement(claim, evidence, arts, where, limits, FAMILIES, check=symint.check, precise=PRECISE)
