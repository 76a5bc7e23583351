"""PTX front end: a parser for the subset nvcc 13 emits for structured CTA kernels.

Module headers, ``.entry`` kernels with ``.param`` lists, ``.reg`` ranges (``%r<N>``), ``.shared`` / ``.local``
variables, guards (``@%p`` / ``@!%p``), vector ``{..}``, memory ``[%rd1+8]`` and pair ``%r|%p`` operands, labels,
``.pragma`` lines, comments, and inline-asm ``{ ... }`` scopes whose ``.reg`` names become ``%name@<scope>``. Syntax
errors raise ``Malformed("file:line", msg)``; constructs outside the subset (async copies, mbarrier, atomics, calls,
...) raise ``Unsupported`` naming them.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from .errors import Malformed, Unsupported, fail_if


@dataclass(frozen=True)
class Reg:
    name: str          # "%r3", "%tid.x", "%tmp@2"


@dataclass(frozen=True)
class Imm:
    value: int


@dataclass(frozen=True)
class FImm:
    bits: int          # raw IEEE bits of a 0f... (32) or 0d... (64) literal
    width: int


@dataclass(frozen=True)
class Sym:
    name: str          # a label, variable or parameter


@dataclass(frozen=True)
class Mem:
    base: object       # Reg | Sym | Imm
    offset: int


@dataclass(frozen=True)
class Vec:
    items: tuple


@dataclass(frozen=True)
class Pair:
    first: Reg         # "%r14|%p1": value and predicate destinations
    second: Reg


@dataclass
class Instr:
    opcode: str                  # full dotted opcode, e.g. "ld.global.nc.f32"
    operands: list
    guard: tuple | None          # (predicate register, negated)
    line: int
    text: str
    index: int = 0
    parts: list = field(default_factory=list, repr=False, compare=False)
    op: str = field(default="", repr=False, compare=False)
    cache: dict = field(default_factory=dict, repr=False, compare=False)   # the engine's decoded form

    def __post_init__(self) -> None:
        self.parts = self.opcode.split(".")
        self.op = self.parts[0]

    def __str__(self) -> str:
        return self.text


@dataclass
class Var:
    """A ``.shared`` / ``.local`` / ``.const`` / ``.global`` variable: ``size`` in bytes (0 for ``extern`` arrays);
    ``init``: an initialized ``.const`` / ``.global`` one's bytes (one without is refused where instructions use it)."""

    name: str
    space: str
    type: str
    align: int
    size: int
    extern: bool = False
    line: int = 0
    init: bytes | None = None


@dataclass
class Param:
    name: str
    type: str
    line: int = 0


@dataclass
class Kernel:
    name: str
    params: list[Param]
    regs: dict[str, str]                 # register -> type (".f32", ".pred", ...)
    vars: dict[str, Var]
    instrs: list[Instr]
    labels: dict[str, int]               # label -> index of the next instruction
    directives: dict[str, str] = field(default_factory=dict)  # .maxntid / .reqntid ...
    file: str = "<ptx>"
    line: int = 0
    rets: list[Param] = field(default_factory=list)          # a .func's return parameters

    @property
    def shared(self) -> list[Var]:
        return [v for v in self.vars.values() if v.space == "shared"]


@dataclass
class Module:
    version: str
    target: str
    address_size: int
    kernels: dict[str, Kernel]
    vars: dict[str, Var]                 # module-level (e.g. extern .shared)
    file: str = "<ptx>"

    def kernel(self, name: str | None = None) -> Kernel:
        if name is None and len(self.kernels) != 1:
            raise Malformed(self.file, f"{len(self.kernels)} entries; name one of {sorted(self.kernels)}")
        if name is not None and name not in self.kernels:
            raise Malformed(self.file, f"no entry {name!r} (have {sorted(self.kernels)})")
        return self.kernels[name] if name is not None else next(iter(self.kernels.values()))


# Base opcodes the parser accepts (the executors may still reject some), and those it
# names as unsupported (keyed by the first one or two dotted components).
SUPPORTED = set(
    "ld st mov cvta cvt add sub mul mad fma div rem neg abs min max and or xor not shl shr bfi bfe setp "
    "selp bra ret exit bar barrier shfl vote ex2 lg2 sqrt rsqrt rcp wmma mma ldmatrix membar fence mul24 "
    "mad24 popc clz brev prmt lop3 copysign testp slct sad".split())
