"""The obligation counts replay will print, for ``pvcert verify`` to print the same.

Inference decides more than the certificate keeps: a step whose candidates partly fail is
decided with all of them (one obligation), while replay decides the step with the equations
that held (another). Counting what inference decided would then disagree with replay (the
issue saw 98 against 93). ``replayed_counts`` walks the certificate's chain as
``certificates.chain`` replays it, with the checker's own ``Chain`` and canonical keys; an
obligation inference already decided (same key) is not decided again. Where every obligation
inference decided held, its own counts are replay's already (the same keys), and this is not run.
"""

from __future__ import annotations

from certificates.chain import Chain
from certificates.graph import Graph
from certificates.obligations import key
from certificates.refinement import Outcome, Relation


class _Recount(Chain):
    """A chain that takes the outcome of a key ``known`` decided, and decides the rest."""

    def __init__(self, known: Chain) -> None:   # the ranges are the known chain's (not recomputed)
        self.spec, self.impl, self.limits, self.ranges = known.spec, known.impl, known.limits, known.ranges
        self.check = known.check
        self.cache, self.reused, self.known = {}, 0, known.cache

    def _decide(self, ls: Graph, li: Graph, rin: Relation, rout: Relation) -> list[Outcome]:
        k = key(ls, li, rin, rout)
        got = self.cache.get(k)
        if got is not None and all(c.holds for c in got):
            self.reused += 1
        elif k in self.known:   # the same statement, decided during inference (deterministically)
            got = self.cache[k] = self.known[k]
        else:
            return super()._decide(ls, li, rin, rout)
        pairs = [(s, str(e)) for s, es in rout.items() for e in es]
        return [Outcome(s, e, c.elements, dict(c.methods)) for (s, e), c in zip(pairs, got)]


def replayed_counts(prover: Chain, rel: Relation, steps: list[str], claimed: Relation) -> tuple[int, int]:
    """``(distinct obligations, reused)`` of replaying ``steps`` then the expectation ``claimed``."""
    chain = _Recount(prover)
    by_name = {n.name: n for n in prover.spec.nodes}
    for name in steps:
        node = by_name[name]
        chain.prove(rel, node, {t: rel[t] for t in node.outputs})
    chain.prove(rel, None, claimed)
    return len(chain.cache), chain.reused
