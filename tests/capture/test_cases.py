"""The Python case format: load_case on examples/cases, and the whole-graph refinement
check proving the captured cases (certificates.refinement.check)."""

import os
import textwrap

import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from certificates.errors import Malformed  # noqa: E402
from certificates.graph import parse_graph  # noqa: E402
from certificates import solve  # noqa: E402
from certificates.refinement import check, parse_relation  # noqa: E402
from verifier.capture.case import Case, declared, capture_case, load_case  # noqa: E402

CASES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "cases")


def prove(case: Case):
    spec, impl = parse_graph(case.spec, "spec"), parse_graph(case.impl, "impl")
    rin = parse_relation(case.input_relation, spec, impl, "input_relation", inputs_only=True)
    rout = parse_relation(case.expect, spec, impl, "expect", inputs_only=False)
    return check(spec, impl, rin, rout, solver=solve)   # as the replay of a refinement claim (chain._whole_graph)


def test_tp_mlp_forward_proved():
    """Acceptance: TP MLP, W=2, tiny shapes, forward: the checker proves the captured case."""
    c = declared(os.path.join(CASES, "tp_mlp.py"))
    c.backward = False
    c.input_relation = {k: v for k, v in c.input_relation.items() if k != "d_out"}
    c.expect = {"out": c.expect["out"]}
    case = capture_case(c)
    assert case.input_relation["fc1.weight"] == ["concat(fc1.weight@r0, fc1.weight@r1, dim=0)"]
    assert case.input_relation["x"] == ["x@r0", "x@r1"]
    outcomes = prove(case)
    assert outcomes and all(o.holds for o in outcomes), [o.failure for o in outcomes]


ALL = ["tp_mlp", "sp_mlp", "vocab_embedding", "ep_moe", "tp_attention", "dtensor_mlp", "pp_mlp"]


def forward_only(c):
    c.backward = False
    c.input_relation = {k: v for k, v in c.input_relation.items() if not k.startswith("d_")}
    c.expect = {k: v for k, v in c.expect.items() if not k.startswith("grad.")}
    return c


@pytest.mark.parametrize("name", ALL)
def test_example_cases_proved(name):
    """Whole-graph check of every case (tp_attention: forward; its backward is slow there)."""
    path = os.path.join(CASES, f"{name}.py")
    case = load_case(path) if name != "tp_attention" else capture_case(forward_only(declared(path)))
    assert isinstance(case, Case) and case.name == name
    outcomes = prove(case)
    assert outcomes and all(o.holds for o in outcomes), [o.failure for o in outcomes if not o.holds]


@pytest.mark.parametrize("name", ALL)
def test_pvcert_verify_cases(name, capsys):
    """``pvcert verify case.py`` (default engine) verifies every case, backward included."""
    cli = pytest.importorskip("verifier.cli")
    assert cli.main(["verify", os.path.join(CASES, f"{name}.py")]) == 0, capsys.readouterr().out[-2000:]
    assert f"VERIFIED {name}" in capsys.readouterr().out


def test_missing_allreduce_is_refuted():
    """A real bug class: the row-parallel output without its all_reduce is not the spec."""
    import examples.models.mlp as mlp

    c = declared(os.path.join(CASES, "tp_mlp.py"))
    c.backward = False
    c.input_relation = {k: v for k, v in c.input_relation.items() if k != "d_out"}
    c.expect = {"out": c.expect["out"]}
    orig = mlp.reduce_from_tp
    mlp.reduce_from_tp = lambda x, group=None: x
    try:
        case = capture_case(c)
    finally:
        mlp.reduce_from_tp = orig
    assert not [n for n in case.impl["nodes"] if "group" in n]
    assert not all(o.holds for o in prove(case))