UNSUPPORTED = {
    "cp": "asynchronous copy", "mbarrier": "mbarrier", "wgmma": "warpgroup MMA",
    "atom": "atomic", "red": "atomic reduction", "call": "function call", "tex": "texture",
    "tld4": "texture", "suld": "surface", "sust": "surface", "sured": "surface",
    "trap": "trap", "brkpt": "breakpoint", "pmevent": "performance event", "prefetch": "prefetch",
    "prefetchu": "prefetch", "cp.async": "asynchronous copy", "tcgen05": "tensor memory",
    "stmatrix": "stmatrix", "setmaxnreg": "setmaxnreg", "griddepcontrol": "grid dependency",
    "activemask": "activemask", "match": "match.sync", "redux": "redux.sync", "elect": "elect.sync",
    "multimem": "multimem", "cvt.pack": "cvt.pack", "applypriority": "cache control",
    "discard": "cache control", "createpolicy": "cache control", "isspacep": "isspacep",
    "nanosleep": "nanosleep", "getctarank": "cluster", "mapa": "cluster", "brx": "indirect branch",
}
# operand counts (min, max) by base opcode
ARITY = {**dict.fromkeys("add sub mul div rem and or xor shl shr min max copysign mul24".split(), (3, 3)),
         **dict.fromkeys("mad fma selp bfe mad24 slct prmt".split(), (4, 4)),
         **dict.fromkeys("neg not abs mov cvt cvta ex2 lg2 sqrt rsqrt rcp popc clz brev ld st ldu testp".split(),
                         (2, 2)),
         "bfi": (5, 5), "lop3": (5, 5), "setp": (3, 4), "bra": (1, 1), "ret": (0, 0), "exit": (0, 0),
         "shfl": (4, 5), "vote": (2, 3)}
TYPE_SIZE = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
             "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
             "b64": 8, "u64": 8, "s64": 8, "f64": 8, "pred": 1}
# The modifiers of value instructions the executors give a meaning: rounding (ignored over the reals, or refused),
# ftz, sat, approx, full, hi, lo, wide, cc (its carry is never read: addc is unsupported), setp's comparisons and
# boolean operators. Any other (.relu, .xorsign, .abs of max/min, .oob, testp's classes, ...) is refused.
VALUED = SUPPORTED - set("ld st cvta bra ret exit bar barrier shfl vote wmma mma ldmatrix membar fence".split())
MODS = {*TYPE_SIZE, *("rn rz rm rp rni rzi rmi rpi ftz sat approx full hi lo wide cc eq ne lt le gt ge ls hs equ neu "
                      "ltu leu gtu geu and or xor").split()}

_NAME = r"[A-Za-z_$][\w$]*"
_LABEL_RE = re.compile(rf"^\s*({_NAME})\s*$")
_REGDECL_RE = re.compile(r"^\.reg\s+(?:\.v\d\s+)?(\.\w+)\s+(.+)$")
_VARDECL_RE = re.compile(
    r"^(?P<extern>\.extern\s+)?(?P<space>\.shared|\.local|\.global|\.const)\s+"
    rf"(?:\.align\s+(?P<align>\d+)\s+)?(?:\.v\d\s+)?(?P<type>\.\w+)\s+(?P<name>{_NAME})"
    r"(?P<dims>(?:\s*\[\s*\d*\s*\])*)\s*(?P<init>=.*)?$")
_PARAM_RE = re.compile(rf"^\.param\s+(?:\.align\s+\d+\s+)?(\.\w+)\s+(?:\.ptr\s+(?:\.global\s+)?"
                       rf"(?:\.align\s+\d+\s+)?)?({_NAME})"
                       r"(\s*\[\s*\d+\s*\])?$")
_INT_RE = re.compile(r"^([+-]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)[uU]?$")
_SPECIAL = re.compile(r"^%(tid|ntid|ctaid|nctaid)\.[xyz]$|^%(laneid|warpid|nwarpid|warpsize|smid|nsmid|clock|"
                      r"clock64|globaltimer|lanemask_\w+)$")


