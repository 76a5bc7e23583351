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

import contextlib
import gc
import itertools
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from certificates import terms
from certificates.chain import Chain, witnessed
from certificates.errors import LimitExceeded, Unsupported
from certificates.graph import Graph, Node, evaluate
from certificates.limits import Limits
from certificates.obligations import cone
from certificates.ops import INT_DTYPES
from certificates.refinement import Outcome, Relation

from .. import direct
from ..case import Case
from .candidates import Index
from .fast import Proved, Terms
from .guesses import Twin, carried, propagated, signature, valued
from .order import canonical
from .recount import replayed_counts


@dataclass
class Failure:
    """Where inference stopped, with what a user needs to find the bug."""

    node: Node | None                       # None: the expectation was not met
    message: str
    inputs: dict[str, list[str]]            # relations of the operator's inputs
    tried: dict[str, list[str]]             # candidates per output, with why each failed
    explored: list[Node] = field(default_factory=list)

    @property
    def location(self) -> dict | None:
        """The failing spec operator's ``{"module", "file", "line"}`` as captured (keys that are known)."""
        return dict(self.node.source) if self.node is not None and self.node.source else None


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


def _groups(impl: Graph, inputs: Relation) -> list[tuple[int, ...]]:
    """Rank groups over which copies of a tensor may concatenate or sum: those of the collectives,
    and those the input relation combines (the DP replicas of a batch, even where a bug left out
    the collective over them; each part of a merged weight, a run of slices of one range)."""
    gs = {tuple(n.group) for n in impl.nodes if n.group is not None and not n.op.p2p}
    gs.add(tuple(range(impl.world_size)))

    def walk(e: terms.Term) -> None:
        if isinstance(e, terms.Call):
            if e.fn in ("concat", "sum", "mean") and all(len(set(terms.refs(a))) == 1 for a in e.args):
                ranks = [impl.tensors[terms.refs(a)[0]].rank for a in e.args]   # slices of fused weights too
                parts = itertools.groupby(zip(e.args, ranks), lambda ar: getattr(ar[0], "kw", None))
                for part in [ranks] + [[r for _, r in run] for _, run in parts]:
                    if None not in part and len(set(part)) == len(part) > 1:
                        gs.add(tuple(part))
            for a in e.args:
                walk(a)
    for es in inputs.values():
        for e in es:
            walk(e)
    return sorted(gs, key=lambda g: (len(g), g))


NEAR_FIRST = 50   # in larger regions, what the frontier's alike consumers make is searched first
TWINS = 4   # alike steps (by signature) kept per signature, each with its recipe
MAX_EQUATIONS = 64   # per spec tensor, the shortest (a constant tensor equals every arrangement)


def _shortest(found: dict, texts: Terms) -> dict:
    """Each output's distinct equations (by text), the shortest first (by ``Terms.order``: names
    do not decide), at most ``MAX_EQUATIONS``. Distinct: the checker decides each text once, and
    outcomes reused by key are matched to the equations one for one (``fast.Proved.reuse``)."""
    return {o: sorted({texts.text(c): c for c in cs}.values(), key=texts.order)[:MAX_EQUATIONS] if len(cs) > 1
            else list(cs) for o, cs in found.items()}


def _partial(found: dict) -> bool:
    """Every equation is a sum over ranks: the region is searched for a whole copy too (the
    collective after it), so that later steps read alike relations (layers reuse obligations)."""
    return bool(found) and all(isinstance(e, terms.Call) and e.fn == "sum" for cs in found.values() for e in cs)


def _prove(prover: Chain | Proved, rel: dict, v: Node, found: dict, texts: Terms) -> list[Outcome]:
    found = _shortest(found, texts)
    try:
        return prover.prove(rel, v, found)
    except Unsupported as e:  # e.g. an integer tensor whose values cannot be enumerated
        return [Outcome(o, str(c), failure=str(e)) for o, cs in found.items() for c in cs]


def _copies(prover, rel: dict, v: Node, found: dict, outs: list[Outcome], index: Index, s_vals: dict,
            texts: Terms, reach: set[str]) -> tuple[list[Outcome], dict]:
    """A held step's equations also per copy (``Index.collapsed``) and on the other replicas
    (rank-shifted copies, 2-D meshes: each DP replica holds its own TP shards), proved like any
    guess; those that hold are kept too. Copies only over ``reach`` (what the frontier computes):
    another replica's copy outside it is computed from impl inputs the step has no hypothesis on,
    so its obligation holds only by accident, and its cone can be the whole forward and backward
    pass (a solver call on the squared gradients' polynomials that ran for minutes)."""
    o = v.outputs[0]
    have, held = {texts.text(c) for c in found[o]}, {out.expr for out in outs if out.holds}
    held_terms = [c for c in found[o] if texts.text(c) in held]
    more = index.collapsed(held_terms, s_vals[o])
    more = list({texts.text(c): c for c in more + index.translates(held_terms + more, s_vals[o], reach)
                 if texts.text(c) not in have}.values())
    if not more:
        return outs, found
    extra = [out for out in _prove(prover, rel, v, {o: more}, texts) if out.holds]
    return sorted(outs + extra, key=lambda out: len(out.expr)), {o: found[o] + more}   # plain copies bind first


