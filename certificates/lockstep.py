"""Lockstep replay of one CTA (issue 17): groups of threads at one pc run an instruction at a time (registers uniform
or numpy columns); all or nothing: the outputs as ``Replay.run`` gives them, else ``Fall`` and a fresh per-thread
replay (never a verdict). It follows the schedule (``Replay.bar`` validates barriers) and is one schedule of the
checked semantics: each run event interleaves its threads round-robin, which any race-free schedule may
(docs/proofs.md, kernel-equivalence). Only full-CTA barriers are released, so in epoch ``E`` (barriers so far) every
vector clock is ``[E] * n``: an access is ordered after another thread's iff that one is in an earlier epoch. Word
shadows (last write: thread, epoch, pc; each thread's last read since) find exactly the conflicts ``Replay.access``
finds (a race: ``Fall``, so at least as strict), with the same classes (the barrier ending the first access's epoch
for its thread). Shared memory is whole words of input elements (``Var.ix``) or objects; f32 arithmetic of reals runs
per thread on the columns; global accesses but f32/f16 input loads, and all else, run ``Replay.step`` per thread."""

import operator as opr
from array import array

import numpy as np

from .errors import CheckError, fail_if
from .kernel import (BARRIERS, BINARY_OPS, COMPARE, CONV, FLOAT_OPS, INTS, NAMES, RATS, SHARED_BASE, SPACES, Dot, Ptr,
                     Replay, Var, bits, float_of_bits, index, var, wrap)
from .poly import ONE_P, Rat
from .ptx import FImm, Imm, Instr, Mem, Pair, Reg, Sym

OPS = {**BINARY_OPS, "min": np.minimum, "max": np.maximum, "mul": opr.mul, "mad": lambda a, b, c: a * b + c,
       "shl": lambda a, b: a * (1 << b), "shr": opr.rshift, "mov": lambda a: a, "cvt": lambda a: a, "setp": None,
       "rem": np.fmod}   # C's remainder (the dividend's sign), as ``Replay.integer``; divisors 0 and -1 run per thread
ADDR = {"add": (0, 1), "sub": (0,), "mad": (2,), "mov": (0,), "cvt": (0,)}   # where an address keeps provenance
CHEAP = {*OPS, "fma", "selp", "cvta", "not", "neg", "bra", "ret", "exit", "ld", "st"}
EXIT = Instr("exit", [], None, 0, "")   # past the last instruction
UNSET = object()  # a register a thread has not written (a joined group's other threads have)
IX: dict[tuple, np.ndarray] = {}   # (input tensor, size) -> its elements' indices in ``NAMES`` (-1: none yet), per claim
WORDS = {4: ("f32", "b32", "u32", "s32"), 2: ("f16", "b16", "u16", "s16")}   # loaded and stored by ``address``


class Fall(Exception):
    """Not decided in lockstep: the per-thread replay reruns the CTA."""


def nwrap(v, t: str):
    """``wrap`` of an int64 column; 64 bits: the bit pattern (every read wraps it to its type, as ``Replay.ival``)."""
    n = bits(t)
    return v if n == 64 else (v & (1 << n) - 1) - ((v >> n - 1 & 1) << n if t[0] == "s" else 0)


def col(a: np.ndarray, prov: tuple = ()):
    """A uniform value if every thread's is the same, else the column (``("p", a, alloc, space)``: addresses)."""
    if (a == a[0]).all():
        return Ptr(int(a[0]), *prov) if prov else a[0].item()
    return ("p", a, *prov) if prov else a


def distinct(a: np.ndarray) -> list:
    """The sorted distinct values of a nonempty ``a`` (``np.unique``'s, without its masked-array check's import)."""
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))].tolist()


def names(x) -> list:
    """The registers operand ``x`` names (a vector's, a pair's, an address's base)."""
    if type(x) is Reg:
        return [x.name]
    parts = getattr(x, "items", None) or ((x.first, x.second) if type(x) is Pair else
                                          (x.base,) if type(x) is Mem else ())
    return [n for y in parts for n in names(y)]


