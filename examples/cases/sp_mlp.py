"""Sequence-parallel MLP (all_gather before fc1, reduce_scatter after fc2) on 2 ranks,
forward and backward. Tokens are sharded; fc2's bias is added to each rank's token
shard, so its gradient is partial (summed over ranks), as Megatron's sequence-parallel
gradient all_reduce assumes."""

from examples.models.mlp import MLP, TPMLP
from verifier.capture.case import CaptureCase
from verifier.capture.relations import partial, replicate, shard

T, D, F, W = 2, 2, 4, 2

CASE = CaptureCase(
    name="sp_mlp",
    spec=lambda: MLP(D, F),
    impl=lambda rank, world: TPMLP(D, F, world, sequence_parallel=True),
    world_size=W,
    inputs={"x": (T, D)},
    impl_inputs={"x": (T // W, D)},
    backward=True,
    input_relation={
        "x": shard("x", dim=0),
        "d_out": shard("d_out", dim=0),
        "fc1.weight": shard("fc1.weight", dim=0),
        "fc1.bias": shard("fc1.bias", dim=0),
        "fc2.weight": shard("fc2.weight", dim=1),
        "fc2.bias": replicate("fc2.bias"),
    },
    expect={
        "out": shard("out", dim=0),
        "grad.x": shard("grad.x", dim=0),
        "grad.fc1.weight": shard("grad.fc1.weight", dim=0),
        "grad.fc1.bias": shard("grad.fc1.bias", dim=0),
        "grad.fc2.weight": shard("grad.fc2.weight", dim=1),
        "grad.fc2.bias": partial("grad.fc2.bias"),
    },
)
