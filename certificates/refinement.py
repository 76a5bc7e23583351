"""Refinement obligations (docs/refinement.md): ``instantiate`` parametrizes the impl inputs satisfying an
input relation, integer inputs range over their declared ranges, ``check`` decides every output element."""

import hashlib
import itertools
import json
import math
import random
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import intervals, terms
from .dtypes import bounds
from .errors import LimitExceeded, Malformed, Unsupported, fail_if
from .graph import Graph, Tensor, evaluate
from .limits import DEFAULT, Limits, canonical_bytes
from .poly import ATOMS, Q, Cond, Poly, Rat, apply, side_conditions

Relation = dict[str, list[terms.Term]]


def substitute(x: Rat, point: dict[str, int]) -> Rat:
    """``x`` with the variables of ``point`` replaced by their values, inside atoms too."""
    def atom(v: str) -> Rat:
        if v in point:
            return Rat.of(point[v])
        if v in ATOMS:
            fn, args = ATOMS[v]
            return apply(fn, *(substitute(a, point) for a in args))
        return Rat.var(v)

    def poly(p: Poly) -> Rat:
        total = Rat.of(0)
        for (mono, expo), c in p.t.items():
            term = math.prod((atom(v) ** k for v, k in mono), start=Rat.of(c))
            if expo:
                term = term * apply("exp", poly(Poly(dict(expo))))
            total = total + term
        return total

    return poly(x.n) / poly(x.d) if any(v in point or v in ATOMS for v in x.atoms()) else x   # else: unchanged


def _unique(cs: list[Cond]) -> dict[tuple[str, str], Cond]:
    return {(k, str(v)): (k, v) for k, v in cs}


def definedness(spec: list[Cond], impl: list[Cond], implied=None) -> str | None:
    """Why the impl's side conditions are not shown to follow from the spec's (None: they are; ``implied``: by a
    prover, solve.py). That the spec's are satisfiable is shown apart (``refinement.spec_defined``)."""
    hyps = _unique(spec)
    for k, c in _unique(impl).items():
        if not (k in hyps or (k[0] != ">0" and (">0", k[1]) in hyps) or implied and implied(list(hyps.values()), c)):
            return (f"the impl may be undefined where the spec is defined: {c[1]} {c[0][:-1]} 0 "
                    "does not follow from the spec's side conditions")
    return None


def parse_relation(obj, spec: Graph, impl: Graph, where: str, inputs_only: bool, limits: Limits = DEFAULT) -> Relation:
    """Parse ``{spec tensor: [clean expression, ...]}`` and check names and shapes."""
    fail_if(not isinstance(obj, dict), Malformed, where, "relation must be an object {spec tensor: [expressions]}")
    rel: Relation = {}
    for name, exprs in obj.items():
        what = f"{where}: relation of '{name}'"
        fail_if(name not in spec.tensors, Malformed, what, f"'{name}' is not a tensor of spec graph '{spec.name}'")
        if inputs_only and name not in spec.inputs:
            raise Malformed(what, f"'{name}' is not an input of spec graph '{spec.name}'")
        fail_if(type(exprs) is not list or not exprs, Malformed, what, "needs a non-empty list of clean expressions")
        rel[name] = []
        for text in exprs:
            t = terms.parse(text, what, limits)
            for r in terms.refs(t):
                fail_if(r not in impl.tensors, Malformed, what, f"'{r}' is not a tensor of impl graph '{impl.name}'")
                if inputs_only and r not in impl.inputs:
                    raise Malformed(what, f"'{r}' is not an input of impl graph '{impl.name}'")
            try:
                shape = terms.infer_shape(t, lambda n: impl.tensors[n].shape)
            except terms.TermError as e:
                raise Malformed(what, f"{t}: {e}") from None
            fail_if(shape != spec.tensors[name].shape, Malformed, what,
                    f"{t} has shape {list(shape)}, '{name}' has {list(spec.tensors[name].shape)}")
            if spec.tensors[name].is_int != any(impl.tensors[r].is_int for r in terms.refs(t)):
                raise Malformed(what, f"{t} mixes integer and real tensors")
            rel[name].append(t)
    if inputs_only:
        missing = [n for n in spec.inputs if n not in rel]
        fail_if(missing, Malformed, where, f"spec input '{missing and missing[0]}' has no relation to the impl")
        _check_ranges(rel, spec, impl, where)
    return rel


