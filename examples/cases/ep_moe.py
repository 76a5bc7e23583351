"""Expert-parallel MoE on 2 ranks (two all_to_alls each way), forward and backward.
Each rank's tokens are one group of the sequential model's grouped dispatch."""

from examples.models.moe import EPMoE, MoE
from verifier.capture.case import CaptureCase
from verifier.capture.relations import shard

E, T, C, D, H, W = 2, 1, 1, 2, 2, 2


def grouped(name: str, shape) -> str:
    parts = ", ".join(f"{name}@r{r}" for r in range(W))
    return f"reshape(concat({parts}, dim=0), shape={list(shape)})".replace(" ", "").replace(",", ", ")


CASE = CaptureCase(
    name="ep_moe",
    spec=lambda: MoE(E, D, H),
    impl=lambda rank, world: EPMoE(E, D, H, world),
    world_size=W,
    inputs={"x": (W, T, D), "dispatch": (W, T, E, C)},
    impl_inputs={"x": (T, D), "dispatch": (T, E, C)},
    backward=True,
    input_relation={
        "x": grouped("x", (W, T, D)), "dispatch": grouped("dispatch", (W, T, E, C)),
        "d_out": grouped("d_out", (W, T, D)),
        "w1": shard("w1", dim=0), "w2": shard("w2", dim=0),
    },
    expect={
        "out": grouped("out", (W, T, D)),
        "grad.x": grouped("grad.x", (W, T, D)),
        "grad.dispatch": grouped("grad.dispatch", (W, T, E, C)),
        "grad.w1": shard("grad.w1", dim=0), "grad.w2": shard("grad.w2", dim=0),
    },
)
