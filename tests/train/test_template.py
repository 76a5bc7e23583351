"""Templated plans: blocks + schedule verified and replayed; template mutations and tampering rejected."""

import copy
import json

import pytest

pytest.importorskip("torch")

from certificates.errors import Malformed, Rejected  # noqa: E402
from certificates.replay import replay  # noqa: E402
from certificates.wiring import formula  # noqa: E402
from verifier.train.template import MUTATIONS, TemplateCase, check_wiring, mutate, schedule, verify  # noqa: E402

SMALL = TemplateCase("small_4l_dp2_tp2_pp2_mb2", 4, 2, 2, 2, 2)


@pytest.fixture(scope="module")
def small_cert(tmp_path_factory):
    res = verify(SMALL)
    assert res.ok, res.reason
    path = tmp_path_factory.mktemp("tpl") / "cert.json"
    path.write_text(json.dumps(res.cert))
    return path


def _replay_ok(path) -> tuple[bool, str]:
    rs = replay(str(path))
    return all(r.ok for r in rs), "; ".join(r.detail for r in rs)


def test_small_plan_verifies_and_replays(small_cert):
    ok, detail = _replay_ok(small_cert)
    assert ok, detail
    assert "8 ranks" in detail and "scale 1/32" in detail


def test_cli_replay(small_cert, capsys):
    from verifier.cli import main

    assert main(["replay", str(small_cert)]) == 0


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_rejected(name):
    tc = TemplateCase("m", 6, 3, 2, 3, 2)   # pp3: a middle stage; dp3: peers off by one replica stay off
    with pytest.raises(Rejected) as e:
        check_wiring(mutate(schedule(tc), name))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("rank [") or msg.startswith("deadlock") or msg.startswith("layer "), msg


def test_mutation_reasons_name_what_differs():
    s = schedule(SMALL)
    cases = {"drop_grad_allreduce": "over [(0, 0), (0, 1)] (2 pairs)", "loss_scale_missing_dp": "scale 1/16",
             "shuffled_micro_batches": "gets act[3, 0, 1], gact[4, 0, 0, 1/32]; needs act[3, 0, 1], gact[4, 0, 1",
             "allreduce_as_allgather": "gathered", "swap_pp_peer": "label[0, 0]"}
    for name, text in cases.items():
        with pytest.raises(Rejected, match=r"rank \[.*event .*") as e:
            check_wiring(mutate(s, name))
        assert text in str(e.value), (name, str(e.value))


def test_unbalanced_pipeline_deadlocks():
    s = schedule(SMALL)
    s["programs"][1]["body"][1]["to"] = "M-1"     # the last stage receives one micro-batch too few
    with pytest.raises(Rejected, match="deadlock|holds nothing"):
        check_wiring(s)


def test_formula_language():
    env = {"d": 3, "t": 1, "p": 2, "dp": 16}
    f, names = formula("(d+1)%dp*2 - -t // 1", "x")
    assert f(env) == 9 and names == {"d", "t"}
    for bad in ("__import__('os')", "d +", "d ** 2", "q + 1", "((((((((((((((((((((((((((((((((((d))))))))))))))))"
                "))))))))))))))))))"):
        with pytest.raises(Malformed):
            formula(bad, "x")


def _tamper(small_cert, tmp_path, edit) -> tuple[bool, str]:
    cert = json.loads(small_cert.read_text())
    edit(cert["claims"][0], cert)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(cert))
    try:
        return _replay_ok(p)
    except Malformed as e:
        return False, str(e)


def _first(body, do):
    for s in body:
        if s["do"] == do:
            return s
        if s["do"] == "for":
            hit = _first(s["body"], do)
            if hit:
                return hit