def _disjoint_first(es: list, texts: Terms) -> list:
    """A constant's equations, those over impl tensors no earlier one names first (then the rest, in
    order). A constant (a zero moment) equals every arrangement of the impl's equal constants, e.g.
    ``concat(z@r0, z@r2)`` across DP replicas as well as ``concat(z@r0, z@r1)``; a later step binds
    the impl tensors by its hypotheses in order (the first defines, each next one binds what is
    still free), so an overlapping arrangement first would bind ``z@r2`` to the second half and
    the other replica's copy ``concat(z@r2, z@r3)`` would no longer follow. Disjoint first, each
    replica's copy binds its own tensors."""
    named: set[str] = set()
    first, rest = [], []
    for e in es:
        refs = set(texts.refs(e))
        if refs & named:
            rest.append(e)
        else:
            first.append(e)
            named |= refs
    return first + rest


def _unbound(impl: Graph, rel: dict, expect: dict, texts: Terms, values: dict,
             limits: Limits) -> tuple[tuple[str, str], str] | None:
    """An expectation ``(spec output, expression)`` whose impl cone (``obligations.cone``, from the
    tensors the outputs' relations name) reads a real impl input that none of them names, and whose
    value changes when that input alone is redrawn (a numeric run), with that input; None if there is
    none. Such an input is free in the obligation (no hypothesis on it), so the equation cannot hold;
    deciding it meant the solver on the whole step's polynomials (it ran for minutes). An expectation
    that does not move (``x * (d / d)``) is left to the prover. Not asked: not verified, never the reverse."""
    frontier = {x for t in expect for c in rel.get(t, ()) for x in texts.refs(c)}
    inputs = {t for t in impl.inputs if not impl.tensors[t].is_int} - frontier
    moved: dict[str, dict | None] = {}
    for s, es in expect.items():
        for e in es:
            for x in dict.fromkeys(t for n in cone(impl, terms.refs(e), frontier) for t in n.inputs if t in inputs):
                if x not in moved:
                    env = {t: values[t] for t in impl.inputs}
                    env[x] = np.asarray(values[x], dtype=float) * 1.5 + 0.25
                    try:
                        moved[x] = evaluate(impl, env, False, limits)
                    except (Unsupported, LimitExceeded, ValueError, ZeroDivisionError):
                        moved[x] = None
                try:
                    now = None if moved[x] is None else np.asarray(terms.evaluate(e, moved[x].__getitem__), dtype=float)
                    was = np.asarray(terms.evaluate(e, values.__getitem__), dtype=float)
                except (terms.TermError, ValueError, TypeError):
                    continue
                if now is not None and np.all(np.isfinite(now)) and not np.allclose(now, was, rtol=1e-6, atol=1e-9):
                    return (s, str(e)), x
    return None


class Region:
    """Forward closure of a frontier: impl tensors computable from it alone."""

    def __init__(self, impl: Graph) -> None:
        self.impl = impl
        self.consumers: dict[str, list[Node]] = defaultdict(list)
        self._reading: dict[tuple[str, str], list[Node]] = {}
        for n in impl.nodes:
            for t in n.inputs:
                if t is not None:
                    self.consumers[t].append(n)
        self.constants, _ = self._close(set(), [n for n in impl.nodes if not any(n.inputs)])
        self.factories = {t for n in impl.nodes if not any(n.inputs) for t in n.outputs}

    def reading(self, t: str, target: str) -> list[Node]:
        """The nodes with ``target`` that read ``t``, each once, in graph order."""
        got = self._reading.get((t, target))
        if got is None:
            got = self._reading[t, target] = list({id(n): n for n in self.consumers.get(t, ())
                                                   if n.target == target}.values())
        return got

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

    def grow(self, frontier: set[str], without: set[str] = frozenset()) -> tuple[set[str], list[Node]]:
        """The closure of ``frontier`` and the constants but ``without``."""
        region = set(frontier) | (self.constants - without)
        work = [n for t in frontier for n in self.consumers.get(t, ())]
        return self._close(region, work)


