"""PTX front end: a parser for the subset nvcc 13 emits for structured CTA kernels.

Covers module headers (``.version/.target/.address_size``), ``.entry`` kernels with
``.param`` lists, ``.reg`` declarations (``%r<N>`` ranges), static / aligned / array /
``extern`` ``.shared`` and ``.local`` variables, guarded instructions (``@%p`` / ``@!%p``),
vector operands ``{%f1, %f2}``, memory operands ``[%rd1+8]``, ``%r|%p`` destination
pairs, labels, inline-asm ``{ ... }`` scopes with scope-local ``.reg`` declarations
(renamed ``%name@<scope>`` so that equal names in different scopes never collide),
``.pragma`` lines and comments.

Syntax errors raise ``Malformed("file:line", msg)``; constructs outside the supported
subset (async copies, mbarrier, wgmma, atomics, calls, textures, ...) raise
``Unsupported("file:line: ...")`` naming the instruction, never half-parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import Malformed, Unsupported

# ----------------------------------------------------------------------------- operands


@dataclass(frozen=True)
class Reg:
    name: str          # "%r3", "%tid.x", "%tmp@2"


@dataclass(frozen=True)
class Imm:
    value: int


@dataclass(frozen=True)
class FImm:
    bits: int          # raw IEEE bits
    width: int         # 32 (0f...) or 64 (0d...)


@dataclass(frozen=True)
class Sym:
    name: str          # a label, shared/local variable or parameter name


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
    guard: tuple | None          # (predicate register name, negated)
    line: int
    text: str
    index: int = 0
    parts: list = field(default_factory=list, repr=False, compare=False)
    op: str = field(default="", repr=False, compare=False)
    cache: dict = field(default_factory=dict, repr=False, compare=False)   # executor's decoded form

    def __post_init__(self) -> None:
        self.parts = self.opcode.split(".")
        self.op = self.parts[0]

    def __str__(self) -> str:
        return self.text


@dataclass
class Var:
    """A ``.shared`` / ``.local`` variable: size in bytes (0 for ``extern`` arrays)."""

    name: str
    space: str
    type: str
    align: int
    size: int
    extern: bool = False
    line: int = 0


@dataclass
class Param:
    name: str
    type: str
    line: int = 0


@dataclass
class Kernel:
    name: str
    params: list[Param]
    regs: dict[str, str]                 # register name -> type (".f32", ".pred", ...)
    vars: dict[str, Var]                 # shared/local variables by name
    instrs: list[Instr]
    labels: dict[str, int]               # label -> index of the next instruction
    directives: dict[str, str] = field(default_factory=dict)  # .maxntid / .reqntid ...
    file: str = "<ptx>"
    line: int = 0

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
        if name is None:
            if len(self.kernels) != 1:
                raise Malformed(self.file, f"{len(self.kernels)} entries; name one of {sorted(self.kernels)}")
            return next(iter(self.kernels.values()))
        if name not in self.kernels:
            raise Malformed(self.file, f"no entry {name!r} (have {sorted(self.kernels)})")
        return self.kernels[name]


# ----------------------------------------------------------------------------- opcodes

# Base opcodes (first dotted component) the parser accepts. The executor may still
# reject some of them (e.g. wmma / mma / ldmatrix) with Unsupported.
SUPPORTED = {
    "ld", "st", "mov", "cvta", "cvt", "add", "sub", "mul", "mad", "fma", "div", "rem",
    "neg", "abs", "min", "max", "and", "or", "xor", "not", "shl", "shr", "bfi", "bfe",
    "setp", "selp", "bra", "ret", "exit", "bar", "barrier", "shfl", "vote", "ex2", "lg2",
    "sqrt", "rsqrt", "rcp", "wmma", "mma", "ldmatrix", "membar", "fence", "mul24", "mad24",
    "popc", "clz", "brev", "prmt", "lop3", "copysign", "testp", "slct", "sad",
}
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

_IDENT = r"[A-Za-z_$%][\w$.@]*"
_LABEL_RE = re.compile(r"^\s*([A-Za-z_$][\w$]*)\s*$")
_REGDECL_RE = re.compile(r"^\.reg\s+(?:\.v\d\s+)?(\.\w+)\s+(.+)$")
_VARDECL_RE = re.compile(
    r"^(?P<extern>\.extern\s+)?(?P<space>\.shared|\.local|\.global|\.const)\s+"
    r"(?:\.align\s+(?P<align>\d+)\s+)?(?:\.v\d\s+)?(?P<type>\.\w+)\s+(?P<name>[A-Za-z_$][\w$]*)"
    r"(?P<dims>(?:\s*\[\s*\d*\s*\])*)\s*(?P<init>=.*)?$")
_PARAM_RE = re.compile(r"^\.param\s+(?:\.align\s+\d+\s+)?(\.\w+)\s+(?:\.ptr\s+(?:\.\w+\s+)*)?([A-Za-z_$][\w$]*)(\s*\[\s*\d+\s*\])?$")
_TYPE_SIZE = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
              "b64": 8, "u64": 8, "s64": 8, "f64": 8, "pred": 1}


# ----------------------------------------------------------------------------- lexing


def _strip_comments(src: str, file: str) -> str:
    """Replace comments by spaces, keeping newlines (so line numbers stay right)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c == '"':
            j = src.find('"', i + 1)
            if j < 0:
                raise Malformed(f"{file}:{src.count(chr(10), 0, i) + 1}", "unterminated string")
            out.append(src[i:j + 1])
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise Malformed(f"{file}:{src.count(chr(10), 0, i) + 1}", "unterminated /* comment")
            out.append("".join(ch if ch == "\n" else " " for ch in src[i:j + 2]))
            i = j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _statements(src: str, file: str):
    """Yield (line, kind, text, depth): kind in stmt | label | open | close.

    Outside any brace, a statement ends at a newline (outside parentheses) or ``;``;
    inside, at ``;``. A ``{`` or ``}`` where a statement would start is a scope
    token; braces inside a statement (vector operands) belong to it.
    """
    buf: list[str] = []
    line, start_line, depth, parens, inner = 1, 1, 0, 0, 0

    def flush(kind="stmt"):
        nonlocal buf
        text = "".join(buf).strip()
        buf = []
        if text:
            return (start_line, kind, text, depth)
        return None

    for c in src:
        blank = not "".join(buf).strip()
        if c == "\n":
            if depth == 0 and parens == 0 and not blank:
                item = flush()
                if item:
                    yield item
            else:
                buf.append(" ")
            line += 1
            continue
        if blank:
            start_line = line
            if c in "{}":
                if c == "{":
                    depth += 1
                    yield (line, "open", "{", depth)
                else:
                    if depth == 0:
                        raise Malformed(f"{file}:{line}", "unbalanced '}'")
                    yield (line, "close", "}", depth)
                    depth -= 1
                buf = []
                continue
        if c == "(":
            parens += 1
        elif c == ")":
            parens -= 1
        elif c == "{":
            inner += 1
        elif c == "}":
            inner -= 1
        if c == ";" and inner <= 0:
            inner = 0
            item = flush()
            if item:
                yield item
            continue
        if c == ":" and depth > 0 and inner == 0 and _LABEL_RE.match("".join(buf)):
            yield (start_line, "label", "".join(buf).strip(), depth)
            buf = []
            continue
        buf.append(c)
    item = flush()
    if item:
        if depth > 0:
            raise Malformed(f"{file}:{item[0]}", f"statement without ';': {item[2]!r}")
        yield item
    if depth != 0:
        raise Malformed(f"{file}:{line}", "unbalanced '{' (missing '}' at end of file)")


