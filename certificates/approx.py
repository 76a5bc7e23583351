"""The ``training-refinement`` kind's entry: refinement over the core, backward and training operator families,
with the approximations a user chooses (docs/training.md): a claim with ``"approximations"`` says "impl refines
approx(spec)"; each listed rewrite (``RULES``) of the exact spec is applied here before anything is checked."""

from collections import Counter
from typing import Any

from . import ops_grad, ops_train, smt, symint  # noqa: F401 (its operator families: FAMILIES; smt: z3, cvc5)
from .chain import replay_refinement
from .errors import Malformed, fail_if
from .graph import CORE, parse_graph
from .limits import Limits
from .precise import PRECISE
from .obligations import graph_value

FWD, BWD = "aten.native_batch_norm.default", "aten.native_batch_norm_backward.default"
ROUTE = "pvcert.route.default"
FAMILIES = CORE + ("ops_train",)


def replay(claim: dict, evidence: dict, arts: dict, where: str, limits: Limits) -> str:
    """Replay a ``training-refinement`` claim: its approximations applied to the spec first."""
    spec, under, assumed = None, "", claim.get("approximations", [])
    if assumed:
        value, awhere = graph_value(arts, claim.get("spec"), where)
        spec = parse_graph(apply(value, assumed, f"{where}: approximations"), awhere, limits)
        under = f" (assuming {describe(assumed)})"
    return replay_refinement(claim, evidence, arts, where, limits, FAMILIES, spec, under, symint.check, PRECISE)


def describe(approximations: list[dict]) -> str:
    """``rule (parameters) at n nodes; ...`` for a claim's summary."""
    count = Counter((a["rule"], ", ".join(f"{f} {v}" for f, v in a.items() if f not in ("rule", "node")))
                    for a in approximations)
    return "; ".join(f"{r} ({p}) at {n} node{'s' * (n > 1)}" for (r, p), n in count.items())


def apply(graph: dict, approximations: Any, where: str) -> dict:
    """``graph`` (graph JSON) with every approximation applied; the input is not changed."""
    fail_if(not isinstance(approximations, list), Malformed, where, "'approximations' must be a list")
    fail_if(not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list) or not isinstance(
        graph.get("tensors"), dict), Malformed, where, "the spec is not a graph with 'nodes' and 'tensors'")
    g = dict(graph, nodes=list(graph["nodes"]), tensors=dict(graph["tensors"]))
    for i, a in enumerate(approximations):
        here = f"{where}: approximation #{i}"
        rule = RULES.get(a.get("rule")) if isinstance(a, dict) and isinstance(a.get("rule"), str) else None
        if rule is None or set(a) != {"rule", "node", *rule[0]}:
            raise Malformed(here, "expected " + " or ".join(
                f"{{'rule': '{r}', 'node': name, {', '.join(repr(f) + ': n' for f in fs)}}}"
                for r, (fs, _) in RULES.items()))
        for f, least in rule[0].items():
            if not isinstance(a[f], int) or isinstance(a[f], bool) or a[f] < least:
                raise Malformed(here, f"{f} must be an integer >= {least}, got {a[f]!r}")
        try:
            rule[1](g, a, here)
        except (KeyError, TypeError, IndexError, AttributeError, ValueError) as e:   # a malformed graph
            raise Malformed(here, f"cannot rewrite this graph ({type(e).__name__}: {e})") from None
    return g


def _node_limited_routing(g: dict, a: dict, where: str) -> None:
    at = [j for j, n in enumerate(g["nodes"]) if isinstance(n, dict) and n.get("name") == a["node"]]
    node = g["nodes"][at[0]] if len(at) == 1 else {}
    attrs = node.get("attrs") if isinstance(node.get("attrs"), dict) else {}
    fail_if(node.get("target") != ROUTE or attrs.get("nodes", 1) != 1 or attrs.get("limit", 1) != 1, Malformed,
            where, f"no single {ROUTE} node named {a['node']!r} routing over all experts")
    g["nodes"][at[0]] = dict(node, attrs=dict(attrs, nodes=a["nodes"], limit=a["limit"]))


