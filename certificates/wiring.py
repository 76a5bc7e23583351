"""Replay of ``train-template`` claims: each block is a refinement claim whose relations must be the
interface rebuilt here; the schedule runs abstractly on every rank (docs/templates.md explains)."""

import ast
import itertools
import operator
from fractions import Fraction
from typing import Callable

import numpy as np

from . import ops_grad, terms  # noqa: F401 (its operators: ops, ops_grad)
from .chain import replay_refinement
from .errors import LimitExceeded, Malformed, Rejected, fail_if
from .graph import CORE, evaluate
from .obligations import graph_artifact
from .solve import provers
from .ops import INT_DTYPES

DIMS = ("L", "dp", "tp", "pp", "M", "B", "S", "H")
NAMES = DIMS + ("d", "t", "p", "m", "l", "j")
MAX_EVENTS = 50_000_000
Fn = Callable[[dict], int]
BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
          ast.Mod: operator.mod}


def formula(text, where: str) -> tuple[Fn, frozenset]:
    """Compile a formula (integers, names, + - * // %, parentheses) from its syntax tree (never run); its variables."""
    fail_if(not isinstance(text, str) or len(text) > 200, Malformed, where, f"formula {text!r}: not a string of <= 200")
    if max(itertools.accumulate((c == "(") - (c == ")") for c in text), default=0) > 32:
        raise Malformed(where, f"formula {text!r}: nested too deeply")
    src = " ".join(text.split())     # one line: the tree's positions index it
    try:
        tree = ast.parse(src, mode="eval").body
    except (SyntaxError, ValueError):
        raise Malformed(where, f"formula {text!r}: not a formula") from None
    names: set[str] = set()

    def compile_(n: ast.AST, depth: int) -> Fn:
        fail_if(depth > 32, Malformed, where, f"formula {text!r}: nested too deeply")
        if isinstance(n, ast.BinOp) and type(n.op) in BINARY:
            f, g, op = compile_(n.left, depth + 1), compile_(n.right, depth + 1), BINARY[type(n.op)]
            return lambda e: op(f(e), g(e))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            f = compile_(n.operand, depth + 1)
            return lambda e: -f(e)
        if isinstance(n, ast.Constant) and type(n.value) is int and ast.get_source_segment(src, n).isdecimal():
            return lambda e, v=n.value: v
        if isinstance(n, ast.Name) and n.id in NAMES:
            names.add(n.id)
            return lambda e, k=n.id: e[k]
        raise Malformed(where, f"formula {text!r}: unexpected {ast.get_source_segment(src, n)!r}")

    f = compile_(tree, 0)
    return f, frozenset(names) & {"d", "t", "p", "m", "l"}


# statement -> its fields: REGISTERS are [name, index formulas...], COUNTS fields are n formulas, CHOICES names,
# "body" statements, any other field one formula
FIELDS = {"for": "var from to body", "params": "from to", "input": "data micro replica out", "fwd": "layer in out",
          "bwd": "layer in seed out grad", "loss": "in label scale out loss", "send": "peer reg", "recv": "peer reg",
          "acc": "into from", "all_reduce": "reg group size", "all_gather": "reg group size", "opt": "layer grad",
          "metric": "reg"}
REGISTERS = {"in", "out", "seed", "grad", "label", "loss", "reg", "into"}    # and acc's "from"
COUNTS = {"peer": 3, "group": 3, "scale": 2, "tp_group": 3}
CHOICES = {"var": ("m", "l"), "data": ("x", "y")}


def formulas(v, where: str, k: str, n: int | None = None) -> tuple:
    """A register ``[name, index formulas...]``, or exactly ``n`` formulas -> ``(name, fns, vars used)``."""
    if not isinstance(v, list) or not 0 < len(v) <= 4 or (len(v) != n if n else not isinstance(v[0], str)):
        raise Malformed(where, f"'{k}' must be " + (f"{n} formulas" if n else "a register name and 0-3 formulas"))
    fs = [formula(x, where) for x in (v if n else v[1:])]
    return None if n else v[0], [x[0] for x in fs], frozenset().union(*(x[1] for x in fs))


def compile_body(body, where: str, count: list) -> list:
    """Statements -> ``(op, label, fields, rev)``, every field validated and compiled here, once."""
    fail_if(not isinstance(body, list), Malformed, where, "a body must be a list of statements")
    return [statement(s, f"{where}.{i}", count) for i, s in enumerate(body)]


