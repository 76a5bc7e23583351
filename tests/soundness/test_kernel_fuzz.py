"""Random PTX instruction sequences: engine vs checker vs an independent reference (issue 13).

A seeded generator writes small single-thread kernels (straight-line, some with guards and
forward branches) over the integer, conversion and f32 forms pvcert supports, on concrete
values (immediates), and stores every register to an output tensor. The engine
(``verifier.kernels.exec.run_cta``) and the checker's re-execution (``certificates.kernel.Replay``
along the engine's schedule) must both give the outputs of ``Ref`` below, written here from the
PTX ISA with Python integers and Fractions: integer results exact at their width, f32 values
reals as pvcert's claims are (no rounding of float results; float-to-integer conversions
round per their mode and clamp). Pairs that differ in one instruction variant and whose
reference outputs differ must not be "equivalent"."""

from __future__ import annotations

import hashlib
import json
import random
import struct
from dataclasses import dataclass
from fractions import Fraction

import pytest

from certificates.errors import CheckError
from certificates.kernel import Replay
from certificates.limits import Limits, canonical_bytes
from certificates.ptx import parse
from certificates.replay import replay
from verifier.kernels.certificate import kernel_certificate, pair_claim
from verifier.kernels.equiv import check_pair
from verifier.kernels.exec import run_cta

N = 5                                   # registers per class
PREFIX = {16: "%rs", 32: "%r", 64: "%rd"}
NPRED = 3
INT_OUT = 4 * N + NPRED               # per index: its 16- and 32-bit registers, the 64-bit one in halves; predicates
PARAMS = [{"name": "o", "role": "output", "dtype": "s32", "shape": [INT_OUT]},
          {"name": "g", "role": "output", "dtype": "f32", "shape": [N]}]


@dataclass(frozen=True)
class I:
    """One instruction: full opcode, destination, sources, optional guard (``%p1`` / ``!%p1``)."""

    op: str
    dst: str
    srcs: tuple
    guard: str | None = None

    def text(self) -> str:
        g = f"@{self.guard} " if self.guard else ""
        return f"\t{g}{self.op} {', '.join((self.dst,) + self.srcs)};"


# ------------------------------------------------------------------ the reference (PTX ISA)

def width(t: str) -> int:
    return int(t[1:])


def signed(v: int, n: int) -> int:
    v %= 1 << n
    return v - (1 << n) if v >> (n - 1) else v


def as_type(v: int, t: str) -> int:
    """The value of the bits ``v`` as PTX type ``t`` (``.s`` two's complement)."""
    return signed(v, width(t)) if t[0] == "s" else v % (1 << width(t))


def clamp(x: int, t: str) -> int:
    n = width(t)
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)
    return min(max(x, lo), hi)


def round_mode(x: Fraction, mode: str) -> int:
    f = x.numerator // x.denominator
    if mode == "rzi":
        return f if x >= 0 or f == x else f + 1
    if mode == "rmi":
        return f
    if mode == "rpi":
        return f if f == x else f + 1
    d = x - f                           # rni: nearest, ties to even
    return f + (d > Fraction(1, 2) or d == Fraction(1, 2) and f % 2 == 1)


def f32(bits: int) -> Fraction:
    return Fraction(struct.unpack("<f", struct.pack("<I", bits))[0])


