"""Graph IR v1 (docs/ir.md, schema/graph-v1.json): strict parsing, validation and evaluation. A plain node
runs on one ``rank``; a collective names its ``group`` and has one input and output per member, in order."""

import heapq
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import LimitExceeded, Malformed, Unsupported, fail_if
from .limits import DEFAULT, Limits
from .dtypes import DtypeError, fit
from .ops import INT_DTYPES, REQ, REGISTRY, Op, ShapeError

GRAPH_FORMAT, GRAPH_VERSION = "pvcert-graph", 1
TENSOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(@r[0-9]+)?")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
ROLES = ("activation", "parameter", "gradient", "buffer", "index", "label", "mask", "state")
MAX_WORLD = 4096
CORE = ("ops", "ops_grad")   # the operator families staged and template claims trust (docs/architecture.md)


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    rank: int = 0
    role: str | None = None
    range: tuple[int, int] | None = None  # integer inputs: values in [lo, hi); floats: sampling only

    @property
    def is_int(self) -> bool:
        return self.dtype in INT_DTYPES


@dataclass
class Node:
    name: str
    target: str
    op: Op
    inputs: list[str | None]
    outputs: list[str]
    attrs: dict[str, Any]
    rank: int | None = None
    group: list[int] | None = None
    source: dict | None = None     # where the engine captured it (reports only; never checked against)

    def full_attrs(self, symbolic: bool) -> dict[str, Any]:
        """Attributes with defaults filled in, plus the evaluator's context keys."""
        a = {k: v for k, v in self.op.attrs.items() if v is not REQ}
        a.update(self.attrs, _symbolic=symbolic, _group=self.group)
        return a


@dataclass
class Graph:
    name: str
    world_size: int
    tensors: dict[str, Tensor]
    inputs: list[str]
    outputs: list[str]
    nodes: list[Node]                  # in a topological order
    producer: dict[str, Node] = field(default_factory=dict)
    position: dict[str, int] = field(default_factory=dict)  # node name -> index in ``nodes``


def _fail_if(bad, where: str, msg: str) -> None:
    fail_if(bad, Malformed, where, msg)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _need(obj: dict, key: str, kind, where: str, what: str):
    _fail_if(not isinstance(obj, dict) or key not in obj, where, f"{what}: missing '{key}'")
    v = obj[key]
    if kind is int and isinstance(v, bool) or not isinstance(v, kind):
        raise Malformed(where, f"{what}: '{key}' must be {getattr(kind, '__name__', kind)}")
    return v


def _only(obj: dict, allowed: str, where: str, what: str) -> None:
    extra = sorted(set(obj) - set(allowed.split()))
    _fail_if(extra, where, f"{what}: unknown field '{extra and extra[0]}'")


def _rank(raw: dict, world: int, where: str, what: str) -> int:
    rank = raw.get("rank", 0)
    if not _is_int(rank) or not 0 <= rank < world:
        raise Malformed(where, f"{what}: rank {rank!r} outside the world of size {world}")
    return rank


def parse_graph(obj: Any, where: str, limits: Limits = DEFAULT) -> Graph:
    """Validate a graph's JSON value; every defect raises ``Malformed`` naming the element."""
    _fail_if(not isinstance(obj, dict), where, "graph must be a JSON object")
    _only(obj, "format version name world_size tensors inputs outputs nodes meta", where, "graph")
    if obj.get("format") != GRAPH_FORMAT or obj.get("version") != GRAPH_VERSION:
        raise Malformed(where, f"not a {GRAPH_FORMAT} version {GRAPH_VERSION} file "
                               f"(format={obj.get('format')!r}, version={obj.get('version')!r})")
    name = _need(obj, "name", str, where, "graph")
    world = _need(obj, "world_size", int, where, "graph")
    _fail_if(not 1 <= world <= MAX_WORLD, where, f"world_size {world} outside 1..{MAX_WORLD}")
    tensors = {n: _tensor(n, t, world, where, limits) for n, t in _need(obj, "tensors", dict, where, "graph").items()}
    inputs, outputs = _names(obj, "inputs", tensors, where), _names(obj, "outputs", tensors, where)
    for n in inputs:
        _fail_if(tensors[n].role is None, where, f"input '{n}': missing 'role'")
        if tensors[n].is_int and tensors[n].dtype != "bool" and tensors[n].range is None:
            raise Malformed(where, f"input '{n}': integer inputs need a value 'range' [lo, hi)")
    nodes: dict[str, Node] = {}
    for i, raw in enumerate(_need(obj, "nodes", list, where, "graph")):
        node = _node(raw, i, tensors, world, where)
        _fail_if(node.name in nodes, where, f"duplicate node name '{node.name}'")
        nodes[node.name] = node
    order, producer = _toposort(list(nodes.values()), inputs, where)
    for t in tensors:
        if t not in producer and t not in inputs:
            raise Malformed(where, f"tensor '{t}' is neither a graph input nor produced by a node")
    for node in order:
        _check_shapes(node, tensors, where)
    return Graph(name, world, tensors, inputs, outputs, order, producer, {n.name: i for i, n in enumerate(order)})