def statement(s, w: str, count: list) -> tuple:
    op = s.get("do") if isinstance(s, dict) else None
    keys = FIELDS[op].split() if isinstance(op, str) and op in FIELDS else None
    count[0] += 1
    if keys is None or set(s) - {"do", "rev"} != set(keys) or count[0] > 10_000:
        raise Malformed(w, f"bad statement {str(s)[:80]} (fields of {op!r}: {keys})")
    if (bad := next((k for k in CHOICES if k in keys and s[k] not in CHOICES[k]), None)):
        raise Malformed(w, f"bad {bad} {s[bad]!r}")
    f = {k: compile_body(s[k], w, count) if k == "body" else s[k] if k in CHOICES else
         formulas(s[k], w, k, COUNTS.get(k)) if k in REGISTERS or k in COUNTS or op == "acc" else
         formula(s[k], w)[0] for k in keys}
    return op, f"{op}@{w}", {**f, "do": op}, bool(s.get("rev"))


def key(ref: tuple, env: dict) -> tuple:
    return (ref[0], *[h(env) for h in ref[1]])


def at(who: tuple) -> str:
    """Where an event is: ``who`` = (rank, statement label, loop values)."""
    return f"rank {list(who[0])} event {who[1]}" + "".join(f" {v}={x}" for v, x in who[2])


class Fault(Exception):
    """An event is wrong; ``Run.body`` turns it into ``Rejected`` naming the rank and event."""