class Ref:
    """The reference interpreter of the generated forms."""

    def __init__(self) -> None:
        self.regs: dict[str, object] = {}

    def read(self, o: str):
        if o.startswith("%"):
            return self.regs[o]
        if o.startswith("0f"):
            return f32(int(o[2:], 16))
        return int(o)

    def run(self, prog: list[I]) -> None:
        pc, labels = 0, {ins.srcs[0]: i for i, ins in enumerate(prog) if ins.op == "label"}
        while pc < len(prog):
            ins = prog[pc]
            pc += 1
            if ins.op == "label" or ins.guard and self.regs[ins.guard.lstrip("!")] == ins.guard.startswith("!"):
                continue
            if ins.op == "bra":
                pc = labels[ins.dst]
                continue
            self.regs[ins.dst] = self.step(ins.op.split("."), [self.read(o) for o in ins.srcs])

    def step(self, p: list[str], a: list):  # noqa: C901 - one dispatch, as the ISA lists them
        op, t = p[0], p[-1]
        if t == "f32" and op != "cvt" and op != "setp":
            return self.float_op(p, a)
        if op == "mov":
            return a[0] % (1 << width(t))
        if op == "selp":
            return (a[0] if a[2] else a[1]) % (1 << width(t))
        if op == "setp":
            x, y = (a[0], a[1]) if t == "f32" else (as_type(a[0], t), as_type(a[1], t))
            r = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y,
                 "lo": x < y, "ls": x <= y, "hi": x > y, "hs": x >= y}[p[1][:2]]   # no NaN: ltu is lt
            comb = p[2] if len(p) == 4 else None
            return r if comb is None else {"and": r and a[2], "or": r or a[2], "xor": r != a[2]}[comb]
        if op == "cvt":
            return self.cvt(p, a[0])
        n = width(t)
        x = as_type(a[0], t)
        y = as_type(a[1], "u32" if op in ("shl", "shr") else t) if len(a) > 1 else None
        if op == "not":
            r = ~x
        elif op in ("and", "or", "xor"):
            r = {"and": x & y, "or": x | y, "xor": x ^ y}[op]
        elif op in ("add", "sub"):
            r = x + y if op == "add" else x - y
        elif op in ("min", "max"):
            r = min(x, y) if op == "min" else max(x, y)
        elif op == "shl":
            r = x << y if y < n else 0
        elif op == "shr":
            r = x >> min(y, n) if t[0] == "s" else (x >> y if y < n else 0)
        elif op in ("mul24", "mad24"):
            x24, y24 = (signed(v, 24) if t[0] == "s" else v % (1 << 24) for v in (a[0], a[1]))
            r = x24 * y24 >> (16 if p[1] == "hi" else 0)
            r += as_type(a[2], t) if op == "mad24" else 0
        elif op in ("mul", "mad"):
            r = x * y
            if p[1] == "hi":
                r >>= n
            if op == "mad":
                r += as_type(a[2], t[0] + str(2 * n) if p[1] == "wide" else t)
            if p[1] == "wide":
                return r % (1 << (2 * n))
        else:
            raise ValueError(f"no reference for {'.'.join(p)}")
        return clamp(r, t) % (1 << n) if "sat" in p else r % (1 << n)

    def cvt(self, p: list[str], v):
        dt, st = p[-2], p[-1]
        mode, sat = next((x for x in p if x in ("rni", "rzi", "rmi", "rpi")), None), "sat" in p
        if dt == "f32":
            x = v if st == "f32" else Fraction(as_type(v, st))
            x = Fraction(round_mode(x, mode)) if mode else x
            return min(max(x, Fraction(0)), Fraction(1)) if sat else x
        if st == "f32":                 # float to integer: rounded, clamped to the range (.sat or not)
            return clamp(round_mode(v, mode), dt) % (1 << width(dt))
        x = as_type(v, st)
        return clamp(x, dt) % (1 << width(dt)) if sat else x % (1 << width(dt))

    @staticmethod
    def float_op(p: list[str], a: list) -> Fraction:
        op = p[0]
        if op == "mov" or op == "selp":
            return a[0] if op == "mov" or a[2] else a[1]
        r = {"add": lambda: a[0] + a[1], "sub": lambda: a[0] - a[1], "mul": lambda: a[0] * a[1],
             "fma": lambda: a[0] * a[1] + a[2], "neg": lambda: -a[0], "abs": lambda: abs(a[0]),
             "min": lambda: min(a[0], a[1]), "max": lambda: max(a[0], a[1])}[op]()
        return min(max(r, Fraction(0)), Fraction(1)) if "sat" in p else r


