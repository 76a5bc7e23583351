"""Lockstep (SIMT-batch) execution of one CTA (issue 17).

Threads run in groups: a program counter, the group's thread ids and its registers as columns (one
value for every thread, or a numpy column), and each instruction executes for the whole group at once.
A guard that differs between the threads splits a group; groups at one program counter merge, and all
merge at a barrier. All or nothing: ``Lockstep(cta).run()`` completes the CTA with exactly what
``cta.run()`` returns (outputs, steps, barriers, schedule, witness, output bytes written and touched),
or raises ``Fallback`` and the caller reruns the CTA per thread, which reports any race, deadlock or
error itself. Anything not handled exactly, or possibly wrong (a race, a bound, a partial barrier, a
value of an unexpected kind), is a fallback.

Only full-CTA barriers are run, so two accesses of different threads are ordered exactly when a barrier
separates them: races are checked by epochs (barriers released so far), per 4-byte word (every access
is a whole aligned word), and the witness is the per-thread one (``CTA._record``): with no race, the
accesses to a word within an epoch are reads, or one thread's, so the order inside an epoch changes
nothing. Instructions without a numpy path run through the per-thread semantics (``CTA._step``) on a
proxy thread holding just their operands: once if all are uniform, else once per thread.
"""

from __future__ import annotations

from array import array

import numpy as np

from certificates.kernel import (BARRIERS, FLOATS, INTS, INV_LN2, RATS, Dot, Ptr, Var, bits, float_of_bits, fma, over_ln2,
                                 typed, var, wrap)
from certificates.poly import ONE_P, Rat
from certificates.ptx import FImm, Imm, Instr, Kernel, Mem, Pair, Reg, Sym, Vec


class Fallback(Exception):
    """Lockstep cannot finish this CTA exactly: rerun it per thread."""


PURE = {"mov", "cvt", "cvta", "setp", "selp", "add", "sub", "mul", "mad", "fma", "div", "rem", "and", "or", "xor",
        "not", "neg", "abs", "min", "max", "shl", "shr", "popc", "clz", "brev", "bfe", "bfi", "mul24", "mad24",
        "rcp", "sqrt", "rsqrt", "ex2", "lg2"}
WORD = {"f32", "b32", "u32", "s32"}
MAX_CELLS = 1 << 23      # words of shared memory x threads: the read shadow's size


def _space(ins: Instr) -> str:
    return next((s for s in ("global", "shared", "param", "local", "const") if s in ins.parts), "generic")


def _vec(ins: Instr) -> int:
    return next((int(p[1:]) for p in ins.parts if p in ("v2", "v4", "v8")), 1)


def eligible(kernel: Kernel) -> bool:
    """The static gate: every instruction is one lockstep runs (unguarded full-CTA barriers, 32-bit
    global/shared/generic accesses, parameter loads, branches, pure register instructions)."""
    for ins in kernel.instrs:
        op, ops = ins.op, ins.operands
        if op in ("ld", "st"):
            space = _space(ins)
            if space == "param":
                if op != "ld":
                    return False
            elif space not in ("global", "shared", "generic") or ins.parts[-1] not in WORD or _vec(ins) > 4 \
                    or any(p in ins.parts for p in ("volatile", "relaxed", "acquire", "release", "weak", "mmio")):
                return False
        elif op in ("bar", "barrier"):
            if ins.opcode not in BARRIERS or len(ops) > 1 or ins.guard is not None:
                return False
        elif op not in PURE and op not in ("bra", "ret", "exit", "membar", "fence"):
            return False
    return True


# ----------------------------------------------------------------------------- columns


class Col:
    """A varying register: one value per thread of its group (anything else in a register is uniform)."""
    __slots__ = ()


class IntCol(Col):
    """Integers, each canonical for the type of the instruction that wrote it: exactly, or with ``u``
    (a u64/b64 column) modulo 2^64, a negative entry standing for itself + 2^64."""
    __slots__ = ("a", "u")

    def __init__(self, a: np.ndarray, u: bool = False) -> None:
        self.a, self.u = a, u


class PredCol(Col):
    __slots__ = ("a",)

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


class AtomCol(Col):
    """f32 input elements (``Var``) by their atom index."""
    __slots__ = ("a",)

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


class PtrCol(Col):
    """Addresses with one provenance (``certificates.kernel.Ptr``)."""
    __slots__ = ("a", "alloc", "space")

    def __init__(self, a: np.ndarray, alloc: tuple, space: str) -> None:
        self.a, self.alloc, self.space = a, alloc, space


class DotCol(Col):
    """``base + sum_t a_t * b_t`` per thread, as ``fma`` builds a ``Dot``: ``keys[t]`` the column of
    ``ix(a_t) << 32 | ix(b_t)``, the first ``k`` of an append-only list shared copy-on-extend."""
    __slots__ = ("base", "keys", "k")

    def __init__(self, base: Rat, keys: list, k: int) -> None:
        self.base, self.keys, self.k = base, keys, k


class ObjCol(Col):
    """Per-thread Python values."""
    __slots__ = ("v",)

    def __init__(self, v: list) -> None:
        self.v = v