class Run:
    """The abstract run of every rank ``(d, t, p)``. Handler ``do_<op>`` checks one event and returns None or a
    rendezvous ``(kind, group, payload, register for the result)``; send/recv groups are (sender, receiver)."""

    def __init__(self, dims: dict, tp_group: tuple, programs: list, limits) -> None:
        self.dims, self.tp_group, self.programs, self.limits = dims, tp_group, programs, limits
        self.shape, self.world = (dims["dp"], dims["tp"], dims["pp"]), dims["dp"] * dims["tp"] * dims["pp"]
        self.full = (1 << (dims["dp"] * dims["M"])) - 1                 # the mask of every (replica, micro) pair
        self.c = Fraction(1, dims["M"] * dims["dp"] * dims["B"] * dims["S"] * dims["H"])
        # layers held per (d, t), (d, t, layer) updated, groups per (formulas, size, values of their variables)
        self.own, self.updated, self.cache, self.metrics, self.events = {}, set(), {}, 0, 0
        self.do = {op: getattr(self, f"do_{op}") for op in FIELDS if op != "for"}

    def rank(self, ref: tuple, env: dict) -> tuple:
        x = tuple(h(env) for h in ref[1])
        if not all(0 <= v < n for v, n in zip(x, self.shape)):
            raise Fault(f"rank {list(x)} does not exist")
        return x

    def group(self, ref: tuple, size: int, env: dict) -> tuple:
        ck = (id(ref), size, *[env[n] for n in ref[2]])
        fail_if(not 0 < size <= self.world, Fault, f"a group of {size} ranks in a world of {self.world}")
        if ck not in self.cache:
            g = tuple(self.rank(ref, {**env, "j": j}) for j in range(size))
            fail_if(not g or len(set(g)) != len(g), Fault, f"group {[list(x) for x in g]} is empty or repeats a rank")
            self.cache[ck] = g
        return self.cache[ck]

    def get(self, ref: tuple, env: dict, regs: dict) -> tuple:
        if (k := key(ref, env)) not in regs:
            raise Fault(f"reads {k[0]}{list(k[1:])}, which holds nothing")
        return regs[k]

    def block(self, r: tuple, f: dict, env: dict) -> tuple[tuple, int | None]:
        # the TP group of a block instance, holding r at position t, and the layer, which r must hold
        g, lay = self.group(self.tp_group, self.dims["tp"], env), f["layer"](env) if "layer" in f else None
        fail_if(g[r[1]] != r, Fault, f"TP group {[list(x) for x in g]} does not hold this rank at position t={r[1]}")
        fail_if(lay is not None and self.own.get(r[:2], {}).get(lay) != r[2], Fault, f"layer {lay} is not held by this rank")
        if f["do"] != "opt" and (*r[:2], lay) in self.updated:     # R's blocks read the step's initial parameters
            raise Fault(f"{f['do']} of layer {lay} runs after its update (it would read the new parameters)")
        return g, lay

    def need(self, what: str, got: list, want: list) -> None:
        if got != want:
            raise Fault(f"{what} gets {', '.join(map(self.show, got))}; needs {', '.join(map(self.show, want))}")

    def do_params(self, r: tuple, f: dict, env: dict, regs: dict) -> None:
        mine = self.own.setdefault(r[:2], {})
        for lay in range(max(0, f["from"](env)), min(self.dims["L"], f["to"](env))):
            fail_if(lay in mine, Fault, f"layer {lay} of replica {r[0]} shard {r[1]} held twice")
            mine[lay] = r[2]

    def do_input(self, r: tuple, f: dict, env: dict, regs: dict) -> None:
        m, d = f["micro"](env), f["replica"](env)
        if not (0 <= m < self.dims["M"] and 0 <= d < self.dims["dp"]):
            raise Fault(f"data slice (replica {d}, micro-batch {m}) does not exist")
        regs[key(f["out"], env)] = ("act", 0, d, m) if f["data"] == "x" else ("label", d, m)

    def do_acc(self, r: tuple, f: dict, env: dict, regs: dict) -> None:
        k, new = key(f["into"], env), self.get(f["from"], env, regs)
        regs[k] = self.add(regs[k], new) if k in regs else new

    def do_metric(self, r: tuple, f: dict, env: dict, regs: dict) -> None:
        self.need("loss metric", [self.get(f["reg"], env, regs)], [("loss", self.full, self.c)])
        self.metrics += 1

    def do_send(self, r: tuple, f: dict, env: dict, regs: dict) -> tuple:
        return "send", (r, self.rank(f["peer"], env)), self.get(f["reg"], env, regs), None

    def do_recv(self, r: tuple, f: dict, env: dict, regs: dict) -> tuple:
        return "recv", (self.rank(f["peer"], env), r), None, key(f["reg"], env)

    def do_all_reduce(self, r: tuple, f: dict, env: dict, regs: dict) -> tuple:    # and all_gather
        if r not in (g := self.group(f["group"], f["size"](env), env)):
            raise Fault(f"{f['do']} group {[list(x) for x in g]} does not hold this rank")
        return f["do"], g, self.get(f["reg"], env, regs), key(f["reg"], env)

    do_all_gather = do_all_reduce

    def do_fwd(self, r: tuple, f: dict, env: dict, regs: dict) -> tuple:
        (g, lay), a = self.block(r, f, env), self.get(f["in"], env, regs)
        self.need(f"forward of layer {lay}", [a], [("act", lay, *a[2:4])])
        regs[key(f["out"], env)] = ("act", lay + 1, *a[2:])
        return "block", g, ("fwd", a), None

    def do_bwd(self, r: tuple, f: dict, env: dict, regs: dict) -> tuple:
        (g, lay), a, s = self.block(r, f, env), self.get(f["in"], env, regs), self.get(f["seed"], env, regs)
        self.need(f"backward of layer {lay}", [a, s], [("act", lay, *a[2:4]), ("gact", lay + 1, *a[2:4], *s[4:])])
        regs[key(f["out"], env)] = ("gact", lay, *s[2:])
        regs[key(f["grad"], env)] = ("grad", lay, r[1], self.bit(a), s[4])
        return "block", g, ("bwd", a, s), None

    def do_loss(self, r: tuple, f: dict, env: dict, regs: dict) -> tuple:
        (g, _), a, y = self.block(r, f, env), self.get(f["in"], env, regs), self.get(f["label"], env, regs)
        sc, L = Fraction(*(h(env) for h in f["scale"][1])), self.dims["L"]
        self.need("loss", [a, y], [("act", L, *a[2:4]), ("label", *a[2:4])])
        regs[key(f["out"], env)] = ("gact", L, *a[2:], sc)
        regs[key(f["loss"], env)] = ("loss", self.bit(a), sc)
        return "block", g, ("loss", a, sc), None

    def do_opt(self, r: tuple, f: dict, env: dict, regs: dict) -> tuple:
        (g, lay), gr = self.block(r, f, env), self.get(f["grad"], env, regs)
        self.need(f"optimizer of layer {lay} shard {r[1]}", [gr], [("grad", lay, r[1], self.full, self.c)])
        fail_if((*r[:2], lay) in self.updated, Fault, f"layer {lay} of replica {r[0]} shard {r[1]} updated twice")
        self.updated.add((*r[:2], lay))
        return "block", g, ("sgd", lay), None

    def body(self, r: tuple, body: list, env: dict, regs: dict, loop: tuple):
        """Run statements on rank ``r``: yield each rendezvous with where it is, store its result."""
        for op, label, f, rev in body:
            self.count()
            try:
                if op == "for":
                    xs = range(f["from"](env), f["to"](env))
                    for x in (xs[::-1] if rev else xs):
                        self.count()     # an iteration counts too: an empty body must not loop unbounded
                        env[f["var"]] = x
                        yield from self.body(r, f["body"], env, regs, loop + ((f["var"], x),))
                elif (ev := self.do[op](r, f, env, regs)) is not None:
                    regs[ev[3]] = yield ev, (r, label, loop)     # register None: a result nobody reads
            except Fault as e:
                raise Rejected(f"{at((r, label, loop))}: {e}") from None
            except (ZeroDivisionError, KeyError) as e:
                why = "divides by zero" if isinstance(e, ZeroDivisionError) else f"uses {e}, unbound there"
                raise Rejected(f"{at((r, label, loop))}: a formula {why}") from None

    def count(self) -> None:
        self.events += 1
        if self.events % 65536 == 0:
            self.limits.tick()
            fail_if(self.events > MAX_EVENTS, LimitExceeded, f"more than {MAX_EVENTS} events")

    def program(self, r: tuple):
        env = {**self.dims, "d": r[0], "t": r[1], "p": r[2]}
        for lo, hi, body in self.programs:
            if lo(env) <= r[2] < hi(env):
                return (yield from self.body(r, body, env, {}, ()))
        raise Rejected(f"rank {list(r)}: no program covers stage {r[2]}")

    def go(self) -> None:
        """Run every rank to completion; a rendezvous completes once its whole group is there."""
        dp, tp, pp = self.shape
        ready = [(d, t, p) for p in range(pp) for d in range(dp) for t in range(tp)][::-1]    # rank 0 first
        gens, value, pend = {r: self.program(r) for r in ready}, {}, {}    # pend: the blocked ranks
        while ready:
            r = ready.pop()
            try:
                (kind, group, payload, _), who = gens[r].send(value.pop(r, None))
            except StopIteration:
                continue
            except (ZeroDivisionError, KeyError) as e:     # only a stage formula fails outside an event
                raise Rejected(f"rank {list(r)}: a stage formula fails ({e!r})") from None
            k = (group, kind in ("send", "recv") or kind)      # a channel, or a group and its collective
            pend.setdefault(k, {})[r] = payload, who, kind
            if len(pend[k]) == len(group):
                self.fire(kind, group, pend.pop(k), value)
                ready += group
        if (blocked := {x: (k[0], *v) for k, m in pend.items() for x, v in m.items()}):    # the lowest rank first
            group, _, who, kind = blocked[min(blocked, key=lambda x: (x[2], x[0], x[1]))]
            peer = group[1] if kind == "send" else group[0]
            on = f"rank {list(peer)}" if kind in ("send", "recv") else f"group {[list(x) for x in group]}"
            raise Rejected(f"deadlock: {at(who)} waits at {kind} with {on}; {len(blocked)} ranks blocked")

    def fire(self, kind: str, group: tuple, pend: dict, value: dict) -> None:
        """Complete a rendezvous: every member gets the sender's message or the reduction."""
        (p0, w0, _), *rest = [pend[x] for x in group]
        for p, w, _ in rest:
            if kind == "block" and p != p0:
                raise Rejected(f"{at(w)}: TP group disagrees with {at(w0)}: {p[0]} of "
                               f"{[self.show(v) for v in p[1:]]} vs {[self.show(v) for v in p0[1:]]}")
            if kind == "all_reduce":
                p0 = self.add(p0, p, w)
        value.update(dict.fromkeys(group, ("gathered", len(group)) if kind == "all_gather" else p0))

    def bit(self, a: tuple) -> int:
        return 1 << (a[2] * self.dims["M"] + a[3])

    def show(self, v) -> str:
        """A value for a message; a sum lists its (replica, micro-batch) pairs."""
        if not isinstance(v, tuple):
            return str(v)
        if v[0] not in ("grad", "loss"):
            return f"{v[0]}[{', '.join(map(str, v[1:]))}]"
        pairs = [divmod(i, self.dims["M"]) for i in range(v[-2].bit_length()) if v[-2] >> i & 1]
        over = "all" if v[-2] == self.full else f"{pairs[:4]}{'...' if len(pairs) > 4 else ''}"
        return f"{v[0]}{list(v[1:-2])} over {over} ({len(pairs)} pairs) at scale {v[-1]}"

    def add(self, a: tuple, b: tuple, who: tuple | None = None) -> tuple:
        """The sum of one tensor at one scale over disjoint (replica, micro-batch) pair sets."""
        if a[0] not in ("grad", "loss") or a[0] != b[0] or a[1:-2] != b[1:-2] or a[-1] != b[-1] or a[-2] & b[-2]:
            why = f"cannot add {self.show(a)} and {self.show(b)} (different tensors or scales, or a pair counted twice)"
            raise Rejected(f"{at(who)}: {why}") if who else Fault(why)
        return a[:-2] + (a[-2] | b[-2], a[-1])