# ------------------------------------------------------------------ the generator

def reg(w: int | str, i: int) -> str:
    return f"%f{i}" if w == "f" else f"%p{i}" if w == "p" else f"{PREFIX[w]}{i}"


class Gen:
    """Random programs over the forms pvcert supports (seeded)."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def ival(self, n: int) -> int:
        c = self.r.choice(["edge", "small", "wide", "any"])
        if c == "edge":
            return self.r.choice([0, 1, 2, (1 << (n - 1)) - 1, 1 << (n - 1), (1 << n) - 1, (1 << n) - 2])
        if c == "small":
            return self.r.randrange(0, 70)
        if c == "wide":
            return ((1 << 16) + self.r.randrange(0, 40)) % (1 << n)
        return self.r.getrandbits(n)

    def fbits(self) -> int:
        c = self.r.choice(["int", "frac", "big", "tiny", "any"])
        x = {"int": lambda: float(self.r.randrange(-9, 10)),
             "frac": lambda: self.r.randrange(-40, 41) / 4,
             "big": lambda: self.r.choice([-1, 1]) * self.r.choice([2.0**31, 2.0**31 - 128, 2.0**32, 2.0**63,
                                                                    2.0**64, 1e20, 65535.5, 65536.0]),
             "tiny": lambda: self.r.choice([-1, 1]) * 2.0**-140,
             "any": lambda: struct.unpack("<f", struct.pack("<I", self.r.getrandbits(32) & 0x7F7FFFFF))[0]}[c]()
        b = struct.unpack("<I", struct.pack("<f", x))[0]
        return 0x3F800000 if b == 0x3FB8AA3B else b      # 0f3FB8AA3B is read as 1/ln 2 (docs/kernels.md)

    def imm(self, t: str) -> str:
        v = self.ival(width(t))
        return str(as_type(v, t) if t[0] == "s" else v)

    def src(self, t: str, imm_ok: bool = True) -> str:
        if t == "f32":
            return f"0f{self.fbits():08X}" if imm_ok and self.r.random() < 0.25 else reg("f", self.r.randrange(N))
        if imm_ok and self.r.random() < 0.25:
            return self.imm(t)
        return reg(width(t), self.r.randrange(N))

    def instr(self) -> I:  # noqa: C901 - one table of forms
        r = self.r
        n = r.choice([16, 32, 64])
        s = r.choice("su")
        t = f"{s}{n}"
        d = reg(n, r.randrange(N))
        kind = r.choice(["arith", "arith", "logic", "shift", "mul", "mul24", "minmax", "selp", "setp",
                         "cvt_ii", "cvt_fi", "cvt_if", "cvt_ff", "float", "float", "fsetp"])
        if kind == "arith":
            if n == 32 and s == "s" and r.random() < 0.3:
                return I(f"{r.choice(['add', 'sub'])}.sat.s32", d, (self.src(t, False), self.src(t)))
            return I(f"{r.choice(['add', 'sub'])}.{t}", d, (self.src(t, False), self.src(t)))
        if kind == "logic":
            op = r.choice(["and", "or", "xor", "not"])
            srcs = (self.src(f"b{n}", False),) + (() if op == "not" else (self.src(f"b{n}"),))
            return I(f"{op}.b{n}", d, srcs)
        if kind == "shift":
            amount = str(r.choice([0, 1, n - 1, n, n + 1, 2 * n, r.randrange(70)])) if r.random() < 0.5 \
                else reg(32, r.randrange(N))
            op = r.choice(["shl", "shr"])
            ty = f"b{n}" if op == "shl" else r.choice([f"b{n}", t])
            return I(f"{op}.{ty}", d, (self.src(f"b{n}", False), amount))
        if kind == "mul":
            mode = r.choice(["lo", "hi", "wide"] if n < 64 else ["lo", "hi"])
            dd = reg(2 * n, r.randrange(N)) if mode == "wide" else d
            if r.random() < 0.5:
                return I(f"mul.{mode}.{t}", dd, (self.src(t, False), self.src(t)))
            ct = f"{s}{2 * n}" if mode == "wide" else t
            if mode == "hi" and t == "s32" and r.random() < 0.3:
                return I("mad.hi.sat.s32", d, (self.src(t, False), self.src(t, False), self.src(t)))
            return I(f"mad.{mode}.{t}", dd, (self.src(t, False), self.src(t, False), self.src(ct)))
        if kind == "mul24":
            t32, d32 = f"{s}32", reg(32, r.randrange(N))
            mode = r.choice(["lo", "hi"])
            if r.random() < 0.5:
                return I(f"mul24.{mode}.{t32}", d32, (self.src(t32, False), self.src(t32)))
            return I(f"mad24.{mode}.{t32}", d32, (self.src(t32, False), self.src(t32, False), self.src(t32)))
        if kind == "minmax":
            return I(f"{r.choice(['min', 'max'])}.{t}", d, (self.src(t, False), self.src(t)))
        if kind == "selp":
            ty = r.choice([f"b{n}", t])
            return I(f"selp.{ty}", d, (self.src(ty, False), self.src(ty), reg("p", r.randrange(NPRED))))
        if kind == "setp":
            cmp = r.choice(["eq", "ne", "lt", "le", "gt", "ge"] + (["lo", "ls", "hi", "hs"] if s == "u" else []))
            ty = f"b{n}" if cmp in ("eq", "ne") and r.random() < 0.3 else t
            comb = r.choice(["", "", ".and", ".or", ".xor"])
            srcs = (self.src(ty, False), self.src(ty)) + ((reg("p", r.randrange(NPRED)),) if comb else ())
            return I(f"setp.{cmp}{comb}.{ty}", reg("p", r.randrange(NPRED)), srcs)
        if kind == "cvt_ii":
            m, s2 = r.choice([16, 32, 64]), r.choice("su")
            sat = ".sat" if r.random() < 0.4 else ""
            return I(f"cvt{sat}.{t}.{s2}{m}", d, (reg(m, r.randrange(N)),))
        if kind == "cvt_fi":
            sat = ".sat" if r.random() < 0.3 else ""
            mode = r.choice(["rni", "rzi", "rmi", "rpi"])
            return I(f"cvt.{mode}{sat}.{t}.f32", d, (reg("f", r.randrange(N)),))
        fd = reg("f", r.randrange(N))
        if kind == "cvt_if":
            sat = ".sat" if r.random() < 0.2 else ""   # an integer is exact on the reals: no rounding
            return I(f"cvt.{r.choice(['rn', 'rz', 'rm', 'rp'])}{sat}.f32.{t}", fd, (reg(n, r.randrange(N)),))
        if kind == "cvt_ff":
            mode = r.choice([".rni", ".rzi", ".rmi", ".rpi", ""])
            sat = ".sat" if not mode or r.random() < 0.3 else ""
            return I(f"cvt{mode}{sat}.f32.f32", fd, (reg("f", r.randrange(N)),))
        if kind == "fsetp":
            cmp = r.choice(["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu"])
            return I(f"setp.{cmp}.f32", reg("p", r.randrange(NPRED)), (self.src("f32", False), self.src("f32")))
        op = r.choice(["add", "sub", "mul", "fma", "neg", "abs", "min", "max"])
        sat = ".sat" if op in ("add", "sub", "mul", "fma") and r.random() < 0.25 else ""
        rnd = ".rn" if op in ("add", "sub", "mul", "fma") else ""
        k = {"neg": 1, "abs": 1, "fma": 3}.get(op, 2)
        return I(f"{op}{rnd}{sat}.f32", fd, tuple(self.src("f32", i == k - 1) for i in range(k)))

    def program(self, length: int, branchy: bool) -> list[I]:
        prog = [I(f"mov.b{n}", reg(n, i), (str(self.ival(n)),)) for n in (16, 32, 64) for i in range(N)]
        prog += [I("mov.f32", reg("f", i), (f"0f{self.fbits():08X}",)) for i in range(N)]
        prog += [I("setp.ne.b32", reg("p", i), (reg(32, i), "0")) for i in range(NPRED)]
        label = 0
        while len(prog) < length + 3 * N + N + NPRED:
            if branchy and self.r.random() < 0.15:
                body = [self.instr() for _ in range(self.r.randrange(1, 4))]
                prog += [I("bra", f"$L{label}", (), self.guard())] + body + [I("label", "", (f"$L{label}",))]
                label += 1
                continue
            ins = self.instr()
            prog.append(I(ins.op, ins.dst, ins.srcs, self.guard()) if branchy and self.r.random() < 0.2 else ins)
        return prog

    def guard(self) -> str:
        return ("!" if self.r.random() < 0.5 else "") + reg("p", self.r.randrange(NPRED))


def ptx(prog: list[I]) -> str:
    lines = [".version 8.0", ".target sm_80", ".address_size 64",
             ".visible .entry k(\n\t.param .u64 k_o,\n\t.param .u64 k_g\n)", "{",
             f"\t.reg .b16 %rs<{N}>;", f"\t.reg .b32 %r<{N}>;", f"\t.reg .b64 %rd<{N}>;", f"\t.reg .f32 %f<{N}>;",
             f"\t.reg .pred %p<{NPRED}>;", "\t.reg .b32 %t<2>;", "\t.reg .b64 %q<3>;"]
    for ins in prog:
        lines.append(f"{ins.srcs[0]}:" if ins.op == "label" else
                     f"\t@{ins.guard} bra {ins.dst};" if ins.op == "bra" else ins.text())
    lines += ["\tld.param.u64 %q0, [k_o];", "\tcvta.to.global.u64 %q0, %q0;",
              "\tld.param.u64 %q1, [k_g];", "\tcvta.to.global.u64 %q1, %q1;"]
    k = 0
    for i in range(N):
        lines += [f"\tcvt.u32.u16 %t0, %rs{i};", f"\tst.global.u32 [%q0+{4 * k}], %t0;"]
        lines += [f"\tst.global.u32 [%q0+{4 * (k + 1)}], %r{i};", f"\tcvt.u32.u64 %t0, %rd{i};",
                  f"\tst.global.u32 [%q0+{4 * (k + 2)}], %t0;", f"\tshr.b64 %q2, %rd{i}, 32;",
                  "\tcvt.u32.u64 %t0, %q2;", f"\tst.global.u32 [%q0+{4 * (k + 3)}], %t0;"]
        lines.append(f"\tst.global.f32 [%q1+{4 * i}], %f{i};")
        k += 4
    for i in range(NPRED):
        lines += [f"\tselp.u32 %t0, 1, 0, %p{i};", f"\tst.global.u32 [%q0+{4 * (k + i)}], %t0;"]
    return "\n".join(lines + ["\tret;", "}", ""])


def expected(prog: list[I]) -> tuple[list[int], list[Fraction]]:
    ref = Ref()
    ref.run(prog)
    g = ref.regs
    ints = []
    for i in range(N):
        ints += [g[reg(16, i)], g[reg(32, i)], g[reg(64, i)] % 2**32, g[reg(64, i)] >> 32]
    ints += [int(g[reg("p", i)]) for i in range(NPRED)]
    return ints, [g[reg("f", i)] for i in range(N)]


# ------------------------------------------------------------------ engine and checker

def executions(text: str):
    """Outputs of the engine and of the checker's replay of its schedule, as (ints, floats)."""
    k = parse(text, "fuzz.ptx").kernel()
    res = run_cta(k, [1, 1, 1], [1, 1, 1], PARAMS)
    engine = ([int(res.outputs[("o", i)]) % 2**32 for i in range(INT_OUT)],
              [res.outputs[("g", i)].constant() for i in range(N)])
    got = Replay(parse(text, "fuzz.ptx").kernel(), [1, 1, 1], [1, 1, 1], PARAMS, (0, 0, 0), Limits()).run(res.schedule)
    checker = ([int(got[f"o[{i}]"]) % 2**32 for i in range(INT_OUT)], [got[f"g[{i}]"].constant() for i in range(N)])
    return engine, checker


