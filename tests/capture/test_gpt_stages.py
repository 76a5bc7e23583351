"""megatron-core's GPTModel stage by stage (the small case of examples/cases/megatron_gpt.py): the stages that keep a
full-size GPT within reach without its definedness witness. The final layer norm's backward is held by congruence
(its output's equations are plain: a reshape of one impl tensor is left to the checker's cones, ``run._plain``), and
the position embedding, forward and backward, is held by congruence without an assumption (its declared positions
are rows of the table, ``stages.LOOKUPS``)."""

import pytest

from certificates.stages import held
from verifier.case import Case


def test_gpt_stages_held_by_congruence_assume_nothing():
    pytest.importorskip("megatron.core")
    from examples.cases.megatron_gpt import make_case
    from verifier.capture.case import capture_case
    from verifier.stages import run

    c = capture_case(make_case(2))
    res = run.verify_staged(Case(c.name, c.spec, c.impl, c.input_relation, c.expect))
    assert res.verified, res.failure
    S = run.Staged(run.payload(res))
    stages = {n.name: S.stage(n.name) for n in S.spec.nodes}
    congruences = {op: obls for op, (how, obls) in stages.items() if how == "congruence"}
    held_ops = {"native_layer_norm_backward_0", "embedding_1", "grad.embedding.position_embeddings.weight"}
    assert held_ops <= set(congruences), set(congruences)
    assumed = [op for op, obls in congruences.items()
               if any(o.assumed for ls, _, _, rout in obls for o in held(ls, rout))]
    assert not assumed, assumed
