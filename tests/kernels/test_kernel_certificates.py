"""Kernel certificates: emitted for equivalent pairs, replayed by certificates/kernel.py,
rejected when the schedule, witness, outputs, launch or PTX are tampered with."""

from __future__ import annotations

import copy
import os
import hashlib
import json
import random

import pytest

from certificates.errors import Malformed
from certificates.limits import canonical_bytes
from certificates.replay import replay
from conftest import mutations, run_pvcert
from verifier.kernels.certificate import kernel_certificate, pair_claim
from verifier.kernels.equiv import CORPUS, check_pair, load_pairs

PAIRS = load_pairs()
SMALL = ["reduce5_unroll_last_warp_syncwarp", "reduce8_shfl", "stencil_pingpong", "mirror_sum",
         "reduce1_interleaved_divergent", "hgemm_mma"]   # hgemm_mma: the checker's mma appends (kernel.dot)


def certify(*names: str) -> dict:
    items = []
    for n in names:
        r = check_pair(PAIRS[n])
        assert r.verdict == "equivalent", (n, r.message)
        items.append(pair_claim(n, PAIRS[n], CORPUS, r))
    return kernel_certificate(items)


@pytest.fixture(scope="module")
def base_cert() -> dict:
    return certify("reduce5_unroll_last_warp_syncwarp")


def outcome(cert: dict, tmp_path, name: str = "c.json") -> tuple[bool, str]:
    p = tmp_path / name
    p.write_text(json.dumps(cert))
    try:
        res = replay(str(p))
    except Malformed as e:
        return False, f"malformed: {e}"
    return all(r.ok for r in res), "; ".join(r.detail for r in res)


def rehash(c: dict) -> None:
    for a in c["subject"]["artifacts"]:
        a["sha256"] = hashlib.sha256(canonical_bytes(a["embedded"])).hexdigest()


@pytest.mark.parametrize("name", SMALL)
def test_equivalent_pairs_replay(name, tmp_path):
    ok, detail = outcome(certify(name), tmp_path)
    assert ok, detail
    assert "output elements equal over the reals" in detail


def test_witness_names_the_ordering_barrier(base_cert):
    ev = base_cert["evidence"]["reduce5_unroll_last_warp_syncwarp"]["optimized"]
    ptx = base_cert["subject"]["artifacts"][1]["embedded"]
    instrs = [ln.strip() for ln in ptx.splitlines()]
    assert ev["witness"], "the tree reduction's shared-memory conflicts must be listed"
    kinds = {w[1] for w in ev["witness"]}
    assert kinds <= {"RAW", "WAR", "WAW"} and "RAW" in kinds
    assert any("bar.warp.sync" in i for i in instrs) and any("bar.sync" in i for i in instrs)


def edit(cert: dict, fn) -> dict:
    c = copy.deepcopy(cert)
    fn(c["evidence"]["reduce5_unroll_last_warp_syncwarp"], c)
    return c


@pytest.mark.parametrize("what,fn,reason", [
    ("drop a schedule event", lambda e, c: e["optimized"]["schedule"].pop(), "not exited"),
    ("release a barrier early", lambda e, c: e["optimized"]["schedule"].insert(
        0, next(x for x in e["optimized"]["schedule"] if x[0] == "bar")), "not waiting at barrier"),
    ("run a blocked thread", lambda e, c: e["optimized"]["schedule"].insert(2, ["run", 0, 0]), "not runnable"),
    ("shrink a barrier", lambda e, c: next(x for x in e["optimized"]["schedule"] if x[0] == "bar")[3].__setitem__(
        0, [0, 0]), "released for"),
    ("drop a witness class", lambda e, c: e["optimized"]["witness"].pop(0), "witness differs"),
    ("move a witness barrier", lambda e, c: e["optimized"]["witness"][0].__setitem__(4, 0), "witness differs"),
    ("add a witness class", lambda e, c: e["optimized"]["witness"].append(["shared", "RAW", 1, 2, 3]),
     "witness differs"),
    ("change an output", lambda e, c: e["optimized"]["outputs"].__setitem__(
        "out[0]", e["optimized"]["outputs"]["out[0]"] + " + 1"), "normal form"),
    ("drop an output", lambda e, c: e["reference"]["outputs"].clear(), "not the elements"),
    ("other CTA", lambda e, c: c["claims"][0].__setitem__("cta", [1, 0, 0]), "not the elements"),
    ("other shape", lambda e, c: c["claims"][0]["params"][0].__setitem__("shape", [64]), "out of bounds"),
    ("PTX changed", lambda e, c: c["subject"]["artifacts"][1].__setitem__(
        "embedded", c["subject"]["artifacts"][1]["embedded"].replace("bar.warp.sync", "bar.warp.sync ")),
     "sha256"),
])
def test_tampering_is_rejected(base_cert, tmp_path, what, fn, reason):
    ok, detail = outcome(edit(base_cert, fn), tmp_path)
    assert not ok, what
    assert reason in detail, (what, detail)