def agree(seed: int) -> None:
    gen = Gen(seed)
    prog = gen.program(gen.r.randrange(8, 30), branchy=seed % 4 == 0)
    text = ptx(prog)
    want = expected(prog)
    engine, checker = executions(text)
    for who, got in (("engine", engine), ("checker", checker)):
        bad = [i for i in range(INT_OUT) if got[0][i] != want[0][i]] + \
              [f"g{i}" for i in range(N) if got[1][i] != want[1][i]]
        assert not bad, f"seed {seed}: {who} differs from the reference at {bad}\n{text}"


def zeros() -> list[I]:
    """Every register set to 0 (the predicates false)."""
    return [I(f"mov.b{n}", reg(n, i), ("0",)) for n in (16, 32, 64) for i in range(N)] + \
        [I("mov.f32", reg("f", i), ("0f00000000",)) for i in range(N)] + \
        [I("setp.ne.b32", reg("p", i), ("%r0", "0")) for i in range(NPRED)]


def test_shift_by_a_32_bit_amount_at_16_bits():
    """Regression (seed 94): the engine's compiled ``shl.b16`` read its u32 amount as a b16, so
    a shift by 2^31 (or 2^16) was a shift by 0; the checker and the ISA give 0."""
    prog = zeros() + [I("mov.b16", "%rs4", ("24307",)), I("mov.b32", "%r3", ("2147483648",)),
                      I("mov.b32", "%r1", ("65537",))]
    prog += [I("shl.b16", "%rs0", ("%rs4", "%r3")), I("shr.u16", "%rs1", ("%rs4", "%r1")),
             I("shr.s16", "%rs2", ("%rs4", "%r1")), I("shl.b32", "%r2", ("%r1", "%r3"))]
    want = expected(prog)
    assert want[0][:12:4] == [0, 0, 0]
    assert executions(ptx(prog)) == (want, want)