def liveness(k) -> tuple:
    """Per pc, the registers (bits: ``bit``) some path from it reads before writing; only these are kept (read after
    being dropped: ``KeyError``, ``Fall``). An unguarded register arithmetic or load writes its first operand."""
    bit, ins = {}, k.instrs

    def mask(xs: list) -> int:
        return sum(1 << bit.setdefault(n, len(bit)) for x in xs for n in names(x))
    kill = [0 if i.guard or i.op not in CHEAP or i.op in ("st", "bra") else mask(i.operands[:1]) for i in ins]
    live, again = [mask([*i.operands[1 if d else 0:], *[Reg(g[0]) for g in [i.guard] if g]]) for i, d in zip(
        ins, kill)] + [0], True
    while again:
        again = False
        for pc in range(len(ins) - 1, -1, -1):
            i, old = ins[pc], live[pc]
            live[pc] |= ((live[k.labels[i.operands[0].name]] if i.op == "bra" else 0) | (0 if i.op in ("ret", "exit")
                         or i.op == "bra" and not i.guard else live[pc + 1])) & ~kill[pc]
            again |= live[pc] != old
    return live, bit


def take(v, s: np.ndarray):
    """The threads ``s`` of register ``v``."""
    if type(v) is not tuple:
        return v[s] if type(v) is np.ndarray else [v[i] for i in s.tolist()] if type(v) is list else v
    return ("d", v[1], [v[2][0][s, :v[3]], v[3]], v[3]) if v[0] == "d" else (v[0], v[1][s], *v[2:])