@contextlib.contextmanager
def no_cycle_collection():
    """Python's cyclic garbage collector paused (restored as it was after): inference allocates
    millions of small acyclic objects (graphs, terms, tuples), and each full collection walks
    all of them; a large plan spent about a quarter of its time there. Reference counting still
    frees everything that is not in a cycle."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def infer(case: Case, seed: int = 0, limits: Limits | None = None,
          progress: Callable[[int, int, str], None] | None = None,
          chain: Callable[[Graph, Graph, Limits], Chain] = Chain, check: Callable | None = None,
          precise: dict | None = None, prepared: direct.Result | None = None) -> Inference:
    """Infer the relation operator by operator; ``progress(done, total, op)`` is told each step.

    ``chain`` makes the prover of the steps (``verifier.stages.run`` defers the proofs); ``check`` decides its
    obligations (default ``refinement.check``; ``symint.check`` for refinement claims, as their replay does) and
    ``precise`` gives the spec's definedness witness its values (``certificates.precise.PRECISE``, as replay);
    ``prepared``: the case already parsed (``direct.prepare``).
    """
    at: list[str] = []   # the spec operator being related, for a LIMIT message

    def step(done: int, total: int, name: str) -> None:
        at[:] = [name]
        if progress:
            progress(done, total, name)
    with no_cycle_collection():
        try:
            return _infer(case, seed, limits, step, chain, check, precise, prepared)
        except LimitExceeded as e:
            if not at:
                raise
            node = next((n for n in case.spec.get("nodes", []) if n.get("name") == at[0]), {})
            tensors = case.spec.get("tensors", {})
            ints = [t for t in node.get("inputs", []) if t and tensors.get(t, {}).get("dtype") in INT_DTYPES]
            raise LimitExceeded(f"{e}, while relating spec operator '{at[0]}' ({node.get('target')}) "
                                f"-> {', '.join(map(str, node.get('outputs', [])))}"
                                + (f"; its integer operands: {', '.join(ints)}" if ints else "")) from None


def _infer(case: Case, seed: int, limits: Limits | None, progress: Callable[[int, int, str], None],
           chain: Callable[[Graph, Graph, Limits], Chain], check: Callable | None, precise: dict | None,
           prepared: direct.Result | None = None) -> Inference:
    limits = limits or Limits()
    start = time.monotonic()
    r = prepared or direct.prepare(case, limits)
    if chain is Chain:   # names and node order do not matter (order.py); a staged run certifies the
        r = canonical(r)   # graphs as given, its reduction being re-derived from them by the checker
    inf = Inference(r, relation={k: list(v) for k, v in r.inputs.items()})
    try:
        s_vals, i_vals = direct.numeric_values(r, seed, limits)
    except direct.ImplFailed as e:
        inf.failure = Failure(None, str(e), {}, {})
        return inf
    prover = chain(r.spec, r.impl, limits, **({"check": check} if check else {}))
    index, region = Index(r.impl, i_vals, _groups(r.impl, r.inputs)), Region(r.impl)
    places = [t for n in r.impl.nodes for t in n.outputs]
    texts = Terms({t: i for i, t in enumerate(r.impl.inputs + places)})
    # Obligations equal up to renaming to one that held are reused without the chain's JSON key;
    # only for the chain itself (a subclass may decide differently, e.g. by value).
    proved = Proved(prover, texts) if type(prover) is Chain else None
    steps = proved or prover
    rel = inf.relation
    memo: dict[tuple, list[Twin]] = {}   # step signature -> earlier steps' equations as patterns
    outputs = set(r.spec.outputs)   # their relations are reported in full: no shortcut
    for k, v in enumerate(r.spec.nodes):
        progress(k, len(r.spec.nodes), v.name)
        ins = [t for t in dict.fromkeys(v.inputs) if t is not None]
        sig, canon = signature(v, ins, rel, region, r.spec, texts)
        outs, found = [], {}
        full = any(o in outputs for o in v.outputs)
        twinned = False
        for hit in [] if full else memo.get(sig, ()):
            guess = dict(zip(v.outputs, hit.guess(canon, region, texts)))
            if not all(guess.values()):
                continue
            outs = []
            if proved is not None:
                # an earlier alike step's equations, renamed: if the obligation is one already
                # decided (same canonical tuple), its outcomes are reused as they are
                found = _shortest(guess, texts)
                outs = proved.reuse(proved.key(rel, v, found), found) or []
            if not outs:
                found = {o: valued(g, index, s_vals[o]) for o, g in guess.items()}
                outs = _prove(steps, rel, v, found, texts) if all(found.values()) else []
            twinned = bool(outs) and all(out.holds for out in outs)
            if twinned:
                break
        for tier in (lambda o: carried(v, o, rel, region, index, s_vals[o]),
                     lambda o: propagated(v, o, rel, region, index, s_vals[o])):
            if outs and all(out.holds for out in outs) or full:
                break
            found = {o: tier(o) for o in v.outputs}
            outs = _prove(steps, rel, v, found, texts) if all(found.values()) else []
        reach, explored, partial = set(), [], bool(outs) and _partial(found)
        if not outs or not all(out.holds for out in outs) or partial:
            frontier = {x for t in ins for e in rel[t] for x in texts.refs(e)}
            reach, explored = region.grow(frontier)
            varying = reach - region.constants   # constants only where nothing else fits
            # (a sum over ranks: the whole region, so that the collective's copies are found too)
            near = {t for x in frontier for n in region.consumers.get(x, ()) if n.target == v.target
                    for t in n.outputs} & reach if len(varying) > NEAR_FIRST and not partial else set()
            # a spec constant is related to the impl's factories first: a value computed from them (a
            # backward seed halved) would put a later step's own result on that step's frontier
            near = near or (region.factories if not ins else set())
            # first without the impl constants the frontier does not name (a backward seed, a zero moment):
            # what reads them does more than ``v`` (a doubled gradient times 1/2 equals the spec's
            # gradient, ``g - 0`` equals ``g``, but each is a later step's result)
            own = region.grow(frontier, region.constants - frontier)[0] - region.constants
            found = {o: (near and index.find(s_vals[o], near, r.spec.tensors[o].is_int))
                     or (own and index.find(s_vals[o], own, r.spec.tensors[o].is_int))
                     or index.find(s_vals[o], varying, r.spec.tensors[o].is_int)
                     or index.find(s_vals[o], reach, r.spec.tensors[o].is_int) for o in v.outputs}
            outs = _prove(steps, rel, v, found, texts) if all(found.values()) else []
        if any(out.holds for out in outs) and len(v.outputs) == 1:
            reach = reach or region.grow({x for t in ins for e in rel[t] for x in texts.refs(e)})[0]
            outs, found = _copies(steps, rel, v, found, outs, index, s_vals, texts, reach)
        term = {texts.text(c): c for cs in found.values() for c in cs}
        for out in outs:
            if out.holds:
                rel.setdefault(out.spec, []).append(term[out.expr])
                inf.outcomes.append(out)
        if not ins:
            for o in v.outputs:
                if o in rel:
                    rel[o] = _disjoint_first(rel[o], texts)
        missing = [o for o in v.outputs if not rel.get(o)]
        if missing:
            tried = {o: [texts.text(c) for c in cs] for o, cs in found.items()}
            for out in outs:
                if not out.holds:
                    tried[out.spec][tried[out.spec].index(out.expr)] += f"  -- {out.failure}"
        if missing and not explored:
            explored = region.grow({x for t in ins for e in rel[t] for x in texts.refs(e)})[1]
        if not missing and not twinned and len(memo.setdefault(sig, [])) < TWINS:
            memo[sig].append(Twin(canon, {o: rel[o] for o in v.outputs}, region, texts))
        if missing:
            inf.failure = Failure(v, f"no clean expression over the impl relates '{missing[0]}'",
                                  {t: [str(e) for e in rel[t]] for t in ins}, tried, explored)
            break
        inf.steps.append(v.name)
    loose = _unbound(r.impl, rel, r.expect, texts, i_vals, limits) if inf.failure is None else None
    if loose:
        (s, e), x = loose
        inf.failure = Failure(None, f"expectation {s} = {e} not met: it is computed from impl input '{x}', "
                                    "which no relation of the outputs names (a copy the steps did not relate)",
                              {t: [str(c) for c in rel[t]] for t in r.expect}, {s: [e]})
    if inf.failure is None:
        for out in prover.prove(rel, None, r.expect):
            if not out.holds:
                found_for = {t: [str(e) for e in rel[t]] for t in r.expect}
                inf.failure = Failure(None, f"expectation {out.spec} = {out.expr} not met: {out.failure}",
                                      found_for, {out.spec: [out.expr]})
                break
            inf.outcomes.append(out)
    if inf.failure is None and any(o.assumed for o in inf.outcomes):  # as the checker's replay
        why = witnessed(r.spec, limits, precise)
        if why:
            inf.failure = Failure(None, why, {}, {})
    inf.obligations, inf.reused = len(prover.cache), prover.reused
    retried = any(not o.holds for outs in prover.cache.values() for o in outs)
    if inf.failure is None and type(prover) is Chain and retried:   # count as replay will (recount.py)
        expected = {**{t: rel[t] for t in r.spec.outputs if t not in r.expect}, **r.expect}
        inf.obligations, inf.reused = replayed_counts(prover, rel, inf.steps, expected)
    inf.seconds = time.monotonic() - start
    return inf
