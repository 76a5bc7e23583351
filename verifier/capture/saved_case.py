"""A case from saved programs: ``pvcert verify --spec S.pt2 --impl R0.pt2 ... --relation REL.json``.

The relation file (``pvcert-relation`` v1, docs/cases.md) gives the input relation, the
expectation, the ranks of each collective group name found in the saved graphs, and the
value ranges of integer inputs. The programs are read by ``saved.rank_program`` (no
unpickling) and stitched like a live capture.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from certificates.errors import Malformed
from certificates.limits import load_json
from verifier.case import Case

from .convert import CaptureError
from .saved import rank_program
from .stitch import build_graph

RELATION_FORMAT, RELATION_VERSION = "pvcert-relation", 1


def load_saved_case(spec: str, impls: list[str], relation: str):
    """``pvcert verify --spec S --impl R0 R1 ... --relation REL`` as a ``verifier.case.Case``."""
    rel = load_json(relation)
    if not isinstance(rel, dict) or rel.get("format") != RELATION_FORMAT or rel.get("version") != RELATION_VERSION:
        raise Malformed(relation, f"not a {RELATION_FORMAT} version {RELATION_VERSION} file")
    for key in ("input_relation", "expect"):
        if not isinstance(rel.get(key), dict):
            raise Malformed(relation, f"'{key}' must map spec tensor names to clean expressions")
    unknown = set(rel) - {"format", "version", "name", "groups", "inputs", "input_relation", "expect"}
    if unknown:
        raise Malformed(relation, f"unknown key(s) {', '.join(sorted(unknown))}")
    world = len(impls)
    if not 1 <= world <= 4096:
        raise Malformed(relation, f"{world} impl files (1..4096)")
    groups = _groups(relation, rel.get("groups", {}), world)
    ranges = _inputs(relation, rel.get("inputs", {}))
    name = rel.get("name", os.path.splitext(os.path.basename(relation))[0])
    if not isinstance(name, str) or not name:
        raise Malformed(relation, "'name' must be a non-empty string")

    def no_groups(g: str) -> list[int]:
        raise Malformed(spec, f"collective on group '{g}': the spec is one device")

    def resolver(path: str, r: int) -> Callable[[str], list[int]]:
        def resolve(g: str) -> list[int]:
            for members in groups.get(str(g), []):
                if r in members:
                    return list(members)
            raise Malformed(path, f"collective group '{g}' of rank {r}: not in the relation file's 'groups' "
                                  f"({relation}) or rank {r} is not a member")
        return resolve

    try:
        sp = build_graph(name + "_spec", [rank_program(spec, 0, "spec", no_groups, ranges)], world=1, suffix=False)
        progs = [rank_program(p, r, f"rank {r}", resolver(p, r), ranges) for r, p in enumerate(impls)]
        im = build_graph(name + "_impl", progs, world)
    except CaptureError as e:   # stitching: mismatched collectives across ranks
        raise Malformed(relation, str(e)) from None
    return Case(name, sp, im, rel["input_relation"], rel["expect"])


def _groups(relation: str, obj: Any, world: int) -> dict[str, list[list[int]]]:
    """``{"name": [ranks]}`` (one group) or ``{"name": [[ranks], [ranks], ...]}`` (one per rank set)."""
    if not isinstance(obj, dict):
        raise Malformed(relation, "'groups' must map group names to rank lists")
    out = {}
    for g, v in obj.items():
        sets = v if isinstance(v, list) and v and all(isinstance(x, list) for x in v) else [v]
        seen: set[int] = set()
        for members in sets:
            ok = isinstance(members, list) and members and all(
                isinstance(m, int) and not isinstance(m, bool) and 0 <= m < world for m in members)
            if not ok or len(set(members)) != len(members) or seen & set(members):
                raise Malformed(relation, f"groups['{g}']: {str(v)[:80]} is not a list of distinct ranks "
                                          f"below {world} (or a list of disjoint such lists)")
            seen |= set(members)
        out[g] = sets
    return out


def _inputs(relation: str, obj: Any) -> dict[str, dict]:
    """``{"ids": {"range": [lo, hi], "role": "index"}}``: what a saved program does not record."""
    if not isinstance(obj, dict):
        raise Malformed(relation, "'inputs' must map input names to {\"range\": [lo, hi], \"role\": ...}")
    for k, v in obj.items():
        rng = v.get("range") if isinstance(v, dict) else None
        ok = isinstance(v, dict) and set(v) <= {"range", "role"} and (
            rng is None or isinstance(rng, list) and len(rng) == 2 and all(
                isinstance(x, int) and not isinstance(x, bool) for x in rng) and rng[0] < rng[1]) and (
            v.get("role") is None or isinstance(v.get("role"), str))
        if not ok:
            raise Malformed(relation, f"inputs['{k}']: expected {{\"range\": [lo, hi] (lo < hi), \"role\": str}}")
    return obj
