"""Faithfulness of capture: the captured graph, run by the checker's own semantics
(certificates.graph.evaluate, float64), computes what PyTorch computes (forward outputs
and gradients) on random inputs. This covers the converter's rewrites (in-place ops,
slice backward as padding, masked index_put as where, index_put by integer indices, constants, tied weights)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from certificates.graph import evaluate, parse_graph  # noqa: E402
from examples.models.attention import Attention  # noqa: E402
from examples.models.embedding import Embedding  # noqa: E402
from examples.models.mlp import MLP  # noqa: E402
from examples.models.moe import MoE  # noqa: E402
from verifier.capture import InputSpec, capture_graph  # noqa: E402
from verifier.capture.convert import ir_name  # noqa: E402
from verifier.capture.trace import _default_call  # noqa: E402


def _example(spec: InputSpec, g):
    if spec.dtype.is_floating_point:
        return torch.randn(spec.shape, generator=g, dtype=torch.float64)
    if spec.dtype == torch.bool:
        return torch.rand(spec.shape, generator=g) < 0.3
    lo, hi = spec.range
    return torch.randint(lo, hi, spec.shape, generator=g)


def check_numeric(module, inputs, call=None, fixed=None, rtol=1e-6, atol=1e-9):
    module = module.double()
    specs = {k: (v if isinstance(v, InputSpec) else InputSpec(tuple(v))) for k, v in inputs.items()}
    specs = {k: InputSpec(s.shape, torch.float64, s.role, s.range) if s.dtype.is_floating_point else s
             for k, s in specs.items()}
    cap = capture_graph("num", module, specs, call=call, backward=True)
    graph = parse_graph(cap.graph, "num")
    g = torch.Generator().manual_seed(0)
    xs = {k: _example(s, g) for k, s in specs.items()}
    xs.update(fixed or {})
    params = dict(module.named_parameters())
    leaves = {k: p.detach().clone().requires_grad_(True) for k, p in params.items()}
    for k, x in xs.items():
        if x.dtype.is_floating_point:
            x.requires_grad_(True)
    call = call or _default_call(module, list(inputs))
    with torch.nn.utils.stateless._reparametrize_module(module, leaves, tie_weights=True):
        out = call(module, **xs)
    seed = torch.randn(out.shape, generator=g, dtype=torch.float64)
    wrt = list(leaves.items()) + [(k, x) for k, x in xs.items() if x.dtype.is_floating_point]
    grads = torch.autograd.grad(out, [t for _, t in wrt], seed, allow_unused=True)
    env = {ir_name(k): p.detach().numpy() for k, p in params.items()}
    env.update({ir_name(k): b.detach().numpy() for k, b in module.named_buffers()})
    env.update({k: x.detach().numpy() for k, x in xs.items()})
    env["d_out"] = seed.numpy()
    env = {k: v for k, v in env.items() if k in graph.inputs}
    assert set(env) == set(graph.inputs), set(graph.inputs) - set(env)
    vals = evaluate(graph, env, symbolic=False)
    np.testing.assert_allclose(vals["out"], out.detach().numpy(), rtol=rtol, atol=atol)
    for (k, _), gr in zip(wrt, grads):
        name = f"grad.{ir_name(k)}"
        if gr is None:
            assert name not in graph.outputs
            continue
        np.testing.assert_allclose(vals[name], gr.numpy(), rtol=rtol, atol=atol, err_msg=name)


def test_numeric_small_models():
    torch.manual_seed(0)
    check_numeric(MLP(4, 8), {"x": (3, 4)})
    check_numeric(Attention(8, 4), {"x": (3, 8)})
    check_numeric(MoE(4, 4, 3), {"x": (2, 2, 4), "dispatch": (2, 2, 4, 2)})
    check_numeric(Embedding(8, 4), {"ids": InputSpec((5,), torch.int64, range=(0, 8))})
    seq = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.LayerNorm(6),
                              torch.nn.Linear(6, 3), torch.nn.SiLU(), torch.nn.Softmax(-1))
    check_numeric(seq, {"x": (2, 4)})


class InPlaceAndMasks(torch.nn.Module):
    """In-place updates, a boolean-mask assignment with a constant, slicing and select."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x, ids):
        y = x @ self.w
        y.mul_(2.0)
        y = y.clone()
        y[ids > 2] = 0.0
        z = torch.cat([y[:, :2] * 3, y[:, 2:]], dim=1)
        return z + z[0] - torch.tanh(z)


def test_numeric_rewrites():
    torch.manual_seed(1)
    check_numeric(InPlaceAndMasks(), {"x": (3, 4), "ids": InputSpec((3,), torch.int64, range=(0, 5))})


class ScatterAdd(torch.nn.Module):
    """Rows added at integer positions (repeats accumulate), as MoE combines and embedding gradients do."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x, ids):
        y = torch.tanh(x @ self.w)
        z = torch.zeros(5, 4, dtype=y.dtype).index_put((ids,), y, accumulate=True)
        return z * z[ids[:2]].sum(0)


def test_numeric_index_put_by_integer_indices():
    torch.manual_seed(3)
    check_numeric(ScatterAdd(), {"x": (6, 4), "ids": InputSpec((6,), torch.int64, range=(-5, 5))})


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_numeric_transformers(kind):
    pytest.importorskip("transformers", reason="transformers is not installed")
    import warnings

    warnings.filterwarnings("ignore")
    from examples.models import hf_models

    torch.manual_seed(2)
    m = getattr(hf_models, kind)()
    s = hf_models.SEQ
    causal = torch.triu(torch.full((s, s), -1e4, dtype=torch.float64), 1).view(1, 1, s, s)
    # Llama's rotary embedding computes cos/sin in float32 (``.float()``); the IR's casts are exact
    check_numeric(m, hf_models.inputs(), call=hf_models.call, rtol=1e-5, atol=1e-6,
                  fixed={"position_ids": torch.arange(s).view(1, s), "attention_mask": causal})