def _write(tmp_path, text, name="case.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_bad_case_modules(tmp_path):
    p = _write(tmp_path, "x = 1\n")
    with pytest.raises(Malformed, match="CASE or make_case"):
        load_case(p)
    p = _write(tmp_path, "import no_such_module_xyz\n", "b.py")
    with pytest.raises(Malformed, match="b.py: importing the case module failed: ModuleNotFoundError"):
        load_case(p)
    with pytest.raises(Malformed, match="no such case file"):
        load_case(str(tmp_path / "missing.py"))
    p = _write(tmp_path, "CASE = 3\n", "c.py")
    with pytest.raises(Malformed, match="CaptureCase"):
        load_case(p)


def test_unsupported_op_named(tmp_path):
    p = _write(tmp_path, """
        import torch
        from verifier.capture.case import CaptureCase

        class M(torch.nn.Module):
            def forward(self, x):
                return torch.cumprod(x, 0) + torch.special.erfinv(x)

        CASE = CaptureCase(name="bad", spec=M, impl=lambda r, w: M(), world_size=2, inputs={"x": (2, 2)},
                           input_relation={"x": ["x@r0"]}, expect={})
        """)
    with pytest.raises(Malformed) as e:
        load_case(p)
    msg = str(e.value)
    assert "\n" not in msg and p in msg
    assert "aten.cumprod.default" in msg and "aten.erfinv.default" in msg and "bad_spec" in msg


def test_data_dependent_control_flow(tmp_path):
    p = _write(tmp_path, """
        import torch
        from verifier.capture.case import CaptureCase

        class M(torch.nn.Module):
            def forward(self, x):
                return x * 2 if x.sum() > 0 else x

        CASE = CaptureCase(name="ddcf", spec=M, impl=lambda r, w: M(), world_size=2, inputs={"x": (2, 2)},
                           input_relation={"x": ["x@r0"]}, expect={})
        """)
    with pytest.raises(Malformed, match="ddcf_spec: tracing failed: .*(data.dependent|Data.dependent|symbolic)"):
        load_case(p)


def test_dtensor_relations_from_placements():
    case = load_case(os.path.join(CASES, "dtensor_mlp.py"))
    assert case.input_relation["fc1.weight"] == ["concat(fc1.weight@r0, fc1.weight@r1, dim=0)"]
    assert case.input_relation["fc2.weight"] == ["concat(fc2.weight@r0, fc2.weight@r1, dim=1)"]
    assert case.input_relation["fc2.bias"] == ["fc2.bias@r0", "fc2.bias@r1"]
    assert case.expect["grad.fc1.bias"] == ["concat(grad.fc1.bias@r0, grad.fc1.bias@r1, dim=0)"]


def test_placements_relation_2d_and_partial():
    from torch.distributed.tensor import Partial, Replicate, Shard

    from verifier.capture.relations import partial, placements_relation, replicate, shard

    mesh = [[0, 1], [2, 3]]
    assert placements_relation("w", (Shard(0), Shard(1)), mesh) == [
        "concat(concat(w@r0, w@r1, dim=1), concat(w@r2, w@r3, dim=1), dim=0)"]
    assert placements_relation("w", (Replicate(), Shard(0)), mesh) == [
        "concat(w@r0, w@r1, dim=0)", "concat(w@r2, w@r3, dim=0)"]
    assert placements_relation("g", (Partial(),), [0, 1, 2]) == ["sum(g@r0, g@r1, g@r2)"]
    assert shard("x", dim=1).exprs(2) == ["concat(x@r0, x@r1, dim=1)"]
    assert replicate("x").exprs(3) == ["x@r0", "x@r1", "x@r2"]
    assert partial("g").exprs([1, 3]) == ["sum(g@r1, g@r3)"]


@pytest.mark.parametrize("world", [2, 4, 8])
def test_pvcert_verify_megatron_gpt(world, tmp_path, capsys):
    """megatron-core GPTModel (1 layer) at TP=world against TP=1, forward and backward."""
    pytest.importorskip("megatron.core", reason="megatron-core is not installed")
    cli = pytest.importorskip("verifier.cli")
    p = tmp_path / "mg.py"
    p.write_text(f"from examples.cases import megatron_gpt\nCASE = megatron_gpt.make_case({world})\n")
    assert cli.main(["verify", str(p)]) == 0, capsys.readouterr().out[-2000:]
    out = capsys.readouterr().out
    assert "VERIFIED megatron_gpt" in out and f"({world} ranks" in out


def test_model_build_failure_is_one_line(tmp_path):
    p = _write(tmp_path, """
        from verifier.capture.case import CaptureCase

        def boom(*a):
            import no_such_package_xyz  # noqa: F401

        CASE = CaptureCase(name="b", spec=boom, impl=boom, world_size=2, inputs={"x": (2,)},
                           input_relation={}, expect={})
        """)
    with pytest.raises(Malformed, match="building or capturing the models failed: ModuleNotFoundError"):
        load_case(p)


def test_make_case_function(tmp_path):
    p = _write(tmp_path, """
        from examples.models.mlp import MLP, TPMLP
        from verifier.capture.case import CaptureCase
        from verifier.capture.relations import replicate, shard

        def make_case():
            return CaptureCase(name="fn", spec=lambda: MLP(2, 4, bias=False),
                               impl=lambda r, w: TPMLP(2, 4, w, bias=False),
                               world_size=2, inputs={"x": (1, 2)}, output_names=["y"],
                               input_relation={"x": replicate("x"), "fc1.weight": shard("fc1.weight", dim=0),
                                               "fc2.weight": shard("fc2.weight", dim=1)},
                               expect={"y": replicate("y")})
        """)
    case = load_case(p)
    assert case.name == "fn" and case.expect == {"y": ["y@r0", "y@r1"]}
    assert all(o.holds for o in prove(case))
