"""Megatron-style tensor-parallel MLP on 2 ranks against its sequential model,
forward and backward (``pvcert verify examples/cases/tp_mlp.py``).

Relations: X and the output seed replicated; fc1 (column-parallel) sharded on rows,
fc2 (row-parallel) on columns, fc2's bias replicated. Expected: every rank holds Y and
the input gradient (the backward all_reduce of the copy region), the weight gradients
are sharded like the weights, fc2's bias gradient is replicated.
"""

from examples.models.mlp import MLP, TPMLP
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard

T, D, F, W = 2, 2, 4, 2   # tokens, model dim, hidden dim, ranks: small, checked exactly

CASE = CaptureCase(
    name="tp_mlp",
    spec=lambda: MLP(D, F),
    impl=lambda rank, world: TPMLP(D, F, world),
    world_size=W,
    inputs={"x": (T, D)},
    backward=True,
    input_relation={
        "x": replicate("x"),
        "d_out": replicate("d_out"),
        "fc1.weight": shard("fc1.weight", dim=0),
        "fc1.bias": shard("fc1.bias", dim=0),
        "fc2.weight": shard("fc2.weight", dim=1),
        "fc2.bias": replicate("fc2.bias"),
    },
    expect={
        "out": replicate("out"),
        "grad.x": replicate("grad.x"),
        "grad.fc1.weight": shard("grad.fc1.weight", dim=0),
        "grad.fc1.bias": shard("grad.fc1.bias", dim=0),
        "grad.fc2.weight": shard("grad.fc2.weight", dim=1),
        "grad.fc2.bias": replicate("grad.fc2.bias"),
    },
)