def _check_ranges(rel: Relation, spec: Graph, impl: Graph, where: str) -> None:
    """Integer ranges are declared on the spec and carried to the impl (docs/certificates.md, "Integer ranges")."""
    carried: set[str] = set()
    for name, exprs in rel.items():
        if not spec.tensors[name].is_int:
            continue
        for t in exprs:
            fail_if(_uses(t, ("sum", "mean", "scale")), Malformed, f"{where}: relation of '{name}'",
                    f"{t} sums or scales integer tensors (that does not carry the spec's range)")
            for r in terms.refs(t):
                want, got = ((0, 2) if v.dtype == "bool" else v.range for v in (spec.tensors[name], impl.tensors[r]))
                if got != want:
                    raise Malformed(f"{where}: relation of '{name}'", f"impl input '{r}' declares range "
                                    f"{got and list(got)}, spec input '{name}' has {want and list(want)}: "
                                    "ranges are declared on the spec and carried to the impl")
                carried.add(r)
    for n in impl.inputs:
        if impl.tensors[n].is_int and impl.tensors[n].dtype != "bool" and n not in carried:
            raise Malformed(where, f"integer impl input '{n}' is related to no spec input: its range "
                                   "would be declared by the impl alone")


def _uses(t: terms.Term, fns: tuple[str, ...]) -> bool:
    return isinstance(t, terms.Call) and (t.fn in fns or any(_uses(a, fns) for a in t.args))


def instantiate(spec: Graph, impl: Graph, rel: Relation, fresh: Callable[[str, Tensor], object],
                limits: Limits = DEFAULT, strict: bool = True) -> tuple[dict, dict]:
    """Input values ``(spec_env, impl_env)`` satisfying ``rel`` (binding: docs/refinement.md, "Local obligations");
    ``fresh(label, tensor)`` makes one free impl input element; an unbindable equation fails if ``strict``."""
    impl_env = {}
    for n in impl.inputs:
        t = impl.tensors[n]
        size = int(np.prod(t.shape, dtype=object))
        if size > limits.max_elements:
            raise LimitExceeded(f"impl input '{n}' has {size} elements (limit {limits.max_elements})")
        labels = [f"{n}[{','.join(map(str, ix))}]" for ix in np.ndindex(*t.shape)]
        impl_env[n] = np.array([fresh(lab, t) for lab in labels] or [], dtype=object).reshape(t.shape)
    # Integer labels name impl input elements: offset of the tensor + flat index.
    offset = dict(zip(impl.inputs, itertools.accumulate((impl_env[n].size for n in impl.inputs), initial=0)))
    flat = [(n, i) for n in impl.inputs for i in range(impl_env[n].size)]
    taken: set[int] = set()  # elements used by a definition or already bound
    spec_env = {}
    for name in spec.inputs:
        first, *rest = rel[name]
        spec_env[name] = np.asarray(terms.evaluate(first, lambda r: impl_env[r]))
        taken.update(lab for labs in _labels(first, impl, offset).ravel() for lab in labs)  # the elements it reads
        for t in rest:
            c, u = terms.factor(t)  # t = c * u with c != 0: u is bound to value / c; a scale inside u is not
            elements = [] if _uses(u, ("scale", "mean")) else list(_labels(u, impl, offset).ravel())
            problem = _binding_problem(elements, taken, flat) if elements else "scales a part of a move or sum"
            fail_if(problem is not None and strict, Unsupported, f"relation of '{name}': {t} {problem}")
            for labs, val in zip(elements, spec_env[name].ravel() * (1 / c) if c != 1 else spec_env[name].ravel()):
                free = [lab for lab in labs if lab not in taken]
                if not free or len(set(labs)) != len(labs):
                    continue  # this element's equation is left out (weaker hypothesis)
                last = free[-1]  # last := value - others: exactly the solutions, others stay free
                others = [lab for lab in labs if lab != last]
                taken.update(labs)
                rest_sum = sum((impl_env[flat[o][0]].ravel()[flat[o][1]] for o in others), 0)
                tensor, i = flat[last]
                impl_env[tensor].ravel()[i] = val - rest_sum if others else val
    return spec_env, impl_env


