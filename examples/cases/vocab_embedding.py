"""Vocab-parallel embedding on 2 ranks (rows of the table sharded, masked lookup,
all_reduce), forward and backward; the token ids range over the whole vocabulary."""

import torch

from examples.models.embedding import Embedding, VocabParallelEmbedding
from verifier.capture.case import CaptureCase
from verifier.capture.relations import replicate, shard
from verifier.capture.trace import InputSpec

V, D, T, W = 4, 2, 1, 2

CASE = CaptureCase(
    name="vocab_embedding",
    spec=lambda: Embedding(V, D),
    impl=lambda rank, world: VocabParallelEmbedding(V, D, world),
    world_size=W,
    inputs={"ids": InputSpec((T,), torch.int64, range=(0, V))},
    backward=True,
    input_relation={"ids": replicate("ids"), "d_out": replicate("d_out"), "weight": shard("weight", dim=0)},
    expect={"out": replicate("out"), "grad.weight": shard("grad.weight", dim=0)},
)
