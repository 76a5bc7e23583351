"""Replay of a ``staged-refinement`` claim about the FULL graphs: one stage per spec operator, held by congruence or
decided at shapes the checker reduces it to (docs/stages.md, "pvcert replay")."""

import dataclasses
import hashlib
import itertools
import math

import numpy as np

from . import graph, obligations, ops_grad, ops_index, refinement, shapes, terms  # noqa: F401 (its operators: STAGED)
from .graph import Graph, Node
from .errors import CheckError, Malformed, Rejected, fail_if, field
from .limits import Limits
from .ops import _red_dims
from .refinement import Outcome, Relation


def _stage(s, i: int, where: str) -> tuple:
    op, by, key = [s.get(k) for k in ("op", "proved_by", "key")] if isinstance(s, dict) else [0] * 3
    fail_if(not (op is None or isinstance(op, str)) or type(by) is not int or not 0 <= by <= i or type(key) is not str,
            Malformed, f"{where}: stage #{i}", "needs 'op' (a spec operator or null), 'proved_by' (<= #) and a 'key'")
    return op, by, key


# Operators defined at every float input (no side condition, no error; a norm's ``eps`` > 0): a stage held by
# congruence on any other operator holds where the spec node is defined, so it assumes that
# (agda/Composition/Congruence.agda, ``stage``; docs/stages.md, "Stages held by congruence").
TOTAL = set("""add sub rsub mul neg clone alias detach contiguous lift_fresh_copy view _unsafe_view reshape permute
transpose t expand unsqueeze squeeze slice cat split split_with_sizes mm bmm addmm linear matmul sum mean gelu relu
gelu_backward threshold_backward wait_tensor exp tanh sigmoid silu silu_backward _softmax softmax _log_softmax
log_softmax _softmax_backward_data native_layer_norm layer_norm rms_norm native_layer_norm_backward cos sin""".split())
STAGED = graph.CORE + ("ops_index",)   # the operator families a staged claim trusts: in-graph positions and masks too
LOOKUPS = ("aten.embedding.default", "aten.embedding_dense_backward.default")   # total where the indices are rows


def constants(spec: Graph, limits: Limits) -> dict:
    """The spec's tensors made from no input (in-graph positions and masks), evaluated exactly at full size: integers
    and booleans, and real tensors within ``limits``; a node that fails to evaluate is left out (it assumes)."""
    known, big = {}, dataclasses.replace(limits, max_elements=limits.max_elements << 6)
    for n in spec.nodes:
        if all(t is None or t in known for t in n.inputs) and all(math.prod(spec.tensors[t].shape) <= (
                big if spec.tensors[t].is_int else limits).max_elements for t in n.outputs):
            try:
                known.update(graph.evaluate(obligations.subgraph(spec, n.name, [n], n.outputs),
                                            {t: known[t] for t in n.inputs if t}, True, big))
            except (CheckError, ArithmeticError, ValueError):
                continue
    return known


def _masked_sum(spec: Graph, t: str, known: dict) -> bool:
    """``t = sum(where(mask, exp(x), full(0)), dims)`` with a known mask true in every row along ``dims``: > 0 (a sum of
    exponentials, one at least; agda/Composition/Positivity.agda ``positive``), as SDPA's masked softmax divides by."""
    s = spec.producer.get(t)
    w = s and s.target == "aten.sum.dim_IntList" and spec.producer.get(s.inputs[0])
    e, z = (spec.producer.get(x) for x in w.inputs[1:]) if w and w.target == "aten.where.self" else (None, None)
    if not (e and e.target == "aten.exp.default" and z and z.target == "aten.full.default" and z.attrs["fill_value"] == 0
            and w.inputs[0] in known):
        return False
    shape = spec.tensors[w.outputs[0]].shape
    return bool(np.broadcast_to(known[w.inputs[0]], shape).any(axis=tuple(_red_dims(s.attrs, len(shape)))).all())


def _pos(*vs) -> bool:
    return all(type(v) in (int, float, bool) and v > 0 for v in vs)


def evident(spec: Graph, node: Node, known: dict) -> bool:
    """Whether ``node``'s side condition holds at every input, by its form (agda/Composition/Positivity.agda): made from
    no input and evaluated (``known``); a finite constant or padding; ``x^k`` with k in N; a division by a constant > 0
    or by a masked sum of exponentials (``_masked_sum``); ``rsqrt(m + eps)``, ``m`` a mean or sum of ``x^2`` over a
    nonempty axis (``rms``)."""
    a, p = node.full_attrs(False), [node]
    if node.outputs and all(t in known for t in node.outputs):
        return True
    if node.target == "aten.pow.Tensor_Scalar":
        return type(k := a["exponent"]) in (int, float) and k >= 0 and float(k).is_integer()
    if node.target in ("aten.full.default", "aten.constant_pad_nd.default"):   # a constant, or padding by one
        return type(v := a.get("fill_value", a.get("value"))) in (int, float, bool) and math.isfinite(v)
    if node.target in ("aten.div.Scalar", "aten.div.Tensor"):
        return _masked_sum(spec, node.inputs[1], known) if node.inputs[1:] and node.inputs[1] else _pos(a["other"])
    for t in ("aten.rsqrt.default", "aten.add.Tensor", "aten.mean.dim aten.sum.dim_IntList"):   # an RMS norm's
        p.append(p[-1] and p[-1].target in t.split() and len(p[-1].inputs) == 1 and spec.producer.get(p[-1].inputs[0]))
    return bool(p[3]) and p[3].target == "aten.pow.Tensor_Scalar" and p[3].attrs["exponent"] == 2 and _pos(
        *map(p[1].full_attrs(False).get, ("other", "alpha"))) and 0 not in spec.tensors[p[2].inputs[0]].shape


