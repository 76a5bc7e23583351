"""Shape reduction beyond its theorem (issue 12, item 1): only map axes may be reduced.

Each trap is false at full size and true at the size the old rules reduced it to. For each:
``verify --staged`` must not say VERIFIED, and a certificate forged from a run at that size (the
relation found lifted to full size, every stage key recomputed as the checker derives it) must be
rejected by replay: the checker reduces each stage itself, within the theorem.
"""

import json
import re
from types import SimpleNamespace
import math

import pytest

from certificates import shapes
from certificates.errors import CheckError
from certificates.graph import parse_graph
from certificates.limits import Limits
from certificates.obligations import decide, integer_ranges
from certificates.refinement import parse_relation
from certificates.replay import replay
from certificates.stages import constants, key, stage
from verifier import direct, workloads
from verifier.case import Case
from verifier.certificate import artifact
from verifier.ir import GraphBuilder
from verifier.stages.certificate import staged_certificate
from verifier.stages.reduce import lift, reduce_case
from verifier.stages.run import verify_staged


def _newton(b: GraphBuilder, x: str, extra: str | None = None) -> str:
    """``p1 + (p1^3 - 3 p1 p2 + 2 p3)`` (``extra`` in place of p1 if given): adds 6 e3(x), 0 at length <= 2."""
    for k in (2, 3):
        b.node("aten.pow.Tensor_Scalar", [x], f"{x}_pow{k}", exponent=k)
        b.node("aten.sum.default", [f"{x}_pow{k}"], f"p{k}")
    b.node("aten.sum.default", [x], "p1")
    b.node("aten.pow.Tensor_Scalar", ["p1"], "p1_cubed", exponent=3)
    b.node("aten.mul.Tensor", ["p1", "p2"], "p1p2")
    b.node("aten.mul.Tensor", ["p1p2"], "p1p2x3", other=3)
    b.node("aten.mul.Tensor", ["p3"], "p3x2", other=2)
    b.node("aten.sub.Tensor", ["p1_cubed", "p1p2x3"], "t")
    b.node("aten.add.Tensor", ["t", "p3x2"], "e3x6")
    b.node("aten.add.Tensor", [extra or "p1", "e3x6"], "y")
    return "y"


def sum_trap(n: int) -> Case:
    s = GraphBuilder("sum", 1)
    s.input("X", [n], "activation")
    s.node("aten.sum.default", ["X"], "Y")
    s.output("Y")
    g = GraphBuilder("newton", 1)
    g.input("x", [n], "activation")
    g.output(_newton(g, "x"))
    return Case("sum_trap", s.build(), g.build(), {"X": ["x"]}, {"Y": ["y"]})


def softmax_trap(n: int) -> Case:
    s = GraphBuilder("softmax", 1)
    s.input("X", [n], "activation")
    s.node("aten._softmax.default", ["X"], "Y", dim=0)
    s.output("Y")
    g = GraphBuilder("logistic", 1)  # 1 / (1 + exp(sum(x) - 2x)): softmax at length 2 only
    g.input("x", [n], "activation")
    g.node("aten.sum.default", ["x"], "s")
    g.node("aten.mul.Tensor", ["x"], "x2", other=2)
    g.node("aten.sub.Tensor", ["s", "x2"], "d")
    g.node("aten.exp.default", ["d"], "e")
    g.node("aten.add.Tensor", ["e"], "e1", other=1)
    g.node("aten.reciprocal.default", ["e1"], "y")
    g.output("y")
    return Case("softmax_trap", s.build(), g.build(), {"X": ["x"]}, {"Y": ["y"]})


def count_trap(n: int, expand: bool) -> Case:
    """``mean`` over 2 against ``sum / ones(T, n).sum(-1)`` (or an expanded ones): right at n = 2 only."""
    s = GraphBuilder("mean", 1)
    s.input("X", [3, 2], "activation")
    s.node("aten.mean.dim", ["X"], "Y", dim=[-1])
    s.output("Y")
    g = GraphBuilder("count", 1)
    g.input("x", [3, 2], "activation")
    g.node("aten.sum.dim_IntList", ["x"], "t", dim=[-1])
    if expand:
        g.node("aten.ones.default", [], "o1", size=[3, 1])
        g.node("aten.expand.default", ["o1"], "o", size=[3, n])
    else:
        g.node("aten.ones.default", [], "o", size=[3, n])
    g.node("aten.sum.dim_IntList", ["o"], "c", dim=[-1])
    g.node("aten.div.Tensor", ["t", "c"], "y")
    g.output("y")
    return Case("count_trap", s.build(), g.build(), {"X": ["x"]}, {"Y": ["y"]})


