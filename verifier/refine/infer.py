"""Iterative clean-relation inference, operator by operator (the ENTANGLE approach).

For each spec operator ``v`` in topological order: the impl tensors named by the
relations of ``v``'s inputs form the frontier; the explored region is every impl
tensor computable from the frontier alone (growing node by node, as in ENTANGLE's
Listing 3); candidates for ``v``'s outputs come from values over that region
(``candidates.Index``); each is proved by the checker's own local obligation
(``certificates.chain``), so what the engine keeps is exactly what replay re-checks.
The first operator with an output that no candidate proves is reported.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from certificates import terms
from certificates.chain import Chain
from certificates.errors import Unsupported
from certificates.graph import Graph, Node
from certificates.limits import Limits
from certificates.refinement import Outcome, Relation

from .. import direct
from ..case import Case
from .candidates import Index, base, same


@dataclass
class Failure:
    """Where inference stopped, with what a user needs to find the bug."""

    node: Node | None                       # None: the expectation was not met
    message: str
    inputs: dict[str, list[str]]            # relations of the operator's inputs
    tried: dict[str, list[str]]             # candidates per output, with why each failed
    explored: list[Node] = field(default_factory=list)


@dataclass
class Inference:
    prepared: direct.Result
    relation: Relation = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    failure: Failure | None = None
    seconds: float = 0.0
    obligations: int = 0
    reused: int = 0

    @property
    def verified(self) -> bool:
        return self.failure is None


def _groups(impl: Graph) -> list[tuple[int, ...]]:
    """Rank groups over which copies of a tensor may concatenate or sum."""
    gs = {tuple(n.group) for n in impl.nodes if n.group is not None and not n.op.p2p}
    gs.add(tuple(range(impl.world_size)))
    return sorted(gs, key=lambda g: (len(g), g))


NEAR_FIRST = 50   # in larger regions, what the frontier's alike consumers make is searched first
MAX_EQUATIONS = 64   # per spec tensor, the shortest (a constant tensor equals every arrangement)


def _prove(prover: Chain, rel: dict, v: Node, found: dict) -> list[Outcome]:
    found = {o: sorted(cs, key=lambda c: (len(str(c)), str(c)))[:MAX_EQUATIONS] for o, cs in found.items()}
    try:
        return prover.prove(rel, v, found)
    except Unsupported as e:  # e.g. an integer tensor whose values cannot be enumerated
        return [Outcome(o, str(c), failure=str(e)) for o, cs in found.items() for c in cs]


def _signature(v: Node, ins: list[str], rel: dict, region: "Region", spec: Graph) -> tuple[str, dict]:
    """The step as text with every impl tensor renamed by first appearance: the operator,
    its inputs' shapes and equations, and the impl nodes consuming what those equations
    name. Steps with equal signatures (layer after layer) are alike up to the
    renaming, so an earlier one's equations, renamed, are the first guess (``_twin``)."""
    canon: dict[str, str] = {}

    def ren(t: str | None) -> str | None:
        return t if t is None else canon.setdefault(t, f"t{len(canon)}")
    parts: list = [v.target, sorted(v.attrs.items()), [spec.tensors[u].shape for u in ins]]
    parts += [[str(terms.rename(e, ren)) for e in rel[u][:16]] for u in ins]
    for x in list(canon):
        parts.append([(n.target, sorted(n.attrs.items()), [ren(i) for i in n.inputs], [ren(o) for o in n.outputs])
                      for n in region.consumers.get(x, ())])
    return repr(parts), canon


def _twin(hit: tuple | None, canon: dict, k: int) -> list[terms.Term]:
    """The equations an earlier alike step found for its ``k``-th output, renamed to this
    step (each impl tensor through the two steps' canonical names), where all names map."""
    if hit is None:
        return []
    theirs, found = hit
    back = {c: t for t, c in canon.items()}
    out = []
    for e in list(found.values())[k]:
        try:
            out.append(terms.rename(e, lambda n: back[theirs[n]]))
        except KeyError:
            continue
    return out


def _valued(guesses: list[terms.Term], index: Index, want) -> list[terms.Term]:
    """The guesses whose value equals ``want`` (a wrong guess can be costly to refute)."""
    out = []
    for g in guesses:
        try:
            if same(np.asarray(terms.evaluate(g, index.values.__getitem__)), want):
                out.append(g)
        except (terms.TermError, ValueError):
            continue
    return out