class Group:
    """Threads ``tids`` at ``pc``. A group split off ``base`` (its threads ``base.tids[idx]``, ``base`` no
    longer run) reads the registers it has not written from there, sliced when first read."""
    __slots__ = ("pc", "tids", "regs", "bar", "base", "idx")

    def __init__(self, pc: int, tids: np.ndarray, regs: dict, base: Group | None = None,
                 idx: np.ndarray | None = None) -> None:
        self.pc, self.tids, self.regs, self.bar, self.base, self.idx = pc, tids, regs, None, base, idx


def _mod(a: np.ndarray, t: str) -> np.ndarray:
    """``a`` (exact modulo 2^64) as the canonical values of integer type ``t`` (``certificates.kernel.wrap``),
    modulo 2^64 for 64-bit types."""
    n = bits(t)
    if n < 64:
        m = (1 << n) - 1
        if t[0] == "s":
            h = 1 << (n - 1)
            return ((a + h) & m) - h
        return a & m
    return a


def _exact(a: np.ndarray, t: str) -> np.ndarray:
    """``_mod``, exactly: a u64/b64 value of 2^63 or more does not fit int64 (Fallback)."""
    r = _mod(a, t)
    if t[0] != "s" and bits(t) == 64 and (r < 0).any():
        raise Fallback
    return r


def _icol(a: np.ndarray, t: str) -> IntCol:
    r = _mod(a, t)
    return IntCol(r, t[0] != "s" and bits(t) == 64 and bool((r < 0).any()))