def view_trap(n: int) -> Case:
    """``x.view(n/4, 4).t()`` against ``x.view(n/8, 8).t()`` read back as the spec's shape."""
    s = GraphBuilder("view4", 1)
    s.input("X", [n], "activation")
    s.node("aten.view.default", ["X"], "V", size=[n // 4, 4])
    s.node("aten.t.default", ["V"], "Y")
    s.output("Y")
    g = GraphBuilder("view8", 1)
    g.input("x", [n], "activation")
    g.node("aten.view.default", ["x"], "v", size=[n // 8, 8])
    g.node("aten.t.default", ["v"], "y")
    g.output("y")
    return Case("view_trap", s.build(), g.build(), {"X": ["x"]}, {"Y": [f"reshape(y, shape=[4, {n // 4}])"]})


def mse_trap(n: int) -> Case:
    s = GraphBuilder("mse", 1)
    for t in ("A", "B"):
        s.input(t, [n], "activation")
    s.node("aten.mse_loss.default", ["A", "B"], "Y", reduction=2)
    s.output("Y")
    g = GraphBuilder("mse_newton", 1)
    for t in ("a", "b"):
        g.input(t, [n], "activation")
    g.node("aten.mse_loss.default", ["a", "b"], "m", reduction=2)
    g.node("aten.sub.Tensor", ["a", "b"], "d")
    g.output(_newton(g, "d", extra="m"))
    return Case("mse_trap", s.build(), g.build(), {"A": ["a"], "B": ["b"]}, {"Y": ["y"]})


def _axes_of(case: Case, k: int, extra: list) -> list:
    """Axis ``k`` of every tensor of both graphs whose size is not 1 there, plus ``extra``."""
    out = [[side, t, k] for side, g in (("spec", case.spec), ("impl", case.impl))
           for t, v in g["tensors"].items() if len(v["shape"]) > k and v["shape"][k] > 1]
    return out + extra


# (name, full-size case, the case at the size the old rules reduced it to)
TRAPS = [("sum", sum_trap(4), sum_trap(2)), ("softmax", softmax_trap(4), softmax_trap(2)),
         ("ones", count_trap(4, False), count_trap(2, False)), ("expand", count_trap(4, True), count_trap(2, True)),
         ("view", view_trap(24), None), ("mse", mse_trap(4), mse_trap(2))]


def _view_reduced() -> Case:
    """What the old rules made of ``view_trap(24)``: both sides ``x.view(3, 4).t()``."""
    s = GraphBuilder("view4", 1)
    s.input("X", [12], "activation")
    s.node("aten.view.default", ["X"], "V", size=[3, 4])
    s.node("aten.t.default", ["V"], "Y")
    s.output("Y")
    g = GraphBuilder("view8", 1)
    g.input("x", [12], "activation")
    g.node("aten.view.default", ["x"], "v", size=[3, 4])
    g.node("aten.t.default", ["v"], "y")
    g.output("y")
    return Case("view_trap", s.build(), g.build(), {"X": ["x"]}, {"Y": ["reshape(y, shape=[4, 3])"]})


def stages_of(full: Case, relation: dict) -> tuple:
    """The checker's view of ``full`` with the relation found ``relation`` (text): ``stage(op)`` as it derives it."""
    spec, impl = parse_graph(full.spec, "spec"), parse_graph(full.impl, "impl")
    r = direct.prepare(full, Limits())
    rel = {**{t: [] for t in spec.tensors}, **r.inputs, **parse_relation(relation, spec, impl, "forge", False)}
    known = constants(spec, Limits())
    return spec, lambda op: stage(spec, impl, rel, r.expect, op, integer_ranges(impl), "forge", Limits(), known)


def forge(full: Case, small: Case, fix: dict | None = None) -> dict:
    """A certificate for ``full`` from a run of ``small`` (same names, a smaller size): the relation found lifted
    to full size (``fix`` over it), every stage proving itself, its key and element count recomputed as the
    checker derives them (an attacker's best try)."""
    res = verify_staged(small, reduce=False)
    assert res.verified, "the attack must hold at the reduced size"
    cert = staged_certificate(res)
    ev = cert["evidence"][full.name] = cert["evidence"].pop(small.name)
    cert["claims"][0].update(id=full.name, input_relation=full.input_relation, output_relation=full.expect)
    cert["subject"]["artifacts"] = [artifact("spec", full.spec), artifact("impl", full.impl)]
    sizes = {(side, t, k): (n, sg["tensors"][t]["shape"][k])
             for side, fg, sg in (("spec", full.spec, small.spec), ("impl", full.impl, small.impl))
             for t, v in fg["tensors"].items() for k, n in enumerate(v["shape"])}
    r, f = direct.prepare(small, Limits()), direct.prepare(full, Limits())
    found = lift(SimpleNamespace(sizes=sizes, full=(f.spec, f.impl, None), lifted={}), res.relation, r.spec, r.impl)
    ev["relation"] = {**{t: [str(e) for e in es] for t, es in found.items()}, **(fix or {})}
    return rekeyed(cert, full)


def rekeyed(cert: dict, full: Case) -> dict:
    """``cert`` (about ``full``) with every stage proving itself, its key and element count recomputed as the
    checker derives them."""
    ev = cert["evidence"][full.name]
    _, at = stages_of(full, ev["relation"])
    for i, st in enumerate(ev["stages"]):
        try:
            how, obls = at(st["op"])
        except CheckError:   # the checker stops there too
            continue
        st.update(key=key(how, obls), proved_by=i)
        st["elements"] = sum(o.elements for ob in obls for o in decide(*ob, Limits())) if how == "reduced" else 0
    return cert


def _replay(cert: dict, tmp_path) -> tuple[bool, str]:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cert))
    try:
        [r] = replay(str(path))
    except CheckError as e:
        return False, str(e)
    return r.ok, r.detail


@pytest.mark.parametrize("name, full, small", TRAPS, ids=[t[0] for t in TRAPS])
def test_trap_is_not_verified_and_its_forged_certificate_is_rejected(name, full, small, tmp_path):
    res = verify_staged(full)
    assert not res.verified, f"{name}: a trap false at full size was VERIFIED"
    # the view trap's reduced graphs relate V to v as they are: at full size a reshape (not a scaled constant)
    ok, why = _replay(forge(full, small or _view_reduced(), small is None and {"V": ["reshape(v, shape=[6, 4])"],
                                                                                "Y": ["reshape(y, shape=[4, 6])"]}),
                      tmp_path)
    assert not ok and "its key is not the key" not in why, why


def test_a_reshape_grain_conflict_pins_the_flat_axis():
    red = reduce_case(view_trap(24))
    assert red.classes == [] and any("reshape blocks of" in c["reason"] for c in red.kept)


def _map_control(n: int) -> Case:
    """relu of a row-sharded matrix, rows concatenated: every axis is a map axis."""
    s = GraphBuilder("relu", 1)
    s.input("X", [n, 6], "activation")
    s.node("aten.relu.default", ["X"], "Y")
    s.node("aten.view.default", ["Y"], "Z", size=[n * 6])
    s.output("Z")
    g = GraphBuilder("relu_tp", 2)
    for r in (0, 1):
        g.input(f"x@r{r}", [n // 2, 6], "activation", rank=r)
        g.node("aten.relu.default", [f"x@r{r}"], f"y@r{r}", rank=r)
        g.node("aten.view.default", [f"y@r{r}"], f"z@r{r}", size=[n * 3], rank=r)
    g.output("z@r0", "z@r1")
    return Case("relu_tp", s.build(), g.build(), {"X": ["concat(x@r0, x@r1, dim=0)"]},
                {"Z": ["concat(z@r0, z@r1, dim=0)"]})


@pytest.mark.parametrize("case", [_map_control(8), sum_trap(2), count_trap(2, False),
                                  workloads.tp_mlp(world=2, tokens=4, dim=8, hidden=16)],
                         ids=["map", "newton_at_2", "count_at_2", "tp_mlp"])
def test_correct_controls_still_verify_and_replay(case, tmp_path):
    res = verify_staged(case)
    assert res.verified
    ok, why = _replay(staged_certificate(res), tmp_path)
    assert ok, why


def test_map_axes_are_still_reduced_through_shards_and_reshapes():
    red = reduce_case(_map_control(8))
    assert red.sizes[("spec", "X", 0)] == (8, 4) and red.sizes[("impl", "x@r0", 0)] == (4, 2)
    assert red.sizes[("spec", "Z", 0)] == (48, 24)  # the flat axis in blocks of 6


# ---------------------------------------------------------------- generator: Newton-identity traps

def _partitions(k: int, most: int | None = None):
    most = most or k
    if k == 0:
        yield ()
    for i in range(min(k, most), 0, -1):
        for rest in _partitions(k - i, i):
            yield (i,) + rest


def newton_terms(k: int) -> list[tuple[int, tuple[int, ...]]]:
    """``k! e_k`` as integer-coefficient products of power sums: ``[(coefficient, (i, j, ...)), ...]``."""
    out = []
    for lam in _partitions(k):
        z = math.prod(i ** lam.count(i) * math.factorial(lam.count(i)) for i in set(lam))
        out.append(((-1) ** (k - len(lam)) * math.factorial(k) // z, lam))
    return out


def _power_sum(b: GraphBuilder, x: str, i: int, n: int, how: str) -> str:
    """``sum(x^i)`` spelled four ways: pow + sum, repeated mul + sum, sum over dim 0, mean * n."""
    t = f"{x}_p{i}"
    if i == 1:
        src = x
    elif how == "mul":
        src = x
        for j in range(2, i + 1):
            b.node("aten.mul.Tensor", [src, x], f"{t}_m{j}")
            src = f"{t}_m{j}"
    else:
        b.node("aten.pow.Tensor_Scalar", [x], f"{t}_pow", exponent=i)
        src = f"{t}_pow"
    if how == "dim":
        b.node("aten.sum.dim_IntList", [src], t, dim=[0])
    elif how == "mean":
        b.node("aten.mean.default", [src], f"{t}_mean")
        b.node("aten.mul.Tensor", [f"{t}_mean"], t, other=n)
    else:
        b.node("aten.sum.default", [src], t)
    return t


def _newton_value(b: GraphBuilder, x: str, k: int, n: int, how: str) -> str:
    """``sum(x) + k! e_k(x)`` through power sums: ``sum(x)`` at every length < k."""
    ps = {i: _power_sum(b, x, i, n, how) for i in range(1, k + 1)}
    acc = ps[1]
    for m, (c, lam) in enumerate(newton_terms(k)):
        factors = []
        for i in sorted(set(lam)):
            e = lam.count(i)
            if e > 1:
                b.node("aten.pow.Tensor_Scalar", [ps[i]], f"t{m}_p{i}_e{e}", exponent=e)
            factors.append(f"t{m}_p{i}_e{e}" if e > 1 else ps[i])
        prod = factors[0]
        for j, f in enumerate(factors[1:]):
            b.node("aten.mul.Tensor", [prod, f], f"t{m}_f{j}")
            prod = f"t{m}_f{j}"
        b.node("aten.mul.Tensor", [prod], f"t{m}", other=c)
        b.node("aten.add.Tensor", [acc, f"t{m}"], f"acc{m}")
        acc = f"acc{m}"
    return acc


def newton_trap(k: int, n: int, how: str, spec_how: str, swap: bool) -> Case:
    """A plain sum against ``sum + k! e_k`` (sides swapped if ``swap``): equal at lengths < k only."""
    plain, trap = GraphBuilder("plain", 1), GraphBuilder("newton", 1)
    for b in (plain, trap):
        b.input("x", [n], "activation")
    plain.output(_power_sum(plain, "x", 1, n, spec_how))
    trap.output(_newton_value(trap, "x", k, n, how))
    s, g = (trap, plain) if swap else (plain, trap)
    spec, impl = s.build(), g.build()
    return Case(f"newton_e{k}_n{n}", spec, impl, {"x": ["x"]}, {spec["outputs"][0]: [impl["outputs"][0]]})


TRAP_GRID = [(k, n, how, spec_how, swap) for k in (3, 4, 5, 6) for n in sorted({k + k % 2, 2 * k, 2 * k + 2})
             for how in ("pow", "mul", "dim", "mean") for spec_how in ("pow", "dim", "mean") for swap in (False, True)]


def test_newton_terms_are_k_factorial_e_k():
    assert newton_terms(3) == [(2, (3,)), (-3, (2, 1)), (1, (1, 1, 1))]
    assert sum(c for c, lam in newton_terms(6) if lam == (1,) * 6) == 1


def test_newton_traps_are_never_reduced_below_their_degree():
    """Every trap, its claim as the relation found: each stage that sums is decided at full length (a power of
    a sum is not affine in it; a mean pins its axis)."""
    assert len(TRAP_GRID) >= 200
    for k, n, how, spec_how, swap in TRAP_GRID:
        case = newton_trap(k, n, how, spec_how, swap)
        spec, at = stages_of(case, case.expect)
        for op in [nd.name for nd in spec.nodes] + [None]:
            for ls, li, _, rout in at(op)[1]:
                if rout and any(re.search("sum|mean", nd.target) for g in (ls, li) for nd in g.nodes):
                    assert all(n in g.tensors[t].shape for g in (ls, li) for t in g.inputs
                               if g.tensors[t].shape), (case.name, op)


@pytest.mark.parametrize("k, n, how, spec_how, swap", TRAP_GRID)
def test_every_newton_trap_is_not_verified(k, n, how, spec_how, swap):
    """The staged engine never verifies a trap: where the plain sum is the spec, its stage is not affine in
    the sum (a power of it), so the summed axis is kept at full size, where the values already differ on a
    random run; where the trap is the spec, its power sums relate to nothing at the reduced size."""
    assert not verify_staged(newton_trap(k, n, how, spec_how, swap)).verified


def test_a_power_of_a_sum_keeps_the_summed_axis_at_full_size():
    case = sum_trap(8)
    assert not verify_staged(case).verified
    spec, at = stages_of(case, case.expect)
    [(ls, li, _, _)] = at(spec.nodes[-1].name)[1]
    assert ls.tensors["X"].shape == (8,) and li.tensors["x"].shape == (8,)


def test_mse_operands_are_tied_as_they_broadcast():
    """``mse_loss(A (4, 4), B (4,))``: B's axis is A's last one, not its first (as a left-aligned tie said)."""
    s = GraphBuilder("mse_b", 1)
    s.input("A", [4, 4], "activation")
    s.input("B", [4], "activation")
    s.node("aten.mse_loss.default", ["A", "B"], "Y", reduction=0)
    s.output("Y")
    case = Case("mse_b", s.build(), s.build(), {"A": ["A"], "B": ["B"]}, {"Y": ["Y"]})
    r = direct.prepare(case, Limits())
    C = shapes.constraints(r.spec, r.impl, {"input": r.inputs, "output": r.expect})
    assert C.find(("spec", "B", 0)) == C.find(("spec", "A", 1)) != C.find(("spec", "A", 0))


def test_a_claim_with_a_scaled_relation_holds_with_its_constant_at_every_size(tmp_path):
    """A claim's constant is a literal, the same at every size each stage is reduced to (an operator whose size
    enters its value pins that axis): a true scaled claim is accepted, a false one rejected."""
    cert = staged_certificate(verify_staged(_map_control(8)))
    for num, ok in ((1, True), (2, False)):
        cert["claims"][0]["output_relation"]["Z"] = [f"scale(concat(z@r0, z@r1, dim=0), num={num}, den=1)"]
        got, why = _replay(rekeyed(cert, Case("relu_tp", cert["subject"]["artifacts"][0]["embedded"],
                                             cert["subject"]["artifacts"][1]["embedded"], {"X": [
                                                 "concat(x@r0, x@r1, dim=0)"]}, cert["claims"][0]["output_relation"])),
                           tmp_path)
        assert got == ok, why
