"""Sampling ranges the math needs: a float graph input that reaches the argument of ``sqrt``,
``rsqrt``, ``log`` or a half power only through operations that keep values non-negative (sums,
positive scalings, copies, reductions, collectives that add) must be sampled non-negative, or every
random run is undefined there (Adam's second moment of an earlier step). ``mark_nonnegative``
declares the range ``[0, 1)`` on those inputs. A float range only guides sampling (random runs and
the checker's definedness witness); it never narrows the claim (docs/certificates.md)."""

from __future__ import annotations

PARTIAL = {"aten.sqrt.default", "aten.rsqrt.default", "aten.log.default"}
# Non-negative whenever every tensor operand is.
KEEPS = {"aten.clone.default", "aten.alias.default", "aten.detach.default", "aten._to_copy.default",
         "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.expand.default",
         "aten.permute.default", "aten.transpose.int", "aten.t.default", "aten.unsqueeze.default",
         "aten.squeeze.dim", "aten.squeeze.dims", "aten.slice.Tensor", "aten.select.int", "aten.cat.default",
         "aten.contiguous.default", "aten.sum.dim_IntList", "aten.sum.default", "aten.mean.dim",
         "aten.mean.default", "aten.div.Tensor", "aten.mul.Tensor", "aten.add.Tensor",
         "_c10d_functional.wait_tensor.default", "_c10d_functional.all_gather_into_tensor.default",
         "_c10d_functional.broadcast.default", "_c10d_functional.reduce_scatter_tensor.default",
         "prims.convert_element_type.default", "c10d.send_recv.default"}
ALWAYS = {"aten.relu.default", "aten.exp.default", "aten.sigmoid.default", "aten.abs.default"}
SCALARS = {"aten.mul.Scalar": "other", "aten.div.Scalar": "other", "aten.add.Scalar": "other"}


def _needs(node: dict) -> list[str] | None:
    """The operands that must be non-negative for ``node``'s result to be (None: not known to be)."""
    t, a, ins = node["target"], node.get("attrs", {}), [x for x in node["inputs"] if x is not None]
    if t in ALWAYS or t == "aten.mul.Tensor" and len(ins) == 2 and ins[0] == ins[1]:
        return []
    if t == "aten.pow.Tensor_Scalar" and isinstance(a.get("exponent"), int) and a["exponent"] % 2 == 0:
        return []
    if t in ("aten.add.Tensor", "aten.add.Scalar") and not (isinstance(a.get("alpha", 1), (int, float))
                                                            and a.get("alpha", 1) >= 0):
        return None
    if t in SCALARS:
        c = a.get(SCALARS[t])
        return ins if isinstance(c, (int, float)) and not isinstance(c, bool) and c >= 0 and \
            (c > 0 or t == "aten.add.Scalar") else None
    if t == "_c10d_functional.all_reduce.default" and a.get("reduce_op", "sum") in ("sum", "avg", "max"):
        return ins
    return ins if t in KEEPS else None


def nonnegative_inputs(graph: dict) -> list[str]:
    """Float inputs without a range that only non-negative-keeping operations lead to a partial
    operation's argument."""
    producer = {o: n for n in graph["nodes"] for o in n["outputs"]}
    todo = []
    for n in graph["nodes"]:
        half = n["target"] == "aten.pow.Tensor_Scalar" and n.get("attrs", {}).get("exponent") in (0.5, -0.5)
        if n["target"] in PARTIAL or half:
            todo.append(n["inputs"][0])
    seen, found = set(), []
    while todo:
        t = todo.pop()
        if t in seen or t is None:
            continue
        seen.add(t)
        if t in producer:
            todo.extend(_needs(producer[t]) or [])
        elif t in graph["inputs"] and graph["tensors"][t]["dtype"].startswith(("float", "bfloat")) and \
                "range" not in graph["tensors"][t]:
            found.append(t)
    return sorted(found)


def mark_nonnegative(graph: dict) -> list[str]:
    """Declare the sampling range ``[0, 1)`` on ``nonnegative_inputs(graph)``; returns them."""
    found = nonnegative_inputs(graph)
    for t in found:
        graph["tensors"][t]["range"] = [0, 1]
    return found