def _split_top(s: str) -> list[str]:
    """Split at commas that are not inside braces or brackets."""
    out, cur, depth = [], [], 0
    for c in s:
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    tail = "".join(cur).strip()
    if tail or out:
        out.append(tail)
    return out


_INT_RE = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)[uU]?$")


def _int(tok: str) -> int | None:
    if not _INT_RE.match(tok):
        return None
    t = tok.rstrip("uU")
    sign = -1 if t.startswith("-") else 1
    t = t.lstrip("+-")
    if t[:2] in ("0x", "0X"):
        v = int(t[2:], 16)
    elif t[:2] in ("0b", "0B"):
        v = int(t[2:], 2)
    elif len(t) > 1 and t.startswith("0"):
        v = int(t, 8)
    else:
        v = int(t)
    return sign * v


class _Ctx:
    def __init__(self, file: str, line: int, text: str, scope_regs: dict[str, str]):
        self.file, self.line, self.text, self.scope = file, line, " ".join(text.split()), scope_regs

    def err(self, msg: str) -> Malformed:
        return Malformed(f"{self.file}:{self.line}", f"{msg} in `{self.text}`")


def _operand(tok: str, ctx: _Ctx):
    tok = tok.strip()
    if not tok:
        raise ctx.err("empty operand")
    if tok.startswith("{"):
        if not tok.endswith("}"):
            raise ctx.err(f"bad vector operand {tok!r}")
        items = _split_top(tok[1:-1])
        if not items or any(not i for i in items):
            raise ctx.err(f"bad vector operand {tok!r}")
        return Vec(tuple(_operand(i, ctx) for i in items))
    if tok.startswith("["):
        if not tok.endswith("]"):
            raise ctx.err(f"bad memory operand {tok!r}")
        inner = tok[1:-1].replace(" ", "")
        m = re.match(r"^(.*?)(?:\+(-?(?:0[xX][0-9a-fA-F]+|\d+)))?$", inner)
        base_s, off_s = m.group(1), m.group(2)
        if not base_s:
            raise ctx.err(f"bad memory operand {tok!r}")
        base = _operand(base_s, ctx)
        if not isinstance(base, (Reg, Sym, Imm)):
            raise ctx.err(f"bad address {base_s!r}")
        return Mem(base, _int(off_s) if off_s else 0)
    if "|" in tok:
        a, b = tok.split("|", 1)
        ra, rb = _operand(a, ctx), _operand(b, ctx)
        if not (isinstance(ra, Reg) and isinstance(rb, Reg)):
            raise ctx.err(f"bad register pair {tok!r}")
        return Pair(ra, rb)
    if tok.startswith("%"):
        if not re.match(r"^%[\w$.]+$", tok):
            raise ctx.err(f"bad register {tok!r}")
        return Reg(ctx.scope.get(tok, tok))
    m = re.match(r"^0([fFdD])([0-9a-fA-F]+)$", tok)
    if m:
        width = 32 if m.group(1) in "fF" else 64
        if len(m.group(2)) != width // 4:
            raise ctx.err(f"bad float literal {tok!r}")
        return FImm(int(m.group(2), 16), width)
    v = _int(tok)
    if v is not None:
        return Imm(v)
    if re.match(r"^[+-]?\d+\.\d*([eE][+-]?\d+)?$", tok):
        raise ctx.err(f"decimal float literal {tok!r} (nvcc writes 0f/0d hex)")
    if re.match(r"^[A-Za-z_$][\w$]*$", tok):
        return Sym(tok)
    raise ctx.err(f"bad operand {tok!r}")