def _strip_comments(src: str, file: str) -> str:
    """Blank out comments, keeping newlines (so line numbers stay right) and strings."""
    def blank(m: re.Match) -> str:
        s = m.group()
        if s in ('"', "/*"):
            what = "string" if s == '"' else "/* comment"
            raise Malformed(f"{file}:{src.count(chr(10), 0, m.start()) + 1}", f"unterminated {what}")
        return s if s[0] == '"' else re.sub(r"[^\n]", " ", s)
    return re.sub(r'"[^"]*"|//[^\n]*|/\*.*?\*/|"|/\*', blank, src, flags=re.S)


def _statements(src: str, file: str):
    """Yield (line, kind, text, depth), kind in stmt | label | open | close.

    Outside any brace a statement ends at a newline (outside parentheses) or ``;``; inside, at ``;``. A ``{`` or ``}``
    where a statement would start is a scope token; braces inside a statement (vector operands) belong to it."""
    buf, line, start, depth, parens, inner = "", 1, 1, 0, 0, 0
    for tok in re.findall(r"[{}();:\n]|[^{}();:\n]+", src):
        blank = not buf.strip()
        if tok == "\n":
            if not blank and parens == 0 and (depth == 0 or _NOSEMI.match(buf)):
                yield start, "stmt", buf.strip(), depth
                buf = ""
            else:
                buf += " "
            line += 1
            continue
        if blank:
            start = line
            if tok in ("{", "}"):
                if tok == "}" and depth == 0:
                    raise Malformed(f"{file}:{line}", "unbalanced '}'")
                depth += tok == "{"
                yield line, "open" if tok == "{" else "close", tok, depth
                depth -= tok == "}"
                continue
        parens += (tok == "(") - (tok == ")")
        inner += (tok == "{") - (tok == "}")
        if tok == ";" and inner <= 0:
            inner = 0
            if not blank:
                yield start, "stmt", buf.strip(), depth
            buf = ""
        elif tok == ":" and depth > 0 and inner == 0 and _LABEL_RE.match(buf):
            yield start, "label", buf.strip(), depth
            buf = ""
        else:
            buf += tok
    if buf.strip():
        fail_if(depth > 0, Malformed, f"{file}:{start}", f"statement without ';': {buf.strip()!r}")
        yield start, "stmt", buf.strip(), depth
    fail_if(depth != 0, Malformed, f"{file}:{line}", "unbalanced '{' (missing '}' at end of file)")


# Directives that end at the end of their line, without ';' (PTX ISA 11.5: .loc, .file).
_NOSEMI = re.compile(r"^\s*\.(loc|file)\b")
_DIRECTIVE = {"loc": re.compile(r"^\.loc\s+\d+\s+\d+\s+\d+(\s*,\s*function_name\s+[\w$.]+(\s*\+\s*\d+)?"
                                r"\s*,\s*inlined_at\s+\d+\s+\d+\s+\d+)?$"),
              "file": re.compile(r'^\.file\s+\d+\s+"[^"]*"(\s*,\s*\d+\s*,\s*\d+)?$'),
              "pragma": re.compile(r'^\.pragma\s+"[^"]*"(\s*,\s*"[^"]*")*$')}
# A debug ``.section`` with its braced body (DWARF data: no instructions, no braces inside).
_SECTION = re.compile(r"^[ \t]*\.section\s+[\w.$]+\s*\{[^{}]*\}", re.M)


def _directive(t: str, ctx: "_Ctx") -> None:
    """Check a ``.loc`` / ``.file`` / ``.pragma`` statement (which has no effect on execution)."""
    name = t[1:].split(None, 1)[0]
    if not _DIRECTIVE[name].match(" ".join(t.split())):
        raise ctx.err(f"bad .{name} directive")


def _split_top(s: str) -> list[str]:
    """Split at commas that are not inside braces, brackets or parentheses."""
    out, cur, depth = [], "", 0
    for c in s:
        depth += (c in "{[(") - (c in "}])")
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    return out + [cur.strip()] if cur.strip() or out else out


def _int(tok: str) -> int | None:
    m = _INT_RE.match(tok)
    if not m:
        return None
    t = m.group(2)
    base = 16 if t[1:2] in ("x", "X") else 2 if t[1:2] in ("b", "B") else 8 if len(t) > 1 and t[0] == "0" else 10
    v = int(t[2:] if base in (2, 16) else t, base)
    return -v if m.group(1) == "-" else v


