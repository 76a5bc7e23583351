"""transformers Llama (SDPA, GQA, forward and backward) and Qwen2 (forward), called as users call them and
tensor-parallel through DTensor, with the planted bugs of ``examples/models/hf_models.py`` ``BUGS``: at a
medium size (a 1024 x 256 embedding, over the element limit after the shape reduction) ``pvcert verify``
runs both graphs at full size, REFUTES each bug with an executed counterexample and locates it by value at
the spec operator the per-operator engine names at the cases' default (small) sizes; the correct models are
VERIFIED on the shape-reduced graphs."""

import pytest

pytest.importorskip("transformers", reason="transformers is not installed")

MEDIUM = dict(vocab=1024, seq=32, hidden=256, heads=4, kv_heads=2, ffn=512)
# the operator where each bug first parts the values: down_proj's output into the residual add after the MLP,
# the query-key product's scale, o_proj's output into the residual add after the attention
WHERE = {"no_all_reduce": "add_8", "attention_scale": "mul_9", "o_proj_no_all_reduce": "add_6"}


def _verify(tmp_path, capsys, model: str, bug, size) -> tuple[int, str]:
    from verifier import cli

    path = tmp_path / f"{model}_{bug}_{'small' if size is None else 'medium'}.py"
    path.write_text(f"from examples.cases.hf_{model}_sdpa_tp import make_case\n"
                    f"CASE = make_case(2, bug={bug!r}, size={size!r})\n")
    code = cli.main(["verify", str(path)])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("model", ["llama", pytest.param("qwen2", marks=pytest.mark.slow)])   # qwen2: ~35 s more
@pytest.mark.parametrize("bug", list(WHERE))
def test_planted_bug_refuted_at_full_size_where_the_engine_locates_it(model, bug, tmp_path, capsys):
    code, out = _verify(tmp_path, capsys, model, bug, MEDIUM)
    assert code == 1 and "running both graphs at full size" in out
    assert "counterexample (executed): " in out and "REFUTED" in out
    assert f"located by value at full size: spec operator '{WHERE[bug]}'" in out
    code, out = _verify(tmp_path, capsys, model, bug, None)
    assert code == 1 and f"first unrelated spec operator: '{WHERE[bug]}'" in out


@pytest.mark.parametrize("model", ["llama", "qwen2"])
def test_correct_model_is_verified(model, tmp_path, capsys):
    """The correct model, too large to decide element by element, is VERIFIED on the shape-reduced graphs (until the
    twenty-fifth session its in-graph positions and mask kept it at full size: a LIMIT after four draws)."""
    code, out = _verify(tmp_path, capsys, model, None, MEDIUM)
    assert code == 0 and "verifying on the shape-reduced graphs" in out and "VERIFIED" in out, out
