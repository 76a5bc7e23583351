"""Replay of a ``staged-refinement`` claim: a refinement of the FULL graphs, proved at reduced shapes
(the four checks: docs/stages.md, "pvcert replay")."""

import hashlib

from . import graph, obligations, ops_grad, refinement, shapes  # noqa: F401 (its operators: graph.CORE)
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


def replay_staged(claim: dict, evidence: dict, arts: dict, where: str, limits: Limits) -> str:
    """Check a staged refinement claim; raises ``Rejected`` with the reason."""
    spec = obligations.graph_artifact(arts, field(claim, "spec", str, where), where, limits)
    impl = obligations.graph_artifact(arts, field(claim, "impl", str, where), where, limits)
    graph.require_families(graph.CORE, where, spec, impl)
    rels = {"input": refinement.parse_relation(claim.get("input_relation"), spec, impl,
                                               f"{where}: input_relation", True, limits),
            "output": refinement.parse_relation(claim.get("output_relation"), spec, impl,
                                                f"{where}: output_relation", False, limits)}
    unrelated = [t for t in spec.outputs if t not in rels["output"]]
    if unrelated:
        raise Rejected(f"the claim does not relate spec output '{unrelated[0]}'")
    fail_if(evidence.get("method") != "staged", Rejected, f"evidence method {evidence.get('method')!r} is not 'staged'")
    classes = field(field(evidence, "reduction", dict, where), "classes", list, where)
    try:
        rspec, rimpl, red, out = shapes.reduce(arts[claim["spec"]][1], arts[claim["impl"]][1], spec, impl, rels,
                                               classes, where, limits)
    except shapes.Unjustified as e:
        raise Rejected(f"reduction not justified: {e}") from None
    hashes = field(evidence, "reduced_sha256", dict, where)
    for side in ("spec", "impl"):
        if hashes.get(side) != hashlib.sha256(canonical_bytes(out[side])).hexdigest():
            raise Rejected(f"the reduced {side} graph derived from the reduction has another sha256")
    found = refinement.parse_relation(field(evidence, "relation", dict, where), rspec, rimpl,
                                      f"{where}: evidence relation", False, limits)
    fail_if(set(found) & set(rspec.inputs), Malformed, where, "evidence relation redefines a spec input")
    rel = {**red["input"], **found}
    raw = field(evidence, "stages", list, where)
    stages = [_stage(s, i, where) for i, s in enumerate(raw)]
    by_name = {n.name: n for n in rspec.nodes}
    steps = [op for op, *_ in stages[:-1]]
    if not stages or stages[-1][0] is not None or len(set(steps)) != len(steps) or set(steps) != set(by_name):
        raise Rejected("stages must list every spec operator exactly once, then the expectations (null)")
    known, ranges = set(rspec.inputs), obligations.integer_ranges(rimpl)
    keys: list[str] = []
    outcomes: list = []
    for i, (op, by, elements, digest) in enumerate(stages):
        node, at = by_name.get(op), f"stage #{i} ({op or 'expectations'})"
        if node is None:
            goal = red["output"]
            missing = [t for t in goal if t not in rel]
        else:
            missing = [t for t in node.inputs if t is not None and t not in known]
            known.update(node.outputs)
            goal = {t: rel[t] for t in node.outputs if t in rel}
            missing += [t for t in node.outputs if t not in rel]
        if missing:
            raise Rejected(f"{at}: '{missing[0]}' is not related before it")
        ls, li, rin, rout = obligations.obligation(rspec, rimpl, rel, node, goal, ranges)
        keys.append(hashlib.sha256(obligations.key(ls, li, rin, rout).encode()).hexdigest())
        fail_if(keys[i] != digest, Rejected, f"{at}: its key is not the key of its obligation")
        if by != i:
            fail_if(stages[by][1] != by or keys[by] != keys[i] or stages[by][2] != elements, Rejected,
                    f"{at} is not the same obligation as stage #{by}, which is said to prove it")
            continue
        fail_if(any(not es for es in rin.values()), Rejected, f"{at}: an input relation cannot be used")
        outs = obligations.decide(ls, li, rin, rout, limits)
        bad = next((o for o in outs if not o.holds), None)
        if bad:
            raise Rejected(f"{at}: {bad.failure}")
        found_elements = sum(o.elements for o in outs)
        fail_if(found_elements != elements, Rejected,
                f"stage #{i}: evidence says {elements} elements, replay found {found_elements}")
        outcomes += outs
    # stages assumed their operators' conditions: all at once, at full size
    if any(o.assumed for o in outcomes) and (why := refinement.spec_defined(spec, limits)):
        raise Rejected(why)
    reps = sum(1 for i, s in enumerate(stages) if s[1] == i)
    return (f"{spec.name} refined by {impl.name} at reduced shapes ({shapes.volume(rspec) + shapes.volume(rimpl)} "
            f"of {shapes.volume(spec) + shapes.volume(impl)} elements): {len(stages)} stages, {reps} proved, "
            f"{len(stages) - reps} matched, {obligations.summary(outcomes)}")