def _tensor(name: str, t: Any, world: int, where: str, limits: Limits) -> Tensor:
    what = f"tensor '{name}'"
    if not TENSOR_NAME.fullmatch(name) or len(name) > 200:
        raise Malformed(where, f"{what}: bad name (expected identifier, optionally @r<rank>)")
    _fail_if(not isinstance(t, dict), where, f"{what}: must be an object")
    _only(t, "shape dtype rank role range", where, what)
    shape = _need(t, "shape", list, where, what)
    if len(shape) > 16 or any(not _is_int(d) or d < 0 for d in shape):
        raise Malformed(where, f"{what}: shape must be a list of at most 16 non-negative ints")
    if math.prod(shape) > limits.max_elements * 64:
        raise LimitExceeded(f"{where}: {what} has shape {shape}, too large to check")
    dtype = _need(t, "dtype", str, where, what)
    _fail_if(dtype not in FLOAT_DTYPES + INT_DTYPES, where, f"{what}: unknown dtype '{dtype}'")
    rank = _rank(t, world, where, what)
    if "@r" in name and int(name.rpartition("@r")[2]) != rank:
        raise Malformed(where, f"{what}: name says rank {name.rpartition('@r')[2]} but 'rank' is {rank}")
    role, rng = t.get("role"), t.get("range")
    if role is not None and role not in ROLES:
        raise Malformed(where, f"{what}: unknown role '{role}' (one of {', '.join(ROLES)})")
    if rng is not None and (not isinstance(rng, list) or len(rng) != 2 or not all(map(_is_int, rng))
                            or rng[0] >= rng[1]):
        raise Malformed(where, f"{what}: range must be [lo, hi) with lo < hi")
    return Tensor(name, tuple(shape), dtype, rank, role, tuple(rng) if rng is not None else None)


def _names(obj: dict, key: str, tensors: dict, where: str) -> list[str]:
    names = _need(obj, key, list, where, "graph")
    for n in names:
        _fail_if(not isinstance(n, str) or n not in tensors, where, f"{key}: '{n}' is not a declared tensor")
    _fail_if(len(set(names)) != len(names), where, f"{key}: a tensor is listed twice")
    return names


