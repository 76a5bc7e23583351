"""Replay of a ``refinement`` claim: whole-graph evidence (each output equation decided at once) or
per-operator evidence (local obligations chained in topological order by ``Chain``)."""

import itertools
import math
import numpy as np

from . import refinement, solve
from .box import Box, boxes
from .errors import Rejected, Unsupported, fail_if, field
from .graph import Graph, Node, _fail_if, evaluate, require_families
from .limits import DEFAULT, Limits
from .obligations import decide, graph_artifact, integer_ranges, key, obligation, subgraph, summary
from .refinement import Outcome, Relation, check


def reachable_ranges(g: Graph, limits: Limits) -> dict[str, tuple[int, int]]:
    """Exact hulls ``[min, max + 1)`` of the integer tensors computed from integer inputs and constants alone, each over
    the inputs it depends on (``deps``: its joint hull); none past ``limits.max_assignments``, none if a run fails."""
    ints = [t for t in g.inputs if g.tensors[t].is_int]
    doms = {t: (range(*(g.tensors[t].range or (0, 2))), math.prod(g.tensors[t].shape)) for t in ints}
    deps, nodes, hull = {t: frozenset([t]) for t in ints}, [], {}
    for n in g.nodes:
        if all(t is None or t in deps for t in n.inputs) and all(g.tensors[t].is_int for t in n.outputs):
            nodes.append(n)
            deps.update(dict.fromkeys(n.outputs, frozenset().union(*(deps[t] for t in n.inputs if t))))
    for key in set(deps.values()):
        ins = [t for t in ints if t in key]
        if math.prod(len(doms[t][0]) ** doms[t][1] for t in ins) > limits.max_assignments:
            continue
        sub = subgraph(g, "integer nodes", [n for n in nodes if deps[n.outputs[0]] <= key], [], ins)
        for combo in itertools.product(*(itertools.product(doms[t][0], repeat=doms[t][1]) for t in ins)):
            env = {t: np.array(v, dtype=bool if g.tensors[t].dtype == "bool" else np.int64).reshape(g.tensors[t].shape)
                   for t, v in zip(ins, combo)}
            try:
                vals = evaluate(sub, env, False, limits)
            except Unsupported:
                return {}
            for t, v in vals.items():
                if v.size and deps[t] == key:
                    lo, hi = hull.get(t, (int(v.min()), int(v.max()) + 1))
                    hull[t] = (min(lo, int(v.min())), max(hi, int(v.max()) + 1))
    return hull


class Chain:
    """Decides local obligations by ``obligations.decide``, each proved canonical key once (docs/refinement.md)."""

    def __init__(self, spec: Graph, impl: Graph, limits: Limits, check=check) -> None:
        self.spec, self.impl, self.limits, self.check = spec, impl, limits, check   # check: refinement's or symint's
        self.ranges = {**integer_ranges(impl), **reachable_ranges(impl, limits)}   # the tighter where both
        self.cache: dict[str, list[Outcome]] = {}
        self.reused = 0

    def prove(self, rel: Relation, node: Node | None, outputs: Relation) -> list[Outcome]:
        ls, li, rin, rout = obligation(self.spec, self.impl, rel, node, outputs, self.ranges)
        unusable = [t for t, es in rin.items() if not es]
        if unusable:
            why = f"no relation of input '{unusable[0]}' can be used: each names a tensor the cone recomputes"
            return [Outcome(s, str(e), failure=why) for s, es in rout.items() for e in es]
        return decide(ls, li, rin, rout, self.limits, self._decide)

    def _decide(self, ls: Graph, li: Graph, rin: Relation, rout: Relation) -> list[Outcome]:
        k = key(ls, li, rin, rout)
        cached = self.cache.get(k)
        if cached is not None and all(c.holds for c in cached):
            self.reused += 1  # the same statement modulo renaming, under this step's names
            pairs = [(s, str(e)) for s, es in rout.items() for e in es]
            return [Outcome(s, e, c.elements, dict(c.methods)) for (s, e), c in zip(pairs, cached)]
        out = self.check(ls, li, rin, rout, self.limits, strict=False, defined=witnessed, solver=solve)
        self.cache[k] = out
        return out



def witnessed(spec: Graph, limits: Limits = DEFAULT, precise: dict | None = None) -> str | None:
    """``refinement.spec_defined`` on enclosing intervals (certificates/box.py, by ``precise`` values where given)."""
    return refinement.spec_defined(spec, limits, enclose=(Box, lambda: boxes(precise)))


# ---------------------------------------------------------------- replay of refinement claims

