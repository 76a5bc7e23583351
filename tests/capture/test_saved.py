"""Saved torch.export programs as input: ``pvcert verify --spec --impl --relation`` (docs/cases.md).

The bundled example (examples/saved/, written by its export script) verifies, replays and its
missing all-reduce is refuted; bad archives are one-line MALFORMED errors (exit 2) naming the
file and the element; nothing in an archive is unpickled or run as code."""

import json
import os
import shutil
import zipfile

import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from certificates import cli as checker_cli  # noqa: E402
from verifier.cli import main  # noqa: E402

SAVED = os.path.join(capture_helpers.ROOT, "examples", "saved")


def verify(capsys, spec, impls, relation, *extra):
    rc = main(["verify", "--spec", str(spec), "--impl", *map(str, impls), "--relation", str(relation), *extra])
    out = capsys.readouterr()
    return rc, out.out, out.err


def ex(name):
    return os.path.join(SAVED, name)


def test_saved_tp_mlp_verified_and_replayed(capsys, tmp_path):
    cert = tmp_path / "c.json"
    rc, out, err = verify(capsys, ex("spec.pt2"), [ex("r0.pt2"), ex("r1.pt2")], ex("relation.json"),
                          "--emit-cert", str(cert))
    assert rc == 0 and "VERIFIED saved_tp_mlp" in out, out + err
    assert checker_cli.main([str(cert)]) == 0


def test_saved_missing_all_reduce_refuted(capsys):
    rc, out, _ = verify(capsys, ex("spec.pt2"), [ex("r0_missing_allreduce.pt2"), ex("r1_missing_allreduce.pt2")],
                        ex("relation.json"))
    assert rc == 1 and "REFUTED saved_tp_mlp: 'out' differs" in out and "counterexample (executed)" in out


def test_the_export_script_writes_what_is_bundled(tmp_path):
    """The example's archives are what examples/saved/export_tp_mlp.py writes (same graphs)."""
    import runpy

    script = tmp_path / "export_tp_mlp.py"
    shutil.copy(ex("export_tp_mlp.py"), script)
    runpy.run_path(str(script), run_name="__main__")
    for name in ("spec.pt2", "r0.pt2", "r1_missing_allreduce.pt2"):
        def graph(path):
            with zipfile.ZipFile(path) as z:
                model = next(n for n in z.namelist() if "/models/" in n)
                g = json.loads(z.read(model))["graph_module"]["graph"]
            return [(n["target"], [i["name"] for i in n["inputs"]]) for n in g["nodes"]]
        assert graph(tmp_path / name) == graph(ex(name))


def rewrite(src: str, dst, edit) -> None:
    """Copy archive ``src`` to ``dst`` with its model JSON changed by ``edit(obj)``."""
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w") as zo:
        for info in zi.infolist():
            data = zi.read(info)
            if "/models/" in info.filename:
                obj = json.loads(data)
                edit(obj)
                data = json.dumps(obj).encode()
            zo.writestr(info.filename, data)


def set_target(old: str, new: str):
    def edit(obj):
        for n in obj["graph_module"]["graph"]["nodes"]:
            if n["target"] == old:
                n["target"] = new
    return edit