def _split(g: dict, node: str, i: int, k: int, where: str) -> str:
    """A slice node taking the ``i``-th of ``k`` groups of ``node``'s input along dim 0."""
    src = g["tensors"].get(node)
    fail_if(not isinstance(src, dict) or not isinstance(src.get("shape"), list) or not src["shape"], Malformed,
            where, f"tensor '{node}' has no shape")
    n = src["shape"][0]
    fail_if(not isinstance(n, int) or n % k, Malformed, where,
            f"dim 0 of '{node}' ({n}) is not divisible by {k} groups")
    out = _fresh(g, f"{node}.group{i}", dict(src, shape=[n // k] + src["shape"][1:]), where)
    _emit(g, "aten.slice.Tensor", [node], [out], {"dim": 0, "start": i * n // k, "end": (i + 1) * n // k, "step": 1},
          src.get("rank", 0))
    return out


def _fresh(g: dict, name: str, meta: dict, where: str) -> str:
    fail_if(name in g["tensors"], Malformed, where, f"the rewrite's tensor name '{name}' is already taken")
    g["tensors"][name] = meta
    return name


def _emit(g: dict, target: str, inputs: list, outputs: list[str], attrs: dict, rank: int) -> None:
    """Append a node named after its first output (the parser orders nodes itself)."""
    g["nodes"].append({"name": f"{outputs[0]}.node", "target": target, "inputs": inputs, "outputs": outputs,
                       "attrs": attrs, "rank": rank})


def _local_batch_norm(g: dict, a: dict, where: str) -> None:
    name, k = a["node"], a["groups"]
    at = [j for j, n in enumerate(g["nodes"]) if isinstance(n, dict) and n.get("name") == name]
    fail_if(len(at) != 1 or g["nodes"][at[0]].get("target") != FWD, Malformed, where,
            f"no single {FWD} node named {name!r}")
    fwd = g["nodes"].pop(at[0])
    ins, outs = list(fwd.get("inputs", [])) + [None] * 5, fwd.get("outputs", [])
    fail_if(len(outs) != 3, Malformed, where, f"node {name!r} must have 3 outputs")
    y, mean, rstd = outs
    users = [n for n in g["nodes"] if isinstance(n, dict) and {mean, rstd} & set(n.get("inputs") or [])]
    fail_if(len(users) != 1 or users[0].get("target") != BWD or (users[0].get("inputs") or [None] * 7)[5:7] != [
        mean, rstd], Malformed, where, f"the saved statistics of {name!r} must feed exactly one {BWD} node")
    fail_if({mean, rstd} & set(g.get("outputs", [])), Malformed, where,
            f"the saved statistics of {name!r} are graph outputs")
    g["nodes"].remove(bwd := users[0])
    rank = fwd.get("rank", 0)
    stat = g["tensors"].pop(mean), g["tensors"].pop(rstd)
    for i in range(k):
        x = _split(g, ins[0], i, k, where)
        yi, mi, ri = (_fresh(g, f"{t}.group{i}", dict(m), where)
                      for t, m in zip(outs, (dict(g["tensors"][y], shape=g["tensors"][x]["shape"]), *stat)))
        _emit(g, FWD, [x] + ins[1:5], [yi, mi, ri], dict(fwd.get("attrs", {})), rank)
        gy = _split(g, bwd["inputs"][0], i, k, where)
        grads = [_fresh(g, f"{t}.group{i}", dict(g["tensors"][t], shape=g["tensors"][s]["shape"]), where)
                 for t, s in zip(bwd["outputs"], (x, bwd["outputs"][1], bwd["outputs"][2]))]
        _emit(g, BWD, [gy, x] + list(bwd["inputs"][2:5]) + [mi, ri], grads, dict(bwd.get("attrs", {})), rank)
    # the groups' tensors are named '{t}.group{i}' (_fresh): y and the input's gradient concatenated, the
    # parameters' gradients summed in group order
    for t in (y, bwd["outputs"][0]):
        _emit(g, "aten.cat.default", [f"{t}.group{i}" for i in range(k)], [t], {"dim": 0}, rank)
    for total in bwd["outputs"][1:3]:
        acc = [f"{total}.group0"] + [_fresh(g, f"{total}.sum{j}", dict(g["tensors"][total]), where)
                                     for j in range(k - 2)] + [total]    # acc[j]: groups 0 to j summed
        for j in range(1, k):
            _emit(g, "aten.add.Tensor", [acc[j - 1], f"{total}.group{j}"], [acc[j]], {}, rank)


RULES = {"local-batch-norm": ({"groups": 2}, _local_batch_norm),
         "node-limited-routing": ({"nodes": 2, "limit": 1}, _node_limited_routing)}