def _i64(v: int) -> int:
    """``v`` modulo 2^64 in int64's range."""
    return ((v + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


_NO = object()


# ----------------------------------------------------------------------------- interpreter


class Lockstep:
    """One CTA in lockstep; ``cta`` a fresh ``verifier.kernels.exec.CTA`` (its launch, layout and
    per-thread semantics; its state is not used, and it is not run)."""

    def __init__(self, cta, max_steps: int, shared_base: int) -> None:
        self.c, self.k, self.n, self.max_steps, self.sbase = cta, cta.k, cta.n, max_steps, shared_base
        self.instrs, self.P = cta.k.instrs, len(cta.k.instrs) + 1
        self.kinds = [self._kind(ins) for ins in self.instrs]
        self.tensors = {t.name: t for t in cta.tensors}
        hi = max((p.alloc[2] for p in cta.sym_addr.values() if p.alloc[3] == "shared"), default=shared_base)
        nw = (hi - shared_base + 3) // 4
        if nw * self.n > MAX_CELLS:
            raise Fallback
        self.w_tid = np.full(nw, -1, np.int64)      # per shared word: the last writer, its epoch * P + pc
        self.w_key = np.zeros(nw, np.int64)
        self.rd = np.full((nw, self.n), -1, np.int64)   # word, thread -> its last read since the write (key)
        self.rany = np.zeros(nw, bool)
        self.sat = np.full(nw, -1, np.int64)        # shared word -> atom index of its value, or -1
        self.isobj = np.zeros(nw, bool)              # ... or its value in sobj
        self.sobj: dict[int, Rat] = {}
        self.scratch = np.zeros(max(nw, 1), np.int64)
        self.tix: dict[str, np.ndarray] = {}         # input tensor -> atom index per element (-1: not loaded)
        self.vars: dict[int, Var] = {}               # atom index -> the input element's Var
        self.gmem: dict[int, tuple] = {}             # output address -> (value, (tensor, index))
        self.gw: dict[int, tuple] = {}               # output address -> last writer (tid, epoch, pc)
        self.first: dict[int, tuple] = {}            # output address -> (epoch, tid, tick) of its first store
        self.epoch, self.bar_pcs, self.steps, self.tick = 0, [], 0, 0
        self.witness: set = set()
        self.proxy = cta.threads[0]
        self.blocked: list[Group] = []

    def _kind(self, ins: Instr) -> str:
        op = ins.op
        if op in ("ld", "st"):
            return "pure" if _space(ins) == "param" else op
        if op in ("bar", "barrier"):
            return "bar"
        if op in ("ret", "exit"):
            return "exit"
        return {"bra": "bra", "membar": "nop", "fence": "nop"}.get(op, "pure")

    # ------------------------------------------------------------------ schedule

    def run(self) -> tuple:
        """(outputs, steps, barriers, schedule, witness, written, touched) as ``CTA.run``'s ``Result``."""
        n, c = self.n, self.c
        regs: dict = {}
        lin = np.arange(n, dtype=np.int64)
        b = c.block
        for ax, col in zip("xyz", (lin % b[0], lin // b[0] % b[1], lin // (b[0] * b[1]))):
            regs[f"%tid.{ax}"] = IntCol(col)
        for pre, vals in (("%ntid", c.block), ("%ctaid", c.cta), ("%nctaid", c.grid)):
            for ax, v in zip("xyz", vals):
                regs[f"{pre}.{ax}"] = v
        regs["%laneid"] = IntCol(lin % 32)
        groups = [Group(0, lin, regs)]
        schedule: list = [["run", 0, n - 1]]
        while True:
            self._round(groups)
            blocked = self.blocked
            if not blocked:
                break
            bids = {g.bar for g in blocked}
            if len(bids) != 1 or sum(len(g.tids) for g in blocked) != n:
                raise Fallback       # a partial barrier, a deadlock: the per-thread path decides
            pc = np.empty(n, np.int64)
            for g in blocked:
                pc[g.tids] = g.pc
                g.pc += 1
            if (pc != pc[lin - lin % 32]).any():
                raise Fallback       # one warp at two barriers
            self.bar_pcs.append(int(pc[0]) if (pc == pc[0]).all() else pc)   # each thread's (CTA._sync)
            self.epoch += 1
            if self.epoch * self.P >= 1 << 62:
                raise Fallback
            schedule += [["bar", bids.pop(), None, [[0, n - 1]]], ["run", 0, n - 1]]
            groups = blocked
        outs = {}
        for a in sorted(self.gmem, key=self.first.__getitem__):
            v, key = self.gmem[a]
            outs[key] = v
        return (outs, self.steps, self.epoch, schedule, self.witness, set(self.gmem),
                {a + i for a in self.gmem for i in range(4)})

    def _round(self, groups: list[Group]) -> None:
        """Run every group until it blocks at a barrier (into ``blocked``) or exits; the group with the
        least program counter first, up to the next one's (where they merge)."""
        self.blocked = []
        run = groups
        while run:
            pc = min(g.pc for g in run)
            here = [g for g in run if g.pc == pc]
            rest = [g for g in run if g.pc != pc]
            g = here[0] if len(here) == 1 else self._merge(here)
            run = rest + self._exec(g, min((h.pc for h in rest), default=1 << 62))

    def _exec(self, g: Group, limit: int) -> list[Group]:
        """Run ``g`` below ``limit``: the groups still running after it (none if it blocked or exited)."""
        instrs, kinds, n_ins = self.instrs, self.kinds, len(self.instrs)
        while g.pc < limit:
            pc = g.pc
            if pc >= n_ins:
                return []
            ins = instrs[pc]
            if ins.guard is not None:
                ex = self._guard(g, ins.guard)
                if ex is not True and ex is not False:
                    run, skip = self._take(g, ex), self._take(g, ~ex)
                    self.steps += len(skip.tids)
                    skip.pc += 1
                    return [run, skip]
            else:
                ex = True
            self.steps += len(g.tids)
            self.tick += 1
            if self.steps > self.max_steps:
                raise Fallback
            if not ex:
                g.pc += 1
                continue
            kind = kinds[pc]
            if kind == "pure":
                self._pure(g, ins)
            elif kind == "ld":
                self._load(g, ins)
            elif kind == "st":
                self._store(g, ins)
            elif kind == "bra":
                g.pc = self.c.labels[ins.operands[0].name]
                continue
            elif kind == "exit":
                return []
            elif kind == "bar":
                g.bar = self._barrier_id(g, ins)
                self.blocked.append(g)
                return []
            g.pc += 1
        return [g]

    def _barrier_id(self, g: Group, ins: Instr) -> int:
        if not ins.operands:
            return 0
        o = ins.operands[0]
        v = o.value if isinstance(o, Imm) else self._get(g, o.name) if isinstance(o, Reg) else _NO
        if type(v) is not int:
            raise Fallback
        return wrap(v, "u32")

    def _guard(self, g: Group, guard: tuple):
        """Whether each thread executes: True, False, or a bool column."""
        v = self._get(g, guard[0])
        if type(v) is PredCol:
            ex = v.a != guard[1]
        elif type(v) is IntCol:
            ex = (v.a != 0) != guard[1]
        elif type(v) in (bool, int):
            return bool(v) != guard[1]
        else:
            raise Fallback
        return True if ex.all() else False if not ex.any() else ex

    # ------------------------------------------------------------------ groups

    def _get(self, g: Group, name: str):
        """Register ``name`` of ``g`` (``_NO`` if unset)."""
        v = g.regs.get(name, _NO)
        if v is _NO and g.base is not None:
            v = self._get(g.base, name)
            if v is not _NO:
                v = g.regs[name] = self._slice(v, g.idx)
        return v

    def _names(self, g: Group) -> set:
        return set(g.regs) if g.base is None else set(g.regs) | self._names(g.base)

    def _slice(self, c, idx: np.ndarray):
        """Column ``c`` at positions ``idx``."""
        t = type(c)
        if t is IntCol:
            return IntCol(c.a[idx], c.u)
        if t is PtrCol:
            return PtrCol(c.a[idx], c.alloc, c.space)
        if t is DotCol:
            return DotCol(c.base, [k[idx] for k in c.keys[:c.k]], c.k)
        if t is ObjCol:
            return ObjCol([c.v[i] for i in idx.tolist()])
        if t is PredCol or t is AtomCol:
            return t(c.a[idx])
        return c

    def _take(self, g: Group, sel: np.ndarray) -> Group:
        idx = np.flatnonzero(sel)
        return Group(g.pc, g.tids[idx], {}, g, idx)

    def _merge(self, gs: list[Group]) -> Group:
        """One group of the threads of ``gs`` (all at one pc); a register some lack is unset (``_NO``)
        there. The groups split off one base rejoin first, into that base's order, sharing what they did
        not write."""
        gs = list(gs)
        while len(gs) > 1:
            kids: dict[int, list[Group]] = {}
            for g in gs:
                if g.base is not None:
                    kids.setdefault(id(g.base), []).append(g)
            ks = next((ks for ks in kids.values() if sum(len(k.tids) for k in ks) == len(ks[0].base.tids)), None)
            if ks is None or len(ks) < 2:
                break
            gs = [g for g in gs if all(g is not k for k in ks)] + [self._rejoin(ks)]
        if len(gs) == 1:
            return gs[0]
        names = set().union(*(self._names(g) for g in gs))
        sizes = [len(g.tids) for g in gs]
        regs = {name: self._join([self._get(g, name) for g in gs], sizes) for name in names}
        return Group(gs[0].pc, np.concatenate([g.tids for g in gs]), regs)

    def _rejoin(self, ks: list[Group]) -> Group:
        b = ks[0].base
        order = np.argsort(np.concatenate([k.idx for k in ks]))
        sizes = [len(k.tids) for k in ks]
        regs = dict(b.regs)
        for name in set().union(*(k.regs for k in ks)):
            regs[name] = self._slice(self._join([self._get(k, name) for k in ks], sizes), order)
        return Group(ks[0].pc, b.tids, regs, b.base, b.idx)

    def _join(self, cs: list, sizes: list[int]):
        c0 = cs[0]
        if all(c is c0 for c in cs[1:]) and not isinstance(c0, Col):
            return c0
        kinds = {self._family(c) for c in cs}
        if len(kinds) == 1:
            fam = kinds.pop()
            if fam is not None and fam[0] != "dot":
                a = np.concatenate([c.a if isinstance(c, Col) else np.full(m, self._scalar(c), np.int64
                                                                             if fam[0] != "pred" else bool)
                                    for c, m in zip(cs, sizes)])
                return IntCol(a, fam[1]) if fam[0] == "int" else PredCol(a) if fam[0] == "pred" \
                    else AtomCol(a) if fam[0] == "atom" else PtrCol(a, fam[1], fam[2])
            if fam is not None:
                return DotCol(c0.base, [np.concatenate(ks) for ks in zip(*(c.keys[:c.k] for c in cs))], c0.k)
        return self._columnize([v for c, m in zip(cs, sizes) for v in self._values(c, m)])

    def _family(self, c):
        """Columns of one family concatenate as arrays (a uniform value broadcast), or None."""
        t = type(c)
        if t is IntCol:
            return ("int", c.u)
        if t is int and -(1 << 63) <= c < 1 << 63:
            return ("int", False)
        if t is PredCol or t is bool:
            return ("pred",)
        if t is AtomCol or t is Var:
            return ("atom",)
        if t is PtrCol or t is Ptr:
            return ("ptr", c.alloc, c.space)
        if t is DotCol:
            return ("dot", id(c.base), c.k)
        return None

    def _scalar(self, c):
        if type(c) is Var:
            self.vars.setdefault(c.ix, c)
            return c.ix
        return int(c) if type(c) is Ptr else c

    def _values(self, c, m: int) -> list:
        """Per-thread values of column (or uniform value) ``c`` of a group of ``m`` threads."""
        t = type(c)
        if t is IntCol and c.u:
            return [x + (1 << 64) if x < 0 else x for x in c.a.tolist()]
        if t is IntCol or t is PredCol:
            return c.a.tolist()
        if t is PtrCol:
            return [Ptr(x, c.alloc, c.space) for x in c.a.tolist()]
        if t is AtomCol:
            vs = self.vars
            return [vs[i] for i in c.a.tolist()]
        if t is DotCol:
            rows = np.stack(c.keys[:c.k], axis=1)
            base, out = c.base.n, []
            for row in rows:
                keys = array("q")
                keys.frombytes(row.tobytes())
                d = Dot.__new__(Dot)
                d.up, d.k, d._n, d.d = (base, keys, None), c.k, None, ONE_P
                out.append(d)
            return out
        if t is ObjCol:
            return c.v
        return [c] * m

    def _columnize(self, vals: list):
        t = type(vals[0])
        if not all(type(v) is t for v in vals):
            return ObjCol(vals)
        if t is bool:
            return PredCol(np.array(vals, bool))
        if t is int or t is Ptr:
            try:
                a = np.array(vals, np.int64)
            except OverflowError:
                if t is Ptr or not all(0 <= v < 1 << 64 for v in vals):
                    return ObjCol(vals)
                return IntCol(np.array(vals, np.uint64).astype(np.int64), True)
            if t is int:
                return IntCol(a)
            alloc, space = vals[0].alloc, vals[0].space
            return PtrCol(a, alloc, space) if all(v.alloc == alloc and v.space == space for v in vals) \
                else ObjCol(vals)
        if t is Var:
            for v in vals:
                self.vars.setdefault(v.ix, v)
            return AtomCol(np.array([v.ix for v in vals], np.int64))
        return ObjCol(vals)

    def _reg(self, g: Group, name: str):
        v = self._get(g, name)
        if v is _NO:
            raise Fallback
        return v

    def _list(self, g: Group, name: str) -> list:
        """Per-thread values of a register (a dot product materialized, once)."""
        c = self._reg(g, name)
        vals = self._values(c, len(g.tids))
        if type(c) is DotCol:
            g.regs[name] = ObjCol(vals)
        elif type(c) is ObjCol and any(v is _NO for v in vals):
            raise Fallback       # unset in some thread
        return vals

    # ------------------------------------------------------------------ register instructions

    def _pure(self, g: Group, ins: Instr) -> None:
        op = ins.op
        ty = ins.parts[-1]
        if ty == "pred" and op in ("and", "or", "xor", "not") and self._pred(g, ins):
            return
        fast = {"mov": self._mov, "cvt": self._cvt, "setp": self._setp, "selp": self._selp}.get(op)
        if fast is not None:
            if fast(g, ins):
                return
        elif ty == "f32" and op in ("add", "sub", "mul", "fma", "mad") and "sat" not in ins.parts:
            if op in ("fma", "mad") and self._fma(g, ins) or self._real(g, ins):
                return
        elif ty in INTS and len(ins.operands) > 1 and isinstance(ins.operands[0], Reg) and self._int(g, ins):
            return
        self._generic(g, ins)

    def _generic(self, g: Group, ins: Instr) -> None:
        """``CTA._step`` on the proxy thread: once if every operand is uniform, else per thread."""
        ops = ins.operands
        d = ops[0] if ops else None
        dsts = [d.first.name, d.second.name] if isinstance(d, Pair) else [d.name] if isinstance(d, Reg) else None
        if dsts is None:
            raise Fallback
        names = sorted({o.name for o in ops[1:] if isinstance(o, Reg)})
        th, step = self.proxy, self.c._step
        cols = {name: self._reg(g, name) for name in names}
        try:
            if not any(isinstance(c, Col) for c in cols.values()):
                th.regs, th.state, th.pc = cols, "run", 0
                step(th, ins)
                for name in dsts:
                    g.regs[name] = th.regs[name]
                return
            lists = [(name, self._list(g, name)) for name in names]
            outs: list[list] = [[] for _ in dsts]
            for j in range(len(g.tids)):
                th.regs, th.state, th.pc = {name: vs[j] for name, vs in lists}, "run", 0
                step(th, ins)
                for o, name in zip(outs, dsts):
                    o.append(th.regs[name])
        except Exception:   # any error: the per-thread path reports it
            raise Fallback from None
        for o, name in zip(outs, dsts):
            g.regs[name] = self._columnize(o)

    def _operand(self, g: Group, o, ty: str):
        """A register's column or value, an integer immediate at ``ty``; _NO for other operands."""
        if isinstance(o, Reg):
            return self._reg(g, o.name)
        if isinstance(o, Imm) and ty not in FLOATS and ty != "pred":
            return wrap(o.value, ty)
        return _NO

    def _ints(self, v, m: int, exact: bool = False):
        """An integer column or value as an int64 array (modulo 2^64 unless ``exact``), else None."""
        if type(v) is IntCol:
            return None if exact and v.u else v.a
        if type(v) is int and (not exact or -(1 << 63) <= v < 1 << 63):
            return np.full(m, _i64(v), np.int64)
        return None

    def _int(self, g: Group, ins: Instr) -> bool:  # noqa: C901 - one dispatch
        """Integer arithmetic as ``CTA._int`` (operands wrapped to the type, the result wrapped), and
        ``ptr +/- int``, ``int + ptr`` keeping the provenance."""
        op, p, ops = ins.op, ins.parts, ins.operands
        ty, m = p[-1], len(g.tids)
        vals = [self._operand(g, o, ty) for o in ops[1:]]
        if _NO in vals or not any(isinstance(v, Col) for v in vals):
            return False
        n, dst = bits(ty), ops[0].name
        if len(p) == 2 and op in ("add", "sub") and len(vals) == 2:
            a, b = vals
            pa, pb = type(a) in (Ptr, PtrCol), type(b) in (Ptr, PtrCol)
            if pa != pb and (pa or op == "add"):
                ptr, other = (a, b) if pa else (b, a)
                y = self._ints(other, m)
                if y is None:
                    return False
                x = ptr.a if type(ptr) is PtrCol else np.full(m, _i64(int(ptr)), np.int64)
                r = _exact(x - y if op == "sub" else x + y, ty)
                g.regs[dst] = PtrCol(r, ptr.alloc, ptr.space)
                return True
        xs = [self._ints(v, m) for v in vals]
        if any(x is None for x in xs):
            return False
        mode = p[1] if len(p) > 2 else "lo"
        if op in ("mul", "mad") and len(p) == 3 and mode in ("lo", "wide") and len(xs) == (2 if op == "mul" else 3):
            dt = ty
            a, b = xs[0], xs[1]
            if mode == "wide":
                if n > 32:
                    return False
                dt, a, b = ty[0] + str(2 * n), _mod(a, ty), _mod(b, ty)
            r = a * b
            if op == "mad":
                r = r + xs[2]
            g.regs[dst] = _icol(r, dt)
            return True
        if len(p) != 2:
            return False
        if len(xs) == 1:
            if op not in ("not", "neg"):
                return False
            r = ~xs[0] if op == "not" else -xs[0]
        elif len(xs) != 2:
            return False
        elif op in ("add", "sub", "and", "or", "xor"):
            a, b = xs
            r = {"add": np.add, "sub": np.subtract, "and": np.bitwise_and, "or": np.bitwise_or,
                 "xor": np.bitwise_xor}[op](a, b)
        elif op in ("min", "max"):
            flip = np.int64(-1 << 63) if ty[0] != "s" and n == 64 else 0   # unsigned order modulo 2^64
            a, b = _mod(xs[0], ty) ^ flip, _mod(xs[1], ty) ^ flip
            r = (np.minimum(a, b) if op == "min" else np.maximum(a, b)) ^ flip
        elif op in ("shl", "shr"):
            k = _mod(xs[1], "u32")
            sh = np.minimum(k, 63)
            if op == "shl":
                r = np.where(k < n, xs[0] << sh, 0)
            elif ty[0] == "s":
                r = _mod(xs[0], ty) >> sh
            else:   # logical: the bits as unsigned
                r = np.where(k < n, (_mod(xs[0], ty).view(np.uint64) >> sh.astype(np.uint64)).view(np.int64), 0)
        else:
            return False
        g.regs[dst] = _icol(r, ty)
        return True

    def _mov(self, g: Group, ins: Instr) -> bool:
        """``mov`` of a varying register: integers rewrapped to the type, addresses kept where the wrap
        leaves them, predicates and real values copied."""
        ops, ty = ins.operands, ins.parts[-1]
        if len(ops) != 2 or not isinstance(ops[0], Reg) or not isinstance(ops[1], Reg):
            return False
        c = self._reg(g, ops[1].name)
        t = type(c)
        if t in (AtomCol, DotCol):
            g.regs[ops[0].name] = DotCol(c.base, c.keys, c.k) if t is DotCol else c
        elif ty in FLOATS or not isinstance(c, Col) or t is ObjCol:
            return False
        elif t is PredCol or ty == "pred":
            g.regs[ops[0].name] = c
        elif t is IntCol:
            g.regs[ops[0].name] = _icol(c.a, ty)
        else:   # PtrCol
            if not np.array_equal(_exact(c.a, ty), c.a):
                return False
            g.regs[ops[0].name] = c
        return True

    def _cvt(self, g: Group, ins: Instr) -> bool:
        p, ops = ins.parts, ins.operands
        if len(p) != 3 or p[1] not in INTS or p[2] not in INTS or not isinstance(ops[1], Reg):
            return False
        c = self._reg(g, ops[1].name)
        if type(c) is not IntCol:
            return False
        g.regs[ops[0].name] = _icol(_mod(c.a, p[2]), p[1])
        return True

    def _setp(self, g: Group, ins: Instr) -> bool:
        p, ops = ins.parts, ins.operands
        if len(p) != 3 or p[2] not in INTS or p[1] not in ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs") \
                or not isinstance(ops[0], Reg) or len(ops) != 3:
            return False
        ty, m = p[2], len(g.tids)
        vals = [self._operand(g, o, ty) for o in ops[1:]]
        if _NO in vals or not any(isinstance(v, Col) for v in vals):
            return False
        xs = [self._ints(v, m) for v in vals]
        if any(x is None for x in xs):
            return False
        a, b = _mod(xs[0], ty), _mod(xs[1], ty)
        if ty[0] != "s" and bits(ty) == 64:   # unsigned order of the values modulo 2^64
            a, b = a ^ np.int64(-1 << 63), b ^ np.int64(-1 << 63)
        cmp = p[1]
        r = (a == b if cmp == "eq" else a != b if cmp == "ne" else a < b if cmp in ("lt", "lo")
             else a <= b if cmp in ("le", "ls") else a > b if cmp in ("gt", "hi") else a >= b)
        g.regs[ops[0].name] = PredCol(r)
        return True

    def _selp(self, g: Group, ins: Instr) -> bool:
        ops, ty, m = ins.operands, ins.parts[-1], len(g.tids)
        if len(ops) != 4 or not isinstance(ops[0], Reg) or ty not in INTS:
            return False
        c = self._operand(g, ops[3], "pred")
        if type(c) is not PredCol:
            return False
        a, b = (self._ints(self._operand(g, o, ty), m, True) for o in ops[1:3])
        if a is None or b is None:
            return False
        g.regs[ops[0].name] = IntCol(np.where(c.a, a, b))
        return True

    def _pred(self, g: Group, ins: Instr) -> bool:
        ops, m = ins.operands, len(g.tids)
        if not isinstance(ops[0], Reg) or not all(isinstance(o, Reg) for o in ops[1:]):
            return False
        vals = [self._reg(g, o.name) for o in ops[1:]]
        if not any(type(v) is PredCol for v in vals) or not all(type(v) in (PredCol, bool) for v in vals):
            return False
        xs = [v.a if type(v) is PredCol else np.full(m, v) for v in vals]
        op = ins.op
        if op == "not" and len(xs) == 1:
            r = ~xs[0]
        elif op != "not" and len(xs) == 2:
            r = {"and": np.logical_and, "or": np.logical_or, "xor": np.not_equal}[op](*xs)
        else:
            return False
        g.regs[ops[0].name] = PredCol(r)
        return True

    def _fma(self, g: Group, ins: Instr) -> bool:
        """``fma.rn.f32 d, a, b, c`` (or ``mad``) of input elements ``a``, ``b`` onto a dot product ``c``
        (or a real ``c`` that ``fma`` takes as a dot product's base): the key column appended."""
        ops, m = ins.operands, len(g.tids)
        if ins.parts not in (["fma", "rn", "f32"], ["mad", "rn", "f32"], ["mad", "f32"]) or len(ops) != 4 \
                or not all(isinstance(o, Reg) for o in ops):
            return False
        a, b, c = (self._reg(g, o.name) for o in ops[1:])
        ia, ib = self._atoms(a, m), self._atoms(b, m)
        if ia is None or ib is None:
            return False
        key = ia << 32 | ib
        if type(c) is DotCol:
            keys = c.keys if len(c.keys) == c.k else c.keys[:c.k]
            keys.append(key)
            g.regs[ops[0].name] = DotCol(c.base, keys, c.k + 1)
        elif isinstance(c, Rat) and type(c) is not Dot and c.d is ONE_P:
            g.regs[ops[0].name] = DotCol(c, [key], 1)
        else:
            return False
        return True

    def _real(self, g: Group, ins: Instr) -> bool:
        """``add sub mul fma mad`` of reals (``Rat``, ``Var``, ``Dot``), per thread as ``CTA._float``."""
        ops, m = ins.operands, len(g.tids)
        if len(ops) != (4 if ins.op in ("fma", "mad") else 3) or not isinstance(ops[0], Reg):
            return False
        args = []
        for o in ops[1:]:
            if isinstance(o, FImm):
                v = float_of_bits(o.bits, o.width)
                if type(v) is not Rat:
                    return False
                args.append([v] * m)
                continue
            if not isinstance(o, Reg):
                return False
            v = self._reg(g, o.name)
            if not isinstance(v, Col):
                if type(v) not in RATS:
                    return False
                args.append([v] * m)
                continue
            if type(v) not in (AtomCol, DotCol, ObjCol):
                return False
            vals = self._list(g, o.name)
            if not all(type(x) in RATS for x in vals):
                return False
            args.append(vals)
        op = ins.op
        if op == "add":
            r = [x + y for x, y in zip(*args)]
        elif op == "sub":
            r = [x - y for x, y in zip(*args)]
        elif op == "mul":   # by log2(e) (``__expf``): as ``CTA._float``
            r = [over_ln2(x) if y is INV_LN2 else x * y for x, y in zip(*args)]
        else:
            r = [fma(x, y, z) for x, y, z in zip(*args)]
        g.regs[ops[0].name] = ObjCol(r)
        return True

    def _atoms(self, v, m: int):
        if type(v) is AtomCol:
            return v.a
        if type(v) is Var:
            self.vars.setdefault(v.ix, v)
            return np.full(m, v.ix, np.int64)
        return None

    # ------------------------------------------------------------------ memory

    def _address(self, g: Group, ins: Instr, m: Mem) -> tuple[np.ndarray, tuple]:
        """The group's addresses of ``m`` and their allocation, after ``CTA.address``'s checks,
        alignment and the bounds of every vector element."""
        space, base = _space(ins), m.base
        v = self._reg(g, base.name) if isinstance(base, Reg) else self.c.sym_addr.get(base.name, _NO) \
            if isinstance(base, Sym) else _NO
        if type(v) is PtrCol:
            a = v.a + m.offset
        elif type(v) is Ptr:
            a = np.full(len(g.tids), int(v) + m.offset, np.int64)
        else:
            raise Fallback
        if v.space != space and {v.space, space} != {"generic", "global"} \
                or space == "global" and v.alloc[3] != "global":
            raise Fallback
        _, lo, hi, _ = v.alloc
        if (a & 3).any() or a.min() < lo or a.max() > hi - 4 * _vec(ins):
            raise Fallback
        return a, v.alloc

    def _witness(self, space: str, kind: str, keys: np.ndarray, tids: np.ndarray, pc: int) -> None:
        """The conflict classes of earlier accesses ``keys`` (epoch * P + pc) of threads ``tids`` against
        one at ``pc``, with the barrier each such thread passed next; one in this epoch is a race: Fallback."""
        for k in set(keys.tolist()):
            ep, first = divmod(k, self.P)
            if ep == self.epoch:
                raise Fallback
            b = self.bar_pcs[ep]
            for bpc in [b] if type(b) is int else set(b[tids[keys == k]].tolist()):
                self.witness.add((space, kind, first, pc, bpc))

    def _load(self, g: Group, ins: Instr) -> None:
        dst, m = ins.operands
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        if not isinstance(m, Mem) or len(dsts) != _vec(ins) or not all(isinstance(d, Reg) for d in dsts):
            raise Fallback
        a, alloc = self._address(g, ins, m)
        vals = []
        for i in range(len(dsts)):
            x = a + 4 * i
            if alloc[3] == "shared":
                vals.append(self._shared_read(g, ins, x))
            elif alloc[3] == "global":
                t = self.tensors[alloc[0]]
                if t.role != "input" or t.dtype != "f32":
                    raise Fallback
                vals.append(self._input(t, x))
            else:
                raise Fallback
        for d, v in zip(dsts, vals):
            g.regs[d.name] = v

    def _input(self, t, x: np.ndarray) -> AtomCol:
        """The f32 input elements at addresses ``x``: one ``Var`` per element (``CTA.load``'s name)."""
        e = (x - t.base) >> 2
        tix = self.tix.get(t.name)
        if tix is None:
            tix = self.tix[t.name] = np.full(t.numel, -1, np.int64)
        ix = tix[e]
        if (ix < 0).any():
            for el in sorted(set(e[ix < 0].tolist())):
                v = var(f"{t.name}[{el}]")
                tix[el] = v.ix
                self.vars[v.ix] = v
            ix = tix[e]
        return AtomCol(ix)

    def _shared_read(self, g: Group, ins: Instr, x: np.ndarray):
        w, tids, pc = (x - self.sbase) >> 2, g.tids, ins.index
        wt = self.w_tid[w]
        other = (wt >= 0) & (wt != tids)
        if other.any():
            self._witness("shared", "RAW", self.w_key[w][other], wt[other], pc)
        self.rd[w, tids] = self.epoch * self.P + pc
        self.rany[w] = True
        s = self.sat[w]
        if (s >= 0).all():
            return AtomCol(s)
        vals = []
        for word, ix in zip(w.tolist(), s.tolist()):
            v = self.vars[ix] if ix >= 0 else self.sobj.get(word)
            if v is None:   # never written: CTA.load's unknown value
                v = Rat.var(f"{self.c.side}.shared@uninit[{4 * word:#x}]")
            vals.append(typed(v, ins.parts[-1]) if type(v) is int else v)
        return self._columnize(vals)

    def _store(self, g: Group, ins: Instr) -> None:
        m, src = ins.operands
        srcs = list(src.items) if isinstance(src, Vec) else [src]
        if not isinstance(m, Mem) or len(srcs) != _vec(ins):
            raise Fallback
        a, alloc = self._address(g, ins, m)
        for i, s in enumerate(srcs):
            v = float_of_bits(s.bits, s.width) if isinstance(s, FImm) else self._reg(g, s.name) \
                if isinstance(s, Reg) else _NO
            if v is _NO:
                raise Fallback
            if alloc[3] == "shared":
                self._shared_write(g, ins, a + 4 * i, v, s)
            elif alloc[3] == "global":
                self._output_write(g, ins, a + 4 * i, v, s, self.tensors[alloc[0]])
            else:
                raise Fallback

    def _stored(self, g: Group, v, s, ty: str) -> list:
        """Per-thread values a store writes (``CTA._mem``): reals, and integers wrapped to ``ty`` or read
        as its floats; anything else (an address, a predicate, an infinity) is a Fallback."""
        vals = self._list(g, s.name) if isinstance(v, Col) else [v] * len(g.tids)
        out = [typed(x, ty) if type(x) is int else x for x in vals]
        if not all(type(x) is int or isinstance(x, Rat) for x in out):
            raise Fallback
        return out

    def _shared_write(self, g: Group, ins: Instr, x: np.ndarray, v, s) -> None:
        w, tids, pc, m = (x - self.sbase) >> 2, g.tids, ins.index, len(g.tids)
        seq = np.arange(m)
        self.scratch[w] = seq
        if not (self.scratch[w] == seq).all():
            raise Fallback       # two threads write one word at once
        wt = self.w_tid[w]
        other = (wt >= 0) & (wt != tids)
        if other.any():
            self._witness("shared", "WAW", self.w_key[w][other], wt[other], pc)
        hit = np.flatnonzero(self.rany[w])
        if len(hit):
            r = self.rd[w[hit]]
            r[np.arange(len(hit)), tids[hit]] = -1
            rows, readers = np.nonzero(r >= 0)
            if len(rows):
                self._witness("shared", "WAR", r[rows, readers], readers, pc)
            self.rd[w[hit]] = -1
            self.rany[w] = False
        self.w_tid[w] = tids
        self.w_key[w] = self.epoch * self.P + pc
        ix = self._atoms(v, m)
        if ix is None:
            vals = self._stored(g, v, s, ins.parts[-1])
            self.sat[w] = -1
            self.isobj[w] = True
            for word, val in zip(w.tolist(), vals):
                self.sobj[word] = val
            return
        drop = w[self.isobj[w]]
        for word in drop.tolist():
            del self.sobj[word]
        self.isobj[w] = False
        self.sat[w] = ix

    def _output_write(self, g: Group, ins: Instr, x: np.ndarray, v, s, t) -> None:
        if t.role != "output" or t.dtype != "f32":
            raise Fallback
        vals, pc, ep = self._stored(g, v, s, ins.parts[-1]), ins.index, self.epoch
        for a, tid, val in zip(x.tolist(), g.tids.tolist(), vals):
            old = self.gw.get(a)
            if old is not None and old[0] != tid:
                if old[1] == ep:
                    raise Fallback
                b = self.bar_pcs[old[1]]
                self.witness.add(("global", "WAW", old[2], pc, b if type(b) is int else int(b[old[0]])))
            self.gw[a] = (tid, ep, pc)
            if a not in self.gmem:
                self.first[a] = (ep, tid, self.tick)
            self.gmem[a] = (val, (t.name, (a - t.base) // 4))
