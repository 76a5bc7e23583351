"""Staged runs: infer by value on the reduced case, then prove every stage class once, in parallel.

1. ``reduce_case`` shrinks the case (``reduce.py``); the checker re-checks that reduction.
2. The per-operator engine infers the relation with a deferring chain: a candidate found by
   value is kept if it also matches on a second random run; no solver runs yet.
3. Stages are the local obligations of the chain (one per spec operator, one for the
   expectations); stages equal modulo renaming (``certificates.chain.key``) form a class
   and only its first stage, the representative, is proved.
4. Representatives are discharged in-process (``jobs=1``), in a local process pool, or on
   a Dask cluster (``executor="dask://HOST:PORT"``).
5. If a proof fails, the engine's sequential inference (which proves as it goes and drops
   candidates that fail) runs instead, reusing every verdict already found (by key), and
   reports the bug as usual; its stages are then planned and discharged the same way.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from certificates import terms
from certificates.chain import Chain, decide, integer_ranges, key, obligation
from certificates.errors import CheckError, Unsupported
from certificates.graph import Graph, parse_graph
from certificates.limits import Limits
from certificates.refinement import Outcome, Relation

from .. import direct
from ..case import Case
from ..refine import Inference, infer
from .reduce import Reduction, reduce_case

Progress = Callable[[str, int, int], None]  # (phase, done, total)


class _Deferred(Chain):
    """A chain that keeps a candidate if it also matches on a second random run; proofs come later."""

    def __init__(self, spec: Graph, impl: Graph, limits: Limits, values: tuple[dict, dict]) -> None:
        super().__init__(spec, impl, limits)
        self.values = values

    def prove(self, rel: Relation, node, outputs: Relation) -> list[Outcome]:
        s_vals, i_vals = self.values
        outs = []
        for s, es in outputs.items():
            for e in es:
                got = np.asarray(terms.evaluate(e, i_vals.__getitem__), dtype=float)
                same = got.shape == s_vals[s].shape and np.allclose(got, np.asarray(s_vals[s], dtype=float),
                                                                    rtol=1e-6, atol=1e-9, equal_nan=True)
                outs.append(Outcome(s, str(e), failure=None if same else "differs on a second random run"))
        return outs


class _Reusing(Chain):
    """The sequential chain, reusing the verdicts of stages already proved in parallel (by key)."""

    def __init__(self, spec: Graph, impl: Graph, limits: Limits, proved: dict[str, list[tuple]]) -> None:
        super().__init__(spec, impl, limits)
        self.proved = proved

    def prove(self, rel: Relation, node, outputs: Relation) -> list[Outcome]:
        ls, li, rin, rout = obligation(self.spec, self.impl, rel, node, outputs, self.ranges)
        outs = self.proved.get(hashlib.sha256(key(ls, li, rin, rout).encode()).hexdigest())
        if outs and all(o[4] is None for o in outs):
            return [Outcome(t, str(e), *o[2:]) for (t, e), o in zip(_pairs(outputs), outs)]
        return super().prove(rel, node, outputs)


@dataclass
class Stage:
    op: str | None                      # spec operator; None: the expectations
    rin: Relation                       # relations of the operator's inputs (or of the expected tensors)
    rout: Relation                      # the relations it proves
    key: str = ""                       # sha256 of the canonical obligation
    rep: int = 0                        # index of the stage that proves this one
    outcomes: list[Outcome] = field(default_factory=list)


@dataclass
class StagedResult:
    case: Case                          # the full-size case the claim is about
    reduction: Reduction | None
    inference: Inference                # on the reduced case
    stages: list[Stage] = field(default_factory=list)
    fallback: bool = False              # the sequential engine had to redo inference
    seconds: dict[str, float] = field(default_factory=dict)
    failure: str | None = None
    proved: dict[str, list[tuple]] = field(default_factory=dict)  # verdicts by stage key

    @property
    def verified(self) -> bool:
        return self.failure is None and self.inference.verified

    @property
    def classes(self) -> int:
        return sum(1 for i, s in enumerate(self.stages) if s.rep == i)


def plan(inf: Inference) -> list[Stage]:
    """The stages of an inference: one per step in order, then the expectations; deduplicated."""
    r, rel = inf.prepared, inf.relation
    by_name = {n.name: n for n in r.spec.nodes}
    stages = []
    for name in inf.steps:
        node = by_name[name]
        stages.append(Stage(name, {t: rel[t] for t in dict.fromkeys(node.inputs) if t is not None},
                            {t: rel[t] for t in node.outputs}))
    goal = {**r.expect, **{t: rel[t] for t in r.spec.outputs if t not in r.expect}}  # the claim's order
    stages.append(Stage(None, {t: rel[t] for t in goal}, goal))
    ranges, first = integer_ranges(r.impl), {}
    for i, st in enumerate(stages):
        ls, li, rin, rout = obligation(r.spec, r.impl, st.rin, by_name.get(st.op), st.rout, ranges)
        st.key = hashlib.sha256(key(ls, li, rin, rout).encode()).hexdigest()
        st.rep = first.setdefault(st.key, i)
    return stages


# ---------------------------------------------------------------- discharging one stage (any process)

_PARSED: list = [None, None]  # (graphs value, its parsed graphs and integer ranges): one cache per process


def _graphs(graphs: tuple[dict, dict]) -> tuple[Graph, Graph, dict]:
    if _PARSED[0] is None or any(a is not b for a, b in zip(_PARSED[0], graphs)):
        spec, impl = parse_graph(graphs[0], "staged spec"), parse_graph(graphs[1], "staged impl")
        _PARSED[:] = [graphs, (spec, impl, integer_ranges(impl))]
    return _PARSED[1]


def discharge(graphs: tuple[dict, dict], op: str | None, rin: Relation, rout: Relation, limits: dict) -> list[tuple]:
    """Prove one stage; returns ``(spec, expr, elements, methods, failure)`` per equation."""
    spec, impl, ranges = _graphs(graphs)
    node = next((n for n in spec.nodes if n.name == op), None)
    lim = Limits(**limits)
    ls, li, hyp, goal = obligation(spec, impl, rin, node, rout, ranges)
    empty = [t for t, es in hyp.items() if not es]
    try:
        if empty:
            raise Unsupported(f"no relation of input '{empty[0]}' can be used: the cone recomputes it")
        outs = decide(ls, li, hyp, goal, lim)
    except CheckError as e:
        outs = [Outcome(s, str(x), failure=str(e)) for s, xs in goal.items() for x in xs]
    return [(o.spec, o.expr, o.elements, o.methods, o.failure) for o in outs]


_POOL_GRAPHS: tuple[dict, dict] | None = None


def _init(graphs: tuple[dict, dict]) -> None:
    global _POOL_GRAPHS
    _POOL_GRAPHS = graphs


def _pooled(task: tuple) -> list[tuple]:
    return discharge(_POOL_GRAPHS, *task)


def _run(graphs: tuple[dict, dict], tasks: list[tuple], jobs: int, executor: str | None,
         tell: Callable[[int], None]) -> list[list[tuple]]:
    """Discharge ``tasks`` in-process, in a local pool, or on a Dask cluster; results in task order."""
    if executor:
        if not executor.startswith("dask://"):
            raise ValueError(f"executor {executor!r}: only dask://HOST:PORT is supported")
        from distributed import Client, as_completed  # optional extra: pip install 'pvcert[dask]'
        with Client(executor.replace("dask://", "tcp://"), timeout=30) as client:
            g = client.scatter(graphs, broadcast=True)
            futures = [client.submit(discharge, g, *t, pure=False) for t in tasks]
            for k, _ in enumerate(as_completed(futures)):
                tell(k + 1)
            return client.gather(futures)
    if jobs <= 1 or len(tasks) <= 1:
        out = []
        for t in tasks:
            out.append(discharge(graphs, *t))
            tell(len(out))
        return out
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init, initargs=(graphs,)) as pool:
        out = []
        for r in pool.map(_pooled, tasks, chunksize=max(1, len(tasks) // (4 * jobs))):
            out.append(r)
            tell(len(out))
        return out


def _pairs(rel: Relation) -> list[tuple[str, terms.Term]]:
    return [(t, e) for t, es in rel.items() for e in es]


def _prove(res: StagedResult, case: Case, jobs: int, executor: str | None, limits: Limits,
           progress: Progress | None) -> bool:
    """Plan the stages of ``res.inference`` and prove each class once; True if every stage holds."""
    lim = {f.name: getattr(limits, f.name) for f in dataclasses.fields(limits) if f.name != "start"}
    res.stages = plan(res.inference)
    todo = [i for i, s in enumerate(res.stages) if s.rep == i and s.key not in res.proved]
    tasks = [(res.stages[i].op, res.stages[i].rin, res.stages[i].rout, lim) for i in todo]
    tell = (lambda k: progress("prove", k, len(tasks))) if progress else (lambda k: None)
    for i, outs in zip(todo, _run((case.spec, case.impl), tasks, jobs, executor, tell)):
        res.proved[res.stages[i].key] = outs
    for st in res.stages:  # a stage's equations come in the order of its representative's
        st.outcomes = [Outcome(t, str(e), *o[2:]) for (t, e), o in zip(_pairs(st.rout), res.proved[st.key])]
    bad = next(((st, o) for st in res.stages for o in st.outcomes if not o.holds), None)
    res.failure = bad and f"stage {bad[0].op or 'expectations'}: {bad[1].spec} = {bad[1].expr}: {bad[1].failure}"
    return bad is None


def verify_staged(case: Case, jobs: int = 1, executor: str | None = None, reduce: bool = True,
                  progress: Progress | None = None, limits: Limits | None = None, seed: int = 0) -> StagedResult:
    """Verify ``case`` stage by stage on its reduced shapes; see the module docstring."""
    limits = limits or Limits()
    t0 = time.monotonic()
    red = reduce_case(case, limits) if reduce else None
    work = red.case if red else case
    t1 = time.monotonic()
    step = (lambda k, n, op: progress("infer", k, n)) if progress else None
    try:
        values = direct.numeric_values(direct.prepare(work, limits), seed + 1, limits)
        deferred = functools.partial(_Deferred, values=values)
        res = StagedResult(case, red, infer(work, seed, limits, step, chain=deferred))
    except direct.ImplFailed:  # the sequential engine reports it
        res = StagedResult(case, red, infer(work, seed, limits, step))
    t2 = time.monotonic()
    ok = res.inference.verified and _prove(res, work, jobs, executor, limits, progress)
    if not ok:  # the sequential engine proves as it goes: it drops failing candidates or reports the bug
        res.fallback, res.failure, res.stages = True, None, []
        res.inference = infer(work, seed, limits, step, chain=functools.partial(_Reusing, proved=res.proved))
        if res.inference.verified:
            _prove(res, work, jobs, executor, limits, progress)
    t3 = time.monotonic()
    res.seconds = {"reduce": t1 - t0, "infer": t2 - t1, "prove": t3 - t2, "total": t3 - t0}
    return res


def summary(res: StagedResult) -> dict[str, Any]:
    """Numbers for reports and benchmarks."""
    red = res.reduction
    return {"verified": res.verified, "stages": len(res.stages), "classes": res.classes,
            "fallback": res.fallback, "volume": list(red.volume) if red else None,
            "reduced_classes": len(red.classes) if red else 0,
            **{f"{k}_s": round(v, 3) for k, v in res.seconds.items()}}