class Lockstep:
    def __init__(self, r: Replay) -> None:
        w = max([p.alloc[2] - SHARED_BASE >> 2 for p in r.sym.values() if p.alloc[3] == "shared"], default=0)
        if r.n < 8 or w * r.n >> 23 or len(r.k.instrs) >> 24 or not all((ins.op in CHEAP or ins.op in FLOAT_OPS)
                and (ins.op not in ("ld", "st") or "param" in ins.parts or {*SPACES} & {*ins.parts} and bits(
                ins.parts[-1]) in (16, 32)) or ins.opcode in BARRIERS and all(isinstance(x, Imm) for x in
                ins.operands[:1]) and len(ins.operands) < 2 for ins in r.k.instrs):
            raise Fall   # 8 threads or more (fewer: per thread is faster), register arithmetic, 2- and 4-byte
            #              accesses in a named space, full barriers
        self.r, self.obj, self.E, self.steps, self.B = r, {}, 0, 0, np.zeros((1, r.n), np.int64)
        self.sm, self.wt, self.wx, self.rd, self.so = *np.full((3, w), -1), np.full((w, r.n), -1), {}
        self.live = [[0, np.arange(r.n), {k: col(np.array([t.regs[k] for t in r.th])) for k in r.th[0].regs}]]
        self.used, self.bit = vars(r.k).get("live") or vars(r.k).setdefault("live", liveness(r.k))   # per kernel

    def run(self, schedule: list) -> dict:
        r = self.r
        for ev in schedule:
            if type(ev) is list and len(ev) == 4 and ev[0] == "bar":
                r.bar(ev[1], ev[2], ev[3], "")
                fail_if(any(t.state != "run" for t in r.th), Fall)   # full-CTA barriers only
                if self.E == len(self.B):   # B[e, t]: the barrier ending thread t's epoch e
                    self.B = np.concatenate([self.B, self.B])
                self.B[self.E], self.E = [t.pc - 1 for t in r.th], self.E + 1
                for g in self.live:
                    g[0] += 1
                continue
            if not (type(ev) is list and len(ev) == 3 and ev[0] == "run" and type(ev[1]) is type(ev[2]) is int
                    and 0 <= ev[1] <= ev[2] < r.n and all(r.th[t].state == "run" for t in range(ev[1], ev[2] + 1))):
                raise Fall
            todo = [self.split(g, m) for g in list(self.live) if r.th[g[1][0]].state == "run"
                    for m in [(g[1] >= ev[1]) & (g[1] <= ev[2])] if m.any()]
            while todo:   # the least pc first, its groups as one where they join (they reconverge)
                pc = min(g[0] for g in todo)
                same = [g for g in todo if g[0] == pc]
                same = [j] if len(same) > 1 and (j := self.join(same)) else same
                todo[:] = [g for g in todo if g[0] != pc] + same[1:]
                self.go(same[0], todo, len(same) == 1)
        fail_if(any(t.state != "exit" for t in r.th), Fall)
        return {f"{r.tensor(a)[0]}[{r.tensor(a)[1]}]": v for a, v in r.gmem.items()}

    def split(self, g: list, m: np.ndarray) -> list:
        """Threads ``m`` of group ``g`` (pc, ids, registers) as a group; ``g`` keeps the others."""
        if m.all():
            return g
        s, t = np.flatnonzero(m), np.flatnonzero(~m)
        fail_if(min(len(s), len(t)) < 32 and len({x[0] for x in self.live if self.r.th[x[1][0]].state != "exit"})
                * 8 >= self.r.n, Fall)   # groups at 8 threads a pc on average (not exited), or Fall
        regs = self.kept(g[0], g[2])
        self.live.append([g[0], g[1][s], {k: take(v, s) for k, v in regs.items()}])
        g[1:] = g[1][t], {k: take(v, t) for k, v in regs.items()}
        return self.live[-1]

    def kept(self, pc: int, regs: dict) -> dict:
        """``regs`` but those no path from ``pc`` reads before writing."""
        u, bit = self.used[pc], self.bit
        return {k: v for k, v in regs.items() if k in bit and u >> bit[k] & 1}

    def join(self, gs: list) -> list | None:
        """Groups at one pc as one (a register some lack: unset for their threads), columns of a kind concatenated, else
        packed; None (kept apart) for dot products not of one base and length, or of 64 terms in warps (copied)."""
        regs = {}
        for x in gs:
            x[2] = self.kept(x[0], x[2])
        for k in set.union(*(set(x[2]) for x in gs)):
            regs[k] = (vs := [x[2].get(k, UNSET) for x in gs])[0]
            if all(v is vs[0] or type(v) is type(vs[0]) in (int, bool) and v == vs[0] for v in vs):
                continue   # the same in every group
            fs = [self.flat(v, len(x[1])) for x, v in zip(gs, vs)]
            one = all(fs) and all(f[:2] == fs[0][:2] and f[2].dtype == fs[0][2].dtype for f in fs)
            if any(type(v) is tuple and v[0] == "d" for v in vs) and not (one and (fs[0][1][1] < 64 or min(
                    len(x[1]) for x in gs) < 32)):
                return None
            a = np.concatenate([f[2] for f in fs]) if one else None
            regs[k] = ("a", a) if one and fs[0][0] == "a" else ("d", vs[0][1], [a, a.shape[1]], a.shape[1]) if one \
                and fs[0][0] == "d" else col(a, fs[0][1]) if one else \
                self.pack([self.at(v, j) for x, v in zip(gs, vs) for j in range(len(x[1]))])
        self.live = [x for x in self.live if not any(x is y for y in gs[1:])]
        gs[0][1:] = np.concatenate([x[1] for x in gs]), regs
        return gs[0]

    def flat(self, v, n: int) -> tuple:
        """``v`` of ``n`` threads as (kind, provenance, column): integers (past 2^63: ``OverflowError``, ``Fall``),
        addresses, input elements, dot products (one base, ``k`` terms: a row of term keys per thread); else ()."""
        t = type(v)
        if t in (int, bool, np.ndarray):
            return "i", (), v if t is np.ndarray else np.full(n, v)
        if t is Ptr:
            return "p", (v.alloc, v.space), np.full(n, int(v))
        if t is Var:
            return "a", (), np.full(n, self.obj.setdefault(v.ix, v).ix)
        if t is not tuple or v[0] not in ("p", "a", "d"):
            return ()
        return (v[0], v[2:], v[1]) if v[0] != "d" else ("d", (v[1].n.key(), v[3]), v[2][0][:, :v[3]])

    def go(self, g: list, todo: list, wait: bool) -> None:
        """Run ``g`` until it blocks, exits or (``wait``) reaches the least pc of ``todo`` (there to join the groups
        waiting); a guard true for some threads only splits it (the rest: ``todo``)."""
        instrs, limits, lo = self.r.k.instrs, self.r.limits, min([x[0] for x in todo], default=len(self.r.k.instrs) + 1)
        while True:
            if wait and g[0] >= lo:   # a group waits here or before
                todo.append(g)
                return
            ins, regs = instrs[g[0]] if g[0] < len(instrs) else EXIT, g[2]
            self.steps += len(g[1])
            if self.steps >> 12 != (self.steps - len(g[1])) >> 12:
                limits.tick()
            p = ins.guard and regs[ins.guard[0]]
            fail_if(type(p) in (list, tuple), Fall)
            if type(p) is np.ndarray and p.any() != p.all():
                todo.append(self.split(g, p.astype(bool) == ins.guard[1]))
                todo[-1][0] += 1
                lo = min(lo, todo[-1][0])
            elif ins.guard and bool(p.any() if type(p) is np.ndarray else p) == ins.guard[1]:
                g[0] += 1
                continue
            op, o = ins.op, ins.operands
            if op == "bra":
                g[0] = self.r.k.labels[o[0].name]
                continue
            if op in ("ret", "exit", "bar", "barrier"):
                for t in g[1].tolist():
                    th = self.r.th[t]
                    th.state, th.wait, th.pc = ("exit", None, g[0]) if op[0] != "b" else ("block", (
                        "bar", wrap(o[0].value, "u32") if o else 0, None), g[0])
                return
            if "shared" in ins.parts and op in ("ld", "st"):
                self.shared(g, ins)
            elif not (ins.parts[:2] == ["ld", "global"] and self.load(g, ins) or op in OPS and self.ints(g, ins)
                      or op in ("fma", "mad") and self.fma(g, ins) or op in FLOAT_OPS and self.real(g, ins)):
                self.generic(g, ins)
            g[0] += 1

    def at(self, v, j: int):
        """Thread ``j``'s value of ``v`` (a ``Dot`` as ``fma`` builds it)."""
        if type(v) is not tuple:
            return v[j].item() if type(v) is np.ndarray else v[j] if type(v) is list else v
        if v[0] != "d":
            return Ptr(int(v[1][j]), *v[2:]) if v[0] == "p" else self.atom(int(v[1][j]))
        return Dot.new((v[1].n, array("q", v[2][0][j, :v[3]].tobytes()), None), v[3])

    def atom(self, i: int) -> Var:
        return self.obj.get(i) or self.obj.setdefault(i, var(NAMES[i][0][0]))

    def generic(self, g: list, ins) -> None:
        """``Replay.step`` per thread on its operands (once if they are uniform and it accesses no memory)."""
        o, dst = ins.operands, ins.operands[0]
        srcs = {n for x in (o if ins.op == "st" else o[1:]) for n in names(x)}   # a store reads its address
        dsts = [] if ins.op == "st" else names(dst)
        vs = {s: g[2][s] for s in srcs}
        once = all(type(v) not in (np.ndarray, list, tuple) for v in vs.values()) and (
            ins.op not in ("ld", "st") or "param" in ins.parts)
        out = []
        for j, t in enumerate(g[1][:1] if once else g[1]):
            th = self.r.th[t]
            th.regs = {s: x for s, v in vs.items() if (x := self.at(v, j)) is not UNSET}
            q = self.r.quick[ins.index]
            q and q(th.regs, th) or self.r.step(th, ins)
            out.append([th.regs[d] for d in dsts])
        for i, d in enumerate(dsts):
            g[2][d] = out[0][i] if once else self.pack([x[i] for x in out])

    def pack(self, vs: list):
        """Threads' values as a register: a column (bools, ints, ``Var``s, one allocation's addresses), else a list."""
        ts = {type(v) for v in vs}
        return col(np.array(vs, bool)) if ts == {bool} else col(np.array(vs, np.int64), (vs[0].alloc, vs[0].space)) \
            if ts == {Ptr} and len({(v.alloc, v.space) for v in vs}) == 1 else col(np.array(
                [v - ((v >> 63 > 0) << 64) for v in vs])) if ts == {int} else ("a", np.array(
                    [self.obj.setdefault(v.ix, v).ix for v in vs])) if ts == {Var} else vs

    def ints(self, g: list, ins) -> bool:
        """Integer ``OPS`` on columns as ``Replay.integer``/``setp``/``cvt``/``mov``: operands and result wrapped to
        their types, an address kept as ``derive``/``keep`` keep it; a float column or ``Var`` moved or ``CONV``."""
        p, o, op, regs = ins.parts, ins.operands, ins.op, g[2]
        vals = [regs[x.name] if isinstance(x, Reg) else self.r.sym[x.name] if isinstance(x, Sym) else x for x in o[1:]]
        if not any(type(v) in (np.ndarray, tuple, Var) for v in vals) or not isinstance(o[0], Reg) or "sat" in p:
            return False
        if (op == "mov" or p in CONV) and (type(vals[0]) is tuple and vals[0][0] in "ad" or type(vals[0]) is Var):
            regs[o[0].name] = vals[0]
            return True
        ty, prov = p[-1], ()
        n, dt = bits(ty), p[1] if op == "cvt" else ty[0] + str(2 * bits(ty)) if "wide" in p else ty
        if ty not in INTS or dt not in INTS or len(p) != 2 + (op in ("mul", "mad", "cvt", "setp")) or \
                op in ("mul", "mad") and p[1] not in ("lo", "wide") or op == "setp" and p[1] not in COMPARE:
            return False
        for i, (v, t) in enumerate(zip(vals, {"shl": (ty, "u32"), "shr": (ty, "u32"), "mad": (ty, ty, dt)}.get(
                op, (ty, ty)))):
            if type(v) is Ptr or type(v) is tuple and v[0] == "p":
                if prov or i not in ADDR.get(op, ()):
                    return False
                prov, vals[i] = ((v.alloc, v.space), int(v)) if type(v) is Ptr else (v[2:], v[1])
            elif type(v) is np.ndarray and v.dtype == np.int64 or type(v) in (int, Imm):
                vals[i] = nwrap(v, t) if type(v) is np.ndarray else wrap(getattr(v, "value", v), t)
                if type(v) is not np.ndarray and not -1 << 63 <= vals[i] < 1 << 63:
                    return False
            else:
                return False
        if n == 64 and ty[0] != "s" and op in ("setp", "shr", "min", "max", "rem") and any(
                np.any(x < 0) for x in vals) or op in ("shl", "shr") and not (type(vals[1]) is int and vals[1] < min(
                n, 63)) or op == "rem" and not np.all(np.abs(vals[1]) > 1):
            return False   # an unsigned order of 64-bit patterns; a shift past the width; a divisor 0 or -1
        res = np.asarray(COMPARE[p[1]](*vals) if op == "setp" else nwrap(np.asarray(OPS[op](*vals)), dt))
        fail_if(prov and op in ("mov", "cvt") and not np.array_equal(res, vals[0]), Fall)
        regs[o[0].name] = col(res, prov)
        return True

    def fma(self, g: list, ins) -> bool:
        """``fma``/``mad .f32`` of atom columns (or ``Var``s) onto a dot-product column ``("d", base, [keys, used], k)``
        or a ``Rat`` base of denominator 1: the keys ``a.ix << 32 | b.ix`` appended, as ``fma`` does per thread."""
        o = ins.operands
        if ins.parts[-1] != "f32" or "sat" in ins.parts or len(o) != 4 or not all(isinstance(x, Reg) for x in o[:3]):
            return False
        a, b, c = (g[2][x.name] if isinstance(x, Reg) else float_of_bits(x.bits, x.width) if isinstance(x, FImm)
                   else None for x in o[1:])
        ka, kb = (x[1] if type(x) is tuple and x[0] == "a" else x.ix if type(x) is Var else None for x in (a, b))
        if ka is None or kb is None or type(ka) is type(kb) is int and type(c) is not tuple:
            return False
        if type(c) is tuple and c[0] == "d":
            _, base, buf, k = c
        elif type(c) in (Rat, Var) and c.d is ONE_P:
            base, buf, k = c, [np.empty((len(g[1]), 0), np.int64), 0], 0
        else:
            return False
        if buf[1] != k or k == buf[0].shape[1]:    # extended by another copy, or full: a new buffer
            new = np.empty((len(g[1]), max(16, 2 * k)), np.int64)
            new[:, :k], buf = buf[0][:, :k], [new, k]
        buf[0][:, k], buf[1], g[2][o[0].name] = np.asarray(ka) << 32 | kb, k + 1, ("d", base, buf, k + 1)
        return True

    def real(self, g: list, ins) -> bool:
        """f32 ``FLOAT_OPS`` of reals (registers, immediates; no ``.sat``, no ``div`` by 0), per thread as step does."""
        o, n = ins.operands, len(g[1])
        if ins.parts[-1] != "f32" or "sat" in ins.parts or not isinstance(o[0], Reg) or not all(
                isinstance(x, (Reg, FImm)) for x in o[1:]):
            return False
        vals = [float_of_bits(x.bits, x.width) if isinstance(x, FImm) else g[2][x.name] for x in o[1:]]
        cols = [v if type(v) is list else [self.atom(i) for i in v[1].tolist()] if type(v) is tuple and v[0] == "a"
                else [self.at(v, j) for j in range(n)] if type(v) in (np.ndarray, tuple) else [v] * n for v in vals]
        if not all({*map(type, c)} <= {*RATS} for c in cols) or ins.op == "div" and any(x.is_zero() for x in cols[1]):
            return False
        g[2][o[0].name] = [FLOAT_OPS[ins.op](f) for f in zip(*cols)]
        return True

    def address(self, g: list, ins, space: str, w: int = 4, one: bool = False):
        """A ``w``-byte (vector) access in ``space``: the addresses (aligned, each element in bounds of one allocation
        of ``space``; with ``one``, an int where every thread's is one), the allocation and the registers; or None."""
        p, o = ins.parts, ins.operands
        m, regs = (o[1], o[0]) if ins.op == "ld" else (o[0], o[1])
        items = getattr(regs, "items", [regs])
        v = isinstance(m, Mem) and (g[2] if isinstance(m.base, Reg) else self.r.sym).get(m.base.name)
        if not (set(p[2:-1]) <= {"nc", "v2", "v4"} and p[-1] in WORDS.get(w, ()) and len(items) == (
                4 if "v4" in p else 2 if "v2" in p else 1) and (type(v) is Ptr or type(v) is tuple and v[0] == "p")):
            return None
        a, al, sp = (int(v) if one else np.full(len(g[1]), int(v)), v.alloc, v.space) if type(v) is Ptr else v[1:]
        a = a + m.offset
        lo, hi, odd = (a, a, a & w - 1) if type(a) is int else (a.min(), a.max(), (a & w - 1).any())
        if al[3] != space or sp != space and {sp, space} != {"generic", "global"} or odd or lo < al[1] or \
                hi > al[2] - w * len(items):
            return None
        return a, al, items

    def load(self, g: list, ins) -> bool:
        """``ld.global`` of f32 or f16 input elements: their ``Var``s (one per address), as ``Replay.load``."""
        r, w = self.r, bits(ins.parts[-1]) >> 3
        got = self.address(g, ins, "global", w, True)
        t = got and next((t for t in r.tensors if t[0] == got[1][0]), ())
        if not got or t[1:3] != ("input", w) or t[0] in r.ints or t[3] >> 24:
            return False
        ix = IX[t[0], t[3]] if (t[0], t[3]) in IX else IX.setdefault((t[0], t[3]), np.full(t[3], -1))
        for i, d in enumerate(got[2]):
            e = (got[0] + w * i - t[4]) // w
            if type(e) is int:   # one element for every thread: its Var
                ix[e] = ix[e] if ix[e] >= 0 else index(((f"{t[0]}[{e}]", 1),))
                g[2][d.name] = self.atom(int(ix[e]))
                continue
            if (k := ix[e]).min() < 0:   # their ``Var``s: made when read as objects (``atom``)
                new = distinct(e[k < 0])
                ix[new] = [index(((f"{t[0]}[{x}]", 1),)) for x in new]
                k = ix[e]
            g[2][d.name] = "a", k
        return True

    def shared(self, g: list, ins) -> None:
        """``ld/st.shared`` of whole words (a vector word by word), raced by epochs; else ``Fall``."""
        E, pc, T, got = self.E, ins.index, g[1], ins.parts[1] == "shared" and self.address(g, ins, "shared")
        fail_if(not got, Fall)
        for i, d in enumerate(got[2]):
            w = (got[0] - SHARED_BASE >> 2) + i
            lw = self.wt[w]
            hit = (lw >= 0) & (lw != T)
            self.note("WAW" if ins.op == "st" else "RAW", self.wx[w][hit], lw[hit], pc)
            if ins.op == "ld":
                self.rd[w, T], v = E << 24 | pc, self.sm[w]
                fail_if((v == -1).any(), Fall)
                g[2][d.name] = ("a", v) if (v >= 0).all() else [self.so[x] if y == -2 else self.atom(y)
                                                                 for x, y in zip(w.tolist(), v.tolist())]
                continue
            rd = self.rd[w]
            rd[np.arange(len(T)), T] = -1
            self.note("WAR", rd[rd >= 0], np.nonzero(rd >= 0)[1], pc)
            v = g[2][d.name] if isinstance(d, Reg) else None
            fail_if(len(distinct(w)) < len(w), Fall)
            if not (type(v) is tuple and v[0] == "a" or type(v) is Var):
                vs = [self.at(v, j) for j in range(len(T))]
                fail_if(not all(type(x) in (Rat, Dot, Var) for x in vs), Fall)
                v = self.so.update(zip(w.tolist(), vs)) or ("a", -2)
            self.sm[w], self.wt[w], self.wx[w], self.rd[w] = v[1] if type(v) is tuple else self.obj.setdefault(
                v.ix, v).ix, T, E << 24 | pc, -1

    def note(self, kind: str, keys: np.ndarray, ts: np.ndarray, pc: int) -> None:
        """Conflicts with threads ``ts``' accesses ``epoch << 24 | pc``: in this epoch a race (``Fall``)."""
        fail_if(len(keys) and (keys >> 24 == self.E).any(), Fall)
        for k in distinct((keys & 0xFFFFFF) << 24 | self.B[keys >> 24, ts]) if len(keys) else ():
            self.r.witness.add(("shared", kind, k >> 24, pc, k & 0xFFFFFF))


def lockstep(r: Replay, schedule: list) -> dict | None:
    """``r.run(schedule)``'s outputs in lockstep, or None (``r`` spent: replay a fresh one per thread)."""
    try:
        return Lockstep(r).run(schedule)
    except (Fall, CheckError, ArithmeticError, LookupError, TypeError, ValueError, AttributeError):
        return None
