"""Pipeline-parallel stack of Linear+ReLU layers on 3 ranks (send/recv between stages),
forward: the last stage's output is the sequential model's output. Stage r's input x is
unused for r > 0 (it receives the activation instead)."""

from examples.models.pipeline import Layers, Stage
from verifier.capture.case import CaptureCase
from verifier.capture.relations import on

T, D, W = 2, 2, 3

CASE = CaptureCase(
    name="pp_mlp",
    spec=lambda: Layers(W, D),
    impl=lambda rank, world: Stage(rank, world, D),
    world_size=W,
    inputs={"x": (T, D)},
    input_relation={"x": on("x", 0),
                    **{f"stages.{r}.{p}": on(f"fc.{p}", r) for r in range(W) for p in ("weight", "bias")}},
    expect={"out": on("out", W - 1)},
)