@pytest.mark.parametrize("block", range(10))
def test_random_kernels_engine_checker_and_reference_agree(block):
    for seed in range(block * 30, block * 30 + 30):
        agree(seed)


@pytest.mark.slow
def test_random_kernels_larger_sweep():
    for seed in range(1000, 6000):
        agree(seed)


# ------------------------------------------------------------------ pairs: one variant changed

VARIANT = {**{f"{a}{n}": f"{b}{n}" for n in (16, 32, 64) for a, b in (("s", "u"), ("u", "s"))},
           "lo": "hi", "hi": "lo", "rni": "rzi", "rzi": "rmi", "rmi": "rpi", "rpi": "rni", "add": "sub",
           "sub": "add", "min": "max", "max": "min", "and": "or", "or": "xor", "xor": "and", "lt": "le",
           "le": "lt", "gt": "ge", "ge": "gt", "eq": "ne", "ne": "eq", "mul24": "mul", "mad24": "mad", "sat": ""}


def variant(gen: Gen, prog: list[I]) -> list[I] | None:
    """``prog`` with one instruction's variant changed (a part of its opcode), or None."""
    at = gen.r.randrange(3 * N + N + NPRED, len(prog))
    ins = prog[at]
    parts = ins.op.split(".")
    cands = [i for i, x in enumerate(parts) if x in VARIANT and ins.op not in ("label", "bra")]
    if not cands:
        return None
    i = gen.r.choice(cands)
    parts[i] = VARIANT[parts[i]]
    return prog[:at] + [I(".".join(x for x in parts if x), ins.dst, ins.srcs, ins.guard)] + prog[at + 1:]