def _reg_names(decl: str, ctx: _Ctx) -> list[str]:
    names = []
    for part in _split_top(decl):
        m = re.match(r"^(%[\w$]+)<(\d+)>$", part)
        if m:
            names.extend(f"{m.group(1)}{i}" for i in range(int(m.group(2))))
        elif re.match(r"^%[\w$]+$", part):
            names.append(part)
        else:
            raise ctx.err(f"bad register declaration {part!r}")
    return names


def _check_unsupported(opcode: str, ctx: _Ctx) -> None:
    base = opcode.split(".", 1)[0]
    for key in (".".join(opcode.split(".")[:2]), base):
        if key in UNSUPPORTED:
            raise Unsupported(f"{ctx.file}:{ctx.line}: unsupported PTX instruction "
                              f"`{opcode}` ({UNSUPPORTED[key]}) in `{ctx.text}`")
    if base not in SUPPORTED:
        raise Unsupported(f"{ctx.file}:{ctx.line}: unsupported PTX instruction `{opcode}` in `{ctx.text}`")


def _var(text: str, ctx: _Ctx) -> Var:
    m = _VARDECL_RE.match(text)
    if not m:
        raise ctx.err("bad variable declaration")
    if m.group("init"):
        raise Unsupported(f"{ctx.file}:{ctx.line}: initialized variable in `{ctx.text}`")
    space = m.group("space")[1:]
    if space in ("global", "const"):
        raise Unsupported(f"{ctx.file}:{ctx.line}: .{space} variable in `{ctx.text}`")
    ty = m.group("type")[1:]
    if ty not in _TYPE_SIZE:
        raise ctx.err(f"unknown type .{ty}")
    dims = re.findall(r"\[\s*(\d*)\s*\]", m.group("dims") or "")
    extern = bool(m.group("extern"))
    size = _TYPE_SIZE[ty]
    for d in dims:
        if d == "":
            if not extern:
                raise ctx.err("unsized array that is not extern")
            size = 0
        else:
            size *= int(d)
    return Var(m.group("name"), space, ty, int(m.group("align") or _TYPE_SIZE[ty]), size, extern, ctx.line)