class _Labels(tuple):
    """The impl input elements summed into one element of a clean expression."""

    def __add__(self, o):
        return _Labels(tuple(self) + tuple(o)) if isinstance(o, tuple) else self

    __radd__, __mul__ = __add__, lambda self, c: self   # a scaled element reads the same impl elements


def _labels(t: terms.Term, impl: Graph, offset: dict) -> np.ndarray:
    """For each element of ``t``, the impl input elements it sums (one for plain moves, none for padding)."""
    def leaf(n: str) -> np.ndarray:
        size = int(np.prod(impl.tensors[n].shape, dtype=object))
        out = np.empty(size, dtype=object)
        out[:] = [_Labels((offset[n] + i,)) for i in range(size)]
        return out.reshape(impl.tensors[n].shape)
    out = np.asarray(terms.evaluate(t, leaf), dtype=object)
    labels = np.empty(out.shape, dtype=object)  # (not np.array: it would unpack the tuples)
    for ix in np.ndindex(*out.shape):
        labels[ix] = out[ix] if isinstance(out[ix], tuple) else _Labels()
    return labels


def _binding_problem(elements: list, taken: set[int], flat: list) -> str | None:
    """Why these elements cannot be bound, if they cannot: each must sum distinct, untaken labels."""
    seen: set[int] = set()
    for labs in elements:
        if not labs:
            return "pads an element that must be defined"
        for lab in labs:
            if lab in taken or lab in seen:
                return f"constrains {flat[lab][0]} element {flat[lab][1]} twice"
            seen.add(lab)
    return None


@dataclass
class Verdict:
    holds: bool | None                 # True proved, False refuted, None unknown
    method: str                        # normal-form | z3 | cvc5 | numeric | concrete; or why not proved
    witness: dict[str, float] | None = None
    values: tuple[float, float] | None = None


@dataclass
class Outcome:
    """The result of one output equation ``spec == expr``."""

    spec: str
    expr: str
    elements: int = 0
    methods: dict[str, int] = field(default_factory=dict)
    failure: str | None = None
    assumed: int = 0  # side conditions of the spec assumed (definedness)

    @property
    def holds(self) -> bool:
        return self.failure is None


def integer_cases(spec: Graph, impl: Graph, spec_env: dict, impl_env: dict, limits: Limits) -> intervals.Cases:
    """The cases of the free integer variables (intervals.py), each first over its declared range."""
    box: dict[str, tuple[int, int]] = {}
    for n in impl.inputs:
        t = impl.tensors[n]
        if t.is_int:
            free = {a for v in impl_env[n].ravel() for a in Rat.of(v).atoms()}
            if free and t.range is None and t.dtype != "bool":
                raise Unsupported(f"integer tensor '{n}' has free values but no declared range")
            lo, hi = t.range or (0, 2)
            if free and not bounds(t.dtype)[0] <= lo < hi <= bounds(t.dtype)[1] + 1:
                raise Unsupported(f"integer tensor '{n}' ranges over [{lo}, {hi}), beyond {t.dtype}")
            box.update({a: (lo, hi) for a in free if a not in box})
    return intervals.Cases(box, ((spec, spec_env), (impl, impl_env)), lambda ge, point: _concrete(*ge, point), limits)