def split(n: str, k: int | None, tp: int) -> list[str]:
    """``n`` replicated over the TP ranks (``k`` None), or their concat on dim ``k``."""
    return [f"{n}@r{j}" for j in range(tp)] if k is None else \
        [f"concat({', '.join(f'{n}@r{j}' for j in range(tp))}, dim={k})" if tp > 1 else f"{n}@r0"]


def norm(exprs, where: str) -> list[str]:
    if not isinstance(exprs, list) or not all(isinstance(e, str) for e in exprs):
        raise Malformed(where, "relations are lists of clean expressions")
    return [str(terms.parse(e, where)) for e in exprs]


def check_interface(blocks: dict, graphs: dict, tp: int, where: str) -> None:
    """Each block claim's relations must be exactly the interface the wiring assumes."""
    fwd_in = blocks["fwd"].get("input_relation")
    fail_if(not isinstance(fwd_in, dict), Malformed, where, "block 'fwd' has no input relation")
    params, forms, spec = sorted(set(fwd_in) - {"h", "cos", "sin"}), {}, graphs["fwd"][0].tensors
    for n in params:      # a concat on one dim (the same form in every block), else replicated
        dims = range(len(spec[n].shape) if n in spec else 0)
        forms[n] = next((k for k in dims if norm(fwd_in[n], where) == norm(split(n, k, tp), where)), None)
    R = lambda *ns: {n: split(n, None, tp) for n in ns}                       # noqa: E731  replicated
    P = lambda pre: {pre + n: split(pre + n, forms[n], tp) for n in params}   # noqa: E731  parameters
    want = {"fwd": ({**R("h", "cos", "sin"), **P("")}, R("out")),
            "bwd": ({**R("h", "g", "cos", "sin"), **P("")}, {**R("g_in"), **P("grad.")}),
            "loss": (R("h", "y"), R("loss", "g")), "sgd": ({**P(""), **P("grad.")}, P("new."))}
    for k, (rin, rout) in want.items():
        for field, rel in (("input_relation", rin), ("output_relation", rout)):
            got = blocks[k].get(field)
            if not isinstance(got, dict) or set(got) != set(rel) or \
                    any(norm(got[n], where) != norm(rel[n], where) for n in rel):
                raise Rejected(f"block '{k}': {field} is not the interface the schedule assumes")
        if graphs[k][1].world_size != tp:
            raise Rejected(f"block '{k}': impl has {graphs[k][1].world_size} ranks, the TP group {tp}")