# ----------------------------------------------------------------------------- parsing


def parse(src: str, file: str = "<ptx>") -> Module:
    """Parse PTX text into a ``Module``."""
    stmts = list(_statements(_strip_comments(src, file), file))
    version = target = None
    address_size = 64
    kernels: dict[str, Kernel] = {}
    mvars: dict[str, Var] = {}
    i = 0
    while i < len(stmts):
        line, kind, text, depth = stmts[i]
        ctx = _Ctx(file, line, text, {})
        if kind != "stmt":
            raise ctx.err(f"unexpected {text!r} outside an entry")
        head = text.split(None, 1)
        if text.startswith(".version"):
            version = head[1].strip() if len(head) > 1 else None
            if not version or not re.match(r"^\d+\.\d+$", version):
                raise ctx.err("bad .version")
        elif text.startswith(".target"):
            target = head[1].strip() if len(head) > 1 else None
            if not target:
                raise ctx.err("bad .target")
        elif text.startswith(".address_size"):
            v = _int(head[1].strip()) if len(head) > 1 else None
            if v not in (32, 64):
                raise ctx.err("bad .address_size")
            address_size = v
        elif re.match(r"^(\.visible\s+|\.weak\s+)?\.entry\b", text):
            k, i = _entry(stmts, i, file)
            if k.name in kernels:
                raise ctx.err(f"duplicate entry {k.name}")
            kernels[k.name] = k
            continue
        elif re.match(r"^(\.visible\s+|\.extern\s+|\.weak\s+)?\.func\b", text):
            raise Unsupported(f"{file}:{line}: device function (.func) in `{text[:60]}`")
        elif re.match(r"^(\.extern\s+|\.visible\s+)*\.(shared|global|const|local)\b", text):
            v = _var(re.sub(r"^\.visible\s+", "", text), ctx)
            mvars[v.name] = v
        elif text.startswith(".pragma") or text.startswith(".file") or text.startswith(".section"):
            pass
        else:
            raise ctx.err("unexpected statement at module level")
        i += 1
    if version is None or target is None:
        raise Malformed(file, "missing .version or .target directive")
    if not kernels:
        raise Malformed(file, "no .entry kernel")
    mod = Module(version, target, address_size, kernels, mvars, file)
    for k in kernels.values():
        for v in mvars.values():
            k.vars.setdefault(v.name, v)
        _resolve(k)
    return mod