def _concrete(graph: Graph, env: dict, point: dict) -> dict:
    """``env`` with the variables of ``point`` replaced by their values; integer tensors of constants as ints."""
    out = {}
    for n, v in env.items():
        if v.size and isinstance(v.flat[0], Rat) or graph.tensors[n].is_int:
            v = np.asarray(np.frompyfunc(lambda x: substitute(Rat.of(x), point), 1, 1)(v), dtype=object) if point else v
        if graph.tensors[n].is_int and all(Rat.of(x).constant() is not None for x in v.ravel()):
            vals = [int(Rat.of(x).constant()) for x in v.ravel()]
            v = np.array(vals, dtype=bool if graph.tensors[n].dtype == "bool" else np.int64).reshape(v.shape)
        out[n] = v if graph.tensors[n].is_int or v.size and isinstance(v.flat[0], Rat) else v.astype(float)
    return out


def check(spec: Graph, impl: Graph, inputs: Relation, outputs: Relation, limits: Limits = DEFAULT, strict: bool = True,
          run=intervals.evaluate, assignments=integer_cases, defined=None, solver=None) -> list[Outcome]:
    """Decide ``inputs => outputs`` for all impl input values (``run``, ``assignments``: symint.py; ``defined``: below;
    ``solver``: solve.py, numeric refutation and the provers; without it, by normal forms alone)."""
    spec_env, impl_env = instantiate(spec, impl, inputs, lambda label, t: Rat.var(label), limits, strict)
    exprs = {(s, str(t)): t for s, ts in outputs.items() for t in ts}
    outcomes = {k: Outcome(*k) for k in exprs}
    shown_defined = False
    cases = assignments(spec, impl, spec_env, impl_env, limits)
    for point, s_env, i_env in cases:
        failed = None
        try:   # the impl first: its comparisons are what usually cut a case
            with side_conditions() as i_side:
                try:
                    i_vals = run(impl, i_env, True, limits)
                except Unsupported as e:
                    failed = e
            with side_conditions() as s_side:
                s_vals = run(spec, s_env, True, limits)
        except intervals.Cut as cut:
            cases.split(cut)
            continue
        if failed and not point:
            raise failed
        # Definedness (DESIGN.md rule 4): assume only the spec's side conditions, shown
        # satisfiable (``spec_defined``), and only once the impl's are shown to follow from them.
        undefined = f"impl fails: {failed}" if failed else definedness(s_side, i_side, solver and solver.implied) if i_side else None
        if s_side and not undefined and not shown_defined:
            undefined, shown_defined = (defined or spec_defined)(spec, limits), True
        if undefined:
            for o in outcomes.values():
                o.failure = o.failure or (f"{undefined} (integer inputs {point})" if point else undefined)
            break
        hyps = list(_unique(s_side).values())
        for o in outcomes.values():
            o.assumed = max(o.assumed, len(hyps))
        for (s, e), o in outcomes.items():
            if not o.failure:
                _compare(o, s_vals[s], np.asarray(terms.evaluate(exprs[s, e], i_vals.__getitem__)), point, limits, hyps, solver)
    return list(outcomes.values())


def spec_defined(spec: Graph, limits: Limits = DEFAULT, tries: int = 16, enclose: tuple | None = None) -> str | None:
    """Why the spec is not shown defined at some input (None: at a random rational input no side condition is left);
    ``enclose``: (``box.Box``, a maker of ``box.boxes``) to decide them on enclosing intervals, ``chain.witnessed``."""
    rng, wrap = random.Random(0), enclose[0] if enclose else Rat.of
    for _ in range(tries):
        env = {}
        for n in spec.inputs:
            t, size = spec.tensors[n], math.prod(spec.tensors[n].shape)
            if t.is_int:
                lo, hi = t.range or (0, 2)
                vals = np.array([rng.randrange(lo, hi) for _ in range(size)], dtype=np.int64)
                env[n] = vals.astype(bool if t.dtype == "bool" else np.int64).reshape(t.shape)
            else:  # multiples of 1/64 in the declared sampling range, else in one of three
                lo, hi = t.range or rng.choice([(-1, 1), (0.5, 2), (-2, -0.5)])
                vals = [wrap(Q(rng.randint(math.ceil(64 * lo), math.floor(64 * hi)), 64)) for _ in range(size)]
                env[n] = np.array(vals, dtype=object).reshape(t.shape)
        try:
            with enclose[1]() if enclose else side_conditions() as side:
                evaluate(spec, env, True, limits)
            if not side:
                return None
        except (Unsupported, ArithmeticError, ValueError):
            continue
    return "the spec is not shown defined at any input (its side conditions may be unsatisfiable)"


