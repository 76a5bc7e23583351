"""Certificates: emitted, replayed, and every tampering rejected or refused cleanly, within limits."""

import copy
import hashlib
import json
import random
import time

import pytest

from certificates.errors import CheckError, LimitExceeded, Malformed
from certificates.limits import Limits, canonical_bytes
from certificates.replay import replay
from conftest import mutations, run_pvcert


@pytest.fixture(scope="module")
def cert(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("cert") / "tp_mlp.cert.json"
    r = run_pvcert("verify", "examples/tp_mlp/case.json", "--engine", "whole-graph", "--emit-cert", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    c = json.loads(path.read_text())
    del c["header"]["provenance"]   # display only (tests/soundness/test_output_provenance.py); kept out of the
    return c                        # fuzzed leaves so the deterministic mutation sample stays the same


def rehash(c: dict) -> dict:
    """What a forger would do: fix up the hashes after editing an artifact."""
    for a in c["subject"]["artifacts"]:
        if "embedded" in a:
            a["sha256"] = hashlib.sha256(canonical_bytes(a["embedded"])).hexdigest()
    return c


def write(tmp_path, c, name="c.json") -> str:
    p = tmp_path / name
    p.write_text(json.dumps(c) if not isinstance(c, str) else c)
    return str(p)


def outcome(path: str, limits: Limits | None = None) -> tuple[int, str]:
    """(exit code, message) of an in-process replay."""
    try:
        results = replay(path, limits)
    except CheckError as e:
        return e.exit_code, str(e)
    bad = [r.detail for r in results if not r.ok]
    return (1, bad[0]) if bad else (0, "ACCEPT")


def impl(c):
    return c["subject"]["artifacts"][1]["embedded"]


def test_emitted_certificate_replays(cert, tmp_path):
    assert outcome(write(tmp_path, cert)) == (0, "ACCEPT")
    r = run_pvcert("replay", write(tmp_path, cert))
    assert r.returncode == 0 and "ACCEPT" in r.stdout and "16 by normal-form" in r.stdout


def test_referenced_artifact(cert, tmp_path):
    c = copy.deepcopy(cert)
    art = c["subject"]["artifacts"][1]
    data = json.dumps(art.pop("embedded")).encode()
    (tmp_path / "impl.json").write_bytes(data)
    art["path"] = "impl.json"
    art["sha256"] = hashlib.sha256(data).hexdigest()
    assert outcome(write(tmp_path, c))[0] == 0
    (tmp_path / "impl.json").write_bytes(data.replace(b'"sum"', b'"max"'))
    assert outcome(write(tmp_path, c)) == (1, "artifact 'impl': sha256 does not match its content")
    art["path"] = "../impl.json"
    assert outcome(write(tmp_path, c))[0] == 2


def test_a_referenced_artifact_is_parsed_from_the_bytes_hashed(cert, tmp_path, monkeypatch):
    """A file replaced after its hash was checked (a second read would parse the replacement) changes nothing."""
    import certificates.replay as replay_module
    c = copy.deepcopy(cert)
    art = c["subject"]["artifacts"][1]
    data = json.dumps(art.pop("embedded")).encode()
    (tmp_path / "impl.json").write_bytes(data)
    art.update(path="impl.json", sha256=hashlib.sha256(data).hexdigest())
    read = replay_module.read_bytes

    def read_then_swap(path, limits):
        out = read(path, limits)
        if path.endswith("impl.json"):
            (tmp_path / "impl.json").write_bytes(data.replace(b'"sum"', b'"max"'))
        return out
    monkeypatch.setattr(replay_module, "read_bytes", read_then_swap)
    assert outcome(write(tmp_path, c)) == (0, "ACCEPT")


def test_an_embedded_null_artifact_is_malformed(cert, tmp_path):
    c = copy.deepcopy(cert)
    c["subject"]["artifacts"][1]["embedded"] = None
    code, message = outcome(write(tmp_path, rehash(c)))
    assert code == 2 and "internal" not in message, message


def tamper_rename(c):
    g = impl(c)
    g["tensors"]["x2@r0"] = g["tensors"].pop("x@r0")
    g["inputs"][g["inputs"].index("x@r0")] = "x2@r0"
    for n in g["nodes"]:
        n["inputs"] = ["x2@r0" if t == "x@r0" else t for t in n["inputs"]]


def tamper_reduce_max(c):
    next(n for n in impl(c)["nodes"] if n["name"] == "all_reduce")["attrs"]["reduce_op"] = "max"


def tamper_drop_rank1_partial(c):
    g = impl(c)
    n = next(n for n in g["nodes"] if n["name"] == "all_reduce")
    n["inputs"] = ["p@r0", "p@r0"]


HALVES = "concat(slice(y@r0, dim=0, start=0, end=1), slice(y@r1, dim=0, start=0, end=1), dim=0)"
# (edit, rehash?, expected exit code, expected message fragment)
TAMPER = {
    "hash changed": (lambda c: c["subject"]["artifacts"][0].update(sha256="0" * 64), False, 1, "sha256"),
    "graph edited, hash kept": (tamper_reduce_max, False, 1, "sha256 does not match"),
    "tensor renamed": (tamper_rename, True, 2, "'x@r0' is not a tensor of impl graph"),
    "shape changed": (lambda c: impl(c)["tensors"]["w1@r0"].update(shape=[4, 3]), True, 2, "linear of input"),
    "collective changed": (tamper_reduce_max, True, 1, "differ"),
    "collective input swapped": (tamper_drop_rank1_partial, True, 2, "lives on rank 0"),
    "input relation changed": (lambda c: c["claims"][0]["input_relation"].update(
        W1=["concat(w1@r1, w1@r0, dim=0)"]), False, 1, "differ"),
    "output relation changed": (lambda c: c["claims"][0]["output_relation"].update(Y=["y@r0", "y@r0"]),
                                False, 1, "evidence obligations do not match"),
    "relation and evidence changed": (lambda c: (c["claims"][0]["output_relation"].update(Y=[HALVES]),
        c["evidence"][c["claims"][0]["id"]].update(obligations=[{"spec": "Y", "expr": HALVES, "elements": 8}])),
        False, 1, "differ"),
    "relation dropped": (lambda c: c["claims"][0]["input_relation"].pop("W2"), False, 2, "no relation"),
    "evidence count changed": (lambda c: c["evidence"][c["claims"][0]["id"]]["obligations"][0].update(elements=9),
                               False, 1, "evidence says 9 elements"),
    "evidence method unknown": (lambda c: c["evidence"][c["claims"][0]["id"]].update(method="trust-me"),
                                False, 1, "not known to this checker"),
    "verdict changed": (lambda c: c.update(verdict="MAYBE"), False, 1, "not 'ACCEPT'"),
    "claim kind unknown": (lambda c: c["claims"][0].update(kind="magic"), False, 1, "unknown claim kind"),
    "spec and impl swapped": (lambda c: c["claims"][0].update(spec="impl", impl="spec"), False, 2, "is not"),
    "artifact missing": (lambda c: c["claims"][0].update(impl="nothing"), False, 2, "names artifact 'nothing'"),
    "version changed": (lambda c: c.update(version=2), False, 2, "checker reads 1"),
    "evidence missing": (lambda c: c.update(evidence={}), False, 2, "missing or mistyped field"),
    "huge nested term": (lambda c: c["claims"][0]["output_relation"].update(
        Y=["concat(" * 5000 + "y@r0" + ", dim=0)" * 5000]), False, 3, "nested deeper than"),
}


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_tampered_certificate_rejected(name, cert, tmp_path):
    edit, fix_hash, code, fragment = TAMPER[name]
    c = copy.deepcopy(cert)
    edit(c)
    if fix_hash:
        rehash(c)
    got, msg = outcome(write(tmp_path, c))
    assert got == code and fragment in msg, (got, msg)


def test_cli_exit_codes_and_one_line_errors(cert, tmp_path):
    text = json.dumps(cert)
    for content, code, word in [(text[: len(text) // 2], 2, "MALFORMED"),
                                ("[" * 100000 + "]" * 100000, 3, "LIMIT"),
                                (json.dumps(dict(cert, verdict="REJECT")), 1, "REJECT")]:
        r = run_pvcert("replay", write(tmp_path, content))
        assert r.returncode == code, r.stderr
        out = (r.stderr or r.stdout).strip().splitlines()
        assert word in (r.stderr + r.stdout) and "Traceback" not in r.stderr
        if code != 1:
            assert len(out) == 1, out
    r = run_pvcert("replay", str(tmp_path / "absent.json"))
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_size_and_time_limits(cert, tmp_path):
    path = write(tmp_path, cert)
    with pytest.raises(LimitExceeded, match="exceeds the limit"):
        replay(path, Limits(max_bytes=1000))
    start = time.monotonic()
    assert outcome(path, Limits(seconds=0.0))[0] == 3
    assert time.monotonic() - start < 5
    r = run_pvcert("replay", path, "--timeout", "0")
    assert r.returncode == 3 and "time limit" in r.stderr
    with pytest.raises(LimitExceeded, match="elements"):
        replay(path, Limits(max_elements=4))


def test_random_mutations_never_crash_or_accept_changed_claims(cert, tmp_path):
    """Deterministic fuzzing of JSON values: every outcome is a clean verdict or error."""
    rng = random.Random(1234)
    mutants = [0, -1, 1, 7, 2.5, "", "x@r9", None, [], {}, True, "concat(y@r0, dim=0)"]
    accepted_changes = 0
    for i, (path, c) in enumerate(mutations(cert, 1234, 120, mutants)):
        if rng.random() < 0.5:
            rehash(c)
        code, msg = outcome(write(tmp_path, c, f"m{i}.json"))
        assert code in (0, 1, 2, 3)
        if code == 0:  # only harmless fields may change and still be accepted
            assert c["claims"] == cert["claims"], path
            assert [a["embedded"] for a in c["subject"]["artifacts"]] == \
                [a["embedded"] for a in cert["subject"]["artifacts"]], path
            accepted_changes += 1
    assert accepted_changes < 60


def test_malformed_artifact_list(cert, tmp_path):
    c = copy.deepcopy(cert)
    c["subject"]["artifacts"].append(copy.deepcopy(c["subject"]["artifacts"][0]))
    with pytest.raises(Malformed, match="duplicate artifact id 'spec'"):
        replay(write(tmp_path, c))


@pytest.mark.parametrize("text,deep", [
    ('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', False),   # brackets in a string
    ('["\\\\", ' + "[" * 70 + "]" * 70 + "]", True),     # an escaped backslash ends no string early
    ('["\\"' + "[" * 70 + '"]', False),                  # an escaped quote: still in the string
    ('["' + "[" * 70, False),                              # an unterminated string runs to the end
    ("[" * 65 + "]" * 65, True), ("[" * 64 + "]" * 64, False)])
def test_json_depth_scan_skips_strings(text, deep):
    """``limits._scan_depth`` (run before ``json.loads``) counts brackets outside JSON strings only."""
    from certificates.errors import LimitExceeded
    from certificates.limits import _scan_depth
    if deep:
        with pytest.raises(LimitExceeded):
            _scan_depth(text, "t", 64)
    else:
        _scan_depth(text, "t", 64)