class _Ctx:
    """Where a statement is (for errors), and its scope's register renaming."""

    def __init__(self, file: str, line: int, text: str, scope: dict[str, str]):
        self.file, self.line, self.text, self.scope = file, line, " ".join(text.split()), scope

    def err(self, msg: str) -> Malformed:
        return Malformed(f"{self.file}:{self.line}", f"{msg} in `{self.text}`")

    def check(self, bad, msg: str, refuse: bool = False) -> None:
        if bad:   # Malformed, or (refuse) Unsupported
            raise (self.unsupported if refuse else self.err)(msg)

    def unsupported(self, msg: str) -> Unsupported:
        return Unsupported(f"{self.file}:{self.line}: {msg} in `{self.text}`")


def _operand(tok: str, ctx: _Ctx):
    tok = tok.strip()
    ctx.check(not tok, "empty operand")
    if tok[0] == "{":
        items = _split_top(tok[1:-1]) if tok.endswith("}") else []
        ctx.check(not items or not all(items), f"bad vector operand {tok!r}")
        return Vec(tuple(_operand(i, ctx) for i in items))
    if tok[0] == "[":
        m = re.match(r"^(.*?)(?:\+(-?(?:0[xX][0-9a-fA-F]+|\d+)))?$", tok[1:-1].replace(" ", ""))
        ctx.check(not tok.endswith("]") or not m.group(1), f"bad memory operand {tok!r}")
        base = _operand(m.group(1), ctx)
        ctx.check(not isinstance(base, (Reg, Sym, Imm)), f"bad address {m.group(1)!r}")
        return Mem(base, _int(m.group(2)) if m.group(2) else 0)
    if "|" in tok:
        a, b = (_operand(x, ctx) for x in tok.split("|", 1))
        ctx.check(not (isinstance(a, Reg) and isinstance(b, Reg)), f"bad register pair {tok!r}")
        return Pair(a, b)
    if tok[0] == "%":
        ctx.check(not re.match(r"^%[\w$.]+$", tok), f"bad register {tok!r}")
        return Reg(ctx.scope.get(tok, tok))
    m = re.match(r"^0([fFdD])([0-9a-fA-F]+)$", tok)
    if m:
        width = 32 if m.group(1) in "fF" else 64
        ctx.check(len(m.group(2)) != width // 4, f"bad float literal {tok!r}")
        return FImm(int(m.group(2), 16), width)
    if _int(tok) is not None:
        return Imm(_int(tok))
    if tok == "WARP_SZ":                   # the predefined constant warp size (PTX ISA 4.4)
        return Imm(32)
    ctx.check(re.match(r"^[+-]?\d+\.\d*([eE][+-]?\d+)?$", tok), f"decimal float literal {tok!r} (nvcc writes 0f/0d hex)")
    if re.match(rf"^{_NAME}$", tok):
        name = ctx.scope.get(tok, tok)
        return Reg(name) if name[0] == "%" else Sym(name)
    raise ctx.err(f"bad operand {tok!r}")


def _reg_names(decl: str, ctx: _Ctx) -> list[str]:
    names = []
    for part in _split_top(decl):
        m = re.match(r"^(%?[A-Za-z_$][\w$]*)(?:<(\d+)>)?$", part)
        ctx.check(not m, f"bad register declaration {part!r}")
        names += [f"{m.group(1)}{i}" for i in range(int(m.group(2)))] if m.group(2) else [part]
    return names


def _var(text: str, ctx: _Ctx) -> Var:
    m = _VARDECL_RE.match(text)
    ctx.check(not m, "bad variable declaration")
    space, ty, extern = m.group("space")[1:], m.group("type")[1:], bool(m.group("extern"))
    init = _init(m.group("init"), ctx) if m.group("init") else None
    if init is not None and ty not in ("b8", "u8"):   # uninitialized ones are refused where used (_resolve)
        raise Unsupported(f"{ctx.file}:{ctx.line}: .{space} variable without a byte initializer in `{ctx.text}`")
    ctx.check(init is not None and space not in ("global", "const"), f"initialized .{space} variable", True)
    ctx.check(ty not in TYPE_SIZE, f"unknown type .{ty}")
    size = TYPE_SIZE[ty]
    for d in re.findall(r"\[\s*(\d*)\s*\]", m.group("dims") or ""):
        ctx.check(d == "" and not extern, "unsized array that is not extern")
        size = size * int(d) if d else 0
    if init is not None and len(init) > size:
        raise ctx.err(f"{len(init)} initial bytes for {size}")
    if init is not None:  # an incomplete initializer: the rest is zero (PTX ISA 5.4.4)
        init += bytes(size - len(init))
    return Var(m.group("name"), space, ty, int(m.group("align") or TYPE_SIZE[ty]), size, extern, ctx.line, init)


def _init(text: str, ctx: _Ctx) -> bytes:
    """A byte array's initializer ``= {0, 0, 128, 63}``."""
    m = re.fullmatch(r"=\s*\{([^{}]*)\}\s*", text)
    vals = [_int(t.strip()) for t in m.group(1).split(",")] if m else [None]
    ctx.check(any(v is None or not 0 <= v < 256 for v in vals), "initializer that is not a list of bytes", True)
    return bytes(vals)


def parse(src: str, file: str = "<ptx>") -> Module:
    """Parse PTX text into a ``Module``."""
    src = _SECTION.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), _strip_comments(src, file))
    stmts = list(_statements(src, file))
    version = target = None
    address_size, kernels, mvars, funcs, i = 64, {}, {}, {}, 0
    while i < len(stmts):
        line, kind, text, _ = stmts[i]
        ctx = _Ctx(file, line, text, {})
        ctx.check(kind != "stmt", f"unexpected {text!r} outside an entry")
        arg = text.split(None, 1)[1].strip() if len(text.split(None, 1)) > 1 else None
        if text.startswith(".version"):
            ctx.check(not arg or not re.match(r"^\d+\.\d+$", arg), "bad .version")
            version = arg
        elif text.startswith(".target"):
            ctx.check(not arg, "bad .target")
            target = arg
        elif text.startswith(".address_size"):
            address_size = _int(arg) if arg else None
            ctx.check(address_size not in (32, 64), "bad .address_size")
        elif re.match(r"^(\.visible\s+|\.weak\s+)?\.(entry|func)\b", text):
            if i + 1 < len(stmts) and stmts[i + 1][1] != "open" and ".func" in text.split("(")[0]:
                i += 1                          # a .func declaration (prototype): no body
                continue
            k, i = _entry(stmts, i, file)
            ctx.check(k.name in kernels or k.name in funcs, f"duplicate entry or function {k.name}")
            (funcs if ".func" in text.split("(")[0] else kernels)[k.name] = k
            continue
        elif re.match(r"^(\.extern\s+|\.visible\s+)*\.(shared|global|const|local)\b", text):
            v = _var(re.sub(r"^\.visible\s+", "", text), ctx)
            mvars[v.name] = v
        elif re.match(r"^\.(pragma|file|loc)\b", text):
            _directive(text, ctx)
        elif not re.match(r"^\.section\s+[\w.$]+$", text):
            raise ctx.err("unexpected statement at module level")
        i += 1
    fail_if(version is None or target is None, Malformed, file, "missing .version or .target directive")
    fail_if(not kernels, Malformed, file, "no .entry kernel")
    for k in kernels.values():
        for v in mvars.values():
            k.vars.setdefault(v.name, v)
        _inline(k, funcs, (k.name,))
        _resolve(k)
    return Module(version, target, address_size, kernels, mvars, file)