def _node(raw: Any, i: int, tensors: dict, world: int, where: str) -> Node:
    name = raw.get("name") if isinstance(raw, dict) else None
    _fail_if(not isinstance(name, str) or not name, where, f"node #{i}: missing 'name'")
    what = f"node '{name}'"
    _only(raw, "name target rank group inputs outputs attrs meta source", where, what)
    src = raw.get("source", {})   # where the engine captured it: the form is checked, the content never used
    if not (isinstance(src, dict) and set(src) <= {"module", "file", "line"} and _is_int(line := src.get("line", 1))
            and line > 0 and all(isinstance(v, str) and len(v) <= 300 for k, v in src.items() if k != "line")):
        raise Malformed(where, f"{what}: 'source' must be {{module, file: str of <= 300 chars, line: int > 0}}")
    target = _need(raw, "target", str, where, what)
    op = REGISTRY.get(target)
    _fail_if(op is None, where, f"{what}: unknown op '{target}' (not in the operator registry)")
    what = f"node '{name}' ({target})"
    ins, outs = _need(raw, "inputs", list, where, what), _need(raw, "outputs", list, where, what)
    for t in ins + outs:
        if t is not None and (not isinstance(t, str) or t not in tensors):
            raise Malformed(where, f"{what}: tensor '{t}' is not declared")
    if any(t is None for t in outs) or len(set(outs)) != len(outs):
        raise Malformed(where, f"{what}: outputs must be distinct tensors")
    attrs = raw.get("attrs", {})
    _fail_if(not isinstance(attrs, dict), where, f"{what}: 'attrs' must be an object")
    for k in attrs:
        _fail_if(k not in op.attrs, where, f"{what}: unknown attribute '{k}'")
    for k, v in op.attrs.items():
        _fail_if(v is REQ and k not in attrs, where, f"{what}: missing attribute '{k}'")
    node = Node(name, target, op, ins, outs, attrs, source=src or None)
    if op.collective:
        _fail_if("rank" in raw, where, f"{what}: a collective names its 'group', not a 'rank'")
        node.group = _group(raw, node, tensors, world, where, what)
        return node
    _fail_if("group" in raw, where, f"{what}: only collectives have a 'group'")
    node.rank = _rank(raw, world, where, what)
    slots, n = op.slots, len(ins)
    required = sum(1 for s in slots if not s.endswith("?"))
    _fail_if(op.variadic and (n < 1 or None in ins), where, f"{what}: needs one or more input tensors")
    if not op.variadic and not required <= n <= len(slots):
        raise Malformed(where, f"{what}: takes {required}..{len(slots)} inputs ({' '.join(slots)}), got {n}")
    for s, t in zip(slots if not op.variadic else [], ins):
        _fail_if(t is None and not s.endswith("?"), where, f"{what}: input '{s}' is required")
    for t in ins + outs:
        if t is not None and tensors[t].rank != node.rank:
            raise Malformed(where, f"{what}: tensor '{t}' lives on rank {tensors[t].rank}, "
                                   f"the node runs on rank {node.rank}")
    return node


def _group(raw: dict, node: Node, tensors: dict, world: int, where: str, what: str) -> list[int]:
    group = _need(raw, "group", list, where, what)
    if any(not _is_int(r) or not 0 <= r < world for r in group):
        raise Malformed(where, f"{what}: group {group} has a rank outside the world of size {world}")
    _fail_if(len(set(group)) != len(group) or len(group) < 1, where, f"{what}: group {group} must list distinct ranks")
    if node.op.p2p:
        if len(group) != 2 or len(node.inputs) != 1 or len(node.outputs) != 1:
            raise Malformed(where, f"{what}: send/recv needs group [src, dst], one input and one output")
        pairs = [(node.inputs[0], group[0]), (node.outputs[0], group[1])]
    else:
        if len(node.inputs) != len(group) or len(node.outputs) != len(group):
            raise Malformed(where, f"{what}: group {group} has {len(group)} members but the node has "
                                   f"{len(node.inputs)} inputs and {len(node.outputs)} outputs")
        pairs = list(zip(node.inputs, group)) + list(zip(node.outputs, group))
    for t, r in pairs:
        if t is None or tensors[t].rank != r:
            rank = tensors[t].rank if t is not None else None
            raise Malformed(where, f"{what}: tensor '{t}' lives on rank {rank}, its group member is rank {r}")
    return group