BAD = {
    "not_zip": (lambda p: p.write_text("not a zip"), "not a zip archive"),
    "pickle_only": (lambda p: torch.save({"w": torch.zeros(2)}, p),
                    "holds a pickle ('pickle_only/data.pkl') and no serialized torch.export graph"),
    "custom_op": (lambda p: rewrite(ex("r0.pt2"), p, set_target("torch.ops.aten.gelu.default",
                                                                 "torch.ops.mylib.fused_gelu.default")),
                  "node 'gelu' (torch.ops.mylib.fused_gelu.default): operator 'torch.ops.mylib.fused_gelu.default' "
                  "of namespace 'mylib'"),
    "python_target": (lambda p: rewrite(ex("r0.pt2"), p, set_target("torch.ops.aten.gelu.default", "builtins.eval")),
                      "node 'gelu' (builtins.eval): target 'builtins.eval' is not an operator"),
    "unknown_op": (lambda p: rewrite(ex("r0.pt2"), p, set_target("torch.ops.aten.gelu.default",
                                                                  "torch.ops.aten.erfinv.default")),
                   "ops not in the operator registry: aten.erfinv.default"),
    "symbolic": (lambda p: rewrite(ex("r0.pt2"), p, lambda o: o["graph_module"]["graph"]["sym_int_values"].update(
        {"s0": {"as_expr": {"expr_str": "__import__('os').system('false')"}}})), "graph has sym_int values"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_archive_is_one_line_malformed(capsys, tmp_path, kind):
    make, msg = BAD[kind]
    bad = tmp_path / f"{kind}.pt2"
    make(bad)
    rc, out, err = verify(capsys, ex("spec.pt2"), [bad, ex("r1.pt2")], ex("relation.json"))
    assert rc == 2, out + err
    assert err.count("\n") == 1 and f"MALFORMED: {bad}: " in err and msg in err, err


def test_constant_read_from_raw_bytes_pickled_refused(capsys, tmp_path):
    """A lifted one-element constant is read from its raw bytes (3 vs 2 is refuted); marked as a
    pickle it is refused."""
    class M(torch.nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = torch.tensor(c)

        def forward(self, x):
            return x * self.c

    for c in (3.0, 2.0):
        torch.export.save(torch.export.export(M(c), (torch.ones(2),)), tmp_path / f"c{c:g}.pt2")
    with zipfile.ZipFile(tmp_path / "c3.pt2") as zi, zipfile.ZipFile(tmp_path / "pickled.pt2", "w") as zo:
        for info in zi.infolist():
            data = zi.read(info)
            if info.filename.endswith("model_constants_config.json"):
                cfg = json.loads(data)
                cfg["config"]["c"]["use_pickle"] = True
                data = json.dumps(cfg).encode()
            zo.writestr(info.filename, data)
    rel = tmp_path / "rel.json"
    rel.write_text(json.dumps({"format": "pvcert-relation", "version": 1, "input_relation": {"x": ["x"]},
                               "expect": {"out": ["out"]}}))
    assert verify(capsys, tmp_path / "c3.pt2", [tmp_path / "c3.pt2"], rel)[0] == 0
    rc, out, _ = verify(capsys, tmp_path / "c3.pt2", [tmp_path / "c2.pt2"], rel)
    assert rc == 1 and "counterexample (executed)" in out
    rc, out, err = verify(capsys, tmp_path / "pickled.pt2", [tmp_path / "c3.pt2"], rel)
    assert rc == 2 and "tensor constant 'c' is stored as a pickle" in err, err


@pytest.mark.parametrize("edit, msg", [
    (lambda r: r.update(groups={}), "collective group '0' of rank 0: not in the relation file's 'groups'"),
    (lambda r: r.update(groups={"0": [0, 2]}), "groups['0']: [0, 2] is not a list of distinct ranks below 2"),
    (lambda r: r.update(extra=1), "unknown key(s) extra"),
    (lambda r: r.pop("expect"), "'expect' must map spec tensor names"),
])
def test_bad_relation_file(capsys, tmp_path, edit, msg):
    rel = json.load(open(ex("relation.json")))
    edit(rel)
    path = tmp_path / "rel.json"
    path.write_text(json.dumps(rel))
    rc, out, err = verify(capsys, ex("spec.pt2"), [ex("r0.pt2"), ex("r1.pt2")], path)
    assert rc == 2 and msg in err and err.count("\n") == 1, err


def test_case_and_saved_programs_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as e:
        main(["verify", "--spec", ex("spec.pt2"), "--impl", ex("r0.pt2")])
    assert e.value.code == 2


def test_integer_input_range_from_the_relation_file(capsys, tmp_path):
    """A saved program does not record value ranges: an integer input takes its range from the
    relation file's ``inputs``, and without one the error says where to put it."""
    path = tmp_path / "emb.pt2"
    torch.export.save(torch.export.export(torch.nn.Embedding(10, 4), (torch.zeros(3, dtype=torch.long),)), path)
    rel = {"format": "pvcert-relation", "version": 1, "input_relation": {"input": ["input"], "weight": ["weight"]},
           "expect": {"out": ["out"]}}
    (tmp_path / "no_range.json").write_text(json.dumps(rel))
    rc, _, err = verify(capsys, path, [path], tmp_path / "no_range.json")
    assert rc == 2 and "integer input 'input' needs a value range" in err, err
    (tmp_path / "rel.json").write_text(json.dumps({**rel, "inputs": {"input": {"range": [0, 10]}}}))
    rc, out, err = verify(capsys, path, [path], tmp_path / "rel.json")
    assert rc == 0 and "VERIFIED" in out, out + err


@pytest.mark.parametrize("groups, rc", [({"0": [[0, 1]]}, 0), ({"0": [[0], [1]]}, 1)])
def test_group_names_resolve_by_the_relation_file(capsys, tmp_path, groups, rc):
    """The same saved programs mean what the relation file's groups say: group '0' as one group of
    both ranks verifies; as one group per rank (each all-reduce sums a rank with itself) it is refuted."""
    rel = {**json.load(open(ex("relation.json"))), "groups": groups}
    path = tmp_path / "rel.json"
    path.write_text(json.dumps(rel))
    got, out, err = verify(capsys, ex("spec.pt2"), [ex("r0.pt2"), ex("r1.pt2")], path)
    assert got == rc, out + err


def test_assertions_and_higher_level_ops_of_a_real_export(capsys, tmp_path):
    """Attention, layer norm, softmax and a dtype cast as torch.export saves them (with
    ``_assert_tensor_metadata`` nodes, which have no outputs): the program refines itself."""
    from examples.models.attention import Attention

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.ln = Attention(8, 4), torch.nn.LayerNorm(8)

        def forward(self, x):
            return self.ln(self.a(x).to(torch.float32)).softmax(-1)

    path = tmp_path / "block.pt2"
    ep = torch.export.export(Block(), (torch.randn(3, 8),))
    assert any("_assert_tensor_metadata" in str(n.target) for n in ep.graph.nodes)
    torch.export.save(ep, path)
    names = [s.target or s.arg.name for s in ep.graph_signature.input_specs]
    rel = tmp_path / "rel.json"
    rel.write_text(json.dumps({"format": "pvcert-relation", "version": 1, "input_relation": {n: [n] for n in names},
                               "expect": {"out": ["out"]}}))
    rc, out, err = verify(capsys, path, [path], rel)
    assert rc == 0 and "VERIFIED" in out, out + err
