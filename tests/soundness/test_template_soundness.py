"""Templated plans (issue 12, item 6): the claim is about the sizes the blocks were checked at, and a
backward block whose gradient vanishes where the forward depends on the input is not accepted."""

import copy

import pytest

pytest.importorskip("torch")

from verifier.train import template, template_blocks  # noqa: E402
from verifier.train.template import TemplateCase, block_model, verify  # noqa: E402

import forge  # noqa: E402

SMALL = TemplateCase("small_2l_dp2_tp2_pp2_mb2", 2, 2, 2, 2, 2)


@pytest.fixture(scope="module")
def blocks():
    return [template_blocks.verify_block(k, block_model(SMALL), SMALL.tp) for k in template_blocks.BLOCKS]


@pytest.fixture(scope="module")
def cert(blocks):
    res = verify(SMALL, blocks=blocks)
    assert res.ok, res.reason
    return res.cert


def test_control_verifies_and_replays_at_its_block_sizes(cert, tmp_path):
    ok, detail = forge.verdict(cert, tmp_path)
    assert ok, detail
    assert cert["claims"][0]["dims"] | {} == {**cert["claims"][0]["dims"], "B": 1, "S": 2, "H": 4}


@pytest.mark.parametrize("dims", [{"S": 5, "H": 3}, {"S": 8192, "H": 8192}, {"B": 2}])
def test_dims_the_blocks_never_saw_are_rejected(cert, dims, tmp_path):
    bad = copy.deepcopy(cert)
    bad["claims"][0]["dims"].update(dims)
    ok, why = forge.verdict(bad, tmp_path)
    assert not ok and "a block proves nothing about sizes it was not checked at" in why, why


def test_engine_checks_blocks_at_the_template_sizes(tmp_path, capsys):
    """The blocks are captured at the template's S and H: S=5, H=3 cannot be built, so nothing is VERIFIED."""
    from verifier.cli import main

    assert block_model(TemplateCase("t", 2, 1, 2, 1, 1, seq=6, hidden=8)).seq == 6
    with pytest.raises(ValueError, match="must be a multiple of 2 x 2 heads"):
        verify(TemplateCase("t", 2, 1, 2, 1, 1, seq=5, hidden=3))
    mod = tmp_path / "odd.py"
    mod.write_text("from verifier.train.template import TemplateCase\n\n\ndef make_template():\n"
                   "    return TemplateCase('odd', 2, 1, 2, 1, 1, seq=5, hidden=3)\n")
    assert main(["verify", str(mod)]) == 2
    assert "hidden 3 must be a multiple" in capsys.readouterr().err


def _zero_outputs(g: dict) -> dict:
    """The graph with every output multiplied by 0 (a backward that returns zeros)."""
    g = copy.deepcopy(g)
    for o in g["outputs"]:
        base, _, rank = o.partition("@")
        raw = f"{base}_raw" + (f"@{rank}" if rank else "")
        g["tensors"][raw] = g["tensors"][o]
        node = next(n for n in g["nodes"] if o in n["outputs"])
        node["outputs"] = [raw if t == o else t for t in node["outputs"]]
        g["nodes"].append({"name": f"zero_{len(g['nodes'])}", "target": "aten.mul.Tensor", "inputs": [raw],
                           "outputs": [o], "attrs": {"other": 0}, "rank": node.get("rank", 0)})
    return g


@pytest.fixture(scope="module")
def zero_bwd():
    real = template_blocks.capture_case

    def zeroed(cc):
        case = real(cc)
        case.spec, case.impl = _zero_outputs(case.spec), _zero_outputs(case.impl)
        return case
    template_blocks.capture_case = zeroed
    try:
        b = template_blocks.verify_block("bwd", block_model(SMALL), SMALL.tp)
    finally:
        template_blocks.capture_case = real
    assert not b.failure, "the zero block refines its zero spec"
    return b


def test_all_zero_backward_is_not_verified(blocks, zero_bwd):
    res = verify(SMALL, blocks=[zero_bwd if b.kind == "bwd" else b for b in blocks])
    assert not res.ok and "not its backward" in res.reason, res.reason


def test_all_zero_backward_certificate_is_rejected(blocks, zero_bwd, tmp_path, monkeypatch):
    monkeypatch.setattr(template, "check_blocks", lambda *a: None)  # the engine's guard off: the old engine
    res = verify(SMALL, blocks=[zero_bwd if b.kind == "bwd" else b for b in blocks])
    assert res.ok
    ok, why = forge.verdict(res.cert, tmp_path)
    assert not ok and "not its backward" in why, why