def _renames(v: Node, out: str, rel: dict, region: "Region"):
    """Each input equation (the 16 shortest: ``_prove`` keeps them sorted) with every impl
    tensor replaced by the output of a consumer doing what ``v`` does, for each name such
    consumers share on every rank; with the impl tensors it names, in order."""
    k = v.outputs.index(out)
    for u in dict.fromkeys(t for t in v.inputs if t is not None):
        for e in rel.get(u, [])[:16]:
            leaves = terms.refs(e)
            outs = [{base(n.name)[0]: n.outputs[k] for n in region.consumers.get(x, [])
                     if n.target == v.target and len(n.outputs) > k} for x in leaves]
            for stem in sorted(set.intersection(*(set(o) for o in outs))) if outs else ():
                names = {x: o[stem] for x, o in zip(leaves, outs)}
                yield terms.rename(e, names.__getitem__), [names[x] for x in leaves]


def _carried(v: Node, out: str, rel: dict, region: "Region", index: Index, want) -> list[terms.Term]:
    """The first guesses: the renamed equations as they are, where the value equals
    ``want`` (elementwise steps of a layer stack; their proofs are mostly found by key)."""
    guesses = {}
    for g, leaves in _renames(v, out, rel, region):
        if all(index.values[n].ndim == want.ndim for n in leaves):
            try:
                if same(np.asarray(terms.evaluate(g, index.values.__getitem__)), want):
                    guesses.setdefault(str(g), g)
            except (terms.TermError, ValueError):
                continue
    return list(guesses.values())


def _propagated(v: Node, out: str, rel: dict, region: "Region", index: Index, want) -> list[terms.Term]:
    """The next guesses: the renamed equations with their combining nodes varied
    (``_variants``), permuted or reshaped, kept where the value equals ``want``."""
    guesses = {}
    index.aim(want)
    for g, leaves in _renames(v, out, rel, region):
        if not index.total_fits(leaves):
            continue   # every variant sums or moves the same elements: same grand total
        for guess in _variants(g, want.ndim):
            try:
                val = np.asarray(terms.evaluate(guess, index.values.__getitem__))
            except (terms.TermError, ValueError, KeyError):
                continue
            hit = index.match([(guess, val)], want)
            if hit:
                guesses.setdefault(str(hit[0]), hit[0])
                break
    return list(guesses.values())


def _variants(t: terms.Term, ndim: int, limit: int = 64):
    """``t`` first, then ``t`` with each combining node (concat or sum) made a sum or a
    concat along any dim: the op may move the sharded dim (t, permute, view) or turn a
    shard into a partial sum (a contraction)."""
    yield t
    nodes = []

    def walk(x):
        if isinstance(x, terms.Call) and x.fn in ("concat", "sum"):
            nodes.append(x)
        if isinstance(x, terms.Call):
            for a in x.args:
                walk(a)
    walk(t)
    kinds = [("sum", ())] + [("concat", (("dim", d),)) for d in range(ndim)]
    if not nodes or len(kinds) ** len(nodes) > limit:
        return
    for choice in itertools.product(kinds, repeat=len(nodes)):
        pick = dict(zip(map(id, nodes), choice))

        def build(x):
            if not isinstance(x, terms.Call):
                return x
            fn, kw = pick.get(id(x), (x.fn, x.kw))
            return terms.Call(fn, tuple(build(a) for a in x.args), kw)
        yield build(t)


class Region:
    """Forward closure of a frontier: impl tensors computable from it alone."""

    def __init__(self, impl: Graph) -> None:
        self.impl = impl
        self.consumers: dict[str, list[Node]] = defaultdict(list)
        for n in impl.nodes:
            for t in n.inputs:
                if t is not None:
                    self.consumers[t].append(n)
        self.constants, _ = self._close(set(), [n for n in impl.nodes if not any(n.inputs)])

    def _close(self, region: set[str], work: list[Node]) -> tuple[set[str], list[Node]]:
        done: set[str] = set()
        explored: list[Node] = []
        while work:
            n = work.pop()
            if n.name in done or not all(t is None or t in region for t in n.inputs):
                continue
            done.add(n.name)
            explored.append(n)
            for t in n.outputs:
                region.add(t)
                work.extend(self.consumers.get(t, ()))
        return region, explored

    def grow(self, frontier: set[str]) -> tuple[set[str], list[Node]]:
        region = set(frontier) | self.constants
        work = [n for t in frontier for n in self.consumers.get(t, ())]
        return self._close(region, work)