def _entry(stmts, i: int, file: str) -> tuple[Kernel, int]:
    line, _, text, _ = stmts[i]
    ctx = _Ctx(file, line, text, {})
    m = re.match(r"^(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$][\w$]*)\s*(?:\((.*)\))?\s*$", text, re.S)
    if not m:
        raise ctx.err("bad .entry header")
    name, plist = m.group(1), m.group(2) or ""
    params = []
    for p in _split_top(plist):
        pm = _PARAM_RE.match(" ".join(p.split()))
        if not pm:
            raise ctx.err(f"bad parameter {p!r}")
        params.append(Param(pm.group(2), pm.group(1)[1:], line))
    directives: dict[str, str] = {}
    i += 1
    while i < len(stmts) and stmts[i][1] == "stmt" and stmts[i][3] == 0:
        t = stmts[i][2]
        dm = re.match(r"^\.(maxntid|reqntid|minnctapersm|maxnctapersm|maxnreg|noreturn|pragma)\b\s*(.*)$", t)
        if not dm:
            raise _Ctx(file, stmts[i][0], t, {}).err("expected '{' or a performance directive after .entry")
        directives[dm.group(1)] = dm.group(2)
        i += 1
    if i >= len(stmts) or stmts[i][1] != "open":
        raise ctx.err(f"entry {name} has no body")
    i += 1
    regs: dict[str, str] = {}
    kvars: dict[str, Var] = {}
    instrs: list[Instr] = []
    labels: dict[str, int] = {}
    scopes: list[dict[str, str]] = [{}]
    scope_id = 0
    while True:
        if i >= len(stmts):
            raise Malformed(f"{file}:{line}", f"entry {name}: missing closing '}}'")
        sl, kind, t, depth = stmts[i]
        sctx = _Ctx(file, sl, t, scopes[-1])
        i += 1
        if kind == "open":
            scope_id += 1
            scopes.append(dict(scopes[-1], __id__=str(scope_id)))
            continue
        if kind == "close":
            scopes.pop()
            if not scopes:
                break
            continue
        if kind == "label":
            if t in labels:
                raise sctx.err(f"duplicate label {t}")
            labels[t] = len(instrs)
            continue
        if t.startswith("."):
            if t.startswith(".reg"):
                rm = _REGDECL_RE.match(" ".join(t.split()))
                if not rm:
                    raise sctx.err("bad .reg declaration")
                for r in _reg_names(rm.group(2), sctx):
                    if len(scopes) > 1:
                        new = f"{r}@{scopes[-1]['__id__']}"
                        scopes[-1][r] = new
                        r = new
                    regs[r] = rm.group(1)
            elif t.startswith(".pragma"):
                pass
            elif re.match(r"^(\.extern\s+)?\.(shared|local|global|const)\b", t):
                v = _var(t, sctx)
                if v.name in kvars:
                    raise sctx.err(f"duplicate variable {v.name}")
                kvars[v.name] = v
            elif re.match(r"^\.(loc|file)\b", t):
                pass
            else:
                raise Unsupported(f"{file}:{sl}: unsupported directive `{t.split()[0]}` in `{t}`")
            continue
        instrs.append(_instr(t, sctx, len(instrs)))
    k = Kernel(name, params, regs, kvars, instrs, labels, directives, file, line)
    return k, i