def test_racy_kernel_with_forged_hash_is_rejected(base_cert, tmp_path):
    """Swap in the classic warp-synchronous tail (no __syncwarp) and fix the hash: the
    replay itself finds the race, whatever the schedule and witness say."""
    c = copy.deepcopy(base_cert)
    racy = (CORPUS / PAIRS["reduce5_unroll_last_warp"]["optimized"]["ptx"]).read_text()
    art = c["subject"]["artifacts"][1]
    art["embedded"] = racy
    c["claims"][0]["optimized"]["entry"] = PAIRS["reduce5_unroll_last_warp"]["optimized"]["entry"]
    rehash(c)
    ok, detail = outcome(c, tmp_path)
    assert not ok and ("data race" in detail or "not" in detail), detail


def test_unsupported_ptx_is_rejected(base_cert, tmp_path):
    c = copy.deepcopy(base_cert)
    art = c["subject"]["artifacts"][1]
    art["embedded"] = art["embedded"].replace("bar.warp.sync", "mbarrier.arrive.b64", 1)
    rehash(c)
    ok, detail = outcome(c, tmp_path)
    assert not ok and "mbarrier" in detail, detail


def test_random_mutations_never_crash_or_accept_a_changed_claim(base_cert, tmp_path):
    rng = random.Random(7)
    mutants = [0, -1, 1, 31, 1 << 40, 2.5, "", "bar", "shared", None, [], {}, True, ["run", 0, 0]]
    for i, (path, c) in enumerate(mutations(base_cert, 99, 80, mutants)):
        if rng.random() < 0.5:
            rehash(c)
        p = tmp_path / f"m{i}.json"
        p.write_text(json.dumps(c))
        try:
            res = replay(str(p))
        except Malformed:
            continue
        if all(r.ok for r in res):
            assert c["claims"] == base_cert["claims"], path
            assert c["subject"]["artifacts"] == base_cert["subject"]["artifacts"] or \
                [a["embedded"] for a in c["subject"]["artifacts"]] == \
                [a["embedded"] for a in base_cert["subject"]["artifacts"]], path


def test_cli_emits_and_replays(tmp_path):
    cert = tmp_path / "k.json"
    r = run_pvcert("kernels", "reduce8_shfl", "mirror_sum", "--emit-cert", str(cert))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 equivalent pair(s)" in r.stdout
    r = run_pvcert("replay", str(cert))
    assert r.returncode == 0 and r.stdout.count("ACCEPT") >= 2, r.stdout + r.stderr


def test_cli_launch_description(tmp_path):
    r = run_pvcert("kernels", "--launch", "examples/kernels/launch/reduce8_shfl.json")
    assert r.returncode == 0 and "equivalent" in r.stdout, r.stdout + r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x", "params": [{"name": "a", "role": "input", "dtype": "f32",
                                                        "shape": [2]}],
                               "reference": {"ptx": "nope.ptx", "grid": [1, 1, 1], "block": [1, 1, 1]}}))
    r = run_pvcert("kernels", "--launch", str(bad))
    assert r.returncode == 2 and "reference.ptx: no file nope.ptx" in r.stderr and "Traceback" not in r.stderr


def test_vectorized_sgemm_certificate_replays(tmp_path):
    """A 64x64-tile SGEMM with float4 loads: 256 threads, shared-memory tiles, barriers."""
    ok, detail = outcome(certify("sgemm_vectorized"), tmp_path)
    assert ok, detail


SLOW = pytest.mark.skipif(os.environ.get("PVCERT_SLOW") != "1", reason="benchmark-sized: set PVCERT_SLOW=1")


@pytest.mark.slow
@SLOW
@pytest.mark.parametrize("name", sorted(n for n, p in PAIRS.items()
                                        if p["expected"]["verdict"] == "equivalent" and n not in SMALL))
def test_every_equivalent_pair_replays(name, tmp_path):
    """ldmatrix + mma.sync, WMMA, softmax and attention included (PVCERT_SLOW=1)."""
    ok, detail = outcome(certify(name), tmp_path)
    assert ok, detail


