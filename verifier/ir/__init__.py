"""Graph IR for the engine: building, loading and saving graphs (format: docs/ir.md).

Validation and semantics live in ``certificates.graph`` and ``certificates.ops``:
the engine uses the checker's definitions so that both read graphs the same way.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
from collections import OrderedDict
from typing import Any

from certificates.errors import LimitExceeded
from certificates.graph import GRAPH_FORMAT, GRAPH_VERSION, Graph, Node, Tensor, parse_graph
from certificates.limits import Limits, load_json
from certificates.ops import REGISTRY, ShapeError

__all__ = ["Graph", "Node", "Tensor", "GraphBuilder", "load_graph", "save_graph", "UnsupportedOp", "remember",
           "known", "parsed", "UNBOUNDED", "operators_of"]

UNBOUNDED = Limits(max_elements=2**62)   # for shape-only work (capture, families, reduction): no element bound


class UnsupportedOp(ValueError):
    """An operator the registry does not know; the message names it."""


def load_graph(path: str) -> Graph:
    """Read and validate a graph file; errors name the file and the element."""
    return parse_graph(load_json(path), path)


# Graphs validated at capture (``verifier.capture.stitch``), so that the engine does not parse the
# same JSON value again: id -> (the value, its Graph, digest of the value then). At most a few.
_PARSED: OrderedDict[int, tuple[dict, Graph, bytes]] = OrderedDict()
_KEEP = 4


def _digest(obj: Any) -> bytes:
    """Digest of a graph's JSON value, exact about types (a list is not a tuple)."""
    return hashlib.sha256(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)).digest()


def remember(obj: dict[str, Any], graph: Graph) -> None:
    """Record that ``parse_graph(obj)`` gave ``graph`` (called where a graph was just validated)."""
    _PARSED[id(obj)] = (obj, graph, _digest(obj))
    _PARSED.move_to_end(id(obj))
    while len(_PARSED) > _KEEP:
        _PARSED.popitem(last=False)


def known(obj: Any) -> bool:
    """Whether ``obj`` is a graph value recorded by ``remember`` (not yet checked unchanged)."""
    got = _PARSED.get(id(obj))
    return got is not None and got[0] is obj


def parsed(obj: Any, where: str, limits) -> Graph:
    """``parse_graph(obj, where, limits)``, reusing the Graph of a value validated before if it is
    the same object, unchanged since (same digest), and within ``limits``: the one check of
    ``parse_graph`` that depends on them bounds each tensor's elements (capture validates with
    no bound), so a tensor past it is parsed again to raise the checker's own error."""
    got = _PARSED.get(id(obj))
    if got is not None and got[0] is obj and _digest(obj) == got[2] and \
            all(math.prod(t.shape) <= limits.max_elements * 64 for t in got[1].tensors.values()):
        return got[1]
    try:
        return parse_graph(obj, where, limits)
    except LimitExceeded as e:
        big = [t for t, v in obj["tensors"].items() if math.prod(v["shape"]) > limits.max_elements * 64]
        raise LimitExceeded(f"{e} ({operators_of(obj, big[0])}); pvcert decides element by element: verify at "
                            "smaller sizes, or --staged to reduce the map axes (docs/stages.md)" if big else str(e)) \
            from None


def operators_of(obj: dict[str, Any], tensor: str) -> str:
    """``made by 'n' (target), read by 'm' (target) and 2 more``: the nodes of a graph value about ``tensor``."""
    made = [n for n in obj["nodes"] if tensor in n["outputs"]]
    read = [n for n in obj["nodes"] if tensor in n["inputs"]]
    parts = [f"{w} {', '.join(repr(n['name']) + ' (' + n['target'] + ')' for n in ns[:2])}"
             f"{f' and {len(ns) - 2} more' if len(ns) > 2 else ''}" for w, ns in (("made by", made), ("read by", read))
             if ns]
    return ", ".join(parts) or "an unused input"


