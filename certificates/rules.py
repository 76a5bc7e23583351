"""Shape-reduction rules (read by shapes.py alone): ``RULES[op.target](C, I, O, a, why)`` ties, pins and scales
the axes of a node's inputs ``I`` and outputs ``O``; without a rule (or returning False) every axis stays."""

from typing import Callable

from .ops import _dim, _perm, _red_dims, _reverse, _swap


def _ew_rule(C, I, O, a, why) -> None:
    """Elementwise: outputs (of one shape) tied to each other, inputs broadcast into the first output."""
    for y in [y for y in O + I if y is not None]:
        C.bcast(y, O[0])


def _pieces_rule(C, I, O, a, why) -> None:
    """Pieces of one tensor (cat, split, pad, all_to_all): every axis tied across pieces."""
    pieces = [y for y in I + O if y and not (len(y) == 1 and C.size[y[0]] == 0)]
    for y in pieces:
        C.tie_all(y, pieces[0])


def _norm_rule(C, I, O, a, why) -> None:
    out, k = O[0], len(a["normalized_shape"])
    for y in I + O:
        if y and len(y) in (k, len(out)):
            C.bcast(y, out)
        elif y:
            C.bcast(y[:len(out) - k], out[:len(out) - k])
    C.pin_all(out[len(out) - k:], f"{why}: normalized size enters the mean")
    C.resize("normalized_shape", out[len(out) - k:])   # at full size here; the engine's inference may reduce it


def _loss_rule(ref: int = 0, reductions: tuple = (0,)) -> Callable:
    """NLL losses in ``reductions`` (forward: not reduced; a sum or mean mixes the batch): batch axes of ``ref`` lead."""
    def rule(C, I, O, a, why):
        if a.get("reduction") not in reductions:
            return False
        x = I[ref]
        for y in I + O:
            for p, q in zip(y or [], x):
                if C.size[p] == C.size[q]:
                    C.tie(p, q)
        C.pin(x[min(1, len(x) - 1)], f"{why}: classes indexed by integer targets")
    return rule


def _mm_rule(C, I, O, a, why) -> None:
    y, z, out = I[-2], I[-1], O[0]
    if len(y) < 2 or len(z) < 2:
        return C.pin_all(y + z + out, f"{why}: matmul of a vector")
    C.tie(y[-1], z[-2]), C.tie(y[-2], out[-2]), C.tie(z[-1], out[-1])
    C.sum(y[-1])
    C.bcast(y[:-2], out[:-2]), C.bcast(z[:-2], out[:-2])
    if len(I) == 3:  # addmm's bias
        C.bcast(I[0], out)


def _linear_rule(C, I, O, a, why) -> None:
    _mm_rule(C, [I[0], I[1][::-1]], O, a, why)   # x @ w.T
    if len(I) > 2 and I[2]:
        C.bcast(I[2], O[0])


def _red_rule(mean: bool) -> Callable:
    def rule(C, I, O, a, why):
        x, dims = I[0], _red_dims(a, len(I[0]))
        C.bcast([v for k, v in enumerate(x) if a["keepdim"] or k not in dims], O[0])
        for d in dims:
            C.pin(x[d], f"{why}: its size enters the mean") if mean else C.sum(x[d])
    return rule


def _along_rule(C, I, O, a, why) -> None:
    """Elementwise except along ``dim``, whose values are mixed (softmax and its backward): pinned."""
    _ew_rule(C, I, O, a, why)
    C.pin(O[0][_dim(a["dim"], len(O[0]))], f"{why}: normalized along dim")


def _view_rule(C, I, O, a, why) -> None:
    C.reshape(I[0], O[0], why)
    C.resize("size" if "size" in a else "shape", O[0])  # the attribute that holds the output shape


def _expand_rule(C, I, O, a, why) -> None:
    C.bcast(I[0], O[0])
    C.resize("size", O[0])


def _unit_rule(C, I, O, a, why) -> None:
    """(Un)squeeze: the axes other than 1 correspond in order."""
    C.tie_all([v for v in I[0] if C.size[v] != 1], [v for v in O[0] if C.size[v] != 1])


def _slice_rule(C, I, O, a, why) -> None:
    x, d = I[0], _dim(a["dim"], len(I[0]))
    C.tie_all(x, O[0])
    if a.get("step", 1) != 1:
        C.pin(x[d], f"{why}: strided slice")
    for key in ("start", "end", "length"):
        C.quantity(x[d], a.get(key), f"{why}: {key}", key)


def _select_rule(C, I, O, a, why) -> None:
    x, d = I[0], _dim(a["dim"], len(I[0]))
    C.pin(x[d], f"{why}: select picks one index")
    C.tie_all(x[:d] + x[d + 1:], O[0])


def _split_rule(C, I, O, a, why) -> None:
    _pieces_rule(C, I, O, a, why)
    x = I[0][_dim(a["dim"], len(I[0]))]
    if "chunks" in a:
        q, r = divmod(C.size[x], a["chunks"])
        if r:
            C.pin(x, f"{why}: {a['chunks']} chunks do not divide")
        else:
            C.quantity(x, q, f"{why}: split size")
    elif "split_size" in a:
        C.quantity(x, a["split_size"], f"{why}: split size", "split_size")
    else:
        for i, v in enumerate(a["split_sizes"]):
            C.quantity(x, v, f"{why}: split size", "split_sizes", i)


