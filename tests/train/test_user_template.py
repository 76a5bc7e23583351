"""Templated plans from the user's own layer, loss and optimizer (issue 16): verified and replayed; the
template mutations rejected with the user's blocks at a small and (slow) at the 70B shape; a bug
planted in the layer REFUTED at its block."""

import json

import pytest

pytest.importorskip("torch")

from certificates.replay import replay  # noqa: E402
from conftest import ROOT, run_pvcert  # noqa: E402
from verifier.capture.case import import_module  # noqa: E402
from verifier.train.template import MUTATIONS, verify  # noqa: E402

EXAMPLE = f"{ROOT}/examples/train/llama_user_template.py"
SMALL = dict(layers=4, dp=2, tp=2, pp=2, micro_batches=2)


@pytest.fixture(scope="module")
def example():
    return import_module(EXAMPLE)


@pytest.fixture(scope="module")
def small(example):
    res = verify(example.make_template(**SMALL))
    assert res.ok, res.reason
    return res


def _replayed(cert: dict, tmp_path) -> tuple[bool, str]:
    p = tmp_path / "cert.json"
    p.write_text(json.dumps(cert))
    rs = replay(str(p))
    return all(r.ok for r in rs), "; ".join(r.detail + " " + " ".join(r.shown) for r in rs)


def test_small_plan_of_the_users_layer_verifies_and_replays(small, tmp_path):
    ok, detail = _replayed(small.cert, tmp_path)
    assert ok, detail
    assert "8 ranks" in detail and "scale 1/128" in detail
    blocks = small.cert["claims"][0]["blocks"]   # the lineage: the DTensor placements of the user's modules
    assert blocks["fwd"]["input_relation"]["attn.q.weight"] == ["concat(attn.q.weight@r0, attn.q.weight@r1, dim=0)"]
    assert blocks["sgd"]["output_relation"]["new.attn.o.weight"] == [
        "concat(new.attn.o.weight@r0, new.attn.o.weight@r1, dim=1)"]
    assert blocks["bwd"]["output_relation"]["grad.norm1.weight"] == ["grad.norm1.weight@r0", "grad.norm1.weight@r1"]


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutations_rejected_with_the_users_blocks(example, small, name):
    res = verify(example.make_template(layers=6, dp=3, tp=2, pp=3, micro_batches=2), name, _blocks(small))
    assert not res.ok and res.block is None and "\n" not in res.reason, res.reason


def _blocks(res):
    """The verified blocks of ``res`` (as ``verify`` takes them), rebuilt from its certificate."""
    from verifier.train.template_blocks import BlockResult

    claim, ev = res.cert["claims"][0], res.cert["evidence"][res.cert["claims"][0]["id"]]
    arts = res.cert["subject"]["artifacts"]
    return [BlockResult(k, c, ev["blocks"][k], [a for a in arts if a["id"].startswith(k + ".")], 0, 0, 0, 0)
            for k, c in claim["blocks"].items()]


def test_bug_in_the_users_layer_refuted(tmp_path):
    case = tmp_path / "bug.py"
    case.write_text(f"import importlib.util\n"
                    f"s = importlib.util.spec_from_file_location('ut', {EXAMPLE!r})\n"
                    f"m = importlib.util.module_from_spec(s)\ns.loader.exec_module(m)\n"
                    f"def make_template():\n    return m.make_template(**{SMALL!r}, bug='qk_norm_local')\n")
    r = run_pvcert("verify", str(case))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REFUTED" in r.stdout and "block fwd" in r.stdout and "counterexample (executed)" in r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("shape", [dict(layers=80, dp=16, tp=8, pp=4, micro_batches=32),
                                   dict(layers=126, dp=64, tp=8, pp=16, micro_batches=16)])
def test_llama_shapes_from_the_users_layer(example, shape, tmp_path):
    res = verify(example.make_template(**shape))
    assert res.ok, res.reason
    ok, detail = _replayed(res.cert, tmp_path)
    assert ok and f"{shape['dp'] * 8 * shape['pp']} ranks" in detail, detail
    for name in MUTATIONS:   # every template mutation, at the full shape, with the same blocks
        bad = verify(example.make_template(**shape), name, _blocks(res))
        assert not bad.ok and bad.block is None, (name, bad.reason)
