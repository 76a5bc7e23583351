"""Saved ``torch.export`` programs (``.pt2``) into a rank's program, without unpickling.

A ``.pt2`` (``torch.export.save``) is a zip archive. Only its JSON parts are read:
``<archive>/models/<name>.json`` (the serialized graph, its signature and every tensor's
dtype and shape) and, for lifted tensor constants, ``data/constants/model_constants_config.json``
with the constant's raw storage bytes read by its JSON-declared dtype, shape and strides.
Weights are never read (parameters and buffers are graph inputs); anything stored as a
pickle (``data.pkl``, ``use_pickle`` constants, sample inputs) is refused or skipped.

The graph is rebuilt node by node from an allow-list of argument kinds and operator
namespaces (no symbolic shapes, no custom objects, no subgraphs: nothing in the file is
ever evaluated as code), then re-traced with ``make_fx`` over fake tensors, like a live
capture, so in-place ops and views get their aliasing facts and the same decompositions
and converter (``convert.py``) apply. Every defect raises ``Malformed(path, one line)``.
"""

from __future__ import annotations

import operator
import os
import re
import stat
import zipfile
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch._subclasses import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from certificates.errors import Malformed
from certificates.limits import parse_json

from .convert import CaptureError, Converter, Input, RankProgram, dtype_name, ir_name
from .decomp import DECOMPOSITIONS