def _pad_rule(C, I, O, a, why) -> None:
    _pieces_rule(C, I, O, a, why)
    for k, v in enumerate(a["pad"]):
        C.quantity(I[0][len(I[0]) - 1 - k // 2], v, f"{why}: pad", "pad", k)


def _embedding_rule(C, I, O, a, why) -> None:
    w, out = I[0], O[0]
    C.pin(w[0], f"{why}: rows indexed by integer values")   # lifted by shapes.indexed where the values allow
    C.tie(w[1], out[-1])
    C.bcast(I[1], out[:-1])


def _a2a_rule(C, I, O, a, why) -> None:
    _pieces_rule(C, I, O, a, why)
    for key in ("output_split_sizes", "input_split_sizes"):  # lists per member: never scaled
        for i, v in enumerate(a[key] or []):
            C.quantity(I[0][0], v, f"{why}: split size", key, i)


def _ln_bwd_rule(C, I, O, a, why) -> None:
    _norm_rule(C, I, O, a, why)
    C.pin_all(I[1], f"{why}: batch summed into the weight and bias gradients")


def _emb_bwd_rule(C, I, O, a, why) -> None:
    g, out = I[0], O[0]
    C.pin(out[0], f"{why}: rows indexed by integer values")
    C.tie(g[-1], out[1])
    C.bcast(I[1], g[:-1])
    for x in g[:-1]:   # rows += each position's one-hot term (Summed.agda's per-slice form)
        C.pin(x, f"{why}: scaled by frequency") if a["scale_grad_by_freq"] else C.sum(x)


def _permute_rule(perm: Callable) -> Callable:
    """A permutation of axes ``perm(a, rank)``."""
    return lambda C, I, O, a, why: C.tie_all([I[0][i] for i in perm(a, len(I[0]))], O[0])


RULES: dict[str, Callable] = {t: rule for targets, rule in (
    ("aten.add.Tensor aten.sub.Tensor aten.rsub.Scalar aten.mul.Tensor aten.div.Tensor aten.maximum.default "
     "aten.lt.Tensor aten.le.Tensor aten.gt.Tensor aten.ge.Tensor aten.eq.Tensor aten.ne.Tensor "
     "aten.logical_or.default aten.logical_and.default aten.bitwise_or.Tensor aten.bitwise_and.Tensor "
     "aten.neg.default aten.exp.default aten.log.default aten.sqrt.default aten.rsqrt.default aten.reciprocal.default "
     "aten.tanh.default aten.sigmoid.default aten.silu.default aten.relu.default aten.gelu.default "
     "aten.logical_not.default aten.clone.default aten._to_copy.default prims.convert_element_type.default "
     "aten.pow.Tensor_Scalar aten.where.self aten.masked_fill.Scalar _c10d_functional.all_reduce.default "
     "_c10d_functional.broadcast.default c10d.send_recv.default aten.threshold_backward.default "
     "aten.gelu_backward.default aten.silu_backward.default aten.cos.default aten.sin.default", _ew_rule),
    ("aten.mm.default aten.bmm.default aten.matmul.default aten.addmm.default", _mm_rule),
    ("aten.linear.default", _linear_rule),
    ("aten.sum.dim_IntList", _red_rule(False)),
    ("aten.mean.dim", _red_rule(True)),
    ("aten._softmax.default aten._log_softmax.default aten._softmax_backward_data.default", _along_rule),
    ("aten.view.default aten.reshape.default", _view_rule),
    ("aten.permute.default", _permute_rule(_perm)),
    ("aten.transpose.int", _permute_rule(_swap)),
    ("aten.t.default", _permute_rule(_reverse)),
    ("aten.expand.default", _expand_rule),
    ("aten.unsqueeze.default aten.squeeze.dim", _unit_rule),
    ("aten.slice.Tensor aten.narrow.default", _slice_rule),
    ("aten.select.int", _select_rule),
    ("aten.cat.default", _pieces_rule),
    ("aten.split.Tensor aten.split_with_sizes.default aten.chunk.default", _split_rule),
    ("aten.constant_pad_nd.default", _pad_rule),
    ("aten.embedding.default", _embedding_rule),
    ("aten.full.default aten.zeros.default aten.ones.default", lambda C, I, O, a, why: C.resize("size", O[0])),
    ("aten.native_layer_norm.default aten.layer_norm.default aten.rms_norm.default", _norm_rule),
    ("aten.nll_loss_forward.default aten.cross_entropy_loss.default", _loss_rule()),
    ("aten.nll_loss_backward.default", _loss_rule(ref=1, reductions=(0, 2))),
    # operands broadcast: elementwise unless reduced
    ("aten.mse_loss.default", lambda C, I, O, a, why: _ew_rule(C, I, O, a, why) if a["reduction"] == 0 else False),
    ("_c10d_functional.all_gather_into_tensor.default _c10d_functional.reduce_scatter_tensor.default", _pieces_rule),
    ("_c10d_functional.all_to_all_single.default", _a2a_rule),
    ("aten.native_layer_norm_backward.default", _ln_bwd_rule),
    ("aten.embedding_dense_backward.default", _emb_bwd_rule),
) for t in targets.split()}
