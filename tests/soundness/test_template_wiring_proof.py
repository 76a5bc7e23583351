"""The wiring theorem (agda/Composition/Template.agda) assumes every block reads the step's initial
parameters; a block of layer l that a rank runs after layer l's `opt` would read the new ones, so the
checker refuses it (it used to accept a loss metric recomputed after the update)."""

import copy

import pytest

pytest.importorskip("torch")

from certificates.errors import Rejected  # noqa: E402
from verifier.train import template_blocks  # noqa: E402
from verifier.train.template import TemplateCase, block_model, check_wiring, verify  # noqa: E402

import forge  # noqa: E402

SMALL = TemplateCase("small_2l_dp2_tp2_pp2_mb2", 2, 2, 2, 2, 2)
FWD = {"do": "for", "var": "l", "from": "p*L//pp", "to": "(p+1)*L//pp",
       "body": [{"do": "fwd", "layer": "l", "in": ["a", "l", "m"], "out": ["a", "l+1", "m"]}]}
LOSS2 = [{"do": "loss", "in": ["a", "L", "m"], "label": ["y", "m"], "scale": ["1", "M*dp*B*S*H"],
          "out": ["ga2", "L", "m"], "loss": ["ls2", "m"]}, {"do": "acc", "into": ["LS2"], "from": ["ls2", "m"]}]
METRIC2 = [{"do": "all_reduce", "reg": ["LS2"], "group": ["j", "t", "p"], "size": "dp"}, {"do": "metric", "reg": ["LS2"]}]
BWD_AGAIN = {"do": "bwd", "layer": "0", "in": ["a", "0", "0"], "seed": ["ga", "1", "0"], "out": ["gb", "0"],
             "grad": ["gg", "0"]}


@pytest.fixture(scope="module")
def cert():
    blocks = [template_blocks.verify_block(k, block_model(SMALL), SMALL.tp) for k in template_blocks.BLOCKS]
    res = verify(SMALL, blocks=blocks)
    assert res.ok, res.reason
    return res.cert


def _recompute_loss(cert: dict, after_update: bool) -> dict:
    """The last stage recomputes its forward and the loss into a second metric, after or before its opt."""
    bad = copy.deepcopy(cert)
    body = bad["claims"][0]["programs"][1]["body"]
    assert [s["do"] for s in body[-4:]] == ["for", "for", "all_reduce", "metric"]    # ..., all_reduce, opt, LS
    redo = {"do": "for", "var": "m", "from": "0", "to": "M", "body": [FWD] + LOSS2}
    body[-2:] = METRIC2
    body.insert(len(body) - 2 if after_update else len(body) - 4, redo)
    return bad


def _bwd_after_update(cert: dict) -> dict:
    bad = copy.deepcopy(cert)
    bad["claims"][0]["programs"][0]["body"].append(BWD_AGAIN)
    return bad


@pytest.mark.parametrize("tamper, why", [
    (lambda c: _recompute_loss(c, True), "fwd of layer 1 runs after its update"),
    (_bwd_after_update, "bwd of layer 0 runs after its update"),
])
def test_block_after_its_update_is_refused(cert, tamper, why, tmp_path):
    bad = tamper(cert)
    with pytest.raises(Rejected, match=why):              # the engine's verdict: not VERIFIED
        check_wiring(bad["claims"][0])
    ok, detail = forge.verdict(bad, tmp_path)
    assert not ok and why in detail, detail


def test_controls_still_replay(cert, tmp_path):
    assert forge.verdict(cert, tmp_path)[0]
    before = _recompute_loss(cert, False)                 # recomputed before the update: R's loss, accepted
    check_wiring(before["claims"][0])
    ok, detail = forge.verdict(before, tmp_path)
    assert ok, detail
