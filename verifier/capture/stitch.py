"""Stitch per-rank programs into one multi-rank IR graph.

Every rank's tensors are renamed ``name@r<k>``. Collective calls are matched across
ranks by call order within their group (the ``k``-th call on group ``G`` of every member
is one collective; kind and attributes must agree), and become one IR node with the
explicit ``group``. A send from ``s`` to ``d`` is paired with the matching receive on
``d`` (in order per (s, d, tag)) into one ``c10d.send_recv.default`` node. Nodes are
emitted in a dependency order found by running the ranks' programs in lockstep; a
collective some member never reaches is reported with the ranks waiting on it. When every
rank waits and some wait in a send, those sends are posted and their ranks go on (as
``isend`` / ``batch_isend_irecv`` do: a 1F1B pipeline sends its activation while its peer
sends a gradient back); the receive takes the message later, and a message nobody receives
is reported. The graph is the same dataflow either way; whether blocking sends would
deadlock is not checked.
"""

from __future__ import annotations

from collections import defaultdict

from certificates.graph import parse_graph
from verifier.ir import UNBOUNDED, GraphBuilder, remember
from verifier.ir.cse import cse

from .convert import CaptureError, Item, RankProgram




def _sfx(name: str, rank: int, multi: bool) -> str | None:
    if name is None:
        return None
    return f"{name}@r{rank}" if multi else name


def _short(target: str) -> str:
    return target.split(".")[1] if target.count(".") >= 2 else target


def build_graph(name: str, progs: list[RankProgram], world: int | None = None,
                suffix: bool | None = None) -> dict:
    """The JSON value of the graph holding every rank's program (validated)."""
    world = world or len(progs)
    multi = world > 1 if suffix is None else suffix
    b = GraphBuilder(name, world)
    for p in progs:
        for i in p.inputs:
            b.input(_sfx(i.name, p.rank, multi), i.shape, i.role, dtype=i.dtype, rank=p.rank,
                    range=i.range)
    # Match communication.
    coll_seq: dict[tuple, list] = defaultdict(list)      # (group, rank) -> items in order
    p2p_seq: dict[tuple, list] = defaultdict(list)       # (src, dst, tag, kind) -> items
    for p in progs:
        for it in p.items:
            if it.kind == "coll":
                if p.rank not in it.group:
                    raise CaptureError(f"{p.where}: rank {p.rank} calls {it.target} on group "
                                       f"{it.group} it is not a member of")
                coll_seq[(tuple(it.group), p.rank)].append(it)
            elif it.kind in ("send", "recv") and it.group[0] == p.rank:
                raise CaptureError(f"{p.where}: a {it.kind} names the rank itself as its peer (node '{it.fx}')")
            elif it.kind == "send":
                p2p_seq[(p.rank, it.group[0], it.attrs["tag"], "send")].append(it)
            elif it.kind == "recv":
                p2p_seq[(it.group[0], p.rank, it.attrs["tag"], "recv")].append(it)
    key_of: dict[int, tuple] = {}                       # id(item) -> match key
    for (group, r), items in coll_seq.items():
        for k, it in enumerate(items):
            key_of[id(it)] = ("coll", group, k)
    for (s, d, tag, kind), items in p2p_seq.items():
        for k, it in enumerate(items):
            key_of[id(it)] = ("p2p", s, d, tag, k)
    pos = {p.rank: 0 for p in progs}
    waiting: dict[tuple, dict[int, Item]] = defaultdict(dict)
    n_coll = 0
    ahead: set[int] = set()                              # id(item) of sends posted before their receive
    progress = True
    while progress:
        progress = False
        for p in progs:
            r = p.rank
            while pos[r] < len(p.items):
                it = p.items[pos[r]]
                if it.kind == "op":
                    _plain(b, it, r, multi)
                    pos[r] += 1
                    progress = True
                    continue
                key = key_of[id(it)]
                waiting[key][r] = it
                members = list(key[1]) if key[0] == "coll" else [key[1], key[2]]
                if not all(m in waiting[key] for m in members):
                    break
                parts = [waiting[key][m] for m in members]
                if key[0] == "coll":
                    _collective(b, key, parts, members, multi, n_coll)
                else:
                    _send_recv(b, key, parts, multi, n_coll)
                n_coll += 1
                for m, it_m in zip(members, parts):
                    pos[m] += id(it_m) not in ahead
                del waiting[key]
                progress = True
                if r not in members or pos[r] >= len(p.items):
                    break
        if not progress:   # every rank waits: post the sends some of them wait in
            for p in progs:
                if pos[p.rank] < len(p.items) and p.items[pos[p.rank]].kind == "send":
                    ahead.add(id(p.items[pos[p.rank]]))
                    pos[p.rank] += 1
                    progress = True
    stuck = [(p.rank, p.items[pos[p.rank]]) for p in progs if pos[p.rank] < len(p.items)]
    if stuck:
        r, it = stuck[0]
        key = key_of.get(id(it))
        members = list(key[1]) if key and key[0] == "coll" else ([key[1], key[2]] if key else [])
        missing = [m for m in members if m not in waiting.get(key, {})]
        raise CaptureError(f"{name}: rank {r} waits in {it.target} (node '{it.fx}', group {members}) "
                           f"that ranks {missing} never join (mismatched collectives)")
    for key, parts in waiting.items():
        for r, it in parts.items():
            raise CaptureError(f"{name}: rank {r} sends to rank {key[2]} (node '{it.fx}') a message that "
                               "rank never receives (mismatched send/recv)")
    for p in progs:
        b.output(*[_sfx(o, p.rank, multi) for o in p.outputs])
    b.obj["meta"] = {"captured_by": "pvcert capture", "collectives": n_coll}
    graph = cse(b.obj)   # a pure computation repeated (per layer, per micro-batch) is kept once
    try:  # validated structurally; full-size tensors are fine here (the checker reduces shapes)
        remember(graph, parse_graph(graph, name, UNBOUNDED))   # the engine reuses it (verifier.ir.parsed)
        return graph
    except Exception as e:
        raise CaptureError(f"{name}: captured graph does not validate: {e}") from e


