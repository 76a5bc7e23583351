"""Capture of the hand-written parallel models in examples/models for W=2 and W=4,
forward and backward, with their sequential models: graphs round-trip through JSON
and validate; per-rank op counts and collectives match what the code does."""

import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from examples.models.attention import Attention, TPAttention  # noqa: E402
from examples.models.embedding import Embedding, VocabParallelEmbedding  # noqa: E402
from examples.models.mlp import MLP, TPMLP  # noqa: E402
from examples.models.moe import EPMoE, MoE  # noqa: E402
from capture_helpers import collectives, consumers, counts, producer, roundtrip  # noqa: E402
from verifier.capture import InputSpec, capture_graph, capture_spmd  # noqa: E402

AR, AG, RS, A2A = "all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single"
WORLDS = [2, 4]


def coll_counts(graph):
    out = {}
    for n in collectives(graph):
        k = n["target"].split(".")[1]
        out[k] = out.get(k, 0) + 1
    return out


def check_groups(graph, world):
    for n in collectives(graph):
        assert n["group"] == list(range(world))
        assert [int(t.rpartition("@r")[2]) for t in n["inputs"]] == n["group"]


@pytest.mark.parametrize("bwd", [False, True])
def test_sequential_models(bwd):
    for name, m, ins in [("mlp", MLP(4, 8), {"x": (3, 4)}),
                         ("emb", Embedding(8, 4), {"ids": InputSpec((3,), torch.int64, range=(0, 8))}),
                         ("moe", MoE(4, 4, 3), {"x": (2, 2, 4), "dispatch": (2, 2, 4, 2)}),
                         ("att", Attention(8, 4), {"x": (3, 8)})]:
        cap = capture_graph(name, m, ins, backward=bwd)
        g = roundtrip(cap.graph)
        assert g.world_size == 1 and not collectives(cap.graph)
        assert all("@r" not in t for t in cap.graph["tensors"])
    mlp = capture_graph("mlp", MLP(4, 8), {"x": (3, 4)}, backward=bwd).graph
    c = counts(mlp)
    assert c["aten.addmm.default"] == 2 and c["aten.gelu.default"] == 1
    if bwd:
        assert c["aten.gelu_backward.default"] == 1 and c["aten.mm.default"] == 4
        assert set(mlp["outputs"]) == {"out", "grad.x", "grad.fc1.weight", "grad.fc1.bias",
                                       "grad.fc2.weight", "grad.fc2.bias"}


