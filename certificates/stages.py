"""Replay of a ``staged-refinement`` claim: a refinement of the FULL graphs, proved at reduced shapes
(the four checks: docs/stages.md, "pvcert replay")."""

import dataclasses
import functools
import hashlib
import itertools

from . import graph, obligations, ops_grad, refinement, shapes  # noqa: F401 (its operators: graph.CORE)
from .graph import Graph
from .errors import Malformed, Rejected, fail_if, field
from .limits import Limits


def _stage(s, i: int, where: str) -> tuple:
    op, by, key = [s.get(k) for k in ("op", "proved_by", "key")] if isinstance(s, dict) else [0] * 3
    if not (op is None or isinstance(op, str)) or type(by) is not int or not 0 <= by <= i or not isinstance(key, str):
        raise Malformed(f"{where}: stage #{i}", "needs 'op' (a spec operator, or null for the expectations), "
                                                "'proved_by' (this or an earlier stage) and a string 'key'")
    return op, by, key


class Reduced:
    """A checked reduction of the graphs and relations ``rels`` (input, output, evidence) by ``classes``."""

    def __init__(self, jsons: tuple[dict, dict], spec: Graph, impl: Graph, rels: dict, classes: list, where: str,
                 limits: Limits) -> None:
        C = self.C = shapes.constraints(spec, impl, rels)
        # ``at(second)``: the reduced graphs and relations, the classes numbered in ``second`` at their second divisor
        self.at = functools.cache(lambda second: shapes.reduce(*jsons, spec, impl, rels, classes, where, limits,
                                                               second=second, C=C))
        self.ranges = obligations.integer_ranges(self.at(frozenset())[1])   # classes validated there
        self.classes = {tuple(a): i for i, c in enumerate(classes) if c.get("second") for a in c["axes"]}

    def obligations(self, op: str | None) -> list[tuple]:
        """The stage of ``op`` (None: the expectations): its obligation, then again for each set of the classes
        it sums over at their second divisor (docs/stages.md, "Summed axes")."""
        def at(second: frozenset) -> tuple:
            rspec, rimpl, red, _ = self.at(second)
            rel, node = {**red["input"], **red["evidence"]}, next((n for n in rspec.nodes if n.name == op), None)
            goal = red["output"] if node is None else {t: rel[t] for t in node.outputs if t in rel}
            return obligations.obligation(rspec, rimpl, rel, node, goal, self.ranges)
        main = at(frozenset())
        local = (("spec", main[0]), ("impl", main[1]))
        sums = {a for side, g in local for n in g.nodes for a in self.C.sums.get((side, n.name), ())}
        lone = [a for a in sums - set(self.classes) if dict(local)[a[0]].tensors[a[1]].shape[a[2]] != self.C.size[a]]
        fail_if(lone, shapes.Unjustified, f"axis {lone and list(lone[0])} is summed: reduced only with a second divisor")
        summed = sorted({self.classes[a] for a in sums & set(self.classes)})
        for i in summed:
            why = shapes.affine(self.C, {a for a, k in self.classes.items() if k == i}, *local)
            fail_if(why, shapes.Unjustified, f"reduction class #{i}: summed, not affinely at {why}", i)
        subsets = [frozenset(c) for k in range(1, len(summed) + 1) for c in itertools.combinations(summed, k)]
        return [main] + [at(s) for s in subsets]


def key(obls: list[tuple]) -> str:
    return hashlib.sha256("".join(obligations.key(*o) for o in obls).encode()).hexdigest()


def replay_staged(claim: dict, evidence: dict, arts: dict, where: str, limits: Limits) -> str:
    """Check a staged refinement claim; raises ``Rejected`` with the reason."""
    big = dataclasses.replace(limits, max_elements=limits.max_elements << 20)   # the full graphs: their shapes only
    spec, impl = (obligations.graph_artifact(arts, field(claim, k, str, where), where, big) for k in ("spec", "impl"))
    graph.require_families(graph.CORE, where, spec, impl)
    rels = {k: refinement.parse_relation(v, spec, impl, f"{where}: {k} relation", k == "input", limits) for k, v in
            (("input", claim.get("input_relation")), ("output", claim.get("output_relation")),
             ("evidence", field(evidence, "relation", dict, where)))}
    fail_if(set(rels["evidence"]) & set(spec.inputs), Malformed, where, "evidence relation redefines a spec input")
    unrelated = [t for t in spec.outputs if t not in rels["output"]]
    fail_if(unrelated, Rejected, f"the claim does not relate spec output '{unrelated and unrelated[0]}'")
    fail_if(evidence.get("method") != "staged", Rejected, f"evidence method {evidence.get('method')!r} is not 'staged'")
    classes = field(field(evidence, "reduction", dict, where), "classes", list, where)
    stages = [_stage(s, i, where) for i, s in enumerate(field(evidence, "stages", list, where))]
    try:
        R = Reduced((arts[claim["spec"]][1], arts[claim["impl"]][1]), spec, impl, rels, classes, where, limits)
        rspec, rimpl = R.at(frozenset())[:2]
        outcomes = _stages(R, stages, limits)
    except shapes.Unjustified as e:
        raise Rejected(f"reduction not justified: {e.args[0]}") from None
    # stages assumed their operators' conditions: all at once, at full size
    if any(o.assumed for o in outcomes) and (why := refinement.spec_defined(spec, limits)):
        raise Rejected(why)
    reps = sum(1 for i, s in enumerate(stages) if s[1] == i)
    twice = sum(1 for c in classes if c.get("second"))
    return (f"{spec.name} refined by {impl.name} at reduced shapes ({len(classes)} classes of axes divided, {twice} "
            f"also at a second divisor): {len(stages)} stages, {reps} proved, "
            f"{len(stages) - reps} matched, {obligations.summary(outcomes)}")


def _stages(R: Reduced, stages: list[tuple], limits: Limits) -> list:
    """Check the stages (docs/stages.md, "pvcert replay", steps 2-4): one per operator of the reduced spec, in its
    order, then the expectations; every spec tensor related. Returns the outcomes of the stages proved."""
    rspec, _, red, _ = R.at(frozenset())
    fail_if([op for op, *_ in stages] != [n.name for n in rspec.nodes] + [None], Rejected,
            "stages must list every spec operator in the order of the graph, then the expectations (null)")
    missing = [t for t in rspec.tensors if t not in red["input"] and t not in red["evidence"]]
    fail_if(missing, Rejected, f"spec tensor '{missing and missing[0]}' is not related")
    keys, outcomes = [], []
    for i, (op, by, digest) in enumerate(stages):
        at, obls = f"stage #{i} ({op or 'expectations'})", R.obligations(op)
        keys.append(key(obls))
        fail_if(keys[i] != digest, Rejected, f"{at}: its key is not the key of its obligation")
        if by != i:
            fail_if(stages[by][1] != by or keys[by] != keys[i], Rejected,
                    f"{at} is not the same obligation as stage #{by}, which is said to prove it")
            continue
        for ls, li, rin, rout in obls:
            fail_if(any(not es for es in rin.values()), Rejected, f"{at}: an input relation cannot be used")
            outs = obligations.decide(ls, li, rin, rout, limits)
            bad = next((o for o in outs if not o.holds), None)
            if bad:
                raise Rejected(f"{at}: {bad.failure}")
            outcomes += outs
    return outcomes
