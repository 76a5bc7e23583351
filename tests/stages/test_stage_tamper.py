"""Tampered staged certificates are rejected (exit 1 or 2), never crash replay, never run unbounded."""

import copy
import json
import re

import pytest

from certificates.errors import CheckError, LimitExceeded
from certificates.limits import Limits
from certificates.replay import replay
from conftest import mutations, run_pvcert
from test_staged import mlp_chain
from verifier.stages.certificate import staged_certificate
from verifier.stages.run import verify_staged


@pytest.fixture(scope="module")
def cert() -> dict:
    return staged_certificate(verify_staged(mlp_chain(3)))


def _outcome(c: dict, tmp_path, name: str = "t.json") -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(json.dumps(c))
    try:
        results = replay(str(path))
    except CheckError as e:
        return e.exit_code, str(e)
    return (0 if all(r.ok for r in results) else 1), "; ".join(r.detail for r in results)


def _ev(c: dict) -> dict:
    return c["evidence"]["tp_mlp_chain"]


def _edits():
    def dedup_match(c):
        _ev(c)["stages"][4]["proved_by"] = 0  # layer 1's gelu "proved by" layer 0's first matmul

    def later_match(c):
        _ev(c)["stages"][1]["proved_by"] = 4

    def drop_stage(c):
        del _ev(c)["stages"][4]

    def reorder_stages(c):   # two stages swapped, each still proving itself
        st = _ev(c)["stages"]
        st[1], st[2] = dict(st[2], proved_by=1), dict(st[1], proved_by=2)

    def unrelated_tensor(c):   # an intermediate spec tensor left without a relation
        del _ev(c)["relation"][next(t for t in _ev(c)["relation"] if t.startswith("H"))]

    def stage_key(c):
        _ev(c)["stages"][5]["key"] = _ev(c)["stages"][4]["key"]

    def relation(c):
        _ev(c)["relation"]["X3"] = ["x3@r0"] + _ev(c)["relation"]["X3"][:0] + ["p2@r0"]

    def claim_input(c):
        c["claims"][0]["input_relation"]["W1_0"] = ["concat(w1_0@r1, w1_0@r0, dim=0)"]

    def claim_output(c):
        c["claims"][0]["output_relation"]["X3"] = ["p2@r0"]

    def method(c):
        _ev(c)["method"] = "per-operator"

    return [dedup_match, later_match, drop_stage,
            reorder_stages, unrelated_tensor, stage_key, relation, claim_input, claim_output, method]


@pytest.mark.parametrize("edit", _edits(), ids=lambda f: f.__name__)
def test_edit_is_rejected(cert, edit, tmp_path):
    c = copy.deepcopy(cert)
    edit(c)
    code, msg = _outcome(c, tmp_path)
    assert code in (1, 2), msg


def test_untouched_certificate_is_accepted(cert, tmp_path):
    code, msg = _outcome(cert, tmp_path)
    assert code == 0, msg
    proved, matched = map(int, re.search(r"10 stages, (\d+) proved, (\d+) matched", msg).groups())
    assert proved + matched == 10 and matched >= 2, msg   # the chain's repeated layers are matched


def test_random_mutations_never_crash_or_accept_changed_claims(cert, tmp_path):
    values = [0, -1, 1, 2, 5, 2.5, "", "spec", "x0@r0", None, [], {}, True, ["impl", "x0@r0", 0]]
    for i, (path, c) in enumerate(mutations(cert, 99, 150, values)):
        code, msg = _outcome(c, tmp_path, f"m{i}.json")
        assert code in (0, 1, 2, 3), (path, msg)
        if code == 0:
            assert c["claims"] == cert["claims"] and c["subject"] == cert["subject"], path


def test_limits_hold(cert, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cert))
    with pytest.raises(LimitExceeded):
        replay(str(path), Limits(max_elements=4))
    r = run_pvcert("replay", str(path), "--timeout", "0")
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1