def infer(case: Case, seed: int = 0, limits: Limits | None = None,
          progress: Callable[[int, int, str], None] | None = None,
          chain: Callable[[Graph, Graph, Limits], Chain] = Chain) -> Inference:
    """Infer the relation operator by operator; ``progress(done, total, op)`` is told each step.

    ``chain`` makes the prover of the steps (``verifier.stages.run`` defers the proofs).
    """
    limits = limits or Limits()
    start = time.monotonic()
    r = direct.prepare(case, limits)
    inf = Inference(r, relation={k: list(v) for k, v in r.inputs.items()})
    try:
        s_vals, i_vals = direct.numeric_values(r, seed, limits)
    except direct.ImplFailed as e:
        inf.failure = Failure(None, str(e), {}, {})
        return inf
    index, region, prover = Index(r.impl, i_vals, _groups(r.impl)), Region(r.impl), chain(r.spec, r.impl, limits)
    rel = inf.relation
    memo: dict[str, tuple] = {}   # step signature -> (its canonical names, the relation found)
    for k, v in enumerate(r.spec.nodes):
        if progress:
            progress(k, len(r.spec.nodes), v.name)
        ins = [t for t in dict.fromkeys(v.inputs) if t is not None]
        frontier = {x for t in ins for e in rel[t] for x in terms.refs(e)}
        outputs = set(r.spec.outputs)   # their relations are reported in full: no shortcut
        sig, canon = _signature(v, ins, rel, region, r.spec)
        outs, found = [], {}
        for tier in (lambda o: _valued(_twin(memo.get(sig), canon, v.outputs.index(o)), index, s_vals[o]),
                     lambda o: _carried(v, o, rel, region, index, s_vals[o]),
                     lambda o: _propagated(v, o, rel, region, index, s_vals[o])):
            if outs and all(out.holds for out in outs) or set(v.outputs) & outputs:
                break
            found = {o: tier(o) for o in v.outputs}
            outs = _prove(prover, rel, v, found) if all(found.values()) else []
        reach, explored = set(), []
        if not outs or not all(out.holds for out in outs):
            reach, explored = region.grow(frontier)
            varying = reach - region.constants   # constants only where nothing else fits
            near = {t for x in frontier for n in region.consumers.get(x, ()) if n.target == v.target
                    for t in n.outputs} & reach if len(varying) > NEAR_FIRST else set()
            found = {o: (near and index.find(s_vals[o], near, r.spec.tensors[o].is_int))
                     or index.find(s_vals[o], varying, r.spec.tensors[o].is_int)
                     or index.find(s_vals[o], reach, r.spec.tensors[o].is_int) for o in v.outputs}
            outs = _prove(prover, rel, v, found) if all(found.values()) else []
        tried = {o: [str(c) for c in cs] for o, cs in found.items()}
        term = {str(c): c for cs in found.values() for c in cs}
        for out in outs:
            if out.holds:
                rel.setdefault(out.spec, []).append(term[out.expr])
                inf.outcomes.append(out)
            else:
                tried[out.spec][tried[out.spec].index(out.expr)] += f"  -- {out.failure}"
        missing = [o for o in v.outputs if not rel.get(o)]
        if missing and not explored:
            explored = region.grow(frontier)[1]
        if not missing:
            memo.setdefault(sig, (canon, {o: rel[o] for o in v.outputs}))
        if missing:
            inf.failure = Failure(v, f"no clean expression over the impl relates '{missing[0]}'",
                                  {t: [str(e) for e in rel[t]] for t in ins}, tried, explored)
            break
        inf.steps.append(v.name)
    if inf.failure is None:
        for out in prover.prove(rel, None, r.expect):
            if not out.holds:
                found_for = {t: [str(e) for e in rel[t]] for t in r.expect}
                inf.failure = Failure(None, f"expectation {out.spec} = {out.expr} not met: {out.failure}",
                                      found_for, {out.spec: [out.expr]})
                break
            inf.outcomes.append(out)
    inf.obligations, inf.reused = len(prover.cache), prover.reused
    inf.seconds = time.monotonic() - start
    return inf