def held(ls: Graph, rout: Relation, shown: bool = False) -> list[Outcome]:   # a congruence: assuming the spec node
    node, a = ls.nodes[0], ls.nodes[0].full_attrs(False)                       # defined unless TOTAL or ``shown``
    lookup = node.op.target in LOOKUPS and (r := ls.tensors[node.inputs[1]].range) is not None and 0 <= r[0] and \
        r[1] <= a.get("num_weights", ls.tensors[node.inputs[0]].shape[0])   # every index a row
    partial = not (lookup or shown) and (node.target.split(".")[1] not in TOTAL or any(v.is_int for v in ls.tensors.values())
                                         or any(0 in ls.tensors[x].shape for x in node.inputs if x)) \
        or (eps := a.get("eps")) is not None and not (type(eps) in (int, float) and eps > 0)   # a mean of nothing: 0/0
    return [Outcome(t, str(e), n := math.prod(ls.tensors[t].shape), {"congruence": n}, assumed=partial)
            for t, es in rout.items() for e in es]


def _long(g: Graph, n: Node, d: int) -> bool:   # axis d of every operand and result there, as long (uncut)
    return 0 <= d and len(S := {g.tensors[x].shape[d:d + 1] for x in n.inputs + n.outputs if x}) == 1 and () not in S


def _along(node: Node, ls: Graph, d: int) -> bool:
    """Whether axis ``d`` is one map axis of the node's rule, uncut and as long everywhere: pieces commute."""
    C = shapes.constraints(ls, ls, {})
    cls, axes = C.divisor_classes(), [("spec", x, d) for x in node.inputs + node.outputs if x]
    bad = set(C.pins) | {a for s in C.sums.values() for a in s} | {a for a, _, _ in C.scaled}
    return _long(ls, node, d) and all(cls[a] == cls[axes[0]] for a in axes) and \
        not any(cls.get(a) == cls[axes[0]] for a in bad)


def congruent(node: Node, ls: Graph, li: Graph, rin: Relation, rout: Relation) -> bool:
    """Whether each goal ``t = u`` (or ``concat(u_0, ..., dim=d)``, ``d`` a map axis) names impl tensors made by the
    node's plain operator and attributes, in ``t``'s place, from tensors the hypotheses equate to its inputs in
    their places (the same concat), of the spec's dtypes (agda/Composition/Congruence.agda)."""
    for t, es in rout.items():
        for e in es:
            d, us = (None, [e.name]) if isinstance(e, terms.Ref) else (dict(e.kw)["dim"], [a.name for a in e.args]) \
                if e.fn == "concat" and all(isinstance(a, terms.Ref) for a in e.args) else (None, [])
            ms = [li.producer.get(u) for u in us]
            if not us or node.op.collective or d is not None and not _along(node, ls, d) or not all(
                    m and (m.target, m.attrs) == (node.target, node.attrs) and len(m.inputs) == len(node.inputs)
                    and m.outputs.index(u) == node.outputs.index(t) and li.tensors[u].dtype == ls.tensors[t].dtype
                    and (d is None or _long(li, m, d))
                    and all((a is None) == (b is None) and (a is None or li.tensors[b].dtype == ls.tensors[a].dtype)
                            for a, b in zip(node.inputs, m.inputs)) for m, u in zip(ms, us)):
                return False
            for p, a in enumerate(node.inputs):
                pieces = tuple(terms.Ref(m.inputs[p]) for m in ms)
                if a is not None and (pieces[0] if d is None else terms.Call("concat", pieces, (("dim", d),))) \
                        not in rin.get(a, []):
                    return False
    return bool(rout)