def _entry(stmts: list, i: int, file: str) -> tuple[Kernel, int]:
    """The ``.entry`` whose header is ``stmts[i]``, and the index after its body."""
    line, _, text, _ = stmts[i]
    ctx = _Ctx(file, line, text, {})
    m = re.match(rf"^(?:\.visible\s+|\.weak\s+)?\.(?:entry|func\s*(?:\((?P<ret>[^()]*)\))?)\s*({_NAME})\s*"
                 r"(?:\((.*)\))?\s*$", text, re.S)
    ctx.check(not m, "bad .entry or .func header")
    name, params, directives, rets = m.group(2), [], {}, []
    for group, out in ((m.group(3), params), (m.group("ret"), rets)):
        for p in _split_top(group or ""):
            pm = _PARAM_RE.match(" ".join(p.split()))
            ctx.check(not pm, f"bad parameter {p!r}")
            out.append(Param(pm.group(2), pm.group(1)[1:], line))
    i += 1
    while i < len(stmts) and stmts[i][1] == "stmt" and stmts[i][3] == 0:
        t = stmts[i][2]
        dm = re.match(r"^\.(maxntid|reqntid|minnctapersm|maxnctapersm|maxnreg|noreturn|pragma)\b\s*(.*)$", t)
        if not dm:
            raise _Ctx(file, stmts[i][0], t, {}).err("expected '{' or a performance directive after .entry")
        directives[dm.group(1)] = dm.group(2)
        i += 1
    ctx.check(i >= len(stmts) or stmts[i][1] != "open", f"entry {name} has no body")
    regs, kvars, instrs, labels, scopes, n_scopes = {}, {}, [], {}, [{}], 0   # scopes: each brace's renaming
    while scopes:
        i += 1
        fail_if(i >= len(stmts), Malformed, f"{file}:{line}", f"entry {name}: missing closing '}}'")
        sl, kind, t, _ = stmts[i]
        sctx = _Ctx(file, sl, t, scopes[-1])
        if kind == "open":
            n_scopes += 1
            scopes.append(dict(scopes[-1], __id__=str(n_scopes)))
        elif kind == "close":
            scopes.pop()
        elif kind == "label":
            sctx.check(t in labels, f"duplicate label {t}")
            labels[t] = len(instrs)
        elif t.startswith(".reg"):
            rm = _REGDECL_RE.match(" ".join(t.split()))
            sctx.check(not rm, "bad .reg declaration")
            for r in _reg_names(rm.group(2), sctx):
                if len(scopes) > 1:   # a bare name (`p`, as CUTLASS's inline asm writes) becomes a %-register
                    scopes[-1][r] = f"{r}@{scopes[-1]['__id__']}" if r[0] == "%" else f"%{r}@{scopes[-1]['__id__']}.bare"
                    r = scopes[-1][r]
                regs[r] = rm.group(1)
        elif re.match(r"^(\.extern\s+)?\.(shared|local|global|const)\b", t):
            v = _var(t, sctx)
            sctx.check(v.name in kvars, f"duplicate variable {v.name}")
            kvars[v.name] = v
        elif re.match(r"^\.(pragma|loc|file)\b", t):
            _directive(t, sctx)
        elif t.startswith(".param") and len(scopes) > 1:     # a call's argument or result
            pm = _PARAM_RE.match(" ".join(t.split()))
            fail_if(not pm or pm.group(3), Unsupported, f"{file}:{sl}: call parameter that is not a scalar in `{t}`")
            scopes[-1][pm.group(2)] = f"{pm.group(2)}@{scopes[-1]['__id__']}"
            regs[scopes[-1][pm.group(2)]] = "." + pm.group(1)[1:]
        elif t.startswith("."):
            raise Unsupported(f"{file}:{sl}: unsupported directive `{t.split()[0]}` in `{t}`")
        else:
            instrs.append(_instr(t, sctx, len(instrs)))
    return Kernel(name, params, regs, kvars, instrs, labels, directives, file, line, rets), i + 1