def save_graph(obj: dict[str, Any], path: str) -> None:
    """Write a graph with one line per tensor and per node (diff- and review-friendly)."""
    def block(items: list[str], open_: str, close: str) -> str:
        return open_ + ("\n  " + ",\n  ".join(items) + "\n " if items else "") + close

    head = {k: v for k, v in obj.items() if k not in ("tensors", "nodes")}
    lines = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
    lines.append(' "tensors": ' + block([f"{json.dumps(k)}: {json.dumps(v)}" for k, v in obj["tensors"].items()],
                                        "{", "}"))
    lines.append(' "nodes": ' + block([json.dumps(n) for n in obj["nodes"]], "[", "]"))
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")


class GraphBuilder:
    """Build a graph's JSON value node by node; output shapes come from the registry."""

    def __init__(self, name: str, world_size: int = 1) -> None:
        self.obj: dict[str, Any] = {"format": GRAPH_FORMAT, "version": GRAPH_VERSION, "name": name,
                                    "world_size": world_size, "tensors": {}, "inputs": [],
                                    "outputs": [], "nodes": []}

    def _tensor(self, name: str, shape, dtype: str, rank: int, **extra) -> str:
        if name in self.obj["tensors"]:
            raise ValueError(f"tensor '{name}' defined twice")
        self.obj["tensors"][name] = {"shape": list(shape), "dtype": dtype, "rank": rank, **extra}
        return name

    def input(self, name: str, shape, role: str, dtype: str = "float32", rank: int = 0,
              range: tuple[int, int] | None = None) -> str:
        extra = {"role": role, **({"range": list(range)} if range else {})}
        self.obj["inputs"].append(self._tensor(name, shape, dtype, rank, **extra))
        return name

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.obj["tensors"][name]["shape"])

    def node(self, target: str, inputs: list[str | None], outputs: list[str] | str, *,
             rank: int = 0, group: list[int] | None = None, out_dtype: str | None = None,
             name: str | None = None, attrs: dict[str, Any] | None = None, **kw) -> list[str] | str:
        """Add a node; ``outputs`` names its results (a str for a single one).

        The op's attributes come from ``attrs`` and keyword arguments; ``out_dtype``
        is the dtype of the outputs (default: that of the first input).
        """
        attrs = {**(attrs or {}), **kw}
        op = REGISTRY.get(target)
        if op is None:
            raise UnsupportedOp(f"unsupported op '{target}' (not in the operator registry)")
        full = {**op.attrs, **attrs, "_symbolic": False, "_group": group}
        shapes = [self.shape(t) if t is not None else None for t in inputs]
        try:
            out_shapes = op.shape(shapes, full)
        except (ShapeError, TypeError, KeyError, ValueError) as e:
            raise ValueError(f"{target} on {shapes}: {e}") from None
        single = isinstance(outputs, str)
        outs = [outputs] if single else list(outputs)
        if len(outs) != len(out_shapes):
            raise ValueError(f"{target} gives {len(out_shapes)} outputs, {len(outs)} named")
        ranks = group if group is not None and not op.p2p else ([group[1]] if op.p2p else [rank] * len(outs))
        for t, s, r in zip(outs, out_shapes, ranks):
            src = next((x for x in inputs if x is not None), None)
            dt = out_dtype or (self.obj["tensors"][src]["dtype"] if src else "float32")
            self._tensor(t, s, dt, r)
        node: dict[str, Any] = {"name": name or f"n{len(self.obj['nodes'])}", "target": target,
                                "inputs": list(inputs), "outputs": outs, "attrs": attrs}
        node.update({"group": list(group)} if group is not None else {"rank": rank})
        self.obj["nodes"].append(node)
        return outputs if single else outs

    def output(self, *names: str) -> None:
        self.obj["outputs"].extend(names)

    def build(self, where: str = "<built>") -> dict[str, Any]:
        """The JSON value, validated."""
        parse_graph(self.obj, where)
        return self.obj
