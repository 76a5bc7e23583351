"""Replay of ``train-template`` claims: block claims + schedule wiring (docs/templates.md).

(a) each block (``fwd``, ``bwd``, ``loss``, ``sgd``) is an ordinary refinement claim, replayed
as such, whose relations must be exactly the interface rebuilt here; (b) every rank
``(d, t, p)`` runs its stage's program abstractly: values are tags (``act`` l d m,
``gact`` l d m scale, ``label`` d m, ``grad`` l t mask scale, ``loss`` mask scale; a
mask is a bit set of (replica, micro-batch) pairs); send/recv are rendezvous on FIFO
channels, blocks and collectives rendezvous over their group; the run must finish
without deadlock, every parameter shard of every replica must be updated once from the
gradient over all pairs at the sequential step's scale ``1/(M*dp*B*S*H)``, and every
loss metric must cover all pairs at that scale. Formulas: integers, names, + - * // % ( ).
"""

from __future__ import annotations

import re
from fractions import Fraction

from . import terms
from .errors import LimitExceeded, Malformed, Rejected

DIMS = ("L", "dp", "tp", "pp", "M", "B", "S", "H")
VARS = ("d", "t", "p", "m", "l", "j")
MAX_EVENTS = 50_000_000
_TOK = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(//|[-+*%()]))")


def formula(text, where: str):
    """Compile a formula to a function of an environment (no eval)."""
    if not isinstance(text, str) or len(text) > 200:
        raise Malformed(where, f"formula {text!r} must be a string of at most 200 characters")
    toks, pos = [], 0
    while pos < len(text.rstrip()):
        mt = _TOK.match(text, pos)
        if not mt:
            raise Malformed(where, f"formula {text!r}: bad character at {pos}")
        toks.append(mt.group(1) or mt.group(2) or mt.group(3))
        pos = mt.end()
    used: set = set()
    ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
           "//": lambda a, b: a // b, "%": lambda a, b: a % b}

    def bin_(f, g, o):
        return lambda e: o(f(e), g(e))

    def expr(i, depth):
        f, i = term(i, depth)
        while i < len(toks) and toks[i] in "+-":
            g, j = term(i + 1, depth)
            f, i = bin_(f, g, ops[toks[i]]), j
        return f, i

    def term(i, depth):
        f, i = unary(i, depth)
        while i < len(toks) and toks[i] in ("*", "//", "%"):
            g, j = unary(i + 1, depth)
            f, i = bin_(f, g, ops[toks[i]]), j
        return f, i

    def unary(i, depth):
        if depth > 32 or i >= len(toks):
            raise Malformed(where, f"formula {text!r}: incomplete or nested too deeply")
        tk = toks[i]
        if tk == "-":
            f, i = unary(i + 1, depth + 1)
            return (lambda e: -f(e)), i
        if tk == "(":
            f, i = expr(i + 1, depth + 1)
            if i >= len(toks) or toks[i] != ")":
                raise Malformed(where, f"formula {text!r}: missing ')'")
            return f, i + 1
        if tk.isdigit():
            v = int(tk)
            return (lambda e: v), i + 1
        if tk not in DIMS + VARS:
            raise Malformed(where, f"formula {text!r}: unknown name {tk!r}")
        used.add(tk)
        return (lambda e: e[tk]), i + 1

    f, i = expr(0, 0)
    if i != len(toks):
        raise Malformed(where, f"formula {text!r}: unexpected {toks[i]!r}")
    return f, frozenset(used - set(DIMS) - {"j"})


FIELDS = {"for": ("var", "from", "to", "body"), "params": ("from", "to"), "input": ("data", "micro", "replica", "out"),
          "fwd": ("layer", "in", "out"), "bwd": ("layer", "in", "seed", "out", "grad"),
          "loss": ("in", "label", "scale", "out", "loss"), "send": ("peer", "reg"), "recv": ("peer", "reg"),
          "acc": ("into", "from"), "all_reduce": ("reg", "group", "size"), "all_gather": ("reg", "group", "size"),
          "opt": ("layer", "grad"), "metric": ("reg",)}


def compile_body(body, where: str, count: list) -> list:
    """Statements -> ``(op, label, fields)`` with formulas compiled; refs are (name, formulas)."""
    if not isinstance(body, list):
        raise Malformed(where, "a body must be a list of statements")
    out = []
    for i, s in enumerate(body):
        count[0] += 1
        w = f"{where}.{i}"
        op = s.get("do") if isinstance(s, dict) else None
        if op not in FIELDS or set(s) - {"do", "rev"} != set(FIELDS[op]) or count[0] > 10_000:
            raise Malformed(w, f"bad statement {str(s)[:80]} (fields of {op!r}: {FIELDS.get(op)})")
        f = {}
        for k in FIELDS[op]:
            v = s[k]
            if k == "body":
                f[k] = compile_body(v, w, count)
            elif k in ("var", "data"):
                if v not in (("m", "l") if k == "var" else ("x", "y")):
                    raise Malformed(w, f"bad {k} {v!r}")
                f[k] = v
            elif k in ("peer", "group", "scale") or k in ("in", "out", "seed", "grad", "label", "loss", "reg", "into") \
                    or (k == "from" and op == "acc"):
                if not isinstance(v, list) or not v or len(v) > 4:
                    raise Malformed(w, f"'{k}' must be a short list")
                lead = () if k in ("peer", "group", "scale") else (v[0],)
                if lead and not isinstance(v[0], str):
                    raise Malformed(w, f"'{k}' must start with a register name")
                if k in ("peer", "group") and len(v) != 3 or k == "scale" and len(v) != 2:
                    raise Malformed(w, f"'{k}' needs {2 if k == 'scale' else 3} formulas")
                fs = [formula(x, w) for x in v[len(lead):]]
                f[k] = (lead, [x[0] for x in fs], frozenset().union(*(x[1] for x in fs)))
            else:
                f[k] = formula(v, w)[0]
        out.append((op, f"{op}@{w}", f, bool(s.get("rev"))))
    return out


class Who:
    """Where an event is (formatted only for a message)."""

    __slots__ = ("env", "label", "vals")

    def __init__(self, env, label, loop):
        self.env, self.label, self.vals = env, label, [(v, env[v]) for v in loop]

    def __str__(self):
        e = self.env
        return f"rank [{e['d']}, {e['t']}, {e['p']}] event {self.label}" + "".join(f" {v}={x}" for v, x in self.vals)


class Run:
    """The abstract execution of every rank of the plan."""

    def __init__(self, dims: dict, tp_group: list, programs: list, limits) -> None:
        self.dims, self.tp_group, self.programs, self.limits = dims, tp_group, programs, limits
        self.world = dims["dp"] * dims["tp"] * dims["pp"]
        self.full = (1 << (dims["dp"] * dims["M"])) - 1
        self.c = Fraction(1, dims["M"] * dims["dp"] * dims["B"] * dims["S"] * dims["H"])
        self.own: dict = {}        # (d, t) -> {layer: p}
        self.updated: dict = {}    # (d, t, l) -> rank
        self.metrics = 0
        self.events = 0
        self.cache: dict = {}

    def coords(self, r: int):
        dp, tp = self.dims["dp"], self.dims["tp"]
        return (r // tp) % dp, r % tp, r // (tp * dp)

    def rank(self, xyz, who: str) -> int:
        d, t, p = xyz
        if not (0 <= d < self.dims["dp"] and 0 <= t < self.dims["tp"] and 0 <= p < self.dims["pp"]):
            raise Rejected(f"{who}: rank [{d}, {t}, {p}] does not exist")
        return t + self.dims["tp"] * (d + self.dims["dp"] * p)

    def program(self, r: int, env: dict, regs: dict):
        d, t, p = self.coords(r)
        for lo, hi, body in self.programs:
            if lo(env) <= p < hi(env):
                return self.body(r, body, env, regs, [])
        raise Rejected(f"rank [{d}, {t}, {p}]: no program covers stage {p}")

    def body(self, r, body, env, regs, loop):
        for op, label, f, rev in body:
            self.events += 1
            if self.events % 65536 == 0:
                self.limits.tick()
                if self.events > MAX_EVENTS:
                    raise LimitExceeded(f"more than {MAX_EVENTS} events")
            if op == "for":
                v, lo, hi = f["var"], f["from"](env), f["to"](env)
                for x in (range(hi - 1, lo - 1, -1) if rev else range(lo, hi)):
                    env[v] = x
                    yield from self.body(r, f["body"], env, regs, loop + [v])
                continue
            who = Who(env, label, loop)
            res = yield from self.event(r, op, f, env, regs, who)
            if res is not None:
                for k, val in res:
                    regs[self.key(f[k], env)] = val

    def key(self, ref, env):
        return (ref[0][0],) + tuple(g(env) for g in ref[1])

    def get(self, ref, env, regs, who):
        k = self.key(ref, env)
        if k not in regs:
            raise Rejected(f"{who}: reads {k[0]}{list(k[1:])}, which holds nothing")
        return regs[k]

    def group(self, ref, size, env, who):
        ck = (id(ref), size) + tuple(env[n] for n in ref[2])
        if ck in self.cache:
            return self.cache[ck]
        g, forms = [], ref[1]
        for j in range(size):
            env["j"] = j
            g.append(self.rank([h(env) for h in forms], who))
        del env["j"]
        if len(set(g)) != len(g) or not g:
            raise Rejected(f"{who}: group {[list(self.coords(x)) for x in g]} repeats a rank")
        self.cache[ck] = tuple(g)
        return tuple(g)

    def layer(self, f, env, who):
        lay = f["layer"](env)
        if self.own.get((env["d"], env["t"]), {}).get(lay) != env["p"]:
            raise Rejected(f"{who}: layer {lay} is not held by this rank")
        return lay

    def event(self, r, op, f, env, regs, who):
        get = lambda k: self.get(f[k], env, regs, who)   # noqa: E731
        D = self.dims
        if op == "params":
            for lay in range(max(0, f["from"](env)), min(D["L"], f["to"](env))):
                mine = self.own.setdefault((env["d"], env["t"]), {})
                if lay in mine:
                    raise Rejected(f"{who}: layer {lay} of replica {env['d']} shard {env['t']} held twice")
                mine[lay] = env["p"]
            return None
        if op == "input":
            mi, di = f["micro"](env), f["replica"](env)
            if not (0 <= mi < D["M"] and 0 <= di < D["dp"]):
                raise Rejected(f"{who}: data slice (replica {di}, micro-batch {mi}) does not exist")
            return [("out", ("act", 0, di, mi) if f["data"] == "x" else ("label", di, mi))]
        if op == "acc":
            k = self.key(f["into"], env)
            new = get("from")
            if k in regs:
                new = self.add(regs[k], new, who)
            regs[k] = new
            return None
        if op == "metric":
            v = get("reg")
            if v[0] != "loss" or v[1] != self.full or v[2] != self.c:
                raise Rejected(f"{who}: loss metric is {self.show(v)}, not loss over all pairs at scale {self.c}")
            self.metrics += 1
            return None
        if op in ("send", "recv"):
            peer = self.rank([h(env) for h in f["peer"][1]], who)
            if op == "send":
                yield ("send", peer, get("reg"), who)
                return None
            return [("reg", (yield ("recv", peer, None, who)))]
        if op in ("all_reduce", "all_gather"):
            g = self.group(f["group"], f["size"](env), env, who)
            if r not in g:
                raise Rejected(f"{who}: {op} group {[list(self.coords(x)) for x in g]} does not hold this rank")
            return [("reg", (yield (op, g, get("reg"), who)))]
        g = self.group(self.tp_group, D["tp"], env, who)     # a block instance on the TP group
        if g.index(r) != env["t"] if r in g else True:
            raise Rejected(f"{who}: TP group {[list(self.coords(x)) for x in g]} does not hold this rank "
                           f"at position t={env['t']}")
        if op == "fwd":
            lay, a = self.layer(f, env, who), get("in")
            if a[:2] != ("act", lay):
                raise Rejected(f"{who}: forward of layer {lay} gets {self.show(a)}, not an input of layer {lay}")
            yield ("block", g, ("fwd", a), who)
            return [("out", ("act", lay + 1) + a[2:])]
        if op == "bwd":
            lay, a, s = self.layer(f, env, who), get("in"), get("seed")
            if a[:2] != ("act", lay) or s[:2] != ("gact", lay + 1) or s[2:4] != a[2:4]:
                raise Rejected(f"{who}: backward of layer {lay} gets saved {self.show(a)} and seed "
                               f"{self.show(s)}; needs act[{lay}] and gact[{lay + 1}] of one (replica, micro-batch)")
            yield ("block", g, ("bwd", a, s), who)
            return [("out", ("gact", lay) + s[2:]), ("grad", ("grad", lay, env["t"], self.bit(a), s[4]))]
        if op == "loss":
            a, y = get("in"), get("label")
            num, den = (h(env) for h in f["scale"][1])
            if den == 0:
                raise Rejected(f"{who}: loss scale divides by zero")
            sc = Fraction(num, den)
            if a[:2] != ("act", D["L"]) or y != ("label",) + a[2:]:
                raise Rejected(f"{who}: loss gets {self.show(a)} with {self.show(y)}; needs act[{D['L']}] "
                               "and the label of the same (replica, micro-batch)")
            yield ("block", g, ("loss", a, sc), who)
            return [("out", ("gact", D["L"]) + a[2:] + (sc,)), ("loss", ("loss", self.bit(a), sc))]
        lay, gr = self.layer(f, env, who), get("grad")   # opt
        if gr != ("grad", lay, env["t"], self.full, self.c):
            raise Rejected(f"{who}: optimizer of layer {lay} shard {env['t']} gets {self.show(gr)}; needs "
                           f"grad[{lay}] shard {env['t']} over all {D['dp'] * D['M']} pairs at scale {self.c}")
        if (env["d"], env["t"], lay) in self.updated:
            raise Rejected(f"{who}: layer {lay} of replica {env['d']} shard {env['t']} updated twice")
        self.updated[(env["d"], env["t"], lay)] = r
        yield ("block", g, ("sgd", lay), who)
        return None

    def bit(self, a):
        return 1 << (a[2] * self.dims["M"] + a[3])

    def show(self, v):
        if v[0] in ("grad", "loss"):
            pairs = [(i // self.dims["M"], i % self.dims["M"]) for i in range(v[-2].bit_length()) if v[-2] >> i & 1]
            more = f"{pairs[:4]}{'...' if len(pairs) > 4 else ''} ({len(pairs)} pairs)"
            return f"{v[0]}{list(v[1:-2])} over {more} at scale {v[-1]}"
        return f"{v[0]}[{', '.join(map(str, v[1:]))}]"

    def add(self, a, b, who):
        if a[0] not in ("grad", "loss") or a[0] != b[0] or a[1:-2] != b[1:-2] or a[-1] != b[-1] or a[-2] & b[-2]:
            raise Rejected(f"{who}: cannot add {self.show(a)} and {self.show(b)} (different tensors or scales, "
                           "or a (replica, micro-batch) pair counted twice)")
        return a[:-2] + (a[-2] | b[-2], a[-1])

    def go(self) -> None:
        """Run every rank to completion (rendezvous semantics); raise ``Rejected`` on any fault."""
        gens, value, ready = {}, {}, list(range(self.world - 1, -1, -1))
        for r in ready:
            d, t, p = self.coords(r)
            gens[r] = self.program(r, {**self.dims, "d": d, "t": t, "p": p}, {})
        waiting, sends, recvs, colls = {}, {}, {}, {}
        while ready:
            r = ready.pop()
            try:
                ev = gens[r].send(value.pop(r, None))
            except StopIteration:
                continue
            except (ZeroDivisionError, KeyError) as e:
                raise Rejected(f"rank {list(self.coords(r))}: a formula {'divides by zero' if isinstance(e, ZeroDivisionError) else f'uses {e}, unbound there'}") from None
            kind, peer, payload, who = ev
            waiting[r] = ev
            if kind in ("send", "recv"):
                ch = (r, peer) if kind == "send" else (peer, r)
                mine, other = (sends, recvs) if kind == "send" else (recvs, sends)
                if ch in other:
                    o = other.pop(ch)
                    src = r if kind == "send" else o
                    value[ch[1]] = waiting[src][2]
                    for x in (r, o):
                        del waiting[x]
                        ready.append(x)
                else:
                    mine[ch] = r
                continue
            pend = colls.setdefault((kind, peer), {})
            pend[r] = (payload, who)
            if len(pend) == len(peer):
                del colls[(kind, peer)]
                self.fire(kind, peer, pend, value)
                for x in peer:
                    del waiting[x]
                    ready.append(x)
        if waiting:
            r = min(waiting)
            kind, peer, _, who = waiting[r]
            on = f"rank {list(self.coords(peer))}" if isinstance(peer, int) else \
                f"group {[list(self.coords(x)) for x in peer]}"
            raise Rejected(f"deadlock: {who} waits at {kind} with {on}; {len(waiting)} ranks blocked")

    def fire(self, kind, group, pend, value) -> None:
        (p0, w0), *rest = [pend[x] for x in group]
        if kind == "block":
            for p, w in rest:
                if p != p0:
                    raise Rejected(f"{w}: TP group disagrees with {w0}: {p[0]} of "
                                   f"{[self.show(v) for v in p[1:2]]} vs {[self.show(v) for v in p0[1:2]]}")
            return
        if kind == "all_gather":
            for x in group:
                value[x] = ("gathered", len(group))
            return
        acc = p0
        for p, w in rest:
            acc = self.add(acc, p, w)
        for x in group:
            value[x] = acc


def check_interface(blocks: dict, graphs: dict, tp: int, where: str) -> None:
    """Each block claim's relations must be exactly the interface the wiring assumes."""
    rep = lambda n: [f"{n}@r{j}" for j in range(tp)]   # noqa: E731
    fwd_in = blocks["fwd"].get("input_relation")
    if not isinstance(fwd_in, dict):
        raise Malformed(where, "block 'fwd' has no input relation")
    params = sorted(set(fwd_in) - {"h", "cos", "sin"})
    forms = {}
    for n in params:
        rank = len(graphs["fwd"][0].tensors[n].shape) if n in graphs["fwd"][0].tensors else 0
        opts = [None] + list(range(rank)) if tp > 1 else [None, 0]
        forms[n] = next((k for k in opts if norm(fwd_in[n], where) == norm(split(n, k, tp), where)), "bad")
        if forms[n] == "bad":
            raise Rejected(f"block 'fwd': parameter '{n}' is neither replicated nor a concat over the TP ranks")
    P = lambda pre: {pre + n: split(pre + n, forms[n], tp) for n in params}   # noqa: E731
    want = {"fwd": ({"h": rep("h"), "cos": rep("cos"), "sin": rep("sin"), **P("")}, {"out": rep("out")}),
            "bwd": ({"h": rep("h"), "g": rep("g"), "cos": rep("cos"), "sin": rep("sin"), **P("")},
                    {"g_in": rep("g_in"), **P("grad.")}),
            "loss": ({"h": rep("h"), "y": rep("y")}, {"loss": rep("loss"), "g": rep("g")}),
            "sgd": ({**P(""), **P("grad.")}, P("new."))}
    for k, (rin, rout) in want.items():
        for field, rel in (("input_relation", rin), ("output_relation", rout)):
            got = blocks[k].get(field)
            if not isinstance(got, dict) or set(got) != set(rel) or \
                    any(norm(got[n], where) != norm(rel[n], where) for n in rel):
                raise Rejected(f"block '{k}': {field} is not the interface the schedule assumes")
        if graphs[k][1].world_size != tp:
            raise Rejected(f"block '{k}': impl has {graphs[k][1].world_size} ranks, the TP group {tp}")


def split(n, k, tp):
    return [f"{n}@r{j}" for j in range(tp)] if k is None else \
        [f"concat({', '.join(f'{n}@r{j}' for j in range(tp))}, dim={k})" if tp > 1 else f"{n}@r0"]


def norm(exprs, where):
    if not isinstance(exprs, list) or not all(isinstance(e, str) for e in exprs):
        raise Malformed(where, "relations are lists of clean expressions")
    return [str(terms.parse(e, where)) for e in exprs]


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
    tpg = claim.get("tp_group")
    if not isinstance(tpg, list) or len(tpg) != 3:
        raise Malformed(where, "'tp_group' needs 3 formulas (d, t, p) over j")
    progs, count = [], [0]
    for i, pr in enumerate(claim.get("programs") or []):
        w = f"{where}: program {i}"
        if not isinstance(pr, dict) or set(pr) != {"stages", "body"} or not isinstance(pr["stages"], list) \
                or len(pr["stages"]) != 2:
            raise Malformed(w, "a program is {'stages': [from, to], 'body': [...]}")
        progs.append((formula(pr["stages"][0], w)[0], formula(pr["stages"][1], w)[0],
                      compile_body(pr["body"], f"{i}", count)))
    fs = [formula(x, f"{where}: tp_group") for x in tpg]
    run = Run(dims, ((), [x[0] for x in fs], frozenset().union(*(x[1] for x in fs))), progs, limits)
    run.go()
    for d in range(dims["dp"]):
        for t in range(dims["tp"]):
            for lay in range(dims["L"]):
                if (d, t, lay) not in run.updated:
                    raise Rejected(f"layer {lay} of replica {d} shard {t} is never updated")
    if not run.metrics:
        raise Rejected("no rank outputs the loss metric")
    return run


def replay_template(claim: dict, evidence: dict, arts: dict, where: str, limits) -> str:
    from .replay import _graph, replay_refinement   # replay registers this module: import late

    dims = check_dims(claim, where)
    blocks, bev = claim.get("blocks"), evidence.get("blocks")
    if not isinstance(blocks, dict) or not isinstance(bev, dict) or set(blocks) != {"fwd", "bwd", "loss", "sgd"}:
        raise Rejected("the claim needs exactly the blocks fwd, bwd, loss, sgd")
    graphs = {}
    for k, b in blocks.items():
        if not isinstance(b, dict) or b.get("kind") != "refinement" or not isinstance(bev.get(k), dict):
            raise Rejected(f"block '{k}' is not a refinement claim with evidence")
        graphs[k] = (_graph(arts, b.get("spec"), where, limits), _graph(arts, b.get("impl"), where, limits))
    check_interface(blocks, graphs, dims["tp"], where)
    done = [f"{k}: {replay_refinement(b, bev[k], arts, f'{where}: block {k}', limits)}" for k, b in blocks.items()]
    run = check_schedule(claim, dims, where, limits)
    return (f"{dims['L']} layers dp{dims['dp']} tp{dims['tp']} pp{dims['pp']} mb{dims['M']}: {run.world} ranks, "
            f"{run.events} events, every shard updated once from the full gradient at scale {run.c}, "
            f"{run.metrics} loss metrics; blocks: " + "; ".join(done))