def replay_refinement(claim: dict, evidence: dict, arts: dict, where: str, limits: Limits, families: tuple[str, ...],
                      spec: Graph | None = None, under: str = "", check=check, precise=None) -> str:
    """Replay a refinement claim whose operators are all of ``families``, deciding obligations by ``check`` (the
    spec's definedness with ``precise`` values); ``spec``: rewritten by the claim's approximations (``approx``)."""
    if spec is None:
        fail_if(claim.get("approximations"), Rejected, "approximations are not allowed in this claim")
        spec = graph_artifact(arts, claim.get("spec"), where, limits)
    impl = graph_artifact(arts, claim.get("impl"), where, limits)
    require_families(families, where, spec, impl)
    rin = refinement.parse_relation(claim.get("input_relation"), spec, impl, f"{where}: input_relation", True, limits)
    rout = refinement.parse_relation(claim.get("output_relation"), spec, impl,
                                     f"{where}: output_relation", False, limits)
    unrelated = [t for t in spec.outputs if t not in rout]
    fail_if(unrelated, Rejected, f"the claim does not relate spec output '{unrelated and unrelated[0]}'")
    method = evidence.get("method")
    fail_if(method not in ("whole-graph", "per-operator"), Rejected, f"evidence method {method!r} is not known to this checker")
    detail = _whole_graph(spec, impl, rin, rout, evidence, where, limits) if method == "whole-graph" else \
        _per_operator(spec, impl, rin, rout, evidence, where, limits, check, precise)
    return f"{spec.name} refined by {impl.name}{under}: {detail}"


def _whole_graph(spec: Graph, impl: Graph, rin, rout, evidence: dict, where: str, limits: Limits) -> str:
    claimed = {}
    for o in field(evidence, "obligations", list, where):
        key = (field(o, "spec", str, f"{where}: obligation"), field(o, "expr", str, f"{where}: obligation"))
        claimed[key] = field(o, "elements", int, f"{where}: obligation {key[0]} = {key[1]}")
    derived = {(s, str(t)) for s, ts in rout.items() for t in ts}
    if set(claimed) != derived:
        extra = sorted(map(str, set(claimed) ^ derived))[:1]
        raise Rejected(f"evidence obligations do not match the claim's output relation: {extra}")
    outcomes = refinement.check(spec, impl, rin, rout, limits, defined=witnessed, solver=solve)
    for o in outcomes:
        fail_if(not o.holds, Rejected, o.failure)
        if claimed[(o.spec, o.expr)] != o.elements:
            raise Rejected(f"evidence says {claimed[(o.spec, o.expr)]} elements for {o.spec} = {o.expr}, "
                           f"replay found {o.elements}")
    return f"{len(outcomes)} equations, {summary(outcomes)}"


def _per_operator(spec: Graph, impl: Graph, rin, rout, evidence: dict, where: str, limits: Limits, check=check,
                  precise=None) -> str:
    """Check the chain: order, completeness, every local obligation, then the expectation."""
    found = refinement.parse_relation(field(evidence, "relation", dict, where), spec, impl,
                                      f"{where}: evidence relation", False, limits)
    for t in found:
        _fail_if(t in spec.inputs, where, f"evidence relation redefines spec input '{t}'")
    rel = {**rin, **found}
    steps = field(evidence, "steps", list, where)
    _fail_if(not all(isinstance(s, str) for s in steps), where, "evidence steps must be spec operator names")
    by_name = {n.name: n for n in spec.nodes}
    if sorted(steps) != sorted(by_name):
        missing = sorted(set(by_name) - set(steps))
        raise Rejected(f"steps do not list every spec operator exactly once"
                       f"{': missing ' + repr(missing[0]) if missing else ''}")
    known, prover, outcomes = set(spec.inputs), Chain(spec, impl, limits, check), []
    for name in steps:
        node = by_name[name]
        for t in node.inputs:
            if t is not None and t not in known:
                raise Rejected(f"step '{name}' uses '{t}' before the step that produces it")
        for t in node.outputs:
            fail_if(t not in rel, Rejected, f"relation incomplete: no clean expression for '{t}' (output of '{name}')")
            known.add(t)
        for o in prover.prove(rel, node, {t: rel[t] for t in node.outputs}):
            fail_if(not o.holds, Rejected, f"step '{name}' ({node.target}): {o.failure}")
            outcomes.append(o)
    # rel covers rout: every spec tensor is an input (all in rin: parse_relation) or a node's output (parse_graph),
    # each of which the loop above found in rel
    for o in prover.prove(rel, None, rout):
        fail_if(not o.holds, Rejected, f"expectation not met: {o.failure}")
        outcomes.append(o)
    # each step assumed its operator's conditions: all at once
    fail_if(why := any(o.assumed for o in outcomes) and witnessed(spec, limits, precise), Rejected, why)
    return f"{len(steps)} steps, {len(prover.cache)} distinct obligations ({prover.reused} reused), {summary(outcomes)}"