def test_tampered_certificates_rejected(small_cert, tmp_path):
    edits = {
        "peer formula": lambda c, _: _first(c["programs"][0]["body"], "send")["peer"].__setitem__(2, "p+2"),
        "group formula": lambda c, _: _first(c["programs"][0]["body"], "all_reduce").update(group=["d", "j", "p"],
                                                                                          size="tp"),
        "dropped event": lambda c, _: c["programs"][1]["body"].pop(3),
        "scale": lambda c, _: _first(c["programs"][1]["body"], "loss")["scale"].__setitem__(1, "M*B*S*H"),
        "held layers": lambda c, _: c["programs"][0]["body"][0].update(to="(p+1)*L//pp-1"),
        "block removed": lambda c, _: c["blocks"].pop("bwd"),
        "block relation": lambda c, _: c["blocks"]["fwd"]["input_relation"].update(h=["h@r0"]),
        "block kind": lambda c, _: c["blocks"]["sgd"].update(kind="staged-refinement"),
        "tp group": lambda c, _: c.update(tp_group=["d", "0", "p"]),
        "block graph": lambda c, cert: cert["subject"]["artifacts"][1]["embedded"]["nodes"].pop(),
    }
    # (changing "dims" alone states another true claim, e.g. mb4, which replay rightly accepts)
    for what, edit in edits.items():
        ok, detail = _tamper(small_cert, tmp_path, edit)
        assert not ok, f"tampered {what} accepted: {detail}"


def test_wrong_block_rejected_by_its_refinement():
    from verifier.train.models import ModelConfig
    from verifier.train.template_blocks import verify_block

    res = verify_block("fwd", ModelConfig("llama", layers=1, hidden=4, heads=2, ffn=4, seq=2), 2,
                       rope_not_sliced=True)
    assert res.failure, "a sequence-sharded RoPE block against the full-sequence spec must not verify"


@pytest.mark.slow
def test_llama70b_shape(tmp_path):
    import time

    from examples.train.llama70b_template import make_template

    t0 = time.perf_counter()
    res = verify(make_template())
    assert res.ok, res.reason
    p = tmp_path / "c70.json"
    p.write_text(json.dumps(res.cert))
    ok, detail = _replay_ok(p)
    assert ok, detail
    assert "512 ranks" in detail and time.perf_counter() - t0 < 900
    bad = copy.deepcopy(res.cert)
    _first(bad["claims"][0]["programs"][0]["body"], "send")["peer"].__setitem__(0, "(d+1)%dp")
    p.write_text(json.dumps(bad))
    assert not _replay_ok(p)[0]


def test_random_schedule_edits_never_crash_the_checker(small_cert, tmp_path):
    """Random leaf edits of the claim (outside the block claims): replay answers, never crashes."""
    from certificates.errors import CheckError
    from conftest import mutations

    cert = json.loads(small_cert.read_text())
    schedule = {k: v for k, v in cert["claims"][0].items() if k != "blocks"}
    values = [None, 0, -1, 7, "d", "p+1", "1//0", "m*m", [], {}, ["a", "0", "0"], True, "x" * 300]
    accepted = 0
    for i, (path, edited) in enumerate(mutations(schedule, 11, 40, values)):
        c = json.loads(small_cert.read_text())
        c["claims"][0].update(edited)
        p = tmp_path / f"m{i}.json"
        p.write_text(json.dumps(c))
        try:
            accepted += all(r.ok for r in replay(str(p)))
        except CheckError:
            pass
    # the few accepted edits are equivalent plans (e.g. 'm*m' for 'm' with M = 2) or a restated
    # claim (another H: another loss scale, which the verdict line states)
    assert accepted <= 5


def test_an_empty_loop_of_huge_range_hits_the_limit(small_cert, tmp_path):
    from certificates.errors import LimitExceeded
    from certificates.limits import Limits

    cert = json.loads(small_cert.read_text())
    body = cert["claims"][0]["programs"][0]["body"]
    body.insert(0, {"do": "for", "var": "m", "from": "0", "to": "1" + "0" * 30, "body": []})
    p = tmp_path / "loop.json"
    p.write_text(json.dumps(cert))
    with pytest.raises(LimitExceeded):
        replay(str(p), Limits(seconds=2))