def _toposort(nodes: list[Node], inputs: list[str], where: str) -> tuple[list[Node], dict[str, Node]]:
    """Nodes in a topological order, the given one where it is one, and each tensor's producer."""
    given, producer = set(inputs), {}
    for node in nodes:
        for t in node.outputs:
            if t in producer or t in given:
                raise Malformed(where, f"node '{node.name}': tensor '{t}' is already "
                                       f"{'a graph input' if t in given else 'produced by ' + repr(producer[t].name)}")
            producer[t] = node
    for node in nodes:
        for t in node.inputs:
            _fail_if(t is not None and t not in producer and t not in given, where,
                     f"node '{node.name}': input '{t}' is dangling (neither a graph input nor produced by a node)")
    deps = [{producer[t].name for t in n.inputs if t in producer} for n in nodes]
    users: dict[str, list[int]] = {}
    for i, d in enumerate(deps):
        for name in d:
            users.setdefault(name, []).append(i)
    waits, ready, order = [len(d) for d in deps], [i for i, d in enumerate(deps) if not d], []
    while ready:   # Kahn's algorithm, each node as early as its place in ``nodes`` allows (a heap of places)
        order.append(nodes[heapq.heappop(ready)])
        for j in users.get(order[-1].name, ()):
            waits[j] -= 1
            if not waits[j]:
                heapq.heappush(ready, j)
    stuck = [n.name for n, k in zip(nodes, waits) if k]
    _fail_if(stuck, where, f"nodes form a cycle (through {', '.join(map(repr, stuck[:6]))})")
    return order, producer


def _check_shapes(node: Node, tensors: dict, where: str) -> None:
    what = f"node '{node.name}' ({node.target})"
    try:
        out = node.op.shape([tensors[t].shape if t is not None else None for t in node.inputs],
                            node.full_attrs(symbolic=False))
    except (ShapeError, TypeError, KeyError, ValueError, IndexError) as e:
        raise Malformed(where, f"{what}: {e}") from None
    if len(out) != len(node.outputs):
        raise Malformed(where, f"{what}: gives {len(out)} outputs, the node lists {len(node.outputs)}")
    dt = node.attrs.get("dtype")  # a dtype attribute (casts, factories, reductions) is the result's
    if dt is not None and any(tensors[t].dtype != dt for t in node.outputs):
        raise Malformed(where, f"{what}: dtype attribute {dt!r}, result declared {tensors[node.outputs[0]].dtype!r}")
    for t, s in zip(node.outputs, out):
        if tuple(s) != tensors[t].shape:
            raise Malformed(where, f"{what}: output '{t}' declared {list(tensors[t].shape)} but the op gives {list(s)}")


def require_families(families: tuple[str, ...], where: str, *graphs: Graph) -> None:
    """Refuse operators defined outside ``families`` (registry modules): all that a kind of claim trusts."""
    bad = sorted({n.target for g in graphs for n in g.nodes if n.op.run.__module__.rsplit(".", 1)[-1] not in families})
    fail_if(bad, Unsupported, f"{where}: {', '.join(bad[:3])}: not an operator this kind of claim trusts {families}")


def evaluate(g: Graph, env: dict[str, np.ndarray], symbolic: bool, limits: Limits = DEFAULT,
             step=None) -> dict[str, np.ndarray]:
    """Run ``g`` on input values (symbolic or numeric; ``step``: a node's outputs, symint.py); returns them all."""
    vals = dict(env)
    for node in g.nodes:
        limits.tick()
        xs = [vals[t] if t is not None else None for t in node.inputs]
        while xs and xs[-1] is None:
            xs.pop()
        try:
            outs = step(g, node, xs, symbolic) if step else node.op.run(xs, node.full_attrs(symbolic))
            outs = outs if step else [fit(np.asarray(v), g.tensors[t].dtype, symbolic) for t, v in
                                      zip(node.outputs, outs)]
        except (ShapeError, ZeroDivisionError, DtypeError) as e:
            raise Unsupported(f"{g.name}: node '{node.name}' ({node.target}): {e}") from None
        for t, v in zip(node.outputs, outs):
            vals[t] = v = np.asarray(v)
            fail_if(v.shape != g.tensors[t].shape, Unsupported, f"{g.name}: '{t}' of {node.target} '{node.name}' is "
                    f"{list(v.shape)}, declared {list(g.tensors[t].shape)}")   # an operand shape its rule let pass
            if v.size > limits.max_elements:
                raise LimitExceeded(f"{g.name}: '{t}' of {node.target} '{node.name}': {v.size} elements, over {limits.max_elements}")
    return vals
