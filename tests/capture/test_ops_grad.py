"""Semantics of certificates/ops_grad.py against torch, at several random shapes, numerically
(float arrays) and symbolically (Rat variables, then evaluated at the same point)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from certificates.ops import REGISTRY  # noqa: E402
from certificates.poly import Rat  # noqa: E402
from certificates.solve import evaluate  # noqa: E402

aten = torch.ops.aten
RNG = np.random.default_rng(0)


def shapes(n=4, rank=(1, 3)):
    return [tuple(int(x) for x in RNG.integers(1, 4, size=RNG.integers(rank[0], rank[1] + 1))) for _ in range(n)]


def run(target, xs, **attrs):
    op = REGISTRY[target]
    a = {k: v for k, v in op.attrs.items()}
    a.update(attrs, _symbolic=False, _group=None)
    shp = op.shape([None if x is None else x.shape for x in xs], a)
    outs = op.run(list(xs), a)
    for o, s in zip(outs, shp):
        assert tuple(np.asarray(o).shape) == tuple(s)
    return outs


def close(got, want):
    np.testing.assert_allclose(np.asarray(got, dtype=float), want.detach().double().numpy(), rtol=1e-6, atol=1e-8)


def symbolic_agrees(target, xs, sym_idx, **attrs):
    """Run with symbolic variables for the float operands in ``sym_idx``; evaluate back."""
    env, sx = {}, list(xs)
    for i in sym_idx:
        arr = np.empty(xs[i].shape, dtype=object)
        for ix in np.ndindex(*xs[i].shape):
            name = f"v{i}_{'_'.join(map(str, ix))}"
            env[name] = float(xs[i][ix])
            arr[ix] = Rat.var(name)
        sx[i] = arr
    op = REGISTRY[target]
    a = {k: v for k, v in op.attrs.items()}
    a.update(attrs, _symbolic=True, _group=None)
    sym = op.run(sx, a)
    num = run(target, xs, **attrs)
    for s, n in zip(sym, num):
        vals = np.vectorize(lambda v: evaluate(Rat.of(v), env), otypes=[float])(np.asarray(s, dtype=object))
        np.testing.assert_allclose(vals, np.asarray(n, dtype=float), rtol=1e-6, atol=1e-8)


def rand(shape, avoid_zero=False):
    x = RNG.standard_normal(shape)
    if avoid_zero:
        x = np.where(np.abs(x) < 1e-3, 0.5, x)
    return x


@pytest.mark.parametrize("shape", shapes())
def test_threshold_backward(shape):
    g, x = rand(shape), rand(shape, avoid_zero=True)
    want = aten.threshold_backward(torch.tensor(g), torch.tensor(x), 0)
    close(run("aten.threshold_backward.default", [g, x], threshold=0)[0], want)
    symbolic_agrees("aten.threshold_backward.default", [g, x], [0, 1], threshold=0)


@pytest.mark.parametrize("shape", shapes())
@pytest.mark.parametrize("approx", ["none", "tanh"])
def test_gelu_backward(shape, approx):
    g, x = rand(shape), rand(shape)
    want = aten.gelu_backward(torch.tensor(g), torch.tensor(x), approximate=approx)
    close(run("aten.gelu_backward.default", [g, x], approximate=approx)[0], want)
    symbolic_agrees("aten.gelu_backward.default", [g, x], [0, 1], approximate=approx)


@pytest.mark.parametrize("shape", shapes())
def test_silu_backward(shape):
    g, x = rand(shape), rand(shape)
    want = aten.silu_backward(torch.tensor(g), torch.tensor(x))
    close(run("aten.silu_backward.default", [g, x])[0], want)
    symbolic_agrees("aten.silu_backward.default", [g, x], [0, 1])


@pytest.mark.parametrize("shape", shapes())
def test_softmax_backward(shape):
    d = int(RNG.integers(-len(shape), len(shape)))
    g, y = rand(shape), torch.softmax(torch.tensor(rand(shape)), d).numpy()
    want = aten._softmax_backward_data(torch.tensor(g), torch.tensor(y), d, torch.float64)
    close(run("aten._softmax_backward_data.default", [g, y], dim=d)[0], want)
    symbolic_agrees("aten._softmax_backward_data.default", [g, y], [0, 1], dim=d)


@pytest.mark.parametrize("shape", shapes(rank=(2, 3)))
@pytest.mark.parametrize("affine", [True, False])
def test_native_layer_norm_backward(shape, affine):
    ns = list(shape[-1:]) if RNG.random() < 0.5 else list(shape[-2:])
    x = torch.tensor(rand(shape))
    w = torch.tensor(rand(ns)) if affine else None
    b = torch.tensor(rand(ns)) if affine else None
    _, mean, rstd = aten.native_layer_norm(x, ns, w, b, 1e-5)
    g = torch.tensor(rand(shape))
    want = aten.native_layer_norm_backward(g, x, ns, mean, rstd, w, b, [True, affine, affine])
    xs = [g.numpy(), x.numpy(), mean.numpy(), rstd.numpy(), None if w is None else w.numpy(),
          None if b is None else b.numpy()]
    got = run("aten.native_layer_norm_backward.default", xs, normalized_shape=ns)
    close(got[0], want[0])
    if affine:
        close(got[1], want[1])
        close(got[2], want[2])


def test_native_layer_norm_backward_symbolic():
    x = rand((2, 3))
    t = torch.tensor(x)
    _, mean, rstd = aten.native_layer_norm(t, [3], None, None, 1e-5)
    xs = [rand((2, 3)), x, mean.numpy(), rstd.numpy(), rand((3,))]
    symbolic_agrees("aten.native_layer_norm_backward.default", xs, [0, 1, 2, 3, 4], normalized_shape=[3])


@pytest.mark.parametrize("shape", shapes(rank=(1, 2)))
@pytest.mark.parametrize("padding_idx", [-1, 1])
def test_embedding_dense_backward(shape, padding_idx):
    n, d = 5, 3
    idx = RNG.integers(0, n, size=shape)
    g = rand(shape + (d,))
    want = aten.embedding_dense_backward(torch.tensor(g), torch.tensor(idx), n, padding_idx, False)
    close(run("aten.embedding_dense_backward.default", [g, idx], num_weights=n, padding_idx=padding_idx)[0], want)
    symbolic_agrees("aten.embedding_dense_backward.default", [g, idx], [0], num_weights=n,
                    padding_idx=padding_idx)


@pytest.mark.parametrize("n", [1, 3, 4])
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_nll_loss_backward(n, reduction):
    c = 4
    x = torch.log_softmax(torch.tensor(rand((n, c))), -1)
    t = torch.tensor(RNG.integers(0, c, size=(n,)))
    t[0] = -100  # ignored
    loss, tw = aten.nll_loss_forward(x, t, None, reduction, -100)
    g = torch.tensor(rand(loss.shape)) if reduction == 0 else torch.tensor(1.7, dtype=torch.float64)
    want = aten.nll_loss_backward(g, x, t, None, reduction, -100, tw)
    xs = [g.numpy(), x.numpy(), t.numpy(), None, tw.numpy()]
    close(run("aten.nll_loss_backward.default", xs, reduction=reduction, ignore_index=-100)[0], want)
    if n > 1:  # not all targets ignored
        symbolic_agrees("aten.nll_loss_backward.default", xs, [0, 1], reduction=reduction, ignore_index=-100)


@pytest.mark.parametrize("shape", shapes())
@pytest.mark.parametrize("fn", ["cos", "sin"])
def test_cos_sin(shape, fn):
    x = rand(shape)
    want = getattr(torch, fn)(torch.tensor(x))
    close(run(f"aten.{fn}.default", [x])[0], want)
    symbolic_agrees(f"aten.{fn}.default", [x], [0])