def _instr(text: str, ctx: _Ctx, index: int) -> Instr:
    guard, body = None, text
    gm = re.match(r"^@(!?)(%?[\w$]+)\s+(.*)$", body, re.S)
    if gm:
        guard, body = (ctx.scope.get(gm.group(2), gm.group(2)), gm.group(1) == "!"), gm.group(3)
    elif body.startswith("@"):
        raise ctx.err("bad guard")
    opcode, rest = (body.split(None, 1) + [""])[:2]
    if opcode.startswith(("ld.", "ldu.")):   # .L2::<n>B: a hint to prefetch n bytes into L2 (PTX ISA, ld)
        opcode = re.sub(r"\.L2::(64|128|256)B(?=\.)", "", opcode)
    ctx.check("::" in opcode, f"unsupported PTX instruction `{opcode}`", True)
    ctx.check(not re.match(r"^[a-z][a-z0-9_]*(\.([a-z0-9_]+|NaN))*$", opcode), f"bad opcode {opcode!r}")   # min.NaN
    if opcode in ("call", "call.uni"):     # call{.uni} (rets), f, (args): inlined by _inline
        cm = re.fullmatch(rf"\s*(?:\(([^()]*)\)\s*,)?\s*({_NAME})\s*(?:,\s*\(([^()]*)\))?\s*", rest)
        ctx.check(not cm, f"call that is not direct (`{' '.join(rest.split())}`)", True)
        rets, args = ([_operand(t, ctx) for t in _split_top(g or "")] for g in (cm.group(1), cm.group(3)))
        return Instr(opcode, [Vec(tuple(rets)), Sym(cm.group(2)), Vec(tuple(args))], guard, ctx.line, ctx.text, index)
    base = opcode.split(".")[0]
    for key in (".".join(opcode.split(".")[:2]), base):
        if key in UNSUPPORTED:
            raise ctx.unsupported(f"unsupported PTX instruction `{opcode}` ({UNSUPPORTED[key]})")
    odd = sorted(set(opcode.split(".")[1:]) - MODS) if base in VALUED else ["uni"] if guard and opcode in (
        "bra.uni", "ret.uni") else []   # values not modelled; a guarded branch's promise of uniformity not checked
    if base not in SUPPORTED or base in ("bar", "barrier") and {"red", "arrive"} & set(opcode.split(".")) or odd:
        raise ctx.unsupported(f"unsupported PTX instruction `{opcode}`" + (f" (modifier .{odd[0]})" if odd else ""))
    operands = [_operand(tok, ctx) for tok in _split_top(rest)] if rest.strip() else []
    return Instr(opcode, operands, guard, ctx.line, ctx.text, index)


