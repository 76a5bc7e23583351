"""The ops of certificates/ops_aten.py in captured spec/impl refinement cases (engine converter and
whole-graph checker): a correct 2-rank implementation VERIFIES, a wrong variant does not; dropout
and reads of uninitialized tensors are refused with their reason."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from certificates.errors import Malformed  # noqa: E402
from verifier.capture.case import CaptureCase, capture_case  # noqa: E402
from verifier.capture.relations import replicate, shard  # noqa: E402
from verifier.capture.trace import InputSpec  # noqa: E402
from test_cases import prove  # noqa: E402

F = torch.nn.functional


class Fn(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x, i=None):
        return self.f(x) if i is None else self.f(x, i)


def failures(spec, impl, x=(4, 3), i=None, sharded=True) -> list[str]:
    """``spec`` on the whole ``x`` against ``impl`` on each rank's half of ``x`` (dim 0; or all of it);
    ``i``: an integer input ``(shape, dtype, range)`` replicated on both ranks."""
    ins = {"x": x} | ({"i": InputSpec(i[0], i[1], range=i[2])} if i else {})
    half = {"x": (x[0] // 2,) + x[1:]} | ({"i": ins["i"]} if i else {})
    rel = shard if sharded else lambda n, dim: replicate(n)
    c = CaptureCase(name="ops_aten", spec=lambda: Fn(spec), impl=lambda r, w: Fn(impl), world_size=2, inputs=ins,
                    impl_inputs=half if sharded else None,
                    input_relation={"x": rel("x", dim=0)} | ({"i": replicate("i")} if i else {}),
                    expect={"out": rel("out", dim=0)})
    outcomes = prove(capture_case(c))
    assert outcomes
    return [str(o.failure) for o in outcomes if not o.holds]


def holds(spec, impl, **kw) -> bool:
    return not failures(spec, impl, **kw)


REV = lambda x: torch.zeros_like(x).scatter(1, (2 - torch.arange(3)).expand(x.shape[0], 3), x)  # noqa: E731
CASES = {  # name: (spec, correct impl, wrong impl, holds kwargs)
    "abs": (torch.abs, lambda x: torch.abs(-x), lambda x: x.clamp(min=0), {}),
    "sgn": (lambda x: torch.sgn(x) * x, lambda x: x * torch.sign(x), torch.sgn, {}),
    "clamp": (lambda x: x.clamp(-0.5, 1), lambda x: x.clamp(max=1).clamp(min=-0.5), lambda x: x.clamp(-1, 0.5), {}),
    "softplus_log1p": (lambda x: F.softplus(x, 2, 1) + torch.log1p(x * x),
                       lambda x: torch.log1p(x * x) + F.softplus(x, 2, 1),
                       lambda x: F.softplus(x, 2, 20) + torch.log1p(x * x), {}),
    "amax": (lambda x: x.amax(1), lambda x: x.amax(-1), lambda x: x[:, 1:].amax(1), {}),
    "max_values": (lambda x: x.max(1).values, lambda x: x.amax(-1), lambda x: x[:, :2].max(1).values, {}),
    "cumsum": (lambda x: x.cumsum(1), lambda x: x.cumsum(-1), lambda x: x.cumsum(1) - x, {}),
    "tril": (lambda x: x.tril(-1), lambda x: x.tril(-1), lambda x: x.tril(0), {"x": (2, 3, 3)}),
    "var": (lambda x: x.var(1), lambda x: x.var(-1, correction=1), lambda x: x.var(1, correction=0), {}),
    "scatter_arange": (REV, lambda x: torch.cat([x[:, 2:], x[:, 1:2], x[:, :1]], 1),
                       lambda x: torch.cat([x[:, 2:], x[:, :1], x[:, 1:2]], 1), {}),
    "slice_scatter": (lambda x: torch.slice_scatter(x, x[:, :1] * 2, 1, 0, 3, 3),
                      lambda x: torch.cat([x[:, :1] * 2, x[:, 1:]], 1),
                      lambda x: torch.cat([x[:, :1], x[:, 1:] * 2], 1), {}),
    "index": (lambda x, i: x[i], lambda x, i: F.embedding(i, x), lambda x, i: x[(i - 1).abs()],
              {"x": (4, 2), "i": ((3,), torch.int64, (0, 4)), "sharded": False}),
    "max_dim_bitwise_not": (lambda x, i: torch.max(i, 1).values * 4 + torch.max(i, 1).indices + x.sum() * 0,
                            lambda x, i: torch.max(~(~i), -1).values * 4 + torch.max(i, 1).indices + x.sum() * 0,
                            lambda x, i: torch.max(i, 1).values * 4 + x.sum() * 0,
                            {"x": (2, 2), "i": ((2, 3), torch.int64, (-2, 2)), "sharded": False}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_correct_verifies_wrong_does_not(name):
    spec, good, bad, kw = CASES[name]
    assert holds(spec, good, **kw), f"{name}: correct implementation not verified"
    assert any("differ" in f for f in failures(spec, bad, **kw)), f"{name}: wrong implementation not refuted"


def test_copy_into_empty_is_a_write_not_a_read():
    assert holds(lambda x: x * 2, lambda x: torch.ops.aten.copy.default(torch.empty_like(x), x * 2))
    with pytest.raises(Malformed, match="reads an uninitialized tensor"):
        holds(lambda x: x * 2, lambda x: torch.empty_like(x) * 0 + x * 2)


def test_dropout_deterministic_only():
    drop = torch.ops.aten.native_dropout.default
    assert holds(lambda x: x * 2, lambda x: drop(x, 0.0, True)[0] * 2)
    assert holds(lambda x: x * 2, lambda x: drop(x, 0.5, False)[0] * 2)
    with pytest.raises(Malformed, match="random"):
        holds(lambda x: x * 2, lambda x: drop(x, 0.5, True)[0] * 2)
    with pytest.raises(Malformed, match="random"):
        holds(lambda x: x, lambda x: x * torch.bernoulli(torch.ones_like(x) * 0.5))