MAX_MEMBER = 64 * 2**20        # bytes of one JSON member
MAX_CONSTANT = 2**20           # bytes of one tensor constant read from the archive
NAMESPACES = {"aten", "_c10d_functional", "prims"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# torch/_export/serde/schema.py ScalarType codes
DTYPES = {1: torch.uint8, 2: torch.int8, 3: torch.int16, 4: torch.int32, 5: torch.int64, 6: torch.float16,
          7: torch.float32, 8: torch.float64, 12: torch.bool, 13: torch.bfloat16}
LAYOUTS = {7: torch.strided}
MEMORY_FORMATS = {1: torch.contiguous_format, 2: torch.channels_last, 4: torch.preserve_format}


@dataclass
class Archive:
    """The JSON parts of one ``.pt2``."""

    path: str
    program: dict            # models/<name>.json
    constants: dict          # data/constants/model_constants_config.json ("config"), or {}
    zf: zipfile.ZipFile
    prefix: str


def read_archive(path: str) -> Archive:
    """Open ``path`` as a ``torch.export.save`` archive (refusing pickles)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise Malformed(path, "not a regular file (a FIFO, device or directory)")
        zf = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise Malformed(path, "no such file") from None
    except (zipfile.BadZipFile, OSError) as e:
        raise Malformed(path, f"not a zip archive ({e}): expected a .pt2 written by torch.export.save") from None
    names = zf.namelist()
    models = [n for n in names if re.fullmatch(r"[^/]+/models/[^/]+\.json", n)]
    if not models:
        pkl = next((n for n in names if n.endswith(".pkl")), None)
        what = f"a pickle ('{pkl}')" if pkl else f"{len(names)} members"
        raise Malformed(path, f"holds {what} and no serialized torch.export graph (models/*.json): pvcert "
                              "never unpickles; save the program with torch.export.save")
    if len(models) > 1:
        raise Malformed(path, f"holds {len(models)} programs ({', '.join(models)}): save one program per file")
    prefix = models[0].split("/", 1)[0]
    order = _member(zf, path, f"{prefix}/byteorder", required=False)
    if order is not None and order.strip() != b"little":
        raise Malformed(path, f"byteorder '{order.decode(errors='replace')}': only little-endian archives")
    cfg = _json(zf, path, f"{prefix}/data/constants/model_constants_config.json", required=False) or {}
    return Archive(path, _json(zf, path, models[0]), cfg.get("config", {}) if isinstance(cfg, dict) else {},
                   zf, prefix)


def _member(zf: zipfile.ZipFile, path: str, name: str, required: bool = True, limit: int = MAX_MEMBER):
    try:
        info = zf.getinfo(name)
    except KeyError:
        if required:
            raise Malformed(path, f"member '{name}' is missing") from None
        return None
    if info.file_size > limit:
        raise Malformed(path, f"member '{name}' is {info.file_size} bytes (limit {limit})")
    try:
        with zf.open(info) as f:
            data = f.read(limit + 1)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise Malformed(path, f"member '{name}' cannot be read: {e}") from None
    if len(data) > limit:
        raise Malformed(path, f"member '{name}' is larger than its declared size")
    return data


def _json(zf, path: str, name: str, required: bool = True):
    data = _member(zf, path, name, required)
    if data is None:
        return None
    try:
        return parse_json(data.decode("utf-8"), f"{path}: {name}")
    except UnicodeDecodeError:
        raise Malformed(path, f"member '{name}' is not UTF-8") from None


# ---------------------------------------------------------------- the graph


class _Builder:
    """An FX graph from the serialized graph of an archive (no code from the file runs)."""

    def __init__(self, ar: Archive, where: str) -> None:
        self.ar, self.where = ar, where
        prog = ar.program
        try:
            self.gmod = prog["graph_module"]
            self.sg = self.gmod["graph"]
            self.tvals = self.sg["tensor_values"]
        except (KeyError, TypeError):
            raise self.bad("not a serialized ExportedProgram (graph_module.graph.tensor_values)") from None
        for k in ("sym_int_values", "sym_bool_values", "sym_float_values", "custom_obj_values"):
            if self.sg.get(k):
                raise self.bad(f"graph has {k.replace('_values', '')} values (symbolic shapes or custom objects: "
                               "export with static shapes)")
        if prog.get("range_constraints"):
            raise self.bad("range_constraints: dynamic shapes are not supported (export with static shapes)")
        self.graph = torch.fx.Graph()
        self.env: dict[str, torch.fx.Node] = {}
        self.constants: dict[str, torch.Tensor] = {}

    def bad(self, msg: str) -> Malformed:
        return Malformed(self.ar.path, msg)

    # ---- tensors
    def meta(self, name: str) -> tuple[tuple[int, ...], tuple[int, ...], torch.dtype]:
        tm = self.tvals.get(name) if isinstance(self.tvals, dict) else None
        if not isinstance(tm, dict):
            raise self.bad(f"tensor '{name}' has no tensor_values entry")
        return self.tensor_meta(tm, f"tensor '{name}'")

    def tensor_meta(self, tm: dict, what: str):
        dt = DTYPES.get(tm.get("dtype"))
        if dt is None:
            raise self.bad(f"{what}: dtype code {tm.get('dtype')!r} is not supported")
        if LAYOUTS.get(tm.get("layout", 7)) is None:
            raise self.bad(f"{what}: layout {tm.get('layout')!r} is not strided")
        return self.ints(tm.get("sizes"), f"{what} sizes"), self.ints(tm.get("strides"), f"{what} strides"), dt

    def ints(self, xs, what: str) -> tuple[int, ...]:
        if not isinstance(xs, list):
            raise self.bad(f"{what}: expected a list")
        out = []
        for x in xs:
            v = x.get("as_int") if isinstance(x, dict) and set(x) == {"as_int"} else None
            if not isinstance(v, int) or isinstance(v, bool):
                raise self.bad(f"{what}: {x!r} is not a concrete size (export with static shapes)")
            out.append(v)
        return tuple(out)

    # ---- arguments
    def arg(self, a: Any, what: str):
        if not isinstance(a, dict) or len(a) != 1:
            raise self.bad(f"{what}: malformed argument {str(a)[:80]}")
        (kind, v), = a.items()
        if kind == "as_none":
            return None
        if kind == "as_tensor":
            return self.tensor(v, what)
        if kind in ("as_tensors", "as_optional_tensors"):
            if not isinstance(v, list):
                raise self.bad(f"{what}: {kind} is not a list")
            return [self.arg(x, what) if kind == "as_optional_tensors" else self.tensor(x, what) for x in v]
        if kind == "as_optional_tensor":
            return self.arg(v, what)
        if kind in ("as_int", "as_float", "as_bool", "as_string"):
            want = {"as_int": int, "as_float": (int, float), "as_bool": bool, "as_string": str}[kind]
            if not isinstance(v, want) or (kind != "as_bool" and isinstance(v, bool)):
                raise self.bad(f"{what}: {kind} {v!r}")
            return float(v) if kind == "as_float" else v
        if kind in ("as_ints", "as_floats", "as_bools", "as_strings"):
            if not isinstance(v, list):
                raise self.bad(f"{what}: {kind} is not a list")
            return [self.arg({kind[:-1]: x}, what) for x in v]
        if kind == "as_sym_int":
            return self.ints([v], what)[0]
        if kind == "as_sym_ints":
            return list(self.ints(v, what))
        if kind in ("as_scalar_type", "as_layout", "as_memory_format"):
            table = {"as_scalar_type": DTYPES, "as_layout": LAYOUTS, "as_memory_format": MEMORY_FORMATS}[kind]
            if table.get(v) is None:
                raise self.bad(f"{what}: {kind} code {v!r} is not supported")
            return table[v]
        if kind == "as_device":
            if not isinstance(v, dict) or v.get("type") not in ("cpu", "cuda", "meta"):
                raise self.bad(f"{what}: device {v!r}")
            return torch.device("cpu")   # values are never computed; shapes do not depend on the device
        raise self.bad(f"{what}: argument kind '{kind}' is not supported (symbolic values, subgraphs and "
                       "custom objects are refused)")

    def tensor(self, v, what: str) -> torch.fx.Node:
        name = v.get("name") if isinstance(v, dict) else None
        if name not in self.env:
            raise self.bad(f"{what}: tensor '{name}' is used before it is defined")
        return self.env[name]

    # ---- operators
    def target(self, s: Any, what: str):
        if s == "_operator.getitem":
            raise self.bad(f"{what}: a serialized getitem node")
        parts = s.split(".") if isinstance(s, str) else []
        if len(parts) != 5 or parts[:2] != ["torch", "ops"] or not all(
                _IDENT.match(p) and not p.startswith("__") for p in parts[2:]):
            raise self.bad(f"{what}: target {str(s)[:80]!r} is not an operator torch.ops.<namespace>.<op>.<overload>")
        if parts[2] not in NAMESPACES:
            raise self.bad(f"{what}: operator '{s}' of namespace '{parts[2]}' (custom ops are not supported)")
        try:
            op = getattr(getattr(getattr(torch.ops, parts[2]), parts[3]), parts[4])
        except (AttributeError, RuntimeError):
            raise self.bad(f"{what}: unknown operator '{s}'") from None
        if not isinstance(op, torch._ops.OpOverload):
            raise self.bad(f"{what}: '{s}' is not an operator overload")
        return op

    def node(self, i: int, n: Any) -> None:
        if not isinstance(n, dict):
            raise self.bad(f"node #{i}: not an object")
        what = f"node '{n.get('name', i)}' ({n.get('target')})"
        op = self.target(n.get("target"), what)
        args, kwargs = [], {}
        for inp in n.get("inputs", []):
            if not isinstance(inp, dict) or not isinstance(inp.get("name"), str):
                raise self.bad(f"{what}: malformed input")
            val = self.arg(inp.get("arg"), f"{what} argument '{inp['name']}'")
            if inp.get("kind", 1) == 2:
                kwargs[inp["name"]] = val
            elif kwargs:
                raise self.bad(f"{what}: positional argument '{inp['name']}' after a keyword")
            else:
                args.append(val)
        fx = self.graph.call_function(op, tuple(args), kwargs)
        outs = n.get("outputs", [])
        if not isinstance(outs, list):
            raise self.bad(f"{what}: outputs are not a list")
        if not outs:   # an assertion (``_assert_tensor_metadata``): traced, dropped as dead code
            return
        single = len(outs) == 1 and isinstance(outs[0], dict) and "as_tensor" in outs[0]
        if single:
            self.define(outs[0]["as_tensor"], fx, what)
            return
        flat = outs[0]["as_tensors"] if len(outs) == 1 and isinstance(outs[0], dict) and "as_tensors" in outs[0] \
            else outs
        for k, o in enumerate(flat):
            t = o.get("as_tensor", o) if isinstance(o, dict) else None
            if isinstance(o, dict) and "as_none" in o:
                continue
            self.define(t, self.graph.call_function(operator.getitem, (fx, k)), what)

    def define(self, t: Any, fx: torch.fx.Node, what: str) -> None:
        name = t.get("name") if isinstance(t, dict) else None
        if not isinstance(name, str) or name in self.env:
            raise self.bad(f"{what}: output {name!r} is not a fresh tensor name")
        self.env[name] = fx

    # ---- the whole graph
    def build(self) -> tuple[torch.fx.GraphModule, list[tuple[str, str, Any]]]:
        """The FX module and its inputs: ``(IR name, kind, fake-tensor meta)`` per placeholder."""
        sig = self.gmod.get("signature", {})
        specs = sig.get("input_specs") if isinstance(sig, dict) else None
        if not isinstance(specs, list):
            raise self.bad("graph signature has no input_specs")
        inputs = []
        for s in specs:
            (kind, v), = s.items() if isinstance(s, dict) and len(s) == 1 else ((None, None),)
            arg = v.get("arg") if isinstance(v, dict) else None
            name = (arg.get("as_tensor", arg) if isinstance(arg, dict) else {}).get("name")
            if kind == "user_input" and isinstance(arg, dict) and "as_tensor" not in arg:
                raise self.bad(f"input {str(arg)[:60]}: a non-tensor user input (export it as a constant)")
            if not isinstance(name, str) or not _IDENT.match(name):
                raise self.bad(f"input spec {str(s)[:80]}: malformed")
            if kind == "tensor_constant":
                self.constant(name, v.get("tensor_constant_name"))
                continue
            if kind not in ("user_input", "parameter", "buffer"):
                raise self.bad(f"input '{name}' of kind '{kind}' is not supported")
            ir = name if kind == "user_input" else ir_name(str(v.get(f"{kind}_name", name)))
            self.env[name] = ph = self.graph.placeholder(name)
            inputs.append((ir, kind, self.meta(name), ph))
        nodes = self.sg.get("nodes")
        if not isinstance(nodes, list):
            raise self.bad("graph has no node list")
        for i, n in enumerate(nodes):
            self.node(i, n)
        outs = []
        for s in sig.get("output_specs", []):
            (kind, v), = s.items() if isinstance(s, dict) and len(s) == 1 else ((None, None),)
            if kind not in ("user_output", "loss_output"):
                raise self.bad(f"output of kind '{kind}' (a mutated buffer or input): export a program "
                               "without state updates")
            arg = v.get("arg") if isinstance(v, dict) else None
            if not isinstance(arg, dict) or "as_tensor" not in arg:
                raise self.bad(f"output {str(arg)[:60]}: not a tensor")
            outs.append(self.tensor(arg["as_tensor"], "output"))
        if not outs:
            raise self.bad("the program has no tensor outputs")
        self.graph.output(tuple(outs))
        root = torch.nn.Module()
        for k, t in self.constants.items():
            root.register_buffer(k, t)
        return torch.fx.GraphModule(root, self.graph), inputs

    def constant(self, name: str, fqn: Any) -> None:
        """A lifted tensor constant: its raw storage bytes read by the JSON-declared dtype and shape."""
        entry = self.ar.constants.get(fqn) if isinstance(fqn, str) else None
        what = f"tensor constant '{fqn}'"
        if not isinstance(entry, dict):
            raise self.bad(f"{what}: not in data/constants/model_constants_config.json")
        if entry.get("use_pickle") is not False:
            raise self.bad(f"{what} is stored as a pickle: pvcert never unpickles (make it a buffer or an input)")
        shape, stride, dt = self.tensor_meta(entry.get("tensor_meta") or {}, what)
        off = self.ints([(entry.get("tensor_meta") or {}).get("storage_offset", {"as_int": 0})], what)[0]
        path_name = entry.get("path_name")
        if not isinstance(path_name, str) or not _IDENT.match(path_name):
            raise self.bad(f"{what}: malformed path_name")
        data = _member(self.ar.zf, self.ar.path, f"{self.ar.prefix}/data/constants/{path_name}",
                       limit=MAX_CONSTANT)
        item = torch.empty((), dtype=dt).element_size()
        need = (off + sum((s - 1) * st for s, st in zip(shape, stride)) + 1) * item if all(shape) else 0
        if len(data) % item or len(data) < need or min(stride, default=0) < 0:
            raise self.bad(f"{what}: {len(data)} bytes do not hold shape {list(shape)} strides {list(stride)}")
        flat = torch.frombuffer(bytearray(data), dtype=dt) if data else torch.empty(0, dtype=dt)
        attr = f"_pvcert_const_{len(self.constants)}"
        self.constants[attr] = flat.as_strided(shape, stride, off).clone()
        self.env[name] = self.graph.get_attr(attr)


def rank_program(path: str, rank: int, where: str, groups: Callable[[str], list[int]],
                 ranges: dict[str, dict]) -> RankProgram:
    """One saved program as rank ``rank``'s program (collective groups resolved by ``groups``)."""
    if path.endswith((".txt", ".py")):   # the readable form (print_readable): capture/readable.py
        from .readable import readable_module

        gm, inputs = readable_module(path)
    else:
        ar = read_archive(path)
        try:
            gm, inputs = _Builder(ar, where).build()
        finally:
            ar.zf.close()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        example = [torch.empty_strided(shape, stride, dtype=dt) for _, _, (shape, stride, dt), _ in inputs]
    try:
        traced = make_fx(torch.fx.Interpreter(gm).run, tracing_mode="fake", decomposition_table=DECOMPOSITIONS,
                         _allow_non_fake_inputs=True)(*example)
    except Malformed:
        raise
    except Exception as e:   # an op rejecting its serialized arguments, ...
        msg = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        raise Malformed(path, f"re-tracing the saved graph failed: {type(e).__name__}: {msg}") from None
    in_specs = []
    for ir, kind, (shape, _, dt), _ in inputs:
        decl = ranges.get(ir, {})
        rng = decl.get("range")
        role = decl.get("role") or ("parameter" if kind == "parameter" else "buffer" if kind == "buffer" else
                                    "activation" if dt.is_floating_point else "index")
        if kind == "user_input" and not dt.is_floating_point and dt != torch.bool and rng is None:
            raise Malformed(path, f"integer input '{ir}' needs a value range: add \"inputs\": {{\"{ir}\": "
                                  "{\"range\": [lo, hi]}} to the relation file")
        in_specs.append(Input(ir, shape, dtype_name(dt, where), role, tuple(rng) if rng else None))
    n_out = len(next(n for n in traced.graph.nodes if n.op == "output").args[0])
    names = ["out"] if n_out == 1 else [f"out{i}" for i in range(n_out)]
    try:
        return Converter(traced, rank, where, in_specs, names, groups).run()
    except CaptureError as e:
        raise Malformed(path, str(e)) from None
