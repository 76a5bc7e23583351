"""Replay of a ``staged-refinement`` claim: a refinement of the FULL graphs, proved at reduced shapes
(the four checks: docs/stages.md, "pvcert replay")."""

import hashlib
import itertools

from . import graph, obligations, ops_grad, refinement, shapes  # noqa: F401 (its operators: graph.CORE)
from .graph import Graph
from .errors import Malformed, Rejected, fail_if, field
from .limits import Limits, canonical_bytes


def _stage(s, i: int, where: str) -> tuple:
    w = f"{where}: stage #{i}"
    if not isinstance(s, dict) or not (s.get("op") is None or isinstance(s.get("op"), str)):
        raise Malformed(w, "needs 'op' (a spec operator name, or null for the expectations)")
    by, elements, key = s.get("proved_by"), s.get("elements"), s.get("key")
    if isinstance(by, bool) or not isinstance(by, int) or not 0 <= by <= i:
        raise Malformed(w, f"'proved_by' must be the index of this or an earlier stage, not {by!r}")
    if isinstance(elements, bool) or not isinstance(elements, int) or not isinstance(key, str):
        raise Malformed(w, "needs an int 'elements' and a string 'key'")
    return s["op"], by, elements, key


class Reduced:
    """A checked reduction of the graphs and relations ``rels`` (input, output, evidence) by ``classes``."""

    def __init__(self, jsons: tuple[dict, dict], spec: Graph, impl: Graph, rels: dict, classes: list, where: str,
                 limits: Limits) -> None:
        self.args, self.variants = (*jsons, spec, impl, rels, classes, where, limits), {}
        self.C = shapes.constraints(spec, impl, rels)
        self.ranges = obligations.integer_ranges(self.at(frozenset())[1])   # classes validated there
        self.classes = {tuple(a): i for i, c in enumerate(classes) if c.get("second") for a in c["axes"]}

    def at(self, second: frozenset) -> tuple:   # the classes numbered in ``second`` at their second divisor
        if second not in self.variants:
            self.variants[second] = shapes.reduce(*self.args, second=second, C=self.C)
        return self.variants[second]

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
        summed = sorted({self.classes[a] for side, g in local for n in g.nodes
                         for a in self.C.sums.get((side, n.name), ()) if a in self.classes})
        for i in summed:
            why = shapes.affine(self.C, {a for a, k in self.classes.items() if k == i}, *local)
            fail_if(why, shapes.Unjustified, f"reduction class #{i}: summed, not affinely at {why}", i)
        subsets = [frozenset(c) for k in range(1, len(summed) + 1) for c in itertools.combinations(summed, k)]
        return [main] + [at(s) for s in subsets]


def key(obls: list[tuple]) -> str:
    return hashlib.sha256("".join(obligations.key(*o) for o in obls).encode()).hexdigest()


def replay_staged(claim: dict, evidence: dict, arts: dict, where: str, limits: Limits) -> str:
    """Check a staged refinement claim; raises ``Rejected`` with the reason."""
    spec = obligations.graph_artifact(arts, field(claim, "spec", str, where), where, limits)
    impl = obligations.graph_artifact(arts, field(claim, "impl", str, where), where, limits)
    graph.require_families(graph.CORE, where, spec, impl)
    rels = {"input": refinement.parse_relation(claim.get("input_relation"), spec, impl,
                                               f"{where}: input_relation", True, limits),
            "output": refinement.parse_relation(claim.get("output_relation"), spec, impl,
                                                f"{where}: output_relation", False, limits),
            "evidence": refinement.parse_relation(field(evidence, "relation", dict, where), spec, impl,
                                                  f"{where}: evidence relation", False, limits)}
    fail_if(set(rels["evidence"]) & set(spec.inputs), Malformed, where, "evidence relation redefines a spec input")
    unrelated = [t for t in spec.outputs if t not in rels["output"]]
    if unrelated:
        raise Rejected(f"the claim does not relate spec output '{unrelated[0]}'")
    fail_if(evidence.get("method") != "staged", Rejected, f"evidence method {evidence.get('method')!r} is not 'staged'")
    classes = field(field(evidence, "reduction", dict, where), "classes", list, where)
    stages = [_stage(s, i, where) for i, s in enumerate(field(evidence, "stages", list, where))]
    try:
        R = Reduced((arts[claim["spec"]][1], arts[claim["impl"]][1]), spec, impl, rels, classes, where, limits)
        rspec, rimpl, red, out = R.at(frozenset())
        hashes = field(evidence, "reduced_sha256", dict, where)
        for side in ("spec", "impl"):
            if hashes.get(side) != hashlib.sha256(canonical_bytes(out[side])).hexdigest():
                raise Rejected(f"the reduced {side} graph derived from the reduction has another sha256")
        outcomes = _stages(R, stages, limits)
    except shapes.Unjustified as e:
        raise Rejected(f"reduction not justified: {e.args[0]}") from None
    # stages assumed their operators' conditions: all at once, at full size
    if any(o.assumed for o in outcomes) and (why := refinement.spec_defined(spec, limits)):
        raise Rejected(why)
    reps = sum(1 for i, s in enumerate(stages) if s[1] == i)
    return (f"{spec.name} refined by {impl.name} at reduced shapes ({shapes.volume(rspec) + shapes.volume(rimpl)} "
            f"of {shapes.volume(spec) + shapes.volume(impl)} elements): {len(stages)} stages, {reps} proved, "
            f"{len(stages) - reps} matched, {obligations.summary(outcomes)}")


def _stages(R: Reduced, stages: list[tuple], limits: Limits) -> list:
    """Check the stages (docs/stages.md, "pvcert replay", steps 2-4); the outcomes of those proved."""
    rspec, _, red, _ = R.at(frozenset())
    rel, by_name = {**red["input"], **red["evidence"]}, {n.name: n for n in rspec.nodes}
    steps = [op for op, *_ in stages[:-1]]
    if not stages or stages[-1][0] is not None or len(set(steps)) != len(steps) or set(steps) != set(by_name):
        raise Rejected("stages must list every spec operator exactly once, then the expectations (null)")
    known, keys, outcomes = set(rspec.inputs), [], []
    for i, (op, by, elements, digest) in enumerate(stages):
        node, at = by_name.get(op), f"stage #{i} ({op or 'expectations'})"
        if node is None:
            missing = [t for t in red["output"] if t not in rel]
        else:
            missing = [t for t in node.inputs if t is not None and t not in known]
            known.update(node.outputs)
            missing += [t for t in node.outputs if t not in rel]
        if missing:
            raise Rejected(f"{at}: '{missing[0]}' is not related before it")
        obls = R.obligations(op)
        keys.append(key(obls))
        fail_if(keys[i] != digest, Rejected, f"{at}: its key is not the key of its obligation")
        if by != i:
            fail_if(stages[by][1] != by or keys[by] != keys[i] or stages[by][2] != elements, Rejected,
                    f"{at} is not the same obligation as stage #{by}, which is said to prove it")
            continue
        found = 0
        for ls, li, rin, rout in obls:
            fail_if(any(not es for es in rin.values()), Rejected, f"{at}: an input relation cannot be used")
            outs = obligations.decide(ls, li, rin, rout, limits)
            bad = next((o for o in outs if not o.holds), None)
            if bad:
                raise Rejected(f"{at}: {bad.failure}")
            found += sum(o.elements for o in outs)
            outcomes += outs
        fail_if(found != elements, Rejected, f"stage #{i}: evidence says {elements} elements, replay found {found}")
    return outcomes