def _locate(b: GraphBuilder, it: Item) -> None:
    """The node just added gets the item's module path and source line (docs/ir.md ``source``)."""
    if it.source:
        b.obj["nodes"][-1]["source"] = dict(it.source)


def _fix_dtypes(b: GraphBuilder, names, metas, it: Item, where: str) -> None:
    for t, m in zip(names, metas):
        if m.shape is None:
            continue
        got = tuple(b.obj["tensors"][t]["shape"])
        if got != tuple(m.shape):
            raise CaptureError(f"{where}: {it.target} (node '{it.fx}'): the registry's shape rule gives "
                               f"{list(got)}, torch gives {list(m.shape)}")
        b.obj["tensors"][t]["dtype"] = m.dtype


def _plain(b: GraphBuilder, it: Item, r: int, multi: bool) -> None:
    ins = [_sfx(t, r, multi) for t in it.inputs]
    outs = [_sfx(t, r, multi) for t in it.outputs]
    try:
        b.node(it.target, ins, outs, rank=r, name=outs[0], attrs=it.attrs)
    except Exception as e:
        raise CaptureError(f"rank {r}: {it.target} (node '{it.fx}'): {e}") from None
    _locate(b, it)
    _fix_dtypes(b, outs, it.metas, it, f"rank {r}")


def _collective(b: GraphBuilder, key, parts: list[Item], members: list[int], multi: bool, k: int) -> None:
    first = parts[0]
    for m, it in zip(members, parts):
        if it.target != first.target or {a: v for a, v in it.attrs.items() if "split" not in a} != \
                {a: v for a, v in first.attrs.items() if "split" not in a}:
            raise CaptureError(f"collective #{key[2]} on group {members}: rank {members[0]} calls "
                               f"{_short(first.target)} {first.attrs}, rank {m} calls "
                               f"{_short(it.target)} {it.attrs}")
    attrs = dict(first.attrs)
    if first.target.endswith("all_to_all_single.default"):
        attrs["input_split_sizes"] = [it.attrs["input_split_sizes"] for it in parts]
        attrs["output_split_sizes"] = [it.attrs["output_split_sizes"] for it in parts]
    ins = [_sfx(it.inputs[0], m, multi) for m, it in zip(members, parts)]
    outs = [_sfx(it.outputs[0], m, multi) for m, it in zip(members, parts)]
    try:
        b.node(first.target, ins, outs, group=members, name=f"{_short(first.target)}_{k}", attrs=attrs)
    except Exception as e:
        raise CaptureError(f"{first.target} on group {members}: {e}") from None
    _locate(b, first)
    for m, it, o in zip(members, parts, outs):
        _fix_dtypes(b, [o], it.metas, it, f"rank {m}")


def _send_recv(b: GraphBuilder, key, parts: list[Item], multi: bool, k: int) -> None:
    snd, rcv = parts
    _, s, d, tag, _ = key
    src = _sfx(snd.inputs[0], s, multi)
    dst = _sfx(rcv.outputs[0], d, multi)
    b.node("c10d.send_recv.default", [src], [dst], group=[s, d], name=f"send_recv_{k}")
    _locate(b, snd)
    _fix_dtypes(b, [dst], rcv.metas, rcv, f"rank {d}")