def check_sizes(graphs: dict, dims: dict) -> None:
    """Every block's activation ``h`` is ``(B, S, H)``: the sizes it was checked at (docs/templates.md)."""
    want = (dims["B"], dims["S"], dims["H"])
    for k in ("fwd", "bwd", "loss"):
        h = graphs[k][0].tensors.get("h")
        if h is None or tuple(h.shape) != want:
            raise Rejected(f"block '{k}' is checked with activations {list(h.shape) if h else None}, the claim's "
                           f"B, S, H are {list(want)}: a block proves nothing about sizes it was not checked at")


def check_gradients(graphs: dict, params: list[str], limits) -> None:
    """Guard: a backward spec's gradient that is 0 where the forward moves is not its backward (docs/templates.md)."""
    rng = np.random.default_rng(0)

    def draw(t):
        return np.zeros(t.shape, dtype=np.int64) if t.dtype in INT_DTYPES else rng.standard_normal(t.shape)
    for fwd, out, bwd, pairs in (("fwd", "out", "bwd", [("h", "g_in")] + [(n, "grad." + n) for n in params]),
                                 ("loss", "loss", "loss", [("h", "g")])):
        f, b = graphs[fwd][0], graphs[bwd][0]
        point = {t: draw(g.tensors[t]) for g in (f, b) for t in g.inputs}
        grads, base = evaluate(b, point, False, limits), evaluate(f, point, False, limits)[out]
        for x, gx in pairs:
            if gx not in grads or np.any(grads[gx] != 0):
                continue
            moved = evaluate(f, {**point, x: draw(f.tensors[x])}, False, limits)[out]
            if not np.allclose(moved, base, rtol=1e-9, atol=1e-12):
                raise Rejected(f"block '{bwd}': its spec's '{gx}' is 0 at a random point where block '{fwd}''s "
                               f"'{out}' depends on '{x}': not its backward")