def variant_pairs(first_seed: int, count: int):
    """``(seed, program, one-variant twin)`` for seeds from ``first_seed`` whose twin's reference
    outputs differ from the program's."""
    for seed in range(first_seed, first_seed + count):
        gen = Gen(seed)
        prog = gen.program(gen.r.randrange(4, 12), branchy=seed % 4 == 0)
        other = variant(gen, prog)
        try:
            if other is not None and expected(other) != expected(prog):
                yield seed, prog, other
        except (KeyError, ValueError):        # a form outside the reference
            continue


def test_pairs_differing_in_one_variant_are_not_equivalent(tmp_path):
    entry = {"name": "fuzz", "params": PARAMS, "check_cta": [0, 0, 0],
             "reference": {"ptx": "a.ptx", "entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1]},
             "optimized": {"ptx": "b.ptx", "entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1]}}
    verdicts: dict[str, int] = {}
    for seed, prog, other in variant_pairs(10_000, 400):
        (tmp_path / "a.ptx").write_text(ptx(prog))
        (tmp_path / "b.ptx").write_text(ptx(other))
        v = check_pair(entry, tmp_path).verdict
        assert v in ("not-equivalent", "unsupported"), f"seed {seed}: {v}\n{ptx(other)}"
        verdicts[v] = verdicts.get(v, 0) + 1
        if sum(verdicts.values()) == 60:
            break
    assert verdicts.get("not-equivalent", 0) >= 40, verdicts


def test_replay_rejects_a_variant_in_a_certificate(tmp_path):
    """The checker's side of the pair property: the certificate of a random kernel against
    itself, with one side's PTX replaced by a one-variant twin whose reference outputs differ
    (hash fixed), is REJECTed by ``pvcert replay``'s checker; the untampered one is ACCEPTed."""
    entry = {"name": "p", "params": PARAMS, "check_cta": [0, 0, 0],
             **{side: {"ptx": "a.ptx", "entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1]}
                for side in ("reference", "optimized")}}
    tested = 0
    for seed, prog, other in variant_pairs(20_000, 200):
        (tmp_path / "a.ptx").write_text(ptx(prog))
        cert = kernel_certificate([pair_claim("p", entry, tmp_path, check_pair(entry, tmp_path))])
        assert accepted(cert, tmp_path), f"seed {seed}: the honest certificate"
        art = cert["subject"]["artifacts"][1]
        art["embedded"] = ptx(other)
        art["sha256"] = hashlib.sha256(canonical_bytes(art["embedded"])).hexdigest()
        assert not accepted(cert, tmp_path), f"seed {seed}: ACCEPT of\n{art['embedded']}"
        tested += 1
        if tested == 15:
            break
    assert tested == 15


def accepted(cert: dict, tmp_path) -> bool:
    (tmp_path / "cert.json").write_text(json.dumps(cert))
    try:
        return all(r.ok for r in replay(str(tmp_path / "cert.json")))
    except CheckError:
        return False


def test_constants_beyond_the_probe_tolerance_differ(tmp_path):
    """Regression (pair seed 10007): 4294967292 against 4294967295 (and 2^-139 against 0) were
    "unknown": the numeric probe's relative tolerance hid the difference of two constants."""
    for a, b in (("4294967292", "4294967295"), ("0f00000400", "0f00000000")):
        for name, v in (("a", a), ("b", b)):
            last = I("mov.f32", "%f0", (v,)) if v.startswith("0f") else I("mov.b32", "%r0", (v,))
            (tmp_path / f"{name}.ptx").write_text(ptx(zeros() + [last]))
        r = check_pair({"name": "c", "params": PARAMS, "check_cta": [0, 0, 0],
                        **{side: {"ptx": f"{f}.ptx", "entry": "k", "grid": [1, 1, 1], "block": [1, 1, 1]}
                           for side, f in (("reference", "a"), ("optimized", "b"))}}, tmp_path)
        assert r.verdict == "not-equivalent" and "both constant" in r.message, r.message