def _compare(o: Outcome, lhs: np.ndarray, rhs: np.ndarray, point: dict, limits: Limits, hyps: list, solver) -> None:
    at = f" (integer inputs {point})" if point else ""
    for idx in np.ndindex(*lhs.shape):
        limits.tick()
        a, b = lhs[idx], rhs[idx]
        if not isinstance(a, Rat) and not isinstance(b, Rat):
            v = Verdict(True, "concrete") if a == b else Verdict(False, "concrete", {}, (a, b))
        else:   # equal normal forms at once (Rat.equals' first case), else decided
            v = Verdict(True, "normal-form") if type(a) is Rat is type(b) and a.d.t == b.d.t and a.n.t == b.n.t else \
                solver.decide(Rat.of(a), Rat.of(b), seed=len(o.methods), hyps=hyps) if solver else \
                Verdict(Rat.of(a).equals(Rat.of(b)) or None, "normal-form")
        o.elements += 1
        if v.holds:
            o.methods[v.method] = o.methods.get(v.method, 0) + 1
            continue
        where = f"{o.spec}{list(idx)} vs {o.expr}{list(idx)}{at}"
        if v.holds is False:
            shown = ", ".join(f"{k}={x:g}" for k, x in list((v.witness or {}).items())[:6])
            more = " ..." if v.witness and len(v.witness) > 6 else ""
            o.failure = f"{where}: differ, e.g. {v.values[0]:.6g} vs {v.values[1]:.6g} at {shown}{more}"
        else:
            o.failure = f"{where}: not proved (normal forms differ" + ("; numerically equal; solvers undecided)" if solver
                                                                        else ")")
        return


def describe_graphs(claim: dict, evidence: dict, arts: dict, sha: dict[str, str], low: set, prefix: str = "") -> list:
    """What an accepted graph claim states (``replay.describe``): graphs with their sha256, relations (digest, count,
    first three), integer ranges, assumptions, blocks; the 16-bit dtypes of its graphs join ``low``."""
    def some(items: list, n: int, sep: str = ", ") -> str:
        return sep.join(items[:n]) + (" ..." if len(items) > n else "")
    out = []
    for side in [s for s in ("spec", "impl") if isinstance(claim.get(s), str)]:
        g = arts[claim[side]][1]
        low |= {t["dtype"] for t in g["tensors"].values()} & {"float16", "bfloat16"}
        out.append(f"{side} '{g['name']}' sha256 {sha[claim[side]][:12]}")
        ranges = [f"{n} in [{t['range'][0]}, {t['range'][1]})" for n in g["inputs"]
                  if "range" in (t := g["tensors"][n]) and "float" not in t["dtype"]]   # floats: sampling
        if ranges and side == "spec":
            out.append(f"integer ranges (of the spec, carried to the impl): {some(ranges, 6)}")
    for key in [k for k in ("input_relation", "output_relation") if isinstance(claim.get(k), dict)]:
        rel = claim[key]
        first = [f"{k} = {v[0]}{f' (+{len(v) - 1} more)' if len(v) > 1 else ''}" for k, v in rel.items()]
        digest = hashlib.sha256(canonical_bytes(rel)).hexdigest()[:12]
        out.append(f"{key} sha256 {digest} ({len(rel)}): {some(first, 3, '; ')}")
    out += [f"assuming {k} {json.dumps(claim[k], separators=(',', ':'))[:1000]}"
            for k in ("approximations", "assumptions") if claim.get(k)]
    for kind, block in sorted((claim.get("blocks") or {}).items()):
        out += describe_graphs(block, evidence["blocks"][kind], arts, sha, low, f"block {kind}: ")
    return [prefix + line for line in out]
