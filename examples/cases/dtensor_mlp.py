"""The MLP parallelized with DTensor (``parallelize_module``: fc1 ColwiseParallel, fc2
RowwiseParallel) on 2 ranks, forward and backward. The relations of the parameters and
of their gradients come from the DTensor placements; only the activations are given."""

from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

from examples.models.mlp import MLP
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate

T, D, F, W = 2, 2, 4, 2


def impl(rank, world):
    mesh = init_device_mesh("cpu", (world,))
    return parallelize_module(MLP(D, F), mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})


CASE = CaptureCase(
    name="dtensor_mlp",
    spec=lambda: MLP(D, F),
    impl=impl,
    world_size=W,
    inputs={"x": (T, D)},
    backward=True,
    input_relation={"x": replicate("x"), "d_out": replicate("d_out")},
    expect={"out": replicate("out"), "grad.x": replicate("grad.x")},
)