def _resolve(k: Kernel) -> None:
    """Check operand counts and the labels, registers and symbols instructions use."""
    names = {p.name for p in k.params} | set(k.vars) | set(k.labels)

    def check(ins: Instr, o) -> None:
        if isinstance(o, Reg) and o.name not in k.regs and not _SPECIAL.match(o.name):
            raise err(ins, f"undeclared register {o.name}")
        if isinstance(o, Sym) and o.name not in (k.labels if ins.op == "bra" else names):
            raise err(ins, f"unknown {'label' if ins.op == 'bra' else 'symbol'} {o.name}")
        v = k.vars.get(o.name) if isinstance(o, Sym) and ins.op != "bra" else None
        if v is not None and v.space in ("global", "const") and v.init is None:
            raise Unsupported(f"{k.file}:{ins.line}: .{v.space} variable {v.name} without a byte initializer "
                              f"used in `{ins.text}`")
        for x in o.items if isinstance(o, Vec) else (o.first, o.second) if isinstance(o, Pair) else \
                (o.base,) if isinstance(o, Mem) else ():
            check(ins, x)

    def err(ins: Instr, msg: str) -> Malformed:
        return Malformed(f"{k.file}:{ins.line}", f"{msg} in `{ins.text}`")

    for ins in k.instrs:
        lo, hi = ((1, 1) if "warp" in ins.parts else (0, 2)) if ins.op in ("bar", "barrier") else \
            (3, 3) if ins.op == "cvt" and "f16x2" in ins.parts else ARITY.get(ins.op, (0, len(ins.operands)))
        if not lo <= len(ins.operands) <= hi:
            raise err(ins, f"`{ins.opcode}` takes {lo if lo == hi else f'{lo}-{hi}'} operands, got {len(ins.operands)}")
        mem = {"ld": 1, "ldu": 1, "st": 0}.get(ins.op)
        if mem is not None and not isinstance(ins.operands[mem], Mem):
            raise err(ins, f"`{ins.opcode}` needs a [memory] {'destination' if mem == 0 else 'source'}")
        if ins.guard and ins.guard[0] not in k.regs:
            raise err(ins, f"undeclared predicate {ins.guard[0]}")
        fail_if(ins.op == "bra" and not isinstance(ins.operands[0], Sym), err, ins, "bra takes one label")
        for o in ins.operands:
            check(ins, o)


