"""certificates/ops_aten.py against PyTorch: random floats (numeric run, shape rule, and the symbolic
run evaluated at the same point, via test_ops_semantics.check_case), integer and boolean edge values
of every dtype after the graph's wrap-around (``dtypes.fit``), and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from certificates import ops_aten  # noqa: E402,F401 (its family: not loaded by certificates.ops)
from certificates.dtypes import bounds, fit  # noqa: E402
from certificates.ops import REGISTRY, ShapeError  # noqa: E402
from test_ops_semantics import A, Case, check_case, fl, full_attrs, rshape, small  # noqa: E402

SEEDS = range(4)
CASES = {
    "aten.abs.default": lambda r: Case([fl(r, *rshape(r))], {}, lambda t: A.abs.default(*t)),
    "aten.sgn.default": lambda r: Case([small(r, *rshape(r))], {}, lambda t: A.sgn.default(*t)),
    "aten.sign.default": lambda r: Case([fl(r, *rshape(r))], {}, lambda t: A.sign.default(*t)),
    "aten.clamp.default": lambda r: Case([fl(r, 3, 4)], {"min": -0.5, "max": 1.25},
                                         lambda t: A.clamp.default(t[0], -0.5, 1.25)),
    "aten.clamp_min.default": lambda r: Case([fl(r, 5)], {"min": 0.25}, lambda t: A.clamp_min.default(t[0], 0.25)),
    "aten.clamp_max.default": lambda r: Case([fl(r, 5)], {"max": -0.75}, lambda t: A.clamp_max.default(t[0], -0.75)),
    "aten.log1p.default": lambda r: Case([fl(r, 2, 3, lo=-0.9, hi=3)], {}, lambda t: A.log1p.default(*t)),
    "aten.softplus.default": lambda r: Case([fl(r, 4, 3, lo=-3, hi=3)], {"beta": 2, "threshold": 1.5},
                                            lambda t: A.softplus.default(t[0], 2, 1.5)),
    "aten.softplus_backward.default": lambda r: Case(
        [fl(r, 6), fl(r, 6, lo=-3, hi=3)], {"beta": 0.5, "threshold": 0.75},
        lambda t: A.softplus_backward.default(t[0], t[1], 0.5, 0.75)),
    "aten.amax.default": lambda r: Case([fl(r, 2, 3, 4)], {"dim": [0, 2], "keepdim": True},
                                        lambda t: A.amax.default(t[0], [0, 2], True)),
    "aten.max.dim": lambda r: Case([small(r, 3, 4)], {"dim": 1}, lambda t: A.max.dim(t[0], 1), sym="raises"),
    "aten.tril.default": lambda r: Case([fl(r, 2, 3, 4)], {"diagonal": -1}, lambda t: A.tril.default(t[0], -1)),
    "aten.triu.default": lambda r: Case([fl(r, 4, 3)], {"diagonal": 1}, lambda t: A.triu.default(t[0], 1)),
    "aten.cumsum.default": lambda r: Case([fl(r, 3, 4)], {"dim": -1}, lambda t: A.cumsum.default(t[0], -1)),
    "aten.var.correction": lambda r: Case([fl(r, 3, 4)], {"dim": [1], "correction": 0, "keepdim": True},
                                          lambda t: A.var.correction(t[0], [1], correction=0, keepdim=True)),
    "aten.slice_scatter.default": lambda r: Case([fl(r, 5, 3), fl(r, 2, 3)],
                                                 {"dim": 0, "start": 1, "end": 5, "step": 2}, lambda t: A.slice_scatter.default(t[0], t[1], 0, 1, 5, 2)),
    "aten.index.Tensor": lambda r: Case([fl(r, 4, 3), r.integers(-4, 4, (2, 2)), r.integers(0, 3, (2,))], {},
                                        lambda t: A.index.Tensor(t[0], [t[1], t[2]])),
    "aten.scatter.src": lambda r: Case([fl(r, 3, 4), np.array([[2, 0], [1, 3]]), fl(r, 2, 3)], {"dim": 1},
                                       lambda t: A.scatter.src(t[0], 1, t[1], t[2])),
    "aten.index_put.default": lambda r: Case([fl(r, 4, 3), r.permutation(4)[:3] - 2, fl(r, 3)], {},
                                             lambda t: A.index_put.default(t[0], [t[1]], t[2])),
    "aten.topk.default": lambda r: Case([r.permutation(24).reshape(4, 6)], {"k": 3, "dim": 0, "largest": False},
                                        lambda t: A.topk.default(t[0], 3, 0, False)),
    "aten.scalar_tensor.default": lambda r: Case([], {"s": 0.375}, lambda t: A.scalar_tensor.default(0.375,
                                                                                                     dtype=torch.float64)),
    "aten.native_dropout.default": lambda r: Case([fl(r, 2, 3)], {"p": 0.0, "train": True},
                                                  lambda t: A.native_dropout.default(t[0], 0.0, True)),
}


@pytest.mark.parametrize("target", sorted(CASES))
def test_floats_against_torch(target):
    for seed in SEEDS:
        check_case(target, CASES[target](np.random.default_rng([seed, len(target)])))


EDGE = {d: sorted({bounds(d)[0], bounds(d)[1], 0, 1, min(max(-1, bounds(d)[0]), 1), bounds(d)[1] - 1})
        for d in ("int8", "uint8", "int16", "int32", "int64", "bool")}
INT_OPS = {  # target: (attrs, torch reference, dtypes)
    "aten.abs.default": ({}, lambda x: A.abs.default(x), "int8 int16 int32 int64"),
    "aten.sign.default": ({}, lambda x: A.sign.default(x), "int8 uint8 int16 int32 int64 bool"),
    "aten.sgn.default": ({}, lambda x: A.sgn.default(x), "int8 uint8 int16 int32 int64 bool"),
    "aten.clamp.default": ({"min": 0, "max": 127}, lambda x: A.clamp.default(x, 0, 127),
                           "int8 uint8 int16 int32 int64"),
    "aten.clamp_min.default": ({"min": 1}, lambda x: A.clamp_min.default(x, 1), "uint8 int64"),
    "aten.clamp_max.default": ({"max": 0}, lambda x: A.clamp_max.default(x, 0), "int8 uint8 int64"),
    "aten.bitwise_not.default": ({}, lambda x: A.bitwise_not.default(x), "int8 uint8 int16 int32 int64 bool"),
    "aten.amax.default": ({"dim": [1]}, lambda x: A.amax.default(x, [1]), "int8 uint8 int32 int64 bool"),
    "aten.tril.default": ({"diagonal": 1}, lambda x: A.tril.default(x, 1), "int8 uint8 int64 bool"),
    "aten.triu.default": ({"diagonal": 0}, lambda x: A.triu.default(x, 0), "int16 bool"),
    "aten.cumsum.default": ({"dim": 1}, lambda x: A.cumsum.default(x, 1), "int8 uint8 int16 int32 int64 bool"),
}


def _edge_matrix(d: str) -> np.ndarray:
    v = EDGE[d]
    rows = [[v[(i + j) % len(v)] for j in range(len(v))] for i in range(3)]
    return np.array(rows, dtype=bool if d == "bool" else np.int64)


@pytest.mark.parametrize("target", sorted(INT_OPS))
def test_integer_and_bool_edges_exact(target):
    attrs, ref, dtypes = INT_OPS[target]
    op = REGISTRY[target]
    for d in dtypes.split():
        x = _edge_matrix(d)
        want = ref(torch.tensor(x, dtype=getattr(torch, d))).numpy()
        got = op.run([x], full_attrs(op, attrs, True))[0]
        got = fit(np.asarray(got), str(want.dtype), True)
        assert got.dtype.kind == want.dtype.kind or {got.dtype.kind, want.dtype.kind} <= set("iu"), (d, got, want)
        np.testing.assert_array_equal(got, want, err_msg=f"{target} on {d}")


def test_max_dim_of_integers_values_and_first_index():
    x = np.array([[3, -128, 3], [0, 0, -1], [127, 5, 127]])
    v, i = REGISTRY["aten.max.dim"].run([x], full_attrs(REGISTRY["aten.max.dim"], {"dim": 1}, True))
    tv, ti = A.max.dim(torch.tensor(x, dtype=torch.int8), 1)
    assert v.tolist() == tv.tolist() and i.tolist() == ti.tolist() == [0, 0, 0]


@pytest.mark.parametrize("attrs", [{"end": 5}, {"start": -3, "end": 4}, {"start": 7, "end": -2, "step": -3},
                                   {"start": 0, "end": 10, "step": 4, "dtype": "int8"}, {"start": 2, "end": 2}])
def test_arange_against_torch(attrs):
    op = REGISTRY["aten.arange.start_step"]
    got = op.run([], full_attrs(op, attrs, True))[0]
    kw = {"dtype": getattr(torch, attrs["dtype"])} if "dtype" in attrs else {}
    want = torch.arange(attrs.get("start", 0), attrs["end"], attrs.get("step", 1), **kw)
    assert got.tolist() == want.tolist() and op.shape([], full_attrs(op, attrs, False)) == [tuple(want.shape)]


def test_index_put_accumulates_repeated_positions_and_two_index_tensors():
    op, x = REGISTRY["aten.index_put.default"], np.arange(12.0).reshape(3, 4)
    i, j, v = np.array([[0, 2], [0, -1]]), np.array([1, 3]), np.array([[0.5, -1.0], [2.0, 4.0]])
    got = op.run([x, i, j, v], full_attrs(op, {"accumulate": True}, False))[0]
    want = A.index_put.default(torch.tensor(x), [torch.tensor(i), torch.tensor(j)], torch.tensor(v), True)
    np.testing.assert_array_equal(got, want.numpy())
    ints = op.run([np.zeros(4, np.int64), np.array([1, 1]), np.array([3, 4])], full_attrs(op, {"accumulate": True}, True))
    assert ints[0].tolist() == [0, 7, 0, 0]


def test_topk_of_integers_largest_and_sorted_against_torch():
    op, x = REGISTRY["aten.topk.default"], np.array([[3, -1, 7, 0], [5, 9, -4, 2]])
    v, i = op.run([x], full_attrs(op, {"k": 2}, True))
    tv, ti = A.topk.default(torch.tensor(x), 2)
    assert v.tolist() == tv.tolist() and i.tolist() == ti.tolist()


def test_scalar_tensor_of_minus_infinity_is_refused():   # SDPA masks built as where(m, 0, -inf)
    from certificates.errors import Unsupported

    op = REGISTRY["aten.scalar_tensor.default"]
    with pytest.raises(Unsupported, match="non-finite constant -inf"):
        op.run([], full_attrs(op, {"s": float("-inf")}, True))


def test_dropout_in_eval_is_the_identity_with_an_all_true_mask():
    op = REGISTRY["aten.native_dropout.default"]
    x = np.arange(6.0).reshape(2, 3)
    out, mask = op.run([x], full_attrs(op, {"p": 0.5, "train": False}, False))
    tout, tmask = A.native_dropout.default(torch.tensor(x), 0.5, False)
    assert (out == tout.numpy()).all() and mask.dtype == bool and (mask == tmask.numpy()).all()


SYM = np.array([[object()]], dtype=object)  # any symbolic (object) array


@pytest.mark.parametrize("target, xs, attrs, msg", [
    ("aten.max.dim", [SYM], {"dim": 0}, "indices of real-valued"),
    ("aten.native_dropout.default", [np.ones(2)], {"p": 0.1}, "dropout with p=0.1 in training is random"),
    ("aten.native_dropout.default", [np.ones(2)], {"p": 0.1, "train": True}, "random"),
    ("aten.bernoulli_.float", [np.ones(2)], {"p": 0.5}, "bernoulli is random"),
    ("aten.bernoulli.default", [np.ones(2)], {}, "bernoulli is random"),
    ("aten.empty_like.default", [np.ones(2)], {}, "uninitialized"),
    ("aten.empty.memory_format", [], {"size": [2]}, "uninitialized"),
    ("aten.new_empty_strided.default", [np.ones(2)], {"size": [2], "stride": [1]}, "uninitialized"),
    ("aten.clamp.default", [np.arange(3)], {"min": 0.5}, "outside"),
    ("aten.clamp.default", [np.arange(3)], {"min": -1}, "outside"),  # uint8: torch clamps at 255
    ("aten.clamp_max.default", [np.arange(3)], {"max": 128}, "outside"),  # int8: torch raises
    ("aten.clamp.default", [np.ones(2)], {}, "needs 'min' or 'max'"),
    ("aten.log1p.default", [np.arange(3)], {}, "integer tensor"),
    ("aten.bitwise_not.default", [np.ones(2)], {}, "bitwise_not of reals"),
    ("aten.scatter.src", [np.zeros((1, 3)), np.array([[1, 1]]), np.ones((1, 2))], {"dim": 1}, "twice"),
    ("aten.scatter.src", [np.zeros((1, 3)), np.array([[3]]), np.ones((1, 1))], {"dim": 1}, "out of range"),
    ("aten.index.Tensor", [np.zeros(3), np.array([-4])], {}, "out of range"),
    ("aten.scatter.src", [np.zeros((1, 3), int), np.array([[0]]), np.ones((1, 1))], {"dim": 1}, "differ in dtype"),
    ("aten.slice_scatter.default", [np.zeros((2, 1), int), np.ones((1, 1), bool)], {"end": 1}, "differ in dtype"),
    ("aten.index.Tensor", [np.zeros(3), np.array([True, False, True])], {}, "integer tensors"),
    ("aten.var.correction", [np.ones(1)], {}, "not finite"),
    ("aten.index_put.default", [np.zeros(3), np.array([1, -2]), np.ones(2)], {}, "twice"),
    ("aten.index_put.default", [np.zeros(3), np.array([3]), np.ones(1)], {}, "out of range"),
    ("aten.index_put.default", [np.zeros(3, bool), np.array([0]), np.ones(1, bool)], {"accumulate": True}, "booleans"),
    ("aten.topk.default", [SYM], {"k": 1}, "symbolic"),
    ("aten.topk.default", [np.array([1, 4, 4, 0])], {"k": 1}, "equal values"),   # the second 4 decides nothing,
    ("aten.topk.default", [np.array([2, 1])], {"k": 1, "sorted": False}, "unsorted"),   # but is refused
    ("aten.softplus.default", [np.ones(1)], {"beta": 0}, "beta 0"),
    ("aten.amax.default", [np.zeros((2, 0))], {}, "empty"),
    ("aten.arange.start", [], {"start": 0.0, "end": 1}, "integer bounds"),
    ("aten.arange.start", [], {"start": 3, "end": 1}, "integer bounds"),
    ("aten.arange.start", [], {"start": 0, "end": 200, "dtype": "int8"}, "beyond int8"),
])
def test_refused_with_a_reason(target, xs, attrs, msg):
    op = REGISTRY[target]
    with pytest.raises(ShapeError, match=msg):
        op.run(xs, full_attrs(op, attrs, True))


@pytest.mark.parametrize("target, shapes, attrs", [
    ("aten.scatter.src", [(2, 3), (3, 1), (3, 1)], {"dim": 1}),
    ("aten.slice_scatter.default", [(4, 2), (3, 2)], {"start": 0, "end": 4, "step": 2}),
    ("aten.index.Tensor", [(3,), (2,), (2,)], {}),
    ("aten.tril.default", [(3,)], {}),
    ("aten.index_put.default", [(3, 2), (2,), (3,)], {}),
])
def test_shape_rules_reject(target, shapes, attrs):
    op = REGISTRY[target]
    with pytest.raises(ShapeError):
        op.shape(shapes, full_attrs(op, attrs, False))
        op.run([np.zeros(s) for s in shapes], full_attrs(op, attrs, False))


def test_ops_lists_the_new_targets(capsys):
    from verifier.cli import main

    assert main(["ops"]) == 0
    out = capsys.readouterr().out.splitlines()
    listed = {line.split()[0] for line in out}
    line = {x.split()[0]: x for x in out}   # the operator family and the claim kinds that trust it
    assert line["aten.topk.default"].endswith(" ops_aten (refinement)")
    assert line["aten.native_batch_norm.default"].endswith(" ops_train (training-refinement)")
    assert line["aten.mm.default"].endswith(" ops (every graph claim)")
    assert line["aten.cumsum.default"].endswith(" ops_index (refinement, staged-refinement)")
    more = {"aten.arange.start", "aten.bernoulli_.float", "aten.empty_like.default"}
    assert set(CASES) | set(INT_OPS) | more <= listed
