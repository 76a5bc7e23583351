"""Verdict, relation, obligation counts and certificate do not depend on names or on order.

Every tensor and node of one rank is renamed and the impl's node list (and tensor table) is
reshuffled into another topological order: the verdict, the relation (up to the renaming),
the obligation counts and the replayed certificate stay the same. ``verify`` prints the
counts ``replay`` prints, and a certificate written twice is byte-identical."""

import copy
import json
import os
import random
import re

import pytest

from certificates import cli as checker_cli
from verifier.case import Case, load_case
from verifier.cli import main
from verifier.refine import infer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = re.compile(r"([(), =\[\]])")


def renamed(case: Case, rank: int, seed: int) -> tuple[Case, dict[str, str]]:
    """``case`` with rank ``rank``'s tensors and nodes renamed at random and the impl reshuffled."""
    g, rng = copy.deepcopy(case.impl), random.Random(seed)
    mine = [t for t, m in g["tensors"].items() if m.get("rank") == rank and t.endswith(f"@r{rank}")]
    fresh = [f"v{rng.randrange(10**6)}_{i}@r{rank}" for i in range(len(mine))]
    rng.shuffle(fresh)
    new = dict(zip(mine, fresh))
    ren = lambda t: new.get(t, t)  # noqa: E731
    tensors = [(ren(k), v) for k, v in g["tensors"].items()]
    rng.shuffle(tensors)
    g["tensors"], g["inputs"], g["outputs"] = dict(tensors), [ren(t) for t in g["inputs"]], [ren(t) for t in g["outputs"]]
    for i, n in enumerate(g["nodes"]):
        n["inputs"], n["outputs"] = [t and ren(t) for t in n["inputs"]], [ren(t) for t in n["outputs"]]
        if n.get("rank") == rank or rank in n.get("group", []):
            n["name"] = f"n{rng.randrange(10**6)}_{i}"
    done, todo, order = set(g["inputs"]), list(g["nodes"]), []
    while todo:   # another topological order, drawn at random
        n = rng.choice([n for n in todo if all(t is None or t in done for t in n["inputs"])])
        todo.remove(n)
        order.append(n)
        done.update(n["outputs"])
    assert [n["name"] for n in order] != [n["name"] for n in g["nodes"]]
    g["nodes"] = order

    def rel(r):
        return {k: ["".join(map(ren, TOKEN.split(e))) for e in v] for k, v in r.items()}
    return Case(case.name, case.spec, g, rel(case.input_relation), rel(case.expect)), new


def texts(inf, names=None) -> dict:
    names = names or {}
    return {k: ["".join(names.get(p, p) for p in TOKEN.split(str(e))) for e in v] for k, v in inf.relation.items()}


def counts(text: str) -> tuple[int, int]:
    m = re.search(r"(\d+) distinct obligations \((\d+) reused\)", text)
    return int(m.group(1)), int(m.group(2))


def replayed(tmp_path, inf, name: str, capsys) -> tuple[int, int]:
    from verifier import certificate

    path = tmp_path / name
    path.write_text(json.dumps(certificate.per_operator_certificate(inf)))
    capsys.readouterr()
    assert checker_cli.main([str(path)]) == 0
    return counts(capsys.readouterr().out)


@pytest.fixture(scope="module")
def attention():
    pytest.importorskip("torch")
    return load_case(os.path.join(ROOT, "examples", "cases", "tp_attention.py"))


@pytest.mark.parametrize("rank, seed", [(0, 1), (1, 2)])
def test_renamed_and_reshuffled_rank_changes_nothing(attention, tmp_path, capsys, rank, seed):
    """TP attention (softmax: exp), forward and backward."""
    base = infer(attention)
    case, names = renamed(attention, rank, seed)
    got = infer(case)
    assert base.verified and got.verified
    assert texts(base, names) == texts(got)          # the same relation, equation for equation
    assert (got.obligations, got.reused) == (base.obligations, base.reused)
    assert got.steps == base.steps
    assert replayed(tmp_path, got, "renamed.json", capsys) == (got.obligations, got.reused)


def test_verify_prints_the_counts_replay_prints(tmp_path, capsys):
    """The vocabulary-parallel embedding tries candidates that fail: those are not counted."""
    pytest.importorskip("torch")
    cert = tmp_path / "c.json"
    assert main(["verify", os.path.join(ROOT, "examples", "cases", "vocab_embedding.py"),
                 "--emit-cert", str(cert)]) == 0
    verified = counts(capsys.readouterr().out)
    assert checker_cli.main([str(cert)]) == 0
    assert counts(capsys.readouterr().out) == verified


def test_certificate_is_byte_identical_run_twice(tmp_path, capsys):
    case = os.path.join(ROOT, "examples", "tp_mlp", "case.json")
    for name in ("a.json", "b.json"):
        assert main(["verify", case, "--emit-cert", str(tmp_path / name)]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