def _instr(text: str, ctx: _Ctx, index: int) -> Instr:
    guard = None
    body = text
    gm = re.match(r"^@(!?)(%[\w$]+)\s+(.*)$", body, re.S)
    if gm:
        guard = (ctx.scope.get(gm.group(2), gm.group(2)), gm.group(1) == "!")
        body = gm.group(3)
    elif body.startswith("@"):
        raise ctx.err("bad guard")
    parts = body.split(None, 1)
    opcode = parts[0]
    if not re.match(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$", opcode):
        raise ctx.err(f"bad opcode {opcode!r}")
    _check_unsupported(opcode, ctx)
    ops_text = parts[1] if len(parts) > 1 else ""
    toks = _split_top(ops_text) if ops_text.strip() else []
    operands = [_operand(tok, ctx) for tok in toks]
    return Instr(opcode, operands, guard, ctx.line, " ".join(text.split()), index)


_ARITY = {
    **{op: (3, 3) for op in ("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min",
                             "max", "copysign", "mul24")},
    **{op: (4, 4) for op in ("mad", "fma", "selp", "bfe", "mad24", "slct")},
    **{op: (2, 2) for op in ("neg", "not", "abs", "mov", "cvt", "cvta", "ex2", "lg2", "sqrt", "rsqrt",
                             "rcp", "popc", "clz", "brev", "ld", "st", "ldu", "testp")},
    "bfi": (5, 5), "setp": (3, 4), "bra": (1, 1), "ret": (0, 0), "exit": (0, 0), "shfl": (4, 5),
    "vote": (2, 3), "prmt": (4, 4), "lop3": (5, 5),
}


def _check_arity(ins: Instr, file: str) -> None:
    if ins.op in ("bar", "barrier"):
        lo, hi = (1, 1) if "warp" in ins.parts else (0, 2)
    elif ins.op in _ARITY:
        lo, hi = _ARITY[ins.op]
    else:
        return
    if not lo <= len(ins.operands) <= hi:
        want = str(lo) if lo == hi else f"{lo}-{hi}"
        raise Malformed(f"{file}:{ins.line}", f"`{ins.opcode}` takes {want} operands, got "
                        f"{len(ins.operands)} in `{ins.text}`")
    if ins.op in ("ld", "ldu") and not isinstance(ins.operands[1], Mem):
        raise Malformed(f"{file}:{ins.line}", f"`{ins.opcode}` needs a [memory] source in `{ins.text}`")
    if ins.op == "st" and not isinstance(ins.operands[0], Mem):
        raise Malformed(f"{file}:{ins.line}", f"`{ins.opcode}` needs a [memory] destination in `{ins.text}`")


def _resolve(k: Kernel) -> None:
    """Check labels, registers and symbols referenced by instructions."""
    params = {p.name for p in k.params}
    special = re.compile(r"^%(tid|ntid|ctaid|nctaid)\.[xyz]$|^%(laneid|warpid|nwarpid|warpsize|smid|nsmid|clock|clock64|globaltimer|lanemask_\w+)$")

    def err(ins: Instr, msg: str) -> Malformed:
        return Malformed(f"{k.file}:{ins.line}", f"{msg} in `{ins.text}`")

    def check(ins: Instr, o) -> None:
        if isinstance(o, Reg):
            if o.name not in k.regs and not special.match(o.name):
                raise err(ins, f"undeclared register {o.name}")
        elif isinstance(o, Sym):
            if ins.op == "bra":
                if o.name not in k.labels:
                    raise err(ins, f"unknown label {o.name}")
            elif o.name not in k.vars and o.name not in params and o.name not in k.labels:
                raise err(ins, f"unknown symbol {o.name}")
        elif isinstance(o, Mem):
            check(ins, o.base)
        elif isinstance(o, Vec):
            for x in o.items:
                check(ins, x)
        elif isinstance(o, Pair):
            check(ins, o.first)
            check(ins, o.second)

    for ins in k.instrs:
        _check_arity(ins, k.file)
        if ins.guard and ins.guard[0] not in k.regs:
            raise err(ins, f"undeclared predicate {ins.guard[0]}")
        if ins.op == "bra" and (len(ins.operands) != 1 or not isinstance(ins.operands[0], Sym)):
            raise err(ins, "bra takes one label")
        for o in ins.operands:
            check(ins, o)


def parse_file(path) -> Module:
    from pathlib import Path

    p = Path(path)
    try:
        src = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise Malformed(str(p), f"cannot read PTX: {e}") from None
    return parse(src, str(p))
