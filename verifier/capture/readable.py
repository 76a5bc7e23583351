"""The readable form of a graph (``GraphModule.print_readable()``, as torch.export and make_fx print it)
into an FX module, without running any of it: the text is parsed by ``ast`` and rebuilt from an
allow-list (docs/cases.md, "Saved programs"). Inputs are named by their placeholder names
(``p_fc1_weight``, ``x``); each carries its dtype and shape in its annotation (``"f32[2, 4]"``)."""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Any

import torch

from certificates.errors import Malformed
from certificates.limits import read_bytes

from .saved import NAMESPACES, _IDENT

DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8,
          "b8": torch.bool}
_ANNOT = re.compile(r"([a-z0-9]+)\[([0-9, ]*)\](?:\[([0-9, ]*)\])?[a-z:0-9]*\Z")
_TORCH_ATTRS = {**{str(d).split(".")[1]: d for d in DTYPES.values()}, "strided": torch.strided,
                "contiguous_format": torch.contiguous_format, "preserve_format": torch.preserve_format}
_FLOATS = {"inf": math.inf, "nan": math.nan}


class _Reader:
    def __init__(self, path: str) -> None:
        self.path, self.graph, self.env = path, torch.fx.Graph(), {}

    def bad(self, line: int, msg: str) -> Malformed:
        return Malformed(self.path, f"line {line}: {msg}")

    def meta(self, a: ast.arg) -> tuple[tuple[int, ...], tuple[int, ...], torch.dtype]:
        ann = a.annotation.value if isinstance(a.annotation, ast.Constant) else None
        m = _ANNOT.match(ann) if isinstance(ann, str) else None
        if m is None or m.group(1) not in DTYPES:
            raise self.bad(a.lineno, f"input '{a.arg}' needs an annotation like \"f32[2, 4]\" (dtype and shape)")
        shape = tuple(int(x) for x in m.group(2).replace(" ", "").split(",") if x)
        stride = tuple(int(x) for x in m.group(3).replace(" ", "").split(",") if x) if m.group(3) else \
            tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
        return shape, stride, DTYPES[m.group(1)]

    def value(self, e: ast.expr, line: int) -> Any:
        """An argument: a tensor name, a number, a string, None, a dtype or format, a list of these."""
        if isinstance(e, ast.Name):
            if e.id in self.env:
                return self.env[e.id]
            if e.id in _FLOATS:
                return _FLOATS[e.id]
            raise self.bad(line, f"'{e.id}' is not defined before this line")
        if isinstance(e, ast.Constant) and (e.value is None or type(e.value) in (bool, int, float, str)):
            return e.value
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            v = self.value(e.operand, line)
            if type(v) in (int, float):
                return -v
        if isinstance(e, (ast.List, ast.Tuple)):
            return [self.value(x, line) for x in e.elts]
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "torch" and \
                e.attr in _TORCH_ATTRS:
            return _TORCH_ATTRS[e.attr]
        if isinstance(e, ast.Call) and ast.unparse(e.func) == "torch.device" and not e.args and \
                [k.arg for k in e.keywords] == ["type"] and ast.unparse(e.keywords[0].value) == "'cpu'":
            return torch.device("cpu")
        raise self.bad(line, f"argument {ast.unparse(e)[:60]!r} is not a tensor name, number, string, dtype or list")

    def target(self, f: ast.expr, line: int):
        parts = ast.unparse(f).split(".")
        if len(parts) != 5 or parts[:2] != ["torch", "ops"] or not all(_IDENT.match(p) for p in parts[2:]):
            raise self.bad(line, f"call of {ast.unparse(f)[:60]!r}: only operators torch.ops.<ns>.<op>.<overload>")
        if parts[2] not in NAMESPACES:
            raise self.bad(line, f"operator of namespace '{parts[2]}' (custom ops are not supported)")
        op = getattr(getattr(getattr(torch.ops, parts[2]), parts[3], None), parts[4], None)
        if not isinstance(op, torch._ops.OpOverload):
            raise self.bad(line, f"unknown operator '{'.'.join(parts)}'")
        return op

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is None:
            return   # ``x = y = None``: the printer's deallocation note
        target = s.target if isinstance(s, ast.AnnAssign) else s.targets[0] if isinstance(s, ast.Assign) and \
            len(s.targets) == 1 else None
        if not isinstance(target, ast.Name) or target.id in self.env or not _IDENT.match(target.id):
            raise self.bad(s.lineno, f"expected 'name = torch.ops...(...)', got {ast.unparse(s)[:60]!r}")
        v = s.value
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and isinstance(v.slice, ast.Constant) \
                and type(v.slice.value) is int and v.value.id in self.env:
            self.env[target.id] = self.graph.call_function(operator.getitem, (self.env[v.value.id], v.slice.value))
            return
        if isinstance(v, ast.Attribute) and ast.unparse(v).startswith("self."):
            raise self.bad(s.lineno, f"'{ast.unparse(v)}' is a tensor constant, whose values the readable form "
                                     "does not hold (save the program with torch.export.save)")
        if not isinstance(v, ast.Call):
            raise self.bad(s.lineno, f"expected an operator call, got {ast.unparse(v)[:60]!r}")
        op = self.target(v.func, s.lineno)
        args = tuple(self.value(a, s.lineno) for a in v.args)
        kwargs = {k.arg: self.value(k.value, s.lineno) for k in v.keywords if k.arg is not None}
        if len(kwargs) != len(v.keywords):
            raise self.bad(s.lineno, "** arguments are not supported")
        self.env[target.id] = self.graph.call_function(op, args, kwargs)

    def read(self) -> tuple[torch.fx.GraphModule, list[tuple[str, str, Any, Any]]]:
        text = read_bytes(self.path).decode("utf-8", errors="replace")
        text = re.sub(r"^class\s+<[^>\n]*>", "class _", text, count=1, flags=re.M)   # make_fx's "<lambda>"
        try:
            tree = ast.parse(text)
        except SyntaxError as e:
            raise Malformed(self.path, f"line {e.lineno}: not the readable form of a graph ({e.msg})") from None
        cls = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        fwd = [f for f in (cls[0].body if len(cls) == 1 else [])
               if isinstance(f, ast.FunctionDef) and f.name == "forward"]
        if len(fwd) != 1 or any(not isinstance(n, (ast.ClassDef, ast.Import, ast.ImportFrom)) for n in tree.body):
            raise Malformed(self.path, "expected one 'class ...(torch.nn.Module)' with a 'forward' (print_readable)")
        fn, inputs = fwd[0], []
        for a in fn.args.args[1:]:
            shape, stride, dt = self.meta(a)
            self.env[a.arg] = ph = self.graph.placeholder(a.arg)
            inputs.append((a.arg, "user_input", (shape, stride, dt), ph))
        *body, last = fn.body or [None]
        for s in body:
            self.statement(s)
        if not isinstance(last, ast.Return) or last.value is None:
            raise Malformed(self.path, "the forward must end with 'return'")
        outs = self.value(last.value, last.lineno)
        outs = outs if isinstance(outs, list) else [outs]
        if not outs or not all(isinstance(o, torch.fx.Node) for o in outs):
            raise self.bad(last.lineno, "the forward must return tensors")
        self.graph.output(tuple(outs))
        return torch.fx.GraphModule(torch.nn.Module(), self.graph), inputs


def readable_module(path: str) -> tuple[torch.fx.GraphModule, list[tuple[str, str, Any, Any]]]:
    """The FX module of a readable graph and its inputs ``(name, kind, (shape, stride, dtype), placeholder)``."""
    return _Reader(path).read()
