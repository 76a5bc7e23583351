"""Failure locations users understand: each captured operator carries its module path and the
user's ``file:line`` (the graph IR's optional node ``source``), and reports print them."""

import copy
import json
import os
import sys

import pytest

from certificates.errors import Malformed
from certificates.graph import parse_graph
from conftest import ROOT, run_pvcert

torch = pytest.importorskip("torch")
if ROOT not in sys.path:   # the bundled cases are imported as examples.<...>
    sys.path.insert(0, ROOT)

from verifier.capture.case import capture_case  # noqa: E402
from verifier.capture.locations import user_frame  # noqa: E402
from verifier.case import Case  # noqa: E402
from verifier.refine import infer, report  # noqa: E402

# examples/cases/llama_tp.py with the o-projection's weight shards claimed in the wrong rank order
SWAPPED = '''
from examples.cases.llama_tp import make_case as _make
from verifier.capture.relations import shard


def make_case():
    case = _make(2)
    case.input_relation["o.weight"] = shard("o.weight", dim=1, ranks=(1, 0))
    return case
'''
BUG = '''
from examples.bugs.row_parallel_config import make_case as _make


def make_case():
    return _make(True)
'''


def _case(c) -> Case:
    return Case(c.name, c.spec, c.impl, c.input_relation, c.expect, c.approximations)


@pytest.fixture(scope="module")
def llama():
    from examples.cases.llama_tp import make_case
    return capture_case(make_case(2))


def test_captured_nodes_carry_module_and_user_line(llama):
    nodes = llama.spec["nodes"] + llama.impl["nodes"]
    assert all("source" in n for n in nodes)   # forward and backward operators alike
    src = {n["name"]: n["source"] for n in llama.spec["nodes"]}
    modules = {s.get("module") for s in src.values()}
    assert {"q", "k", "v", "o", "gate", "up", "down", "n1", "n2"} <= modules, modules
    assert {s["file"] for s in src.values()} == {os.path.join("examples", "models", "llama.py")}
    assert all(isinstance(s["line"], int) and s["line"] > 0 for s in src.values())
    grads = [n for n in llama.spec["nodes"] if n["name"] == "grad.o.weight"]
    assert grads and grads[0]["source"].get("module") == "o"   # a backward op inherits its forward's place


def test_user_frame_skips_torch_and_pvcert():
    trace = (f'File "{torch.__file__}", line 3, in f\n'
             f'File "{os.path.join(ROOT, "examples", "models", "llama.py")}", line 65, in forward\n'
             f'File "{os.path.join(ROOT, "verifier", "train", "mappings.py")}", line 9, in forward\n'
             'File "/usr/lib/python3/site-packages/x.py", line 1, in g\n')
    path, line = user_frame(trace)
    assert path.endswith(os.path.join("examples", "models", "llama.py")) and line == 65
    assert user_frame(f'File "{torch.__file__}", line 3, in f\n') is None


def test_failure_names_module_and_file_line(tmp_path):
    """The failing spec operator of a mis-sharded bundled case is the o-projection's matmul in
    examples/models/llama.py; text, Failure.location and the HTML report say so."""
    case = tmp_path / "swapped.py"
    case.write_text(SWAPPED)
    html = tmp_path / "r.html"
    r = run_pvcert("verify", str(case), "--report-html", str(html), timeout=300)
    assert r.returncode == 1 and "REFUTED" in r.stdout, r.stdout + r.stderr
    assert "\n  at o (llama.py:65) aten.mm.default\n" in r.stdout, r.stdout
    assert "o (llama.py:65)" in html.read_text()
    from importlib.util import module_from_spec, spec_from_file_location
    spec = spec_from_file_location("swapped", case)
    mod = module_from_spec(spec)
    spec.loader.exec_module(mod)
    f = infer(_case(capture_case(mod.make_case()))).failure
    assert f.location == {"module": "o", "file": os.path.join("examples", "models", "llama.py"), "line": 65}


def test_bug_failure_names_a_line_in_examples(tmp_path):
    case = tmp_path / "bug.py"
    case.write_text(BUG)
    r = run_pvcert("verify", str(case), timeout=300)
    assert r.returncode == 1 and "REFUTED" in r.stdout, r.stdout + r.stderr
    assert "\n  at (row_parallel_config.py:49) aten.mm.default\n" in r.stdout, r.stdout


def test_renamed_nodes_keep_their_source_and_verdict(llama):
    """Node names are labels: renaming every node changes neither the verdict nor the locations."""
    names = {n["name"]: f"op{i}" for i, n in enumerate(llama.impl["nodes"])}
    impl = copy.deepcopy(llama.impl)
    for n in impl["nodes"]:
        n["name"] = names[n["name"]]
    c = _case(llama)
    inf = infer(Case(c.name, c.spec, impl, c.input_relation, c.expect, c.approximations))
    assert inf.verified
    g = parse_graph(impl, "impl")
    before = {n["name"]: n["source"] for n in llama.impl["nodes"]}
    assert all(n.source == before[old] for old, new in names.items() for n in [g.nodes[g.position[new]]])


@pytest.mark.parametrize("source", [
    "o", [], {"module": 3}, {"file": "x" * 301}, {"line": 0}, {"line": "65"}, {"line": True},
    {"module": "o", "column": 3}])
def test_malformed_source_is_refused(spec_graph, source):
    g = copy.deepcopy(spec_graph)
    g["nodes"][0]["source"] = source
    with pytest.raises(Malformed, match="source"):
        parse_graph(json.loads(json.dumps(g)), "spec")


def test_well_formed_source_is_accepted_and_kept(spec_graph):
    g = copy.deepcopy(spec_graph)
    g["nodes"][0]["source"] = {"module": "layers.0.self_attn.o_proj", "file": "model.py", "line": 57}
    node = parse_graph(g, "spec").nodes
    got = [n for n in node if n.name == g["nodes"][0]["name"]][0]
    assert report.where(got) == f"layers.0.self_attn.o_proj (model.py:57) {got.target}"


def test_json_result_names_the_location(tmp_path):
    """--json: the failing operator's module/file:line are in the result, valid under the schema."""
    import json

    import jsonschema

    case = tmp_path / "bug.py"
    case.write_text(BUG)
    r = run_pvcert("verify", str(case), "--json", timeout=300)
    out = json.loads(r.stdout)
    schema = json.loads(open(os.path.join(os.path.dirname(__file__), "..", "docs", "schema", "output-v1.json")).read())
    jsonschema.validate(out, schema)
    loc = out["results"][0]["location"]
    assert out["verdict"] == "REFUTED" and loc["target"] == "aten.mm.default", out
    assert loc["file"].endswith("row_parallel_config.py") and loc["line"] == 49, loc
