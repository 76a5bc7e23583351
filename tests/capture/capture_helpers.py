"""Shared checks for captured graphs (imported first: puts the repository root on sys.path
so that the example models import as ``examples.models``)."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from certificates.graph import parse_graph


def roundtrip(graph: dict):
    """The graph survives JSON and validates with the checker's parser."""
    g = parse_graph(json.loads(json.dumps(graph)), graph["name"])
    assert g.world_size == graph["world_size"]
    return g


def counts(graph: dict, rank=None) -> dict:
    out = {}
    for n in graph["nodes"]:
        if rank is not None and n.get("rank") != rank:
            continue
        out[n["target"]] = out.get(n["target"], 0) + 1
    return out


def collectives(graph: dict, kind: str | None = None) -> list[dict]:
    return [n for n in graph["nodes"] if "group" in n and (kind is None or kind in n["target"])]


def producer(graph: dict, tensor: str) -> dict | None:
    """The node producing ``tensor``, looking through aliases the capture inserted."""
    for n in graph["nodes"]:
        if tensor in n["outputs"]:
            if n["target"] == "aten.alias.default":
                return producer(graph, n["inputs"][0])
            return n
    return None


def consumers(graph: dict, tensor: str) -> list[dict]:
    return [n for n in graph["nodes"] if tensor in n["inputs"]]