def stage(spec: Graph, impl: Graph, rel: Relation, claimed: Relation, op: str | None, ranges: dict, where: str,
          limits: Limits, known: dict) -> tuple[str, list[tuple]]:
    """The stage of ``op`` (None: the expectations): held by congruence, or reduced (docs/stages.md) at each corner;
    ``known``: the spec's ``constants``."""
    node = spec.nodes[spec.position[op]] if op is not None else None
    goal = claimed if node is None else {t: rel[t] for t in node.outputs if t in rel}
    ls, li, rin, rout = obligations.obligation(spec, impl, rel, node, goal, ranges)
    if node is not None and congruent(node, ls, li, rin, rout):   # its key: whether ``evident``
        return "congruence" + " (evident)" * evident(spec, node, known), [(ls, li, rin, rout)]
    if any(not es for es in rin.values()):   # refused as it is
        return "reduced", [(ls, li, rin, rout)]
    C = shapes.constraints(ls, li, {"input": rin, "output": rout})
    cls = C.divisor_classes()
    for root in {cls[a] for axes in C.sums.values() for a in axes}:
        if why := shapes.affine(C, members := {a for a, r in cls.items() if r == root}, ("spec", ls), ("impl", li)):
            C.pin_all(members, f"summed, not affinely at {why}")
    shapes.indexed(C, cls, (("spec", ls), ("impl", li)), {"input": rin, "output": rout})
    div = shapes.solve(C)
    summed = sorted({cls[a] for a, (_, second) in div.items() if second})
    out = []
    for k in range(len(summed) + 1):
        for corner in itertools.combinations(summed, k):
            rs, ri, red = shapes.reduce(ls, li, {"input": rin, "output": rout}, C, {
                a: d[1] if cls[a] in corner else d[0] for a, d in div.items()}, where, limits)
            out.append((rs, ri, red["input"], red["output"]))
    return "reduced", out


def decide(ls: Graph, li: Graph, rin: Relation, rout: Relation, limits: Limits) -> list:
    """A reduced stage's obligation, by normal forms alone (``refinement.check`` without a solver): staged claims trust
    no prover and refute nothing (the engine's full-size run executes counterexamples)."""
    return obligations.decide(ls, li, rin, rout, limits)


def key(how: str, obls: list[tuple]) -> str:
    return hashlib.sha256((how + "".join(obligations.key(*o) for o in obls)).encode()).hexdigest()


def replay_staged(claim: dict, evidence: dict, arts: dict, where: str, limits: Limits) -> str:
    """Check a staged refinement claim; raises ``Rejected`` with the reason."""
    big = dataclasses.replace(limits, max_elements=limits.max_elements << 20)   # the full graphs: their shapes only
    spec, impl = (obligations.graph_artifact(arts, field(claim, k, str, where), where, big) for k in ("spec", "impl"))
    graph.require_families(STAGED, where, spec, impl)
    rels = {k: refinement.parse_relation(v, spec, impl, f"{where}: {k} relation", k == "input", limits) for k, v in
            (("input", claim.get("input_relation")), ("output", claim.get("output_relation")),
             ("evidence", field(evidence, "relation", dict, where)))}
    fail_if(set(rels["evidence"]) & set(spec.inputs), Malformed, where, "evidence relation redefines a spec input")
    unrelated = [t for t in spec.outputs if t not in rels["output"]]
    fail_if(unrelated, Rejected, f"the claim does not relate spec output '{unrelated and unrelated[0]}'")
    fail_if(evidence.get("method") != "staged", Rejected, f"evidence method {evidence.get('method')!r} is not 'staged'")
    stages = [_stage(s, i, where) for i, s in enumerate(field(evidence, "stages", list, where))]
    fail_if([op for op, *_ in stages] != [n.name for n in spec.nodes] + [None], Rejected,
            "stages must list every spec operator in the order of the graph, then the expectations (null)")
    missing = [t for t in spec.tensors if t not in rels["input"] and t not in rels["evidence"]]
    fail_if(missing, Rejected, f"spec tensor '{missing and missing[0]}' is not related")
    rel, ranges, keys, outcomes = {**rels["input"], **rels["evidence"]}, obligations.integer_ranges(impl), [], []
    known = constants(spec, limits)
    for i, (op, by, digest) in enumerate(stages):
        at = f"stage #{i} ({op or 'expectations'})"
        how, obls = stage(spec, impl, rel, rels["output"], op, ranges, f"{where}: {at}", limits, known)
        keys.append(key(how, obls))
        fail_if(keys[i] != digest, Rejected, f"{at}: its key is not the key of its obligation")
        if by != i:
            fail_if(stages[by][1] != by or keys[by] != keys[i], Rejected,
                    f"{at} is not the same obligation as stage #{by}, which is said to prove it")
            continue
        for ls, li, rin, rout in obls:
            fail_if(any(not es for es in rin.values()), Rejected, f"{at}: an input relation cannot be used")
            outs = held(ls, rout, how != "congruence") if how != "reduced" else decide(ls, li, rin, rout, limits)
            bad = next((o for o in outs if not o.holds), None)
            fail_if(bad, Rejected, f"{at}: {bad and bad.failure}")
            outcomes += outs
    # stages assumed their operators' conditions: all at once, at full size
    fail_if(why := any(o.assumed for o in outcomes) and refinement.spec_defined(spec, limits), Rejected, why)
    reps = sum(1 for i, s in enumerate(stages) if s[1] == i)
    return (f"{spec.name} refined by {impl.name}, stage by stage at reduced shapes: {len(stages)} stages, {reps} "
            f"proved, {len(stages) - reps} matched, {obligations.summary(outcomes)}")