@pytest.mark.parametrize("world", WORLDS + [8])
@pytest.mark.parametrize("bwd", [False, True])
def test_tp_mlp(world, bwd):
    cap = capture_spmd("tp_mlp", lambda r, w: TPMLP(4, 8, w), world, {"x": (3, 4)}, backward=bwd)
    g = cap.graph
    roundtrip(g)
    check_groups(g, world)
    assert coll_counts(g) == {AR: 2 if bwd else 1}
    for r in range(world):
        c = counts(g, r)
        assert c["aten.addmm.default"] == 1 and c["aten.mm.default"] == (5 if bwd else 1)
        assert c["aten.gelu.default"] == 1 and c.get("aten.gelu_backward.default", 0) == int(bwd)
        assert g["tensors"][f"fc1.weight@r{r}"]["shape"] == [8 // world, 4]
        assert g["tensors"][f"fc2.weight@r{r}"]["shape"] == [4, 8 // world]
    fwd_ar = producer(g, "out@r0")  # out = all_reduce(partial) + bias
    assert fwd_ar["target"] == "aten.add.Tensor"
    assert producer(g, fwd_ar["inputs"][0])["target"].endswith(AR + ".default")
    if bwd:
        # the backward all_reduce is on the input gradient (copy region), not on d_out
        assert producer(g, "grad.x@r0")["target"].endswith(AR + ".default")
        assert not any("group" in n for n in consumers(g, "d_out@r0"))
        for i in (1, 2):
            assert "group" not in producer(g, f"grad.fc{i}.weight@r0")


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("bwd", [False, True])
def test_sp_mlp(world, bwd):
    cap = capture_spmd("sp_mlp", lambda r, w: TPMLP(4, 8, w, sequence_parallel=True), world,
                       {"x": (2, 4)}, backward=bwd)
    g = cap.graph
    roundtrip(g)
    check_groups(g, world)
    assert coll_counts(g) == ({AG: 2, RS: 2} if bwd else {AG: 1, RS: 1})
    ag = collectives(g, AG)[0]
    assert g["tensors"][ag["outputs"][0]]["shape"] == [2 * world, 4]
    assert producer(g, "out@r1")["target"] == "aten.add.Tensor"
    if bwd:  # backward of the all_gather is a reduce_scatter that gives the input gradient
        assert producer(g, "grad.x@r0")["target"].endswith(RS + ".default")
        assert g["tensors"]["grad.x@r0"]["shape"] == [2, 4]


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("bwd", [False, True])
def test_vocab_parallel_embedding(world, bwd):
    v = 8
    ids = InputSpec((3,), torch.int64, range=(0, v))
    cap = capture_spmd("vpe", lambda r, w: VocabParallelEmbedding(v, 4, w), world, {"ids": ids}, backward=bwd)
    g = cap.graph
    roundtrip(g)
    check_groups(g, world)
    assert coll_counts(g) == {AR: 1}      # backward of the reduce region is the identity
    for r in range(world):
        c = counts(g, r)
        assert c["aten.embedding.default"] == 1 and c["aten.lt.Scalar"] == 1 and c["aten.ge.Scalar"] == 1
        assert c.get("aten.embedding_dense_backward.default", 0) == int(bwd)
        assert g["tensors"][f"ids@r{r}"]["range"] == [0, v]
        start = [n for n in g["nodes"] if n.get("rank") == r and n["target"] == "aten.lt.Scalar"][0]
        assert start["attrs"]["other"] == r * v // world
    if bwd:
        assert g["tensors"]["grad.weight@r0"]["shape"] == [v // world, 4]
        assert "grad.ids@r0" not in g["tensors"]


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("bwd", [False, True])
def test_ep_moe(world, bwd):
    e = 2 * world
    cap = capture_spmd("ep_moe", lambda r, w: EPMoE(e, 4, 3, w), world, {"x": (2, 4), "dispatch": (2, e, 2)},
                       backward=bwd)
    g = cap.graph
    roundtrip(g)
    check_groups(g, world)
    assert coll_counts(g) == {A2A: 4 if bwd else 2}
    a2a = collectives(g, A2A)[0]
    assert a2a["attrs"]["input_split_sizes"] == [[2] * world] * world
    assert g["tensors"][a2a["inputs"][0]]["shape"] == [e, 2, 4]
    assert counts(g, 0)["aten.gelu.default"] == 1


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("bwd", [False, True])
def test_tp_attention(world, bwd):
    cap = capture_spmd("tp_att", lambda r, w: TPAttention(8, 4, w), world, {"x": (3, 8)}, backward=bwd)
    g = cap.graph
    roundtrip(g)
    check_groups(g, world)
    # forward: one all_reduce after the output projection; backward: one per q/k/v copy region
    assert coll_counts(g) == {AR: 4 if bwd else 1}
    c = counts(g, 0)
    assert c["aten.bmm.default"] == (6 if bwd else 2) and c["aten._softmax.default"] == 1
    assert c.get("aten._softmax_backward_data.default", 0) == int(bwd)
    assert g["tensors"]["q.weight@r0"]["shape"] == [8 // world, 8]
    if bwd:
        assert producer(g, "grad.x@r0")["target"] == "aten.add.Tensor"


def test_nn_sequential_names_and_partial_outputs():
    """nn.Sequential parameter names start with digits; a LayerNorm without affine
    parameters computes only the input gradient (output_mask [True, False, False])."""
    m = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.LayerNorm(6, elementwise_affine=False),
                            torch.nn.Linear(6, 3), torch.nn.Softmax(-1))
    cap = capture_graph("seq", m, {"x": (2, 4)}, backward=True)
    g = roundtrip(cap.graph)
    assert "_0.weight" in g.inputs and "grad._3.bias" in g.outputs
    c = counts(cap.graph)
    assert c["aten.threshold_backward.default"] == 1 and c["aten.native_layer_norm_backward.default"] == 1
    assert c["aten._softmax_backward_data.default"] == 1


def test_loss_backward_cross_entropy():
    """Backward of a scalar loss (cross entropy with integer labels): nll_loss kept whole."""
    ce = lambda out, labels: torch.nn.functional.cross_entropy(out, labels)  # noqa: E731
    cap = capture_graph("mlp_ce", MLP(4, 8), {"x": (3, 4)}, backward=True, loss=ce,
                        loss_inputs={"labels": InputSpec((3,), torch.int64, range=(0, 4))})
    g = roundtrip(cap.graph)
    c = counts(cap.graph)
    assert c["aten.nll_loss_forward.default"] == 1 and c["aten.nll_loss_backward.default"] == 1
    assert "loss" in g.outputs and g.tensors["labels"].role == "label"
    assert "d_out" not in g.tensors


def test_dtype_attributes_kept():
    """Attributes named like GraphBuilder keywords (dtype) reach the node."""
    class M(torch.nn.Module):
        def forward(self, x):
            return x.to(torch.float64).sum(dtype=torch.float64) + torch.zeros(3, dtype=torch.float64)

    cap = capture_graph("dt", M(), {"x": (3,)})
    roundtrip(cap.graph)
    attrs = {n["target"]: n["attrs"] for n in cap.graph["nodes"]}
    assert attrs["aten._to_copy.default"]["dtype"] == "float64"
    assert attrs["aten.zeros.default"]["dtype"] == "float64"