def _inline(k: Kernel, funcs: dict[str, Kernel], stack: tuple) -> None:
    """Replace each ``call`` of ``k`` by the called ``.func``'s body (registers and labels renamed per call, ``ret`` a
    branch to its end), each call parameter by a register (``st.param`` / ``ld.param``: ``mov``s); no recursion."""
    out, labels, at, own = [], {}, {}, {p.name for p in k.params + k.rets}   # at: old index -> new
    calls: list[tuple[int, int, Instr]] = []   # inlined bodies: [start, end) and their call
    for n, ins in enumerate(k.instrs):
        at[n] = len(out)
        m = ins.operands[ins.op == "ld"] if ins.op in ("ld", "st") and "param" in ins.parts else None
        if ins.op == "call":
            body, rel = _expand(k, ins, funcs, stack, str(len(out)))
            labels.update((lab, len(out) + j) for lab, j in rel.items())
            calls.append((len(out), len(out) + len(body), ins))
            out += body
        elif isinstance(m, Mem) and isinstance(m.base, Sym) and m.base.name not in own:
            decl = k.regs.get(m.base.name)
            if m.offset or len(ins.parts) != 3 or decl is None or TYPE_SIZE.get(ins.parts[-1]) != TYPE_SIZE.get(decl[1:]):
                raise Unsupported(f"{k.file}:{ins.line}: call parameter access in `{ins.text}`")
            other = ins.operands[ins.op == "st"]
            pair = [other, Reg(m.base.name)] if ins.op == "ld" else [Reg(m.base.name), other]
            out.append(Instr(f"mov.{ins.parts[-1]}", pair, ins.guard, ins.line, ins.text))
        else:
            out.append(ins)
    labels.update((lab, at.get(n, len(out))) for lab, n in k.labels.items())
    for j, ins in enumerate(out):   # a call run twice would see its registers' old values, not fresh ones
        t = labels.get(ins.operands[0].name) if ins.op == "bra" and isinstance(ins.operands[0], Sym) else None
        loop = next((c for s, e, c in calls if t is not None and t <= s and j >= e), None)
        if loop is not None:
            raise Unsupported(f"{k.file}:{loop.line}: call inside a loop in `{loop.text}` (each call needs fresh registers)")
    k.labels, k.instrs = labels, out
    for i, ins in enumerate(out):
        ins.index = i


def _expand(k: Kernel, call: Instr, funcs: dict[str, Kernel], stack: tuple, tag: str):
    """The body of the ``.func`` ``call`` names, as instructions of ``k``, and its labels (from the body's start)."""
    rets, f, args = call.operands[0].items, call.operands[1].name, call.operands[2].items
    where = f"{k.file}:{call.line}"
    fail_if(f in stack, Unsupported, f"{where}: recursive call of {f} in `{call.text}`")
    fail_if(f not in funcs, Unsupported, f"{where}: call of {f}, which has no body in this module")
    fn = copy.deepcopy(funcs[f])
    if len(args) != len(fn.params) or len(rets) != len(fn.rets) or fn.vars or call.guard \
            or not all(isinstance(a, Sym) and a.name in k.regs for a in args + rets):
        raise Unsupported(f"{where}: call of {f} with {len(args)} arguments and {len(rets)} results "
                          f"(guarded calls and functions with variables refused) in `{call.text}`")
    _inline(fn, funcs, stack + (f,))
    end, ren = f"$ret@{tag}", {r: f"{r}@{tag}" for r in fn.regs}
    k.regs.update((ren[r], t) for r, t in fn.regs.items())
    bind = {p.name: (a.name, p.type) for p, a in zip(fn.params + fn.rets, args + rets)}

    def rename(o):
        if isinstance(o, Reg):
            return Reg(ren.get(o.name, o.name))
        if isinstance(o, Sym):
            return Sym(f"{o.name}@{tag}" if o.name in fn.labels else o.name)
        if isinstance(o, Mem):
            return Mem(rename(o.base), o.offset)
        return Vec(tuple(map(rename, o.items))) if isinstance(o, Vec) else \
            Pair(rename(o.first), rename(o.second)) if isinstance(o, Pair) else o

    body = []
    for ins in fn.instrs:
        g = (ren.get(ins.guard[0], ins.guard[0]), ins.guard[1]) if ins.guard else None
        ops = [rename(o) for o in ins.operands]
        m = ops[ins.op == "ld"] if ins.op in ("ld", "st") and "param" in ins.parts else None
        if ins.op == "ret":
            body.append(Instr("bra", [Sym(end)], g, ins.line, ins.text))
        elif m is not None:
            reg, ty = bind.get(m.base.name, (None, "")) if isinstance(m, Mem) and isinstance(m.base, Sym) else (None, "")
            if reg is None or m.offset or len(ins.parts) != 3 or TYPE_SIZE.get(ins.parts[-1]) != TYPE_SIZE.get(ty):
                raise Unsupported(f"{fn.file}:{ins.line}: parameter access in `{ins.text}`")
            other = ops[ins.op == "st"]
            body.append(Instr(f"mov.{ins.parts[-1]}", [other, Reg(reg)] if ins.op == "ld" else [Reg(reg), other],
                              g, ins.line, ins.text))
        else:
            body.append(Instr(ins.opcode, ops, g, ins.line, ins.text))
    return body, {**{f"{lab}@{tag}": n for lab, n in fn.labels.items()}, end: len(body)}
