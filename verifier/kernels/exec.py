"""Checked symbolic execution of one CTA of a PTX kernel (the Volta approach).

Every thread has its own program counter over the instruction list, so loops stay
loops and run concretely. Integer, predicate and address arithmetic is concrete
(``%tid``/``%ntid``/``%ctaid``/``%nctaid`` come from the launch; the CTA is given,
CTA 0 by default). Float arithmetic is symbolic over the reals with the exact normal
form of ``certificates.poly`` (``Rat``).

Decisions about the reals (documented, deliberate):

* rounding is ignored: ``add/sub/mul/fma/div`` of any rounding mode are the real
  operations; ``cvt`` between f16/f32 (and ``mov`` of float bits through ``.b32``/``.u32``
  registers or memory) is the identity.
* ``ex2(y)`` is ``exp(y * LN2)`` with ``LN2 = log(2)`` an opaque atom of the normal
  form (numerically the true ln 2; for z3 an uninterpreted constant, so a proof never
  depends on its value). The single float constant ``0f3FB8AA3B`` (the f32 nearest
  log2 e, emitted by ``__expf``) is read as the real ``1 / LN2``; so
  ``ex2(x * 0f3FB8AA3B)`` is exactly ``exp(x)``. Every other float constant is its
  exact binary value. This is the only place a constant is not read at face value.
* ``max``/``min`` are the normal form's ``max`` atom (``min(a, b) = -max(-a, -b)``);
  ``sqrt`` its ``sqrt`` atom; ``rsqrt(x) = 1/sqrt(x)``; ``rcp(x) = 1/x``.

Scheduling: each runnable thread runs until it blocks (a barrier or a warp
collective) or exits. ``bar.sync``/``barrier.sync a{, b}`` release when ``b`` (default:
all) threads arrived at barrier ``a`` (matched by count, not program counter);
``bar.warp.sync m`` releases when every lane in ``m`` arrived at one; ``shfl.sync`` /
``vote.sync`` execute when every lane of their mask arrived at the same collective.
Deadlock: nothing runnable, nothing releasable, and some thread blocked.

Races: per byte of shared and global memory, the last writer and the readers since,
with vector clocks (a barrier joins the clocks of its participants). A read races
with an unsynchronized last write; a write with an unsynchronized last write or read.
Both accesses are reported (thread, instruction index and text, address).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from certificates.errors import CheckError, Unsupported
from certificates.kernel import (BARRIERS, FLOAT_OPS, INTS, INV_LN2, IROUND, RATS, Inf, Ptr, Word, clamp, float_of_bits,
                                 float_to_int, fma, inf_arith, mul24, no_gc, null_test, ring, typed, var)
from certificates.poly import Rat, apply

from certificates.ptx import FImm, Imm, Instr, Kernel, Mem, Pair, Reg, Sym, Vec

from . import simt

MAX_STEPS = 400_000_000   # per CTA: a runaway loop guard (a naive SGEMM CTA at K = 4096 takes 96M)

SHARED_BASE = 0x1000
GLOBAL_BASE = 1 << 40
GLOBAL_STRIDE = 1 << 32
TABLES = 1 << 36        # initialized .const / .global variables
LOCAL = 1 << 20         # .local variables (one array per thread)


class KernelError(CheckError):
    """The kernel does something the checked semantics rejects (out of bounds, ...)."""


@dataclass(slots=True)
class Access:
    tid: int
    clock: int
    index: int
    text: str
    line: int
    write: bool


@dataclass
class Race:
    space: str
    address: int
    first: Access
    second: Access
    where: str = ""      # symbolic location, e.g. "sdata+4" or "C[17]"

    def describe(self, kernel: str = "") -> str:
        def one(a: Access) -> str:
            return (f"thread {a.tid} {'writes' if a.write else 'reads'} at instruction {a.index} "
                    f"(line {a.line}: `{a.text}`)")
        loc = f" ({self.where})" if self.where else ""
        return (f"data race{' in ' + kernel if kernel else ''} on {self.space} address {self.address:#x}{loc}: "
                f"{one(self.first)}; {one(self.second)}; no barrier orders them")


@dataclass
class Deadlock:
    blocked: dict      # description -> list of thread ids
    exited: list[int]

    def describe(self, kernel: str = "") -> str:
        parts = [f"{len(t)} thread(s) {t[:4]}{'...' if len(t) > 4 else ''} blocked at {d}" for d, t in self.blocked.items()]
        if self.exited:
            parts.append(f"{len(self.exited)} thread(s) exited")
        return f"deadlock{' in ' + kernel if kernel else ''}: " + "; ".join(parts)


def _same(x, y) -> bool:
    """Equal for every input: integers, or ``Rat``/``Word`` whose difference is zero."""
    if isinstance(x, Word) and isinstance(y, Word):
        return x.n == y.n and (x.p - y.p).is_zero()
    if isinstance(x, Rat) and isinstance(y, Rat):
        return (x - y).is_zero()
    return type(x) is int and type(y) is int and x == y


class RaceError(CheckError):
    def __init__(self, race: Race, kernel: str = "") -> None:
        super().__init__(race.describe(kernel))
        self.race = race


class DeadlockError(CheckError):
    def __init__(self, dl: Deadlock, kernel: str = "") -> None:
        super().__init__(dl.describe(kernel))
        self.deadlock = dl


@dataclass
class Tensor:
    name: str
    role: str           # input | output
    dtype: str          # f32 | f16 | s32
    numel: int
    base: int = 0

    @property
    def esize(self) -> int:
        return 2 if self.dtype in ("f16", "bf16") else 4


@dataclass
class Result:
    outputs: dict       # (tensor name, index) -> Rat | int
    steps: int
    barriers: int
    threads: int
    schedule: list = field(default_factory=list)   # the events taken (certificates/kernel.py)
    witness: set = field(default_factory=set)      # ordered conflict classes
    written: set = field(default_factory=set)      # output bytes written
    touched: set = field(default_factory=set)      # output bytes read or written


# ----------------------------------------------------------------------------- helpers

_BITS: dict[str, int] = {"pred": 1}


def _bits(t: str) -> int:
    n = _BITS.get(t)
    if n is None:
        n = _BITS[t] = int("".join(c for c in t if c.isdigit()) or 32)
    return n


def _signed(t: str) -> bool:
    return t[0] == "s"


_WRAP: dict[str, tuple] = {}


def _wrap(v: int, t: str) -> int:
    """Canonical value of an integer of PTX type ``t`` (signed types as signed)."""
    w = _WRAP.get(t)
    if w is None:
        n = _bits(t)
        w = _WRAP[t] = ((1 << n) - 1, 1 << (n - 1) if t[0] == "s" else 0, 1 << n)
    mask, sign, full = w
    v &= mask
    if sign and v & sign:
        v -= full
    return v


def _as(v: int, t: str) -> int:
    return _wrap(v, t)


FLOAT_TYPES = {"f16", "f32", "f64", "bf16"}


def _ranges(ids: list[int]) -> list[tuple[int, int]]:
    """Increasing ``ids`` as maximal runs ``(lo, hi)`` of consecutive numbers."""
    out: list[tuple[int, int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


class Packed(tuple):
    """Two 16-bit values packed in one 32-bit register or word (low half first)."""


MODELLED_MMA = {"ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
                "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}


class Thread:
    __slots__ = ("tid", "lin", "warp", "lane", "pc", "regs", "state", "wait", "vc", "syncs", "lmem")

    def __init__(self, lin: int, tid: tuple, ntid: tuple, ctaid: tuple, nctaid: tuple, nthreads: int) -> None:
        self.lin, self.tid = lin, tid
        self.warp, self.lane = lin // 32, lin % 32
        self.pc = 0
        self.regs: dict = {}
        for pre, vals in (("%tid", tid), ("%ntid", ntid), ("%ctaid", ctaid), ("%nctaid", nctaid)):
            for c, v in zip("xyz", vals):
                self.regs[f"{pre}.{c}"] = v
        self.regs["%laneid"] = self.lane
        self.lmem: dict[int, tuple] = {}     # .local memory: address -> (value, width)
        self.state = "run"           # run | block | exit
        self.wait = None             # what it is blocked on
        self.vc = [0] * nthreads
        self.syncs: list[int] = []   # pc of each barrier passed


class _Shadow:
    __slots__ = ("w", "r")

    def __init__(self) -> None:
        self.w: Access | None = None
        self.r: dict[int, Access] = {}


# ----------------------------------------------------------------------------- executor


class CTA:
    """Execute one CTA of ``kernel`` with the given launch and parameter bindings.

    ``params``: one dict per kernel ``.param`` in order: ``{"name", "role", "dtype",
    "shape"}`` for tensors (role ``input``/``output``), ``{"name", "role": "scalar",
    "value"}`` for scalars.
    """

    def __init__(self, kernel: Kernel, grid, block, params: list[dict], cta=(0, 0, 0), side: str = "",
                 dyn: int | None = None) -> None:
        self.k, self.side = kernel, side
        self.grid, self.block, self.cta = tuple(grid), tuple(block), tuple(cta)
        if len(params) != len(kernel.params):
            raise KernelError(f"{kernel.name}: {len(kernel.params)} .param in PTX, {len(params)} bound")
        self.param_values: dict[str, int] = {}
        self.tensors: list[Tensor] = []
        for i, (kp, p) in enumerate(zip(kernel.params, params)):
            if p["role"] == "scalar":    # an f32 scalar is symbolic: the claim holds for every value
                self.param_values[kp.name] = Rat.var(p["name"]) if p.get("dtype") == "f32" else int(p["value"])
            else:
                numel = 1
                for d in p["shape"]:
                    numel *= int(d)
                t = Tensor(p["name"], p["role"], p["dtype"], numel, GLOBAL_BASE + i * GLOBAL_STRIDE)
                self.tensors.append(t)
                self.param_values[kp.name] = Ptr(t.base, (t.name, t.base, t.base + numel * t.esize, "global"),
                                                 "generic")
        # shared layout
        self.sym_addr: dict[str, Ptr] = {}
        addr = SHARED_BASE
        dynamic, loc = [], LOCAL
        for v in kernel.vars.values():
            if v.space != "shared":
                if v.space == "local":   # per thread; read back only as written (same address and width)
                    self.sym_addr[v.name] = Ptr(loc, (v.name, loc, loc + v.size, "local"), "local")
                    loc += (v.size // 0x10000 + 1) * 0x10000
                continue
            if v.extern:
                dynamic.append(v)
                continue
            addr = (addr + v.align - 1) // v.align * v.align
            self.sym_addr[v.name] = Ptr(addr, (v.name, addr, addr + v.size, "shared"), "shared")
            addr += v.size
        self.tables: dict[str, bytes] = {}
        tab = TABLES
        for v in kernel.vars.values():   # initialized .const / .global arrays: read-only tables
            if v.init is not None:
                self.sym_addr[v.name] = Ptr(tab, (v.name, tab, tab + v.size, "table"), v.space)
                self.tables[v.name] = v.init
                tab += (v.size // 0x10000 + 1) * 0x10000
        if dynamic and dyn is None:
            raise Unsupported(f"{kernel.file}:{dynamic[0].line}: extern .shared {dynamic[0].name} needs the "
                              "launch's shared_bytes")
        if dynamic:   # all extern arrays alias the one dynamic region, after the static ones
            align = max(v.align for v in dynamic)
            addr = (addr + align - 1) // align * align
            for v in dynamic:
                self.sym_addr[v.name] = Ptr(addr, ("shared@dynamic", addr, addr + dyn, "shared"), "shared")
        self.smem: dict[int, tuple] = {}      # byte address -> (value, width) at value start
        self.gmem: dict[int, tuple] = {}      # stores to global memory
        self.inits: dict[int, object] = {}    # global address -> its unknown initial value (one object)
        self.f32in: dict[int, Rat] = {}       # the f32 input elements loaded so far (_compile_load)
        self.f16in: dict[int, Rat] = {}       # the same for f16 input elements (2-byte loads)
        self.shadow: dict[str, dict[int, _Shadow]] = {"shared": {}, "global": {}}   # space -> byte -> shadow
        self.words: dict[str, dict[int, _Shadow]] = {"shared": {}, "global": {}}    # aligned words, see _record
        self.blocks: list = [_UNSET] * len(kernel.instrs)   # pc -> the straight-line run compiled there (_block)
        n = self.block[0] * self.block[1] * self.block[2]
        if n <= 0 or n > 1024:
            raise KernelError(f"{kernel.name}: block of {n} threads")
        self.n = n
        self.threads = []
        for lin in range(n):
            x = lin % self.block[0]
            y = (lin // self.block[0]) % self.block[1]
            z = lin // (self.block[0] * self.block[1])
            self.threads.append(Thread(lin, (x, y, z), self.block, self.cta, self.grid, n))
        self.steps = 0
        self.barriers = 0
        self.schedule: list = []
        self.witness: set = set()
        self.labels = kernel.labels

    # ------------------------------------------------------------------ errors

    def _err(self, th: Thread, ins: Instr, msg: str) -> KernelError:
        return KernelError(f"{self.k.file}:{ins.line}: thread {th.lin}: {msg} in `{ins.text}`")

    # ------------------------------------------------------------------ operands

    def val(self, th: Thread, o, ins: Instr, ty: str | None = None):
        if isinstance(o, Reg):
            try:
                return th.regs[o.name]
            except KeyError:
                raise self._err(th, ins, f"read of unset register {o.name}") from None
        if isinstance(o, Imm):
            if ty in FLOAT_TYPES:
                raise self._err(th, ins, "integer immediate used as a float")
            return _wrap(o.value, ty) if ty and ty != "pred" else o.value
        if isinstance(o, FImm):
            return float_of_bits(o.bits, o.width)
        if isinstance(o, Sym):
            if o.name in self.sym_addr:
                return self.sym_addr[o.name]
            raise self._err(th, ins, f"symbol {o.name} used as a value")
        raise self._err(th, ins, f"bad source operand {o}")

    def ival(self, th, o, ins, ty) -> int:
        v = self.val(th, o, ins, ty)
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, Ptr):
            raise self._unsupported(ins, f"integer operation on an address of {v.alloc[0]} (layout-dependent)")
        if not isinstance(v, int):
            raise Unsupported(f"{self.k.file}:{ins.line}: integer operation on a float/symbolic value "
                              f"(data-dependent) in `{ins.text}`")
        return _wrap(v, ty)

    def fval(self, th, o, ins) -> Rat:
        v = self.val(th, o, ins, "f32")
        if isinstance(v, (Rat, Inf)):
            return v
        if isinstance(v, bool):
            raise self._err(th, ins, "predicate used as a float")
        if not isinstance(v, int):
            raise self._unsupported(ins, "integer data or a packed pair used as a float")
        return typed(v, ins.parts[-1] if ins.parts[-1] in FLOAT_TYPES else "f32")   # raw bits, as the checker

    def _unsupported(self, ins: Instr, msg: str) -> Unsupported:
        return Unsupported(f"{self.k.file}:{ins.line}: {msg} in `{ins.text}`")

    def address(self, th, m: Mem, ins, space: str) -> Ptr:
        """``m`` for an access in ``space``: a pointer into one allocation (``certificates.kernel.Ptr``)
        of that space; a global address and a generic one into global memory are interchangeable."""
        if space not in ("generic", "global", "shared", "const", "local"):
            raise self._unsupported(ins, f"access to .{space}")
        v = self.val(th, m.base, ins)
        if not isinstance(v, Ptr):
            raise self._unsupported(ins, "address not derived from a parameter or a variable"
                                    if isinstance(v, int) else "data-dependent address")
        if v.space != space and {v.space, space} != {"generic", "global"}:
            raise self._err(th, ins, f"a {v.space} address of {v.alloc[0]} used for a {space} access")
        if space == "global" and v.alloc[3] not in ("global", "table"):
            raise self._err(th, ins, f"a generic address of shared {v.alloc[0]} used for a global access")
        return v.at(m.offset)

    def keep(self, ins: Instr, v, r: int):
        """``r`` with the provenance of ``v`` (refused where the conversion changes an address)."""
        if not isinstance(v, Ptr):
            return r
        if r != v:
            raise self._unsupported(ins, f"an address of {v.alloc[0]} changed by a conversion (layout-dependent)")
        return Ptr(r, v.alloc, v.space)

    def setreg(self, th, o, v) -> None:
        if not isinstance(o, Reg):
            raise KernelError(f"bad destination {o}")
        th.regs[o.name] = v

    # ------------------------------------------------------------------ memory

    def _record(self, space: str, addr: int, width: int, th: Thread, ins: Instr, write: bool) -> None:
        """Check and record one access, per byte. A word (4 aligned bytes) only ever accessed whole has one
        shadow in ``words`` for its four bytes (theirs are equal, and the byte loop finds nothing new past the
        first); any other access first splits the words it overlaps into per-byte copies."""
        me = Access(th.lin, th.vc[th.lin], ins.index, ins.text, ins.line, write)
        vc, last, shadow, seen = th.vc, None, self.shadow[space], set()   # seen: reads checked at an earlier byte
        words, span = self.words[space], range(addr, addr + width)
        if width == 4 and not addr & 3 and (addr in words or not (addr in shadow or addr + 1 in shadow
                                                                  or addr + 2 in shadow or addr + 3 in shadow)):
            shadow, span = words, range(addr, addr + 1)
        else:
            for w in range(addr & ~3, addr + width, 4):
                old = words.pop(w, None)
                for b in range(w, w + 4) if old is not None else ():
                    sh = shadow[b] = _Shadow()
                    sh.w, sh.r = old.w, dict(old.r)
        for a in span:
            sh = shadow.get(a)
            if sh is None:
                sh = shadow[a] = _Shadow()
            w = sh.w
            if w is not None and w.tid != th.lin and w is not last:   # one write over several bytes: one check
                last = w
                if vc[w.tid] <= w.clock:
                    raise RaceError(Race(space, a, w, me, self.where(space, a)), self.k.name)
                self.witness.add((space, "WAW" if write else "RAW", w.index, me.index,
                                  self.threads[w.tid].syncs[w.clock]))
            if write:
                for r in sh.r.values():
                    if r.tid != th.lin and id(r) not in seen:   # one read over several bytes: one check
                        seen.add(id(r))
                        if vc[r.tid] <= r.clock:
                            raise RaceError(Race(space, a, r, me, self.where(space, a)), self.k.name)
                        self.witness.add((space, "WAR", r.index, me.index, self.threads[r.tid].syncs[r.clock]))
                sh.w = me
                sh.r = {}
            else:
                sh.r[th.lin] = me

    def where(self, space: str, addr: int) -> str:
        """Symbolic name of a byte address: ``var+offset`` (shared) or ``tensor[i]`` (global)."""
        if space == "shared":
            best = None
            for name, a in self.sym_addr.items():
                if a <= addr and (best is None or a > best[1]):
                    best = (name, a)
            return f"{best[0]}+{addr - best[1]}" if best else ""
        for t in self.tensors:
            if t.base <= addr < t.base + GLOBAL_STRIDE:
                off = addr - t.base
                return f"{t.name}[{off // t.esize}]" + (f"+{off % t.esize}" if off % t.esize else "")
        return ""

    def _tensor(self, addr: int, th, ins) -> tuple[Tensor, int]:
        for t in self.tensors:
            if t.base <= addr < t.base + GLOBAL_STRIDE:
                off = addr - t.base
                if off % t.esize or off // t.esize >= t.numel:
                    raise self._err(th, ins, f"out-of-bounds or misaligned access to {t.name} at byte {off}")
                return t, off // t.esize
        raise self._err(th, ins, f"global access to unknown address {addr:#x}")

    def _bounds(self, th, ins, addr: Ptr, width: int) -> str:
        """The memory of ``addr`` after the bounds check against the allocation it derives from."""
        name, lo, hi, memory = addr.alloc
        if not lo <= addr <= hi - width:
            raise self._err(th, ins, f"access out of bounds: byte {addr - lo} of {name} ({hi - lo} bytes), "
                                     "the allocation the address derives from")
        return memory

    def load(self, th, ins, addr: Ptr, width: int, ty: str):
        space = self._bounds(th, ins, addr, width)
        if space == "table":       # its PTX initial bytes, little-endian
            raw = int.from_bytes(self.tables[addr.alloc[0]][addr - addr.alloc[1]:][:width], "little")
            return typed(raw, ty) if ty in FLOAT_TYPES else raw
        if space == "local":
            ent = th.lmem.get(addr)
            if ent is None or ent[1] != width:
                raise self._unsupported(ins, f"a {width}-byte read of local memory this thread did not write so")
            return ent[0]
        if space == "shared":
            self._record("shared", addr, width, th, ins, False)
            ent = self.smem.get(addr)
            if ent is None and width == 4 and (addr + 2) in self.smem:
                ent = (None, 2)
            if ent is None:  # never written: an unknown value (a later write may still race)
                return Rat.var(f"{self.side}.shared@uninit[{addr - SHARED_BASE:#x}]")
            if ent[1] == 2 and width == 4:  # two 16-bit values read as one packed 32-bit word
                halves = []
                for a in (addr, addr + 2):
                    e = self.smem.get(a)
                    if e is not None and e[1] != 2:
                        raise Unsupported(f"{self.k.file}:{ins.line}: mixed-width load in `{ins.text}`")
                    halves.append(e[0] if e else Rat.var(f"{self.side}.shared@uninit[{a - SHARED_BASE:#x}]"))
                return Packed(halves)
            if ent[1] != width:
                raise Unsupported(f"{self.k.file}:{ins.line}: {width}-byte load of a {ent[1]}-byte value "
                                  f"(partial-word type punning) in `{ins.text}`")
            return ent[0]
        if space == "global":
            t, i = self._tensor(addr, th, ins)
            if width == 4 and t.esize == 2 and t.role == "input":  # two f16 elements as one word
                return Packed([self.load(th, ins, addr, 2, ty), self.load(th, ins, addr.at(2), 2, ty)])
            if width != t.esize:
                raise Unsupported(f"{self.k.file}:{ins.line}: {width}-byte access to {t.dtype} tensor {t.name}")
            if t.role == "output":  # inputs are never written (a store to one is an error)
                if "nc" in ins.parts or ins.op == "ldu":   # read-only data (PTX ISA), which an output is not
                    raise Unsupported(f"{self.k.file}:{ins.line}: a non-coherent load of output {t.name} in `{ins.text}`")
                self._record("global", addr, width, th, ins, False)
            if addr in self.gmem:
                return self.gmem[addr][0]
            v = self.inits.get(addr)
            if v is None:
                v = var(f"{t.name}@init[{i}]" if t.role == "output" else f"{t.name}[{i}]")
                v = self.inits[addr] = Word(v, 32) if t.dtype == "s32" else v
                if t.role == "input" and t.dtype in ("f32", "f16"):
                    (self.f32in if t.dtype == "f32" else self.f16in)[addr] = v
            return v

    def _lanes_store_one_value(self, e: RaceError, ins: Instr, addr: int, width: int, value) -> CheckError:
        """Two lanes of one warp storing one value to one shared slot at one instruction
        (Triton's cross-warp reductions): one write lands (CUDA), but it is a race in the PTX
        memory model, outside agda/Confluence: refused (UNKNOWN), not reported as a bug. Any
        other race stands."""
        a, b = e.race.first, e.race.second
        old = self.smem.get(addr)
        if not (a.write and a.index == b.index and a.tid // 32 == b.tid // 32 and old is not None
                and old[1] == width and _same(old[0], value)):
            return e
        return self._unsupported(ins, f"threads {a.tid} and {b.tid} of one warp store the same value to shared "
                                      f"{e.race.where} (a race in the PTX memory model, benign in CUDA; not modelled)")

    def _smem_put(self, ins: Instr, addr: int, width: int, value) -> None:
        """Shared memory after a (race-checked) store of ``value``: the values it overlaps dropped."""
        for a in range(addr - 7, addr + width):  # drop overlapped values
            e = self.smem.get(a)
            if e is not None and a + e[1] > addr and a < addr + width:
                if a != addr or e[1] != width:
                    del self.smem[a]
        if isinstance(value, Packed):
            if width != 4:
                raise Unsupported(f"{self.k.file}:{ins.line}: packed pair stored as {width} bytes")
            self.smem.pop(addr, None)
            self.smem[addr] = (value[0], 2)
            self.smem[addr + 2] = (value[1], 2)
            return
        self.smem[addr] = (value, width)

    def store(self, th, ins, addr: Ptr, width: int, value) -> None:
        if isinstance(value, Inf):
            raise self._unsupported(ins, "a store of ±inf")
        if addr.alloc[3] == "table":
            raise self._unsupported(ins, f"a store to the .const/.global variable {addr.alloc[0]}")
        if addr.alloc[3] == "local" and self._bounds(th, ins, addr, width):
            for a in [a for a in th.lmem if a < addr + width and a + th.lmem[a][1] > addr]:
                del th.lmem[a]
            th.lmem[addr] = (value, width)
            return
        space = self._bounds(th, ins, addr, width)
        if space == "shared":
            try:
                self._record("shared", addr, width, th, ins, True)
            except RaceError as e:
                raise self._lanes_store_one_value(e, ins, addr, width, value) from None
            self._smem_put(ins, addr, width, value)
            return
        if space == "global":
            t, i = self._tensor(addr, th, ins)
            if width != t.esize:
                raise Unsupported(f"{self.k.file}:{ins.line}: {width}-byte store to {t.dtype} tensor {t.name}")
            if t.role != "output":
                raise self._err(th, ins, f"store to input tensor {t.name}")
            if isinstance(value, Ptr):
                raise self._unsupported(ins, "an address stored to global memory (layout-dependent)")
            if isinstance(value, Rat if t.dtype == "s32" else Word):
                raise self._unsupported(ins, f"{'a float' if t.dtype == 's32' else 'integer data'} stored to "
                                             f"tensor {t.name}")
            self._record("global", addr, width, th, ins, True)
            self.gmem[addr] = (value, width)
            return

    # ------------------------------------------------------------------ run

    def run(self) -> Result:
        instrs = self.k.instrs
        while True:
            progressed = False
            runnable = [th for th in self.threads if th.state == "run"]
            for lo, hi in _ranges([th.lin for th in runnable]):
                self.schedule.append(["run", lo, hi])
            for th in runnable:
                self._run_thread(th, instrs)
                progressed = True
            if self._release():
                continue
            if progressed and any(t.state == "run" for t in self.threads):
                continue
            blocked = [t for t in self.threads if t.state == "block"]
            if not blocked:
                break
            groups: dict[str, list[int]] = {}
            for t in blocked:
                ins = instrs[t.pc]
                groups.setdefault(f"instruction {t.pc} (line {ins.line}: `{ins.text}`)", []).append(t.lin)
            raise DeadlockError(Deadlock(groups, [t.lin for t in self.threads if t.state == "exit"]), self.k.name)
        outs = {}
        for addr, (v, _) in self.gmem.items():
            t, i = self._tensor(addr, self.threads[0], instrs[-1])
            outs[(t.name, i)] = v
        return Result(outs, self.steps, self.barriers, self.n, self.schedule, self.witness, set(self.gmem),
                      set(self.shadow["global"]) | {w + i for w in self.words["global"] for i in range(4)})

    def _release(self) -> bool:
        """Release every barrier / warp collective whose participants all arrived."""
        released = False
        byid: dict[int, list[Thread]] = {}
        for t in self.threads:
            if t.state == "block" and t.wait[0] == "bar":
                byid.setdefault(t.wait[1], []).append(t)
        for bid, ts in byid.items():
            want = {t.wait[2] for t in ts}
            if len(want) > 1:
                continue  # inconsistent counts: left blocked -> deadlock report
            need = want.pop()
            if need is None:
                need = self.n
            if len(ts) >= need:
                group = ts[:need]
                for t in group:
                    lead = self.threads[t.lin - t.lane]
                    ins = self.k.instrs[t.pc]
                    if (ins.op == "bar" or "aligned" in ins.parts) and t.pc != lead.pc:
                        raise KernelError(f"{self.k.file}:{ins.line}: threads {lead.lin} and {t.lin} of one warp wait "
                                          f"at different aligned barriers (instructions {lead.pc} and {t.pc}): "
                                          "undefined behaviour")
                self.schedule.append(["bar", bid, ts[0].wait[2], [list(r) for r in _ranges([t.lin for t in group])]])
                self._sync(group)
                self.barriers += 1
                for t in group:
                    t.state, t.wait = "run", None
                    t.pc += 1
                released = True
        # warp-level: bar.warp.sync / shfl / vote
        warps: dict[int, list[Thread]] = {}
        for t in self.threads:
            if t.state == "block" and t.wait[0] in ("wsync", "shfl", "vote", "mma", "ldmatrix", "wmma"):
                warps.setdefault(t.warp, []).append(t)
        for w, ts in warps.items():
            lanes = {t.lane: t for t in ts}
            done: set[int] = set()
            for t in ts:
                if t.lane in done:
                    continue
                mask = t.wait[1]
                members = [lane for lane in range(32) if mask >> lane & 1 and w * 32 + lane < self.n]
                if t.lane not in members:
                    raise KernelError(f"{self.k.file}: thread {t.lin}: lane not in its own member mask {mask:#x}")
                same_pc = t.wait[0] != "wsync"   # shfl/vote: every lane at the same instruction
                if not all(lane in lanes and lanes[lane].wait[0] == t.wait[0] and lanes[lane].wait[1] == mask
                           and (not same_pc or lanes[lane].pc == t.pc) for lane in members):
                    continue
                group = [lanes[lane] for lane in members]
                self.schedule.append(["warp", w, mask])
                if t.wait[0] == "shfl":
                    self._shfl(group)
                elif t.wait[0] == "vote":
                    self._vote(group)
                elif t.wait[0] == "ldmatrix":
                    self._ldmatrix(group)
                elif t.wait[0] == "mma":
                    self._mma(group)
                elif t.wait[0] == "wmma":
                    self._wmma(group)
                if t.wait[0] == "wsync":
                    # only bar.warp.sync orders memory among its lanes; shfl/vote/ldmatrix/
                    # mma/wmma converge the warp but promise no memory ordering, so they
                    # synchronize nothing here (conservative: a race is never hidden)
                    self._sync(group)
                for g in group:
                    g.state, g.wait = "run", None
                    g.pc += 1
                    done.add(g.lane)
                released = True
        return released

    def _sync(self, group: list[Thread]) -> None:
        """Each member's own clock ticks; all then hold the join of their clocks. Clocks change only here
        (ticks and joins), so no thread holds more of thread i than i itself: with every thread in the
        group the join is each one's own entry (n steps, not n^2)."""
        n = self.n
        joined = [0] * n
        for t in group:
            t.vc[t.lin] += 1
            t.syncs.append(t.pc)
            if len(group) == n:
                joined[t.lin] = t.vc[t.lin]
                continue
            vc = t.vc
            for i in range(n):
                if vc[i] > joined[i]:
                    joined[i] = vc[i]
        for t in group:
            t.vc = list(joined)

    def _shfl(self, group: list[Thread]) -> None:
        lanes = {t.lane: t for t in group}
        results = {}
        for t in group:
            ins = self.k.instrs[t.pc]
            mode = ins.parts[2]
            dst, a, b, c = ins.operands[:4]
            bval = self.ival(t, b, ins, "b32") & 31
            cv = self.ival(t, c, ins, "b32")
            clamp, seg = cv & 31, (cv >> 8) & 31
            lane = t.lane
            max_lane = (lane & seg) | (clamp & ~seg & 31)
            min_lane = lane & seg
            if mode == "up":
                j = lane - bval
                ok = j >= max_lane
            elif mode == "down":
                j = lane + bval
                ok = j <= max_lane
            elif mode == "bfly":
                j = lane ^ bval
                ok = j <= max_lane
            elif mode == "idx":
                j = min_lane | (bval & ~seg & 31)
                ok = j <= max_lane
            else:
                raise Unsupported(f"{self.k.file}:{ins.line}: shfl mode {mode}")
            if not ok:
                j = lane
            if j not in lanes:
                raise self._err(t, ins, f"shfl source lane {j} is not in the member mask")
            src = lanes[j]
            results[t.lin] = (dst, self.val(src, a, ins), ok)
        for t in group:
            dst, v, ok = results[t.lin]
            if isinstance(dst, Pair):
                t.regs[dst.first.name] = v
                t.regs[dst.second.name] = ok
            else:
                t.regs[dst.name] = v

    def _ldmatrix(self, group: list[Thread]) -> None:
        """ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16 (PTX ISA fragment layout).

        Matrix i has its 8 rows (16 bytes each) at the addresses given by lanes 8i..8i+7.
        Lane l receives, in destination register i, the halves (row l/4, cols 2(l%4), +1)
        or, with .trans, (rows 2(l%4), +1; col l/4).
        """
        if len(group) != 32:
            raise KernelError(f"{self.k.file}: ldmatrix needs a full warp")
        ins = self.k.instrs[group[0].pc]
        trans = "trans" in ins.parts
        nmat = int(next(p for p in ins.parts if p in ("x1", "x2", "x4"))[1:])
        dsts = ins.operands[0].items
        rows = [self.address(t, ins.operands[1], ins, "shared") for t in group]
        out = {}
        for t in group:
            lane, regs = t.lane, []
            for i in range(nmat):
                if trans:
                    addrs = [rows[8 * i + 2 * (lane % 4)].at(2 * (lane // 4)),
                             rows[8 * i + 2 * (lane % 4) + 1].at(2 * (lane // 4))]
                else:
                    base = rows[8 * i + lane // 4].at(4 * (lane % 4))
                    addrs = [base, base.at(2)]
                regs.append(Packed([self.load(t, ins, a, 2, "b16") for a in addrs]))
            out[t.lin] = regs
        for t in group:
            for d, v in zip(dsts, out[t.lin]):
                t.regs[d.name] = v

    def _mma(self, group: list[Thread]) -> None:
        """mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 over the reals (PTX ISA layout:
        groupID g = lane/4, t = lane%4; A a0..a7: (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..),
        (g+8, 2t+8..); B b0..b3: (2t..2t+1, g), (2t+8.., g); C/D c0..c3: (g, 2t..2t+1), (g+8, ..))."""
        if len(group) != 32:
            raise KernelError(f"{self.k.file}: mma.sync needs a full warp")
        ins = self.k.instrs[group[0].pc]
        d_ops, a_ops, b_ops, c_ops = (o.items for o in ins.operands)
        A = [[None] * 16 for _ in range(16)]
        B = [[None] * 8 for _ in range(16)]
        C = [[None] * 8 for _ in range(16)]

        def halves(t, o):
            v = self.val(t, o, ins)
            if not isinstance(v, Packed):
                raise Unsupported(f"{self.k.file}:{ins.line}: mma operand {o.name} is not a packed f16 pair")
            return v

        for t in group:
            g, q = t.lane // 4, t.lane % 4
            for r, (row, col) in enumerate(((g, 2 * q), (g + 8, 2 * q), (g, 2 * q + 8), (g + 8, 2 * q + 8))):
                lo, hi = halves(t, a_ops[r])
                A[row][col], A[row][col + 1] = lo, hi
            for r, krow in enumerate((2 * q, 2 * q + 8)):
                lo, hi = halves(t, b_ops[r])
                B[krow][g], B[krow + 1][g] = lo, hi
            for r, (row, col) in enumerate(((g, 2 * q), (g, 2 * q + 1), (g + 8, 2 * q), (g + 8, 2 * q + 1))):
                C[row][col] = self.fval(t, c_ops[r], ins)
        D = [[None] * 8 for _ in range(16)]
        for i in range(16):
            for j in range(8):
                acc = C[i][j]
                for k in range(16):
                    acc = fma(A[i][k], B[k][j], acc)
                D[i][j] = acc
        for t in group:
            g, q = t.lane // 4, t.lane % 4
            for r, (row, col) in enumerate(((g, 2 * q), (g, 2 * q + 1), (g + 8, 2 * q), (g + 8, 2 * q + 1))):
                t.regs[d_ops[r].name] = D[row][col]

    def _wmma(self, group: list[Thread]) -> None:
        """WMMA m16n16k16 as warp-collective matrix operations.

        Fragment layouts are unspecified by PTX; any consistent one is sound for kernels
        that only load, multiply, fill uniformly and store fragments. Ours: element e of
        the row-major 16x16 matrix is in lane e // 8, register e % 8 (f32 accumulators);
        f16 fragments (8 registers of two halves per lane, 512 halves for 256 elements)
        hold element e in lanes e // 16 and 16 + e // 16, register (e % 16) // 2. Every lane must pass the same address and stride.
        """
        if len(group) != 32:
            raise KernelError(f"{self.k.file}: wmma needs a full warp")
        ins = self.k.instrs[group[0].pc]
        parts = ins.parts
        kind = parts[1]
        if kind in ("load", "store"):
            mem, stride_o = (ins.operands[1], ins.operands[2]) if kind == "load" else (ins.operands[0], ins.operands[2])
            addrs = {(a, a.alloc, a.space): a for a in (self.address(t, mem, ins, "shared") for t in group)}
            strides = {self.ival(t, stride_o, ins, "u32") for t in group}
            if len(addrs) != 1 or len(strides) != 1:
                raise self._err(group[0], ins, "wmma lanes disagree on address (or allocation) or stride")
            base, stride = addrs.popitem()[1], strides.pop()
            col = "col" in parts
            frag = ins.operands[0].items if kind == "load" else ins.operands[1].items
            if kind == "load":
                if parts[2] not in ("a", "b") or parts[-1] != "f16":
                    raise Unsupported(f"{self.k.file}:{ins.line}: `{ins.opcode}`")
                vals = {}
                for e in range(256):
                    i, j = divmod(e, 16)
                    off = (j * stride + i) if col else (i * stride + j)
                    for t in (group[e // 16], group[16 + e // 16]):   # both copies read it
                        vals[e] = self.load(t, ins, base.at(2 * off), 2, "f16")
                for t in group:
                    for r, d in enumerate(frag):
                        e = (t.lane % 16) * 16 + 2 * r
                        t.regs[d.name] = Packed([vals[e], vals[e + 1]])
            else:
                if parts[2] != "d" or parts[-1] != "f32":
                    raise Unsupported(f"{self.k.file}:{ins.line}: `{ins.opcode}`")
                for t in group:
                    for r, src in enumerate(frag):
                        e = t.lane * 8 + r
                        i, j = divmod(e, 16)
                        off = (j * stride + i) if col else (i * stride + j)
                        self.store(t, ins, base.at(4 * off), 4, self.fval(t, src, ins))
            return
        if kind != "mma" or "m16n16k16" not in parts or parts[-2:] != ["f32", "f32"]:
            raise Unsupported(f"{self.k.file}:{ins.line}: `{ins.opcode}`")
        d_ops, a_ops, b_ops, c_ops = (o.items for o in ins.operands)
        A, B, C = {}, {}, {}
        for t in group:
            for r in range(8):
                for name, ops_, M in (("a", a_ops, A), ("b", b_ops, B)):
                    v = self.val(t, ops_[r], ins)
                    if not isinstance(v, Packed):
                        raise Unsupported(f"{self.k.file}:{ins.line}: wmma {name} fragment register is not f16 data")
                    e = (t.lane % 16) * 16 + 2 * r
                    M[e], M[e + 1] = v[0], v[1]
                C[t.lane * 8 + r] = self.fval(t, c_ops[r], ins)
        for t in group:
            for r in range(8):
                e = t.lane * 8 + r
                i, j = divmod(e, 16)
                acc = C[e]
                for k in range(16):
                    acc = fma(A[i * 16 + k], B[k * 16 + j], acc)
                t.regs[d_ops[r].name] = acc

    def _vote(self, group: list[Thread]) -> None:
        votes = {}
        for t in group:
            ins = self.k.instrs[t.pc]
            src = ins.operands[1]
            v = self.val(t, src, ins, "pred")
            neg = False
            votes[t.lin] = bool(v) != neg
        for t in group:
            ins = self.k.instrs[t.pc]
            mode = next((p for p in ins.parts[1:] if p in ("all", "any", "uni", "ballot")), "?")
            vals = [votes[g.lin] for g in group]
            if mode == "all":
                r = all(vals)
            elif mode == "any":
                r = any(vals)
            elif mode == "uni":
                r = all(vals) or not any(vals)
            elif mode == "ballot":
                r = sum(1 << g.lane for g in group if votes[g.lin])
            else:
                raise Unsupported(f"{self.k.file}:{ins.line}: vote mode {mode}")
            t.regs[ins.operands[0].name] = r

    # ------------------------------------------------------------------ one thread

    def _run_thread(self, th: Thread, instrs: list[Instr]) -> None:
        regs, n, blocks = th.regs, len(instrs), self.blocks
        self.cur = th                # the thread the compiled shared-memory accesses record
        while th.state == "run":
            pc = th.pc
            if pc >= n:
                th.state = "exit"
                return
            blk = blocks[pc]
            if blk is _UNSET:
                blk = blocks[pc] = self._block(pc)
            if blk is not None:      # a straight-line run: each closure completes, or raises _Fallback unchanged
                i = 0
                try:
                    for f in blk:
                        f(regs)
                        i += 1
                except _Fallback:    # the one instance would keep every traceback (and frame) it passed through
                    _FB.__traceback__ = None
                self.steps += i
                if self.steps > MAX_STEPS:
                    raise CheckError(f"{self.k.name}: more than {MAX_STEPS} steps")
                th.pc = pc = pc + i
                if i == len(blk):
                    continue
            ins = instrs[pc]         # the general path (unguarded where it fell back from a run)
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise CheckError(f"{self.k.name}: more than {MAX_STEPS} steps")
            g = ins.guard
            if g is not None:
                p = regs.get(g[0])
                if p is None:
                    raise self._err(th, ins, f"read of unset predicate {g[0]}")
                if bool(p) == g[1]:
                    th.pc += 1
                    continue
            try:
                self._step(th, ins)
            except CheckError:
                raise
            except (IndexError, KeyError, AttributeError, TypeError, ValueError, ZeroDivisionError) as e:
                raise self._err(th, ins, f"cannot execute ({type(e).__name__}: {e})") from None

    def _block(self, pc: int):
        """The closures of the unguarded instructions from ``pc`` on that have a fast path, up to
        the first that has none (a tuple; None if the one at ``pc`` has none): register arithmetic
        (``_compile``), repeated input loads (``_compile_load``), 4-byte shared accesses (``_compile_shared``)."""
        out = []
        for ins in self.k.instrs[pc:]:
            if ins.guard is not None:
                break
            fast = ins.cache.get("fast", _UNSET)
            if fast is _UNSET:
                fast = ins.cache["fast"] = _compile(ins)
            fast = fast or _compile_load(ins, self.f32in, self.f16in) or _compile_shared(ins, self) \
                or _compile_setp(ins) or _compile_cvt(ins)
            if fast is None:
                break
            out.append(fast)
        return tuple(out) or None

    def _step(self, th: Thread, ins: Instr) -> None:  # noqa: C901 - one dispatch
        op, parts, ops = ins.op, ins.parts, ins.operands
        ty = parts[-1]
        if op == "bra":
            th.pc = self.labels[ops[0].name]
            return
        if op in ("ret", "exit"):
            th.state = "exit"
            return
        if op in ("bar", "barrier"):
            if len(parts) > 1 and parts[1] == "warp":
                mask = self.ival(th, ops[0], ins, "b32") & 0xFFFFFFFF
                th.state, th.wait = "block", ("wsync", mask)
                return
            if ins.opcode not in BARRIERS:
                raise self._unsupported(ins, f"barrier variant `{ins.opcode}`")
            bid = self.ival(th, ops[0], ins, "u32") if ops else 0
            cnt = self.ival(th, ops[1], ins, "u32") if len(ops) > 1 else None
            if cnt is not None and (cnt != self.n or cnt % 32):
                raise self._unsupported(ins, f"barrier thread count {cnt} is not the CTA's {self.n} threads "
                                             "(a multiple of 32): its member set would depend on the schedule")
            th.state, th.wait = "block", ("bar", bid, cnt)
            return
        if op == "shfl":
            mask = self.ival(th, ops[4], ins, "b32") & 0xFFFFFFFF if len(ops) > 4 else 0xFFFFFFFF
            th.state, th.wait = "block", ("shfl", mask)
            return
        if op == "vote":
            mask = self.ival(th, ops[-1], ins, "b32") & 0xFFFFFFFF if "sync" in parts else 0xFFFFFFFF
            th.state, th.wait = "block", ("vote", mask)
            return
        if op in ("mma", "ldmatrix") and ins.opcode in MODELLED_MMA:
            th.state, th.wait = "block", (op, 0xFFFFFFFF)
            return
        if op == "wmma" and _wmma_ok(ins):
            th.state, th.wait = "block", ("wmma", 0xFFFFFFFF)
            return
        if op in ("wmma", "mma", "ldmatrix"):
            raise Unsupported(f"{self.k.file}:{ins.line}: tensor-core instruction `{ins.opcode}` "
                              f"is not modelled yet in `{ins.text}`")
        if op in ("membar", "fence"):
            th.pc += 1
            return
        if op == "ld" or op == "st" or op == "ldu":
            self._mem(th, ins)
            th.pc += 1
            return
        if op == "mov":
            src = ops[1]
            if isinstance(src, Vec) or isinstance(ops[0], Vec):
                raise Unsupported(f"{self.k.file}:{ins.line}: vector mov (pack/unpack) in `{ins.text}`")
            if ty in FLOAT_TYPES:
                v = self.fval(th, src, ins)
            else:
                v = self.val(th, src, ins, ty)
                if isinstance(v, int) and not isinstance(v, bool) and ty != "pred":
                    v = self.keep(ins, v, _wrap(v, ty))
            self.setreg(th, ops[0], v)
        elif op == "cvta":
            self._cvta(th, ins)
        elif op == "cvt":
            self._cvt(th, ins)
        elif op == "setp":
            self._setp(th, ins)
        elif op == "selp":
            p = self.val(th, ops[3], ins, "pred")
            self.setreg(th, ops[0], self.val(th, ops[1] if p else ops[2], ins, ty))
        elif ty in FLOAT_TYPES:
            self._float(th, ins)
        elif ty == "pred":
            self._pred(th, ins)
        else:
            self._int(th, ins)
        th.pc += 1

    def _cvta(self, th, ins) -> None:
        """``cvta[.to].space``: a generic address to one in ``space`` (global, shared) or back."""
        parts, ops = ins.parts, ins.operands
        v, space = self.val(th, ops[1], ins), next((x for x in parts if x in ("global", "shared", "local",
                                                                               "const", "param")), "?")
        if space not in ("global", "shared"):
            raise self._unsupported(ins, f"cvta of .{space}")
        frm, to = ("generic", space) if "to" in parts else (space, "generic")
        if not isinstance(v, Ptr) or v.alloc[3] != space or (v.space != frm and {v.space, frm} != {"generic", "global"}):
            raise self._err(th, ins, f"cvta of a value that is not a {frm} address of {space} memory")
        self.setreg(th, ops[0], Ptr(self.keep(ins, v, _wrap(v, parts[-1])), v.alloc, to))

    def _cvt(self, th, ins) -> None:
        """``cvt`` as ``certificates.kernel.Replay.cvt``: integer widths exact, ``.sat`` clamps,
        float-to-integer rounding (rni/rzi/rmi/rpi) exact on constants and refused on symbols."""
        parts, ops = ins.parts, ins.operands
        dt, st = parts[-2], parts[-1]
        mode, sat = next((x for x in parts[1:] if x in IROUND), None), "sat" in parts
        if dt == "f16x2":   # cvt.rn.f16x2.f32 d, a, b: d = {hi: a, lo: b}, each the identity on the reals
            if parts != ["cvt", "rn", "f16x2", "f32"]:
                raise self._unsupported(ins, "cvt variant")
            return self.setreg(th, ops[0], Packed([self.fval(th, ops[2], ins), self.fval(th, ops[1], ins)]))
        if st not in FLOAT_TYPES and dt not in FLOAT_TYPES:
            a = self.val(th, ops[1], ins, st)
            if mode is not None:
                raise self._unsupported(ins, "cvt variant")
            if isinstance(a, Ptr) and not sat:
                return self.setreg(th, ops[0], self.keep(ins, a, _wrap(a, dt)))
            a = self.ival(th, ops[1], ins, st)
            return self.setreg(th, ops[0], clamp(a, dt) if sat else _wrap(a, dt))
        v = Rat.of(self.ival(th, ops[1], ins, st)) if st not in FLOAT_TYPES else self.fval(th, ops[1], ins)
        if mode is not None or dt not in FLOAT_TYPES:
            c = v.constant()
            if c is None or mode is None:
                raise self._unsupported(ins, "float-to-integer rounding of a symbolic value" if mode
                                        else "cvt to an integer without a rounding mode")
            if dt not in FLOAT_TYPES:
                return self.setreg(th, ops[0], float_to_int(c, mode, dt))
            v = Rat.of(float_to_int(c, mode, "s4096"))
        self.setreg(th, ops[0], self._saturate(ins, v) if sat else v)

    def _saturate(self, ins, r: Rat) -> Rat:
        c = r.constant()
        if c is None:
            raise self._unsupported(ins, ".sat (clamp to [0, 1]) of a symbolic value")
        return Rat.of(min(max(c, 0), 1))

    def _setp(self, th, ins) -> None:
        parts, ops = ins.parts, ins.operands
        cmp, ty = parts[1], parts[-1]
        comb = next((m for m in parts[2:-1] if m in ("and", "or", "xor")), None)   # setp.lt.ftz.and.f32 too
        if len(ops) != 3 + bool(comb):
            raise Unsupported(f"{self.k.file}:{ins.line}: setp with {len(ops)} operands in `{ins.text}`")
        if ty in FLOAT_TYPES:
            a, b = self.fval(th, ops[1], ins), self.fval(th, ops[2], ins)
            ca, cb = a.constant(), b.constant()
            if ca is None or cb is None:
                raise Unsupported(f"{self.k.file}:{ins.line}: branch on a symbolic float comparison "
                                  f"(data-dependent control flow) in `{ins.text}`")
            a, b = ca, cb
            cmp = cmp.rstrip("u") if cmp not in ("lu", "gu") else cmp[0] + "t"
        elif cmp in ("eq", "ne") and null_test(self.val(th, ops[1], ins, ty), self.val(th, ops[2], ins, ty), ty):
            a, b = 1, 0   # an address within a tensor is never null
        else:
            a, b = self.ival(th, ops[1], ins, ty), self.ival(th, ops[2], ins, ty)
            if ty.startswith("u") or ty.startswith("b"):
                a, b = a & ((1 << _bits(ty)) - 1), b & ((1 << _bits(ty)) - 1)
        table = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
                 "lo": a < b, "ls": a <= b, "hi": a > b, "hs": a >= b}
        if cmp not in table:
            raise Unsupported(f"{self.k.file}:{ins.line}: setp comparison .{cmp}")
        r = table[cmp]
        dst = ops[0]
        if comb:
            c = bool(self.val(th, ops[3], ins, "pred"))
            r = {"and": r and c, "or": r or c, "xor": r != c}[comb]
        if isinstance(dst, Pair):
            th.regs[dst.first.name] = r
            th.regs[dst.second.name] = not r
        else:
            self.setreg(th, dst, r)

    def _pred(self, th, ins) -> None:
        op, ops = ins.op, ins.operands
        v = [bool(self.val(th, o, ins, "pred")) for o in ops[1:]]
        if op == "and":
            r = v[0] and v[1]
        elif op == "or":
            r = v[0] or v[1]
        elif op == "xor":
            r = v[0] != v[1]
        elif op == "not":
            r = not v[0]
        elif op == "mov":
            r = v[0]
        else:
            raise Unsupported(f"{self.k.file}:{ins.line}: predicate op `{ins.opcode}`")
        self.setreg(th, ops[0], r)

    def _float(self, th, ins) -> None:
        op, ops = ins.op, ins.operands
        f = [self.fval(th, o, ins) for o in ops[1:]]
        if any(isinstance(x, Inf) for x in f):
            try:
                self.setreg(th, ops[0], inf_arith(op, ins.parts, f))
            except ValueError as e:
                raise self._unsupported(ins, str(e)) from None
            return
        if op == "add":
            r = f[0] + f[1]
        elif op == "sub":
            r = f[0] - f[1]
        elif op in ("mul", "ex2"):   # the checker's: by log2(e), ex2 of n / LN2 (``__expf``) without Rat's search
            r = FLOAT_OPS[op](f)
        elif op in ("fma", "mad"):
            r = fma(f[0], f[1], f[2])
        elif op == "div":
            if f[1].is_zero():
                raise self._err(th, ins, "division by zero")
            r = f[0] / f[1]
        elif op == "rcp":
            r = Rat.of(1) / f[0]
        elif op == "neg":
            r = -f[0]
        elif op == "abs":
            c = f[0].constant()
            if c is None:
                r = apply("max", f[0], -f[0])
            else:
                r = Rat.of(abs(c))
        elif op == "max":
            r = apply("max", *f)
        elif op == "min":
            r = -apply("max", *[-x for x in f])
        elif op == "lg2":
            r = apply("log", f[0]) * INV_LN2   # as / LN2, without a divisor's condition (``kernel.undefined``)
        elif op == "sqrt":
            r = apply("sqrt", f[0])
        elif op == "rsqrt":
            r = Rat.of(1) / apply("sqrt", f[0])
        else:
            raise Unsupported(f"{self.k.file}:{ins.line}: float instruction `{ins.opcode}` in `{ins.text}`")
        self.setreg(th, ops[0], self._saturate(ins, r) if "sat" in ins.parts else r)

    def _int(self, th, ins) -> None:  # noqa: C901
        """Integer instructions as ``certificates.kernel.Replay.integer``: wrap at the width,
        ``.sat`` clamps (s32 add/sub/mad.hi/mad24.hi), ``mul24`` per the ISA, addresses keep
        their provenance only through ``ptr +/- int``, ``int + ptr`` and ``mad``'s addend."""
        op, parts, ops = ins.op, ins.parts, ins.operands
        ty = parts[-1]
        if ty not in INTS:
            raise self._unsupported(ins, f"integer instruction on .{ty}")
        raw = [self.val(th, o, ins) for o in ops[1:]]
        ptrs = [i for i, x in enumerate(raw) if isinstance(x, Ptr)]
        if any(isinstance(x, Word) for x in raw):   # integer data: ring operations only
            try:
                self.setreg(th, ops[0], ring(op, parts, raw, _bits(ty)))
            except ValueError as e:
                raise self._unsupported(ins, str(e)) from None
            return

        def iv(i: int, t: str) -> int:
            return int(raw[i]) if i in ptrs else self.ival(th, ops[i + 1], ins, t)
        n = _bits(ty)
        a, dt = iv(0, ty), ty
        if op in ("not", "neg", "abs", "popc", "clz", "brev"):
            m = (1 << n) - 1
            r = {"not": lambda: ~a, "neg": lambda: -a, "abs": lambda: abs(a), "popc": lambda: bin(a & m).count("1"),
                 "clz": lambda: n - (a & m).bit_length(), "brev": lambda: int(format(a & m, f"0{n}b")[::-1], 2)}[op]()
            dt = "u32" if op in ("popc", "clz") else ty
        elif op == "bfi":
            b = iv(1, ty)
            pos, ln = iv(2, "u32") & 0xFF, iv(3, "u32") & 0xFF
            m = ((1 << ln) - 1) << pos
            r = (b & ~m) | ((a << pos) & m)
        elif op == "bfe":
            pos, ln = iv(1, "u32") & 0xFF, iv(2, "u32") & 0xFF
            r = (a >> pos) & ((1 << ln) - 1) if ln else 0
            if _signed(ty) and ln and r >> (ln - 1):
                r -= 1 << ln
        else:
            b = iv(1, "u32" if op in ("shl", "shr") else ty)
            if op in ("mul", "mad", "mul24", "mad24"):
                mode = parts[1] if len(parts) > 2 else "lo"
                if op in ("mul24", "mad24"):
                    r = mul24(a, b, ty, mode == "hi")
                else:
                    r = (a * b) >> n if mode == "hi" else a * b
                    dt = ty[0] + str(2 * n) if mode == "wide" else ty
                if op in ("mad", "mad24"):
                    r += iv(2, dt)
            elif op in ("div", "rem"):
                if b == 0 or (ty[0] == "s" and b == -1 and a == -(1 << (n - 1))):   # the ISA leaves both unspecified
                    raise self._err(th, ins, "integer division by zero or overflow (unspecified in PTX)")
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                r = q if op == "div" else a - q * b
            elif op in ("add", "sub", "min", "max", "and", "or", "xor"):
                r = {"add": a + b, "sub": a - b, "min": min(a, b), "max": max(a, b), "and": a & b, "or": a | b,
                     "xor": a ^ b}[op]
            elif op == "shl":
                r = (a << b) if b < n else 0
            elif op == "shr":
                r = a >> min(b, n) if _signed(ty) else ((a & ((1 << n) - 1)) >> b if b < n else 0)
            else:
                raise Unsupported(f"{self.k.file}:{ins.line}: integer instruction `{ins.opcode}` in `{ins.text}`")
        sat = "sat" in parts
        if sat and (ty != "s32" or op not in ("add", "sub", "mad", "mad24") or op[:3] == "mad" and "hi" not in parts):
            raise self._unsupported(ins, ".sat variant")
        r = clamp(r, dt) if sat else _wrap(r, dt)
        if ptrs:
            if op == "sub" and ptrs == [0, 1] and raw[0].alloc == raw[1].alloc and raw[0].space == raw[1].space:
                pass
            elif not sat and (op == "add" and ptrs in ([0], [1]) or op == "sub" and ptrs == [0]
                              or op == "mad" and ptrs == [2]):
                r = Ptr(r, raw[ptrs[0]].alloc, raw[ptrs[0]].space)
            else:
                raise self._unsupported(ins, f"integer operation on an address of {raw[ptrs[0]].alloc[0]} "
                                             "(layout-dependent)")
        self.setreg(th, ops[0], r)

    def _mem(self, th, ins) -> None:
        parts, ops = ins.parts, ins.operands
        dec = ins.cache.get("emem")
        if dec is None:      # decoded once per instruction
            space = "generic"
            for s in ("global", "shared", "param", "local", "const"):
                if s in parts:
                    space = s
            vec = 1
            for p in parts:
                if p in ("v2", "v4", "v8"):
                    vec = int(p[1:])
            dec = ins.cache["emem"] = (space, vec)
        space, vec = dec
        ty = parts[-1]
        width = _bits(ty) // 8 if ty != "pred" else 1
        if ins.op in ("ld", "ldu"):
            dst, m = ops[0], ops[1]
        else:
            m, dst = ops[0], ops[1]
        if not isinstance(m, Mem):
            raise self._err(th, ins, "expected a memory operand")
        if space == "param":
            if ins.op != "ld" or not isinstance(m.base, Sym) or m.base.name not in self.param_values or m.offset:
                raise self._err(th, ins, "bad parameter access")
            v = self.param_values[m.base.name]
            if isinstance(v, Rat) and ty not in ("f32", "b32"):
                raise Unsupported(f"{self.k.file}:{ins.line}: a float parameter read as an integer in `{ins.text}`")
            self.setreg(th, dst, v if isinstance(v, Rat) else self.keep(ins, v, _wrap(v, ty)))
            return
        addr = self.address(th, m, ins, space)
        if addr % width:
            raise self._err(th, ins, f"misaligned {width}-byte access at {addr:#x}")
        dsts = list(dst.items) if isinstance(dst, Vec) else [dst]
        if len(dsts) != vec:
            raise self._err(th, ins, f"vector width {vec} with {len(dsts)} operands")
        if ins.op in ("ld", "ldu"):
            for i, d in enumerate(dsts):
                v = self.load(th, ins, addr.at(i * width) if i else addr, width, ty)
                if isinstance(v, Ptr):
                    v = self.keep(ins, v, _wrap(v, ty))
                elif isinstance(v, int) and not isinstance(v, bool) and ty not in FLOAT_TYPES:
                    v = _wrap(v, ty)
                elif isinstance(v, int) and ty in FLOAT_TYPES:
                    v = typed(v, ty)
                self.setreg(th, d, v)
        else:
            for i, d in enumerate(dsts):
                if isinstance(d, FImm):
                    v = float_of_bits(d.bits, d.width)
                else:
                    v = self.val(th, d, ins, ty)
                    if isinstance(v, bool):
                        raise self._err(th, ins, "store of a predicate")
                    if isinstance(v, Ptr):
                        v = self.keep(ins, v, _wrap(v, ty))
                    elif isinstance(v, int):
                        v = _wrap(v, ty) if ty not in FLOAT_TYPES else typed(v, ty)
                self.store(th, ins, addr.at(i * width) if i else addr, width, v)


# ----------------------------------------------------------------------------- fast paths
#
# Register-to-register instructions compiled to closures over the register dict. A
# closure either completes (no other state touched) or raises _Fallback before writing
# anything, and the general interpreter (_step) then executes the instruction itself
# (and reports any error precisely). Memory, control and collective instructions always
# take the general path.


class _Fallback(Exception):
    pass


_UNSET = object()
_FB = _Fallback()


def _reader(o, float_ok: bool):
    """A function regs -> value for a register/immediate operand, or None."""
    if isinstance(o, Reg):
        name = o.name
        if float_ok:
            def rd(regs):
                v = regs.get(name)
                if type(v) not in RATS:
                    raise _FB
                return v
        else:
            def rd(regs):
                v = regs.get(name)
                if type(v) is not int:
                    raise _FB
                return v
        return rd
    if isinstance(o, Imm) and not float_ok:
        c = o.value
        return lambda regs: c
    if isinstance(o, FImm) and float_ok:
        try:
            c = float_of_bits(o.bits, o.width)
        except Unsupported:
            return None
        return (lambda regs: c) if type(c) is Rat else None   # ±inf: the checked slow path
    return None


def _compile(ins: Instr):  # noqa: C901
    if "sat" in ins.parts or ins.op == "cvta":
        return None
    if ins.op in ("ld", "st", "bra", "ret", "exit", "bar", "barrier", "shfl", "vote", "setp", "selp",
                  "cvt", "cvta", "mov", "wmma", "mma", "ldmatrix", "membar", "fence", "ldu"):
        if ins.op != "mov" and ins.op != "cvta":
            return None
    ops = ins.operands
    if not ops or not isinstance(ops[0], Reg):
        return None
    dst = ops[0].name
    ty = ins.parts[-1]
    op = ins.op
    if ty in FLOAT_TYPES and ty != "f64":
        if op == "mov" and len(ops) == 2:
            rd = _reader(ops[1], True)
            if rd is None:
                return None

            def f(regs):
                regs[dst] = rd(regs)
            return f
        rds = [_reader(o, True) for o in ops[1:]]
        if any(r is None for r in rds):
            return None
        if op == "add" and len(rds) == 2:
            a, b = rds
            def f(regs):
                regs[dst] = a(regs) + b(regs)
        elif op == "sub" and len(rds) == 2:
            a, b = rds
            def f(regs):
                regs[dst] = a(regs) - b(regs)
        elif op == "mul" and len(rds) == 2:
            a, b = rds
            def f(regs):
                regs[dst] = a(regs) * b(regs)
        elif op in ("fma", "mad") and len(rds) == 3 and all(isinstance(o, Reg) for o in ops[1:]):
            x, y, z = (o.name for o in ops[1:])
            def f(regs):   # the readers inlined: three registers holding Rats
                a, b, c = regs.get(x), regs.get(y), regs.get(z)
                if type(a) not in RATS or type(b) not in RATS or type(c) not in RATS:
                    raise _FB
                regs[dst] = fma(a, b, c)
        elif op in ("fma", "mad") and len(rds) == 3:
            a, b, c = rds
            def f(regs):
                regs[dst] = fma(a(regs), b(regs), c(regs))
        else:
            return None
        return f
    if ty in FLOAT_TYPES or ty == "pred" or ty not in _INT_TYPES:
        return None
    if op in ("add", "sub") and len(ops) == 3 and all(isinstance(o, (Reg, Imm)) for o in ops[1:]):
        return _address_add(dst, op, ops[1], ops[2], ty)
    rds = [_reader(o, False) for o in ops[1:]]
    if any(r is None for r in rds):
        return None
    mode = ins.parts[1] if len(ins.parts) > 2 else "lo"
    wrap_t = ty
    if op in ("mov", "cvta") and len(rds) == 1:
        a, = rds
        def g(regs):
            return a(regs)
    elif op == "add" and len(rds) == 2:
        a, b = rds
        def g(regs):
            return a(regs) + b(regs)
    elif op == "sub" and len(rds) == 2:
        a, b = rds
        def g(regs):
            return a(regs) - b(regs)
    elif op == "and" and len(rds) == 2:
        a, b = rds
        def g(regs):
            return a(regs) & b(regs)
    elif op == "or" and len(rds) == 2:
        a, b = rds
        def g(regs):
            return a(regs) | b(regs)
    elif op == "shl" and len(rds) == 2:
        a, b = rds
        n = _bits(ty)
        def g(regs):   # the shift amount is a u32, whatever the type (fuzz seed 94: shl.b16 by 2^31)
            k = b(regs) & 0xFFFFFFFF
            return _wrap(a(regs), ty) << k if k < n else 0
    elif op == "shr" and len(rds) == 2:
        a, b = rds
        n, signed = _bits(ty), _signed(ty)
        def g(regs):
            k, x = b(regs) & 0xFFFFFFFF, _wrap(a(regs), ty)
            return x >> min(k, n) if signed else (x & ((1 << n) - 1)) >> k if k < n else 0
    elif op == "mul" and mode == "hi" and len(rds) == 2:
        a, b = rds
        n = _bits(ty)
        def g(regs):
            return (_wrap(a(regs), ty) * _wrap(b(regs), ty)) >> n
    elif op in ("mul", "mad") and mode in ("lo", "wide") and len(rds) == (2 if op == "mul" else 3):
        if mode == "wide":
            wrap_t = ty[0] + str(2 * _bits(ty))
        w0 = ty
        a, b = rds[0], rds[1]
        c = rds[2] if op == "mad" else None
        def g(regs):
            r = _wrap(a(regs), w0) * _wrap(b(regs), w0)
            if c is not None:
                r += c(regs)
            return r
    else:
        return None
    if op not in ("mul", "mad", "shl", "shr"):
        inner = g

        def g(regs, inner=inner, w0=ty):  # operands are read as values of the source type
            return inner(_WrapRegs(regs, w0))
    wt = wrap_t

    def f(regs):
        regs[dst] = _wrap(g(regs), wt)
    return f


def _compile_load(ins: Instr, f32in: dict, f16in: dict):
    """``ld[.global].f32 r, [a+off]`` of an f32 input element already loaded once (``CTA.f32in``), or a
    16-bit load (``.u16 .b16 .s16 .f16``) of an f16 one (``CTA.f16in``), where ``a`` is a generic or global
    address of that tensor and ``a+off`` stays inside it: the value ``load`` returns (inputs are never
    written or race-tracked); anything else (a first load, another space or tensor, out of bounds) takes
    the general path."""
    p, ops = ins.parts, ins.operands
    width, cache = (4, f32in) if p[-1] == "f32" else (2, f16in) if p[-1] in ("u16", "b16", "s16", "f16") else (0, {})
    if ins.op != "ld" or not width or len(ops) != 2 or not isinstance(ops[0], Reg) \
            or not isinstance(ops[1], Mem) or not isinstance(ops[1].base, Reg) \
            or any(x in p for x in ("shared", "param", "local", "const", "v2", "v4", "v8")):
        return None
    dst, base, off = ops[0].name, ops[1].base.name, ops[1].offset

    def f(regs):
        a = regs.get(base)
        if type(a) is not Ptr or a.space not in ("generic", "global") or a.alloc[3] != "global":
            raise _FB
        at = int(a) + off
        v = cache.get(at)
        if v is None or not a.alloc[1] <= at <= a.alloc[2] - width:
            raise _FB
        regs[dst] = v
    return f


def _compile_cvt(ins: Instr):
    """``cvt.f32.f16`` / ``cvt.rn.f16.f32`` of a register holding a real value: that value (``_cvt``'s
    identity on the reals); anything else takes the general path."""
    ops = ins.operands
    if ins.parts not in (["cvt", "f32", "f16"], ["cvt", "rn", "f16", "f32"]) or len(ops) != 2 \
            or not all(isinstance(o, Reg) for o in ops):
        return None
    dst, src = ops[0].name, ops[1].name

    def f(regs):
        v = regs.get(src)
        if type(v) not in RATS:
            raise _FB
        regs[dst] = v
    return f


_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
        "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}
_CMP.update(lo=_CMP["lt"], ls=_CMP["le"], hi=_CMP["gt"], hs=_CMP["ge"])


def _compile_setp(ins: Instr):
    """``setp.cmp.t p, a, b`` of two integers (registers holding ints, or immediates) into one
    predicate register, ``t`` an integer type: ``_setp``'s comparison of the values at ``t``
    (unsigned and bit types compared unsigned); anything else takes the general path."""
    p, ops = ins.parts, ins.operands
    if ins.op != "setp" or len(p) != 3 or p[1] not in _CMP or p[2] not in _INT_TYPES or len(ops) != 3 \
            or not isinstance(ops[0], Reg):
        return None
    rds = [_reader(o, False) for o in ops[1:]]
    if any(r is None for r in rds):
        return None
    (a, b), dst, ty, cmp = rds, ops[0].name, p[2], _CMP[p[1]]
    mask = (1 << _bits(ty)) - 1 if ty[0] in "ub" else -1

    def f(regs):
        regs[dst] = cmp(_wrap(a(regs), ty) & mask, _wrap(b(regs), ty) & mask)
    return f


def _compile_shared(ins: Instr, cta: CTA):
    """``ld.shared.f32 r, [a+off]`` / ``st.shared.f32 [a+off], r`` through a shared-space address ``a`` (a
    register, or a variable's name) of a shared variable, ``a+off`` aligned and inside it, of a ``Rat`` (a
    load: a 4-byte value that is one): what ``_mem`` does, race record included (the thread ``cta.cur``);
    anything else (another width or value, an error) takes the general path."""
    p, ops = ins.parts, ins.operands
    if ins.op not in ("ld", "st") or p != [ins.op, "shared", "f32"] or len(ops) != 2:
        return None
    m, r = (ops[1], ops[0]) if ins.op == "ld" else ops
    if not isinstance(m, Mem) or not isinstance(m.base, (Reg, Sym)) or not isinstance(r, Reg):
        return None
    base, off, name, smem = m.base.name, m.offset, r.name, cta.smem
    fixed = cta.sym_addr.get(base) if isinstance(m.base, Sym) else None   # a shared variable's own address

    def at(regs) -> int:
        a = regs.get(base) if fixed is None else fixed
        if type(a) is not Ptr or a.space != "shared" or a.alloc[3] != "shared":
            raise _FB
        x = int(a) + off
        if x % 4 or not a.alloc[1] <= x <= a.alloc[2] - 4:
            raise _FB
        return x

    def load(regs):
        x = at(regs)
        ent = smem.get(x)
        if ent is None or ent[1] != 4 or type(ent[0]) not in RATS:
            raise _FB
        cta._record("shared", x, 4, cta.cur, ins, False)
        regs[name] = ent[0]

    def store(regs):
        v = regs.get(name)
        if type(v) not in RATS:
            raise _FB
        x = at(regs)
        try:
            cta._record("shared", x, 4, cta.cur, ins, True)
        except RaceError as e:
            raise cta._lanes_store_one_value(e, ins, x, 4, v) from None
        cta._smem_put(ins, x, 4, v)
    return load if ins.op == "ld" else store


def _address_add(dst: str, op: str, x, y, ty: str):
    """``add``/``sub`` of integers, or of a pointer and an integer (``_int``'s provenance rule); the
    operands' own wraps vanish modulo 2^n, so only the result is wrapped (``_wrap`` inlined)."""
    xa, ca = (x.name, None) if isinstance(x, Reg) else (None, x.value)
    xb, cb = (y.name, None) if isinstance(y, Reg) else (None, y.value)
    sub = op == "sub"
    _wrap(0, ty)
    mask, sign, full = _WRAP[ty]

    def f(regs):
        a = regs.get(xa) if xa is not None else ca
        b = regs.get(xb) if xb is not None else cb
        ta, tb = type(a), type(b)
        if tb is not int or (ta is not int and ta is not Ptr):
            if tb is Ptr and ta is int and not sub:
                regs[dst] = Ptr(_wrap(a + b, ty), b.alloc, b.space)
                return
            raise _FB
        r = (a - b if sub else a + b) & mask
        if r & sign:
            r -= full
        regs[dst] = r if ta is int else Ptr(r, a.alloc, a.space)
    return f


class _WrapRegs:
    """Register view that canonicalizes integer reads to the instruction's type."""

    __slots__ = ("regs", "t")

    def __init__(self, regs, t):
        self.regs, self.t = regs, t

    def get(self, name):
        v = self.regs.get(name)
        return _wrap(v, self.t) if type(v) is int else v


_INT_TYPES = {"b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"}

UNMODELLED = {"wmma", "mma", "ldmatrix"}


def _wmma_ok(ins: Instr) -> bool:
    p = ins.parts
    if "m16n16k16" not in p or "sync" not in p or "aligned" not in p:
        return False
    if p[1] == "load":
        return p[2] in ("a", "b") and p[-1] == "f16" and "shared" in p
    if p[1] == "store":
        return p[2] == "d" and p[-1] == "f32" and "shared" in p
    return p[1] == "mma" and p[-2:] == ["f32", "f32"]


def static_check(kernel: Kernel) -> None:
    """Reject, before running anything, instructions the executor does not model."""
    for ins in kernel.instrs:
        if ins.op in UNMODELLED and ins.opcode not in MODELLED_MMA and not (ins.op == "wmma" and _wmma_ok(ins)):
            raise Unsupported(f"{kernel.file}:{ins.line}: tensor-core instruction `{ins.opcode}` "
                              f"is not modelled yet in `{ins.text}`")


LOCKSTEP = True   # try simt.Lockstep first where its static gate allows (off: per thread only)


def run_cta(kernel: Kernel, grid, block, params, cta=(0, 0, 0), side: str = "", dyn: int | None = None) -> Result:
    """Run one CTA; ``side`` names its never-written shared memory (``reference.shared@uninit[..]``).
    Lockstep (``simt``) either gives exactly the per-thread result or falls back to it from scratch."""
    static_check(kernel)
    with no_gc():
        if LOCKSTEP and simt.eligible(kernel):
            try:
                lock = simt.Lockstep(CTA(kernel, grid, block, params, cta, side, dyn), MAX_STEPS, SHARED_BASE)
                outs, steps, barriers, schedule, witness, written, touched = lock.run()
                return Result(outs, steps, barriers, lock.n, schedule, witness, written, touched)
            except Exception:   # simt.Fallback, or anything it did not foresee: the per-thread path decides
                pass
        return CTA(kernel, grid, block, params, cta, side, dyn).run()