def check_dims(claim: dict, where: str) -> dict:
    dims = claim.get("dims")
    if not isinstance(dims, dict) or set(dims) != set(DIMS) or \
            not all(type(v) is int and 1 <= v <= 1 << 20 for v in dims.values()):
        raise Malformed(where, f"'dims' must give positive integers {', '.join(DIMS)}")
    if dims["dp"] * dims["tp"] * dims["pp"] > 1 << 16 or dims["dp"] * dims["M"] > 1 << 16:
        raise LimitExceeded(f"{where}: plan larger than 65,536 ranks or (replica, micro-batch) pairs")
    return dims


def check_schedule(claim: dict, dims: dict, where: str, limits) -> Run:
    """Run the schedule of every rank abstractly; ``Rejected`` names the first fault."""
    tp_group, progs, count = formulas(claim.get("tp_group"), f"{where}: tp_group", "tp_group", 3), [], [0]
    for i, pr in enumerate(claim.get("programs") or []):
        if not isinstance(pr, dict) or set(pr) != {"stages", "body"}:
            raise Malformed(f"{where}: program {i}", "a program is {'stages': [from, to], 'body': [...]}")
        progs.append((*formulas(pr["stages"], f"{where}: program {i}", "stages", 2)[1],
                      compile_body(pr["body"], f"{i}", count)))
    run = Run(dims, tp_group, progs, limits)
    run.go()
    for d, t, lay in itertools.product(range(dims["dp"]), range(dims["tp"]), range(dims["L"])):
        fail_if((d, t, lay) not in run.updated, Rejected, f"layer {lay} of replica {d} shard {t} is never updated")
    fail_if(not run.metrics, Rejected, "no rank outputs the loss metric")
    return run


def replay_template(claim: dict, evidence: dict, arts: dict, where: str, limits) -> str:
    dims = check_dims(claim, where)
    blocks, bev = claim.get("blocks"), evidence.get("blocks")
    if not isinstance(blocks, dict) or not isinstance(bev, dict) or set(blocks) != {"fwd", "bwd", "loss", "sgd"}:
        raise Rejected("the claim needs exactly the blocks fwd, bwd, loss, sgd")
    graphs = {}
    for k, b in blocks.items():
        if not isinstance(b, dict) or b.get("kind") != "refinement" or not isinstance(bev.get(k), dict):
            raise Rejected(f"block '{k}' is not a refinement claim with evidence")
        graphs[k] = tuple(graph_artifact(arts, b.get(side), where, limits) for side in ("spec", "impl"))
    with provers(()):   # blocks hold by normal forms alone: template claims trust no SMT solver
        done = [f"{k}: {replay_refinement(b, bev[k], arts, f'{where}: block {k}', limits, CORE)}"
                for k, b in blocks.items()]
    check_interface(blocks, graphs, dims["tp"], where)
    check_sizes(graphs, dims)
    check_gradients(graphs, sorted(set(blocks["fwd"]["input_relation"]) - {"h", "cos", "sin"}), limits)
    run = check_schedule(claim, dims, where, limits)
    return (f"{dims['L']} layers dp{dims['dp']} tp{dims['tp']} pp{dims['pp']} mb{dims['M']}: {run.world} ranks, "
            f"{run.events} events, every shard updated once from the full gradient at scale {run.c}, "
            f"{run.metrics} loss metrics; blocks: " + "; ".join(done))