def test_large_outputs_are_certified_by_digest(tmp_path, monkeypatch):
    """Past the text budget, outputs are sha256 digests of their printed forms: replay
    recomputes the text; a changed digest is rejected."""
    import verifier.kernels.certificate as kc

    monkeypatch.setattr(kc, "TEXT_BUDGET", 0)
    cert = certify("reduce8_shfl")
    outs = cert["evidence"]["reduce8_shfl"]["optimized"]["outputs"]
    assert all(set(v) == {"sha256"} for v in outs.values())
    ok, detail = outcome(cert, tmp_path)
    assert ok, detail
    key = sorted(outs)[0]
    outs[key] = {"sha256": "0" * 64}
    ok, detail = outcome(cert, tmp_path, "t.json")
    assert not ok and "normal form" in detail


def test_digests_once_the_budget_is_passed_midway(monkeypatch, tmp_path):
    """Once the texts' sum passes the budget, every output of the CTA is a digest: of its terms as arrays for the
    GEMM's dot products (not of its text), and the replay recomputes each."""
    import verifier.kernels.certificate as kc

    monkeypatch.setattr(kc, "TEXT_BUDGET", 1 << 40)
    texts = certify("sgemm_smem")["evidence"]["sgemm_smem"]["optimized"]["outputs"]
    monkeypatch.setattr(kc, "TEXT_BUDGET", sum(map(len, texts.values())) // 3)
    cert = certify("sgemm_smem")
    outs = cert["evidence"]["sgemm_smem"]["optimized"]["outputs"]
    assert set(outs) == set(texts) and all(set(v) == {"sha256"} for v in outs.values())
    assert not any(outs[k]["sha256"] == hashlib.sha256(t.encode()).hexdigest() for k, t in texts.items())
    ok, detail = outcome(cert, tmp_path)
    assert ok, detail
    outs[sorted(outs)[-1]] = outs[sorted(outs)[0]]
    ok, detail = outcome(cert, tmp_path, "t.json")
    assert not ok and "normal form" in detail


def test_digests_midway_leave_no_atom_in_the_table(monkeypatch, tmp_path):
    """Online-softmax outputs hold ``max`` atoms. Past the budget midway, the texts the engine had printed leave
    no atom in the table (digests name atoms by ``anon``), so the replay's table is the certificate's; the
    replay digests an output equal as built on both sides once, and a forged one is still REJECTed."""
    import verifier.kernels.certificate as kc
    from verifier.kernels.certificate import SIDES

    name = "softmax_online_warp"
    monkeypatch.setattr(kc, "TEXT_BUDGET", 1 << 40)
    whole = certify(name)["evidence"][name]
    assert whole["atoms"]
    monkeypatch.setattr(kc, "TEXT_BUDGET", min(sum(map(len, whole[s]["outputs"].values())) for s in SIDES) // 3)
    cert = certify(name)
    ev = cert["evidence"][name]
    assert all(set(v) == {"sha256"} for s in SIDES for v in ev[s]["outputs"].values()) and ev["atoms"] == []
    ok, detail = outcome(cert, tmp_path)
    assert ok, detail
    key = sorted(ev["optimized"]["outputs"])[-1]
    ev["optimized"]["outputs"][key] = {"sha256": "f" * 64}
    ok, detail = outcome(cert, tmp_path, "t.json")
    assert not ok and f"optimized: {key}: the certified normal form is not the replay's" in detail


def test_digest_is_a_function_of_the_normal_form():
    """``Printer.digest``: equal normal forms built differently (a ``Dot`` by ``fma``, a ``Rat`` by ``*`` and ``+``,
    terms in another order) have one digest; another coefficient, another pairing or an added constant change it;
    a value with an atom (``max``) is digested by its text with the atom named by ``anon``, registering none."""
    from certificates.kernel import Printer, anon, fma, var
    from certificates.poly import Rat, apply

    a, b, c, d = (var(f"dg.{x}") for x in "abcd")
    dot = fma(c, d, fma(a, b, fma(a, a, Rat.of(0))))
    p = Printer()
    assert type(dot).__name__ == "Dot"
    assert p.digest(dot) == p.digest(d * c + a * a + b * a) == Printer().digest(dot)
    assert len({p.digest(x) for x in (dot, a * b + c * d + a * a + a * b, a * c + b * d + a * a,
                                      dot + Rat.of(1), a * b + c * d)}) == 5
    m = apply("max", a, b)
    assert p.digest(m * c) == hashlib.sha256((m * c).text(anon).encode()).hexdigest() == Printer().digest(c * m)
    assert not p.table and anon(str(m)) != str(m) and anon("dg.a") == "dg.a"
