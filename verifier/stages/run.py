"""Staged runs: infer by value on the reduced case, then prove every stage class once, in parallel.

1. ``reduce_case`` shrinks the whole case for inference by value (``reduce.py``); the relation
   found is lifted to full size.
2. The per-operator engine infers the relation with a deferring chain: a candidate found by
   value is kept if it also matches on ``RUNS`` more random runs; no solver runs yet.
3. Stages are the checker's (``certificates.stages.stage``): each spec operator's local
   obligation at full size (one for the expectations), held by congruence or reduced on its
   own; stages equal modulo renaming (their key) form a class and only its first stage, the
   representative, is proved. Stages of one shape at full size are reduced once (``Staged.shape``).
4. Representatives are discharged in-process (``jobs=1``), in a local process pool, or on
   a Dask cluster (``executor="dask://HOST:PORT"``).
5. If a stage fails, inference runs again without the equations that failed (``REINFER``
   rounds) and only stages with new keys are proved. If that does not verify, the engine's
   sequential inference (which proves as it goes, on the reduced case, and drops candidates
   that fail) runs instead and reports the bug as usual; its stages are then planned and
   discharged the same way (verdicts already found are reused by the checker's key).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from certificates import terms
from certificates.chain import Chain
from certificates.errors import CheckError, LimitExceeded, Unsupported, fail_if
from certificates.graph import Graph, parse_graph
from certificates.limits import Limits
from certificates.refinement import Outcome, Relation, check as refinement_check
from certificates.obligations import integer_ranges, key as obligation_key, obligation
from certificates.refinement import spec_defined
from certificates.stages import constants, decide, evident, held, key as stage_key, stage

from .. import direct
from ..case import Case
from ..ir import UNBOUNDED
from ..refine import Inference, infer
from .reduce import Reduction, lift, reduce_case

Progress = Callable[[str, int, int], None]  # (phase, done, total)
RUNS = 3      # random runs besides inference's own that a candidate found by value must match too
REINFER = 8   # rounds of inference without the equations that failed their stage, before the sequential engine


class _Deferred(Chain):
    """A chain that keeps a candidate if it also matches on ``RUNS`` more random runs and, found on shape-reduced graphs
    (``red``), keeps to their reduction at full size (``reduce.lift``: at reduced sizes two axes may have one size,
    and a candidate that swaps them matches by value there), and is not ``banned`` (its full-size equation failed
    its stage before); proofs come later."""

    def __init__(self, spec: Graph, impl: Graph, limits: Limits, values: list[tuple[dict, dict]],
                 red: Reduction | None = None, banned: frozenset[tuple[str, str]] = frozenset(), check=None) -> None:
        # not Chain's: its integer ranges (``chain.reachable_ranges``, enumerated) serve proofs this chain defers;
        # a staged claim's stages take ``integer_ranges`` (``Staged``)
        self.spec, self.impl, self.limits, self.cache, self.reused = spec, impl, limits, {}, 0
        self.ranges, self.check = integer_ranges(impl), check or refinement_check
        self.values, self.red, self.banned = values, red, banned

    def prove(self, rel: Relation, node, outputs: Relation) -> list[Outcome]:
        outs = []
        for s, es in outputs.items():
            for e in es:
                same = all(_matches(e, s_vals[s], i_vals) for s_vals, i_vals in self.values)
                full = lift(self.red, {s: [e]}, self.spec, self.impl)[s] if same and self.red else [e]
                outs.append(Outcome(s, str(e), failure="differs on another random run" if not same else
                                    "does not keep to the shape reduction at full size" if not full else
                                    "failed its stage at full size" if (s, str(full[0])) in self.banned else None))
        return outs


def _matches(e: terms.Term, want: np.ndarray, i_vals: dict) -> bool:
    got = np.asarray(terms.evaluate(e, i_vals.__getitem__), dtype=float)
    return got.shape == want.shape and np.allclose(got, np.asarray(want, dtype=float), rtol=1e-6, atol=1e-9,
                                                   equal_nan=True)


@dataclass
class Stage:
    op: str | None                      # spec operator; None: the expectations
    key: str = ""                       # the checker's key of its obligations (``certificates.stages.key``)
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
    relation: dict = field(default_factory=dict)  # the relation found, at full size (the certificate's)
    claimed: dict = field(default_factory=dict)   # the claim's output relation
    failed: set[tuple[str, str]] = field(default_factory=set)   # (spec tensor, term): equations that failed a stage
    banned: frozenset[tuple[str, str]] = frozenset()              # those the last inference ran without

    @property
    def verified(self) -> bool:
        return self.failure is None and self.inference.verified

    @property
    def classes(self) -> int:
        return sum(1 for i, s in enumerate(self.stages) if s.rep == i)


class Staged:
    """The checker's view of a run: the FULL graphs, the claim's relations, the relation found (lifted to full
    size) and the integer ranges the checker derives; ``stage(op)`` is ``certificates.stages.stage``."""

    def __init__(self, payload: tuple) -> None:
        (sj, ij), self.rels = payload
        self.spec, self.impl = parse_graph(sj, "staged spec", UNBOUNDED), parse_graph(ij, "staged impl", UNBOUNDED)
        self.ranges, self.known = integer_ranges(self.impl), constants(self.spec, Limits())
        self.rel = {**self.rels["input"], **self.rels["evidence"]}
        self.stages: dict[str | None, tuple[str, list[tuple]]] = {}   # planned once, discharged in-process

    def shape(self, op: str | None) -> str:
        """The stage's obligation at full size, canonically (``obligations.key``), and whether its operator is
        ``evident``: all that ``stage`` reads, so stages of one shape have one key (layers alike are planned once;
        the checker derives every stage, and a wrong key would be REJECTed)."""
        node = self.spec.nodes[self.spec.position[op]] if op is not None else None
        goal = self.rels["output"] if node is None else {t: self.rel[t] for t in node.outputs if t in self.rel}
        local = obligation(self.spec, self.impl, self.rel, node, goal, self.ranges)
        return obligation_key(*local) + f"|{node is not None and evident(self.spec, node, self.known)}"

    def stage(self, op: str | None) -> tuple[str, list[tuple]]:
        if op not in self.stages:
            self.stages[op] = stage(self.spec, self.impl, self.rel, self.rels["output"], op, self.ranges, "staged",
                                    UNBOUNDED, self.known)
        return self.stages[op]


def payload(res: StagedResult) -> tuple:
    """The work of the stages, for any process: the FULL graphs, the claim's relations and the relation found."""
    inf, case, red = res.inference, res.case, res.reduction
    spec, impl, rels = red.full if red else (inf.prepared.spec, inf.prepared.impl,
                                             {"input": inf.prepared.inputs, "output": inf.prepared.expect})
    found = {t: es for t, es in inf.relation.items() if t not in spec.inputs}
    if red:
        found = {**lift(red, found, inf.prepared.spec, inf.prepared.impl), **red.constants}
        lost = [t for t, es in found.items() if not es]
        fail_if(lost, Unsupported, f"no relation of '{lost and lost[0]}' found keeps to the shape reduction")
    found = {t: _plain(es) for t, es in found.items()}
    output = {**rels["output"], **{t: found[t] for t in spec.outputs if t not in rels["output"]}}
    return (case.spec, case.impl), {**rels, "output": output, "evidence": found}


def _plain(es: list[terms.Term]) -> list[terms.Term]:
    """A tensor's equations without the reshapes of one impl tensor where it has a plain one: the checker's cones
    recompute them, and a stage whose goals are plain can be held by congruence (``stages.congruent``)."""
    plain = any(isinstance(e, terms.Ref) for e in es)
    return [e for e in es if not (plain and isinstance(e, terms.Call) and e.fn == "reshape"
                                  and isinstance(e.args[0], terms.Ref))]


def plan(S: Staged) -> list[Stage]:
    """The stages, as the checker derives them: one per spec operator in graph order, then the expectations;
    deduplicated by the checker's key (``certificates.stages.key``)."""
    stages, first, keys = [Stage(n.name) for n in S.spec.nodes] + [Stage(None)], {}, {}
    for i, st in enumerate(stages):
        shape = S.shape(st.op)
        st.key = keys[shape] = keys.get(shape) or stage_key(*S.stage(st.op))
        st.rep = first.setdefault(st.key, i)
    return stages


# ---------------------------------------------------------------- discharging one stage (any process)

_PARSED: list = [None, None]  # (payload, its ``Staged``): one cache per process


def _staged(payload: tuple) -> Staged:
    if _PARSED[0] is not payload:
        _PARSED[:] = [payload, Staged(payload)]
    return _PARSED[1]


def discharge(payload: tuple, op: str | None, limits: dict) -> list[tuple]:
    """Prove one stage at every size it is checked at; returns ``(spec, expr, elements, methods, failure,
    assumed)`` per equation, elements and methods summed over the sizes."""
    lim, total = Limits(**limits), None
    try:
        how, obls = _staged(payload).stage(op)
    except CheckError as e:
        return [(op or "expectations", "", 0, {}, str(e), 0)]
    for ls, li, hyp, goal in obls:
        empty = [t for t, es in hyp.items() if not es]
        try:
            if empty:
                raise Unsupported(f"no relation of input '{empty[0]}' can be used: the cone recomputes it")
            outs = held(ls, goal, how != "congruence") if how != "reduced" else decide(ls, li, hyp, goal, lim)
        except CheckError as e:
            outs = [Outcome(s, str(x), failure=str(e)) for s, xs in goal.items() for x in xs]
        total = outs if total is None else [dataclasses.replace(
            a, elements=a.elements + b.elements, methods=dict(Counter(a.methods) + Counter(b.methods)),
            failure=a.failure or b.failure, assumed=max(a.assumed, b.assumed)) for a, b in zip(total, outs)]
    return [(o.spec, o.expr, o.elements, o.methods, o.failure, o.assumed) for o in total]


_POOL_PAYLOAD: tuple | None = None


def _init(payload: tuple) -> None:
    global _POOL_PAYLOAD
    _POOL_PAYLOAD = payload


def _pooled(task: tuple) -> list[tuple]:
    return discharge(_POOL_PAYLOAD, *task)


def _run(payload: tuple, tasks: list[tuple], jobs: int, executor: str | None,
         tell: Callable[[int], None]) -> list[list[tuple]]:
    """Discharge ``tasks`` in-process, in a local pool, or on a Dask cluster; results in task order."""
    if executor:
        if not executor.startswith("dask://"):
            raise ValueError(f"executor {executor!r}: only dask://HOST:PORT is supported")
        from distributed import Client, as_completed  # optional extra: pip install 'pvcert[dask]'
        with Client(executor.replace("dask://", "tcp://"), timeout=30) as client:
            g = client.scatter(payload, broadcast=True)
            futures = [client.submit(discharge, g, *t, pure=False) for t in tasks]
            for k, _ in enumerate(as_completed(futures)):
                tell(k + 1)
            return client.gather(futures)
    if jobs <= 1 or len(tasks) <= 1:
        out = []
        for t in tasks:
            out.append(discharge(payload, *t))
            tell(len(out))
        return out
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init, initargs=(payload,)) as pool:
        out = []
        for r in pool.map(_pooled, tasks, chunksize=max(1, len(tasks) // (4 * jobs))):
            out.append(r)
            tell(len(out))
        return out


def _pairs(rel: Relation) -> list[tuple[str, terms.Term]]:
    return [(t, e) for t, es in rel.items() for e in es]


def _goal(S: Staged, op: str | None) -> list[tuple[str, terms.Term]]:
    """The full-size equations a stage proves, in the order of its outcomes (``certificates.stages.stage``)."""
    if op is None:
        return _pairs(S.rels["output"])
    return _pairs({t: S.rel[t] for t in S.spec.nodes[S.spec.position[op]].outputs if t in S.rel})


def _prove(res: StagedResult, jobs: int, executor: str | None, limits: Limits, progress: Progress | None) -> bool:
    """Plan the stages of ``res.inference`` and prove each class once; True if every stage holds."""
    lim = {f.name: getattr(limits, f.name) for f in dataclasses.fields(limits) if f.name != "start"}
    try:
        work = payload(res)
        res.stages, res.relation, res.claimed = plan(_staged(work)), work[1]["evidence"], work[1]["output"]
    except CheckError as e:
        res.failure = f"the relation found at reduced sizes does not hold at full size as found: {e}"
        return False
    todo = [i for i, s in enumerate(res.stages) if s.rep == i and s.key not in res.proved]
    tasks = [(res.stages[i].op, lim) for i in todo]
    tell = (lambda k: progress("prove", k, len(tasks))) if progress else (lambda k: None)
    for i, outs in zip(todo, _run(work, tasks, jobs, executor, tell)):
        res.proved[res.stages[i].key] = outs
    for st in res.stages:
        st.outcomes = [Outcome(*o) for o in res.proved[st.key]]
    bad = next(((st, o) for st in res.stages for o in st.outcomes if not o.holds), None)
    res.failure = bad and f"stage {bad[0].op or 'expectations'}: {bad[1].spec} = {bad[1].expr}: {bad[1].failure}"
    res.failed = {(t, str(e)) for (t, e), o in zip(_goal(_staged(work), bad[0].op), bad[0].outcomes)
                  if not o.holds and t in res.relation} if bad else set()   # the first: the others may follow from it
    if not bad and any(o.assumed for st in res.stages for o in st.outcomes):   # as the checker's replay
        res.failure = spec_defined(_staged(work).spec, limits)
    return res.failure is None


def verify_staged(case: Case, jobs: int = 1, executor: str | None = None, reduce: bool = True,
                  progress: Progress | None = None, limits: Limits | None = None, seed: int = 0) -> StagedResult:
    """Verify ``case`` stage by stage at reduced shapes; see the module docstring. Inference runs first with the
    mixed axes reduced too (``reduce.MIXED``), then with the reduced sizes apart between all classes, and without
    the mixed axes reduced if neither verifies."""
    limits = limits or Limits()
    with _few_collections():
        return _verify(case, jobs, executor, reduce, progress, limits, seed)


@contextlib.contextmanager
def _few_collections():
    """Python's cyclic garbage collector run less often: the objects made so far (the capture's modules and graphs)
    frozen out of it, and 100,000 allocations between young collections instead of 700 (a quarter of Llama's
    staged time went to collections walking objects that are never garbage)."""
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(100_000, 50, 1000)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


def _verify(case: Case, jobs: int, executor: str | None, reduce: bool, progress: Progress | None, limits: Limits,
            seed: int) -> StagedResult:
    res = _attempt(case, jobs, executor, reduce, progress, limits, seed, True)
    if not res.verified and res.reduction and res.reduction.relaxed and \
            reduce_case(case, limits, True, True).sizes != res.reduction.sizes:   # sizes apart between all classes
        res = _attempt(case, jobs, executor, reduce, progress, limits, seed, True, True)
    if not res.verified and res.reduction and res.reduction.relaxed:
        first = res.failure or res.inference.failure and res.inference.failure.message
        try:
            res = _attempt(case, jobs, executor, reduce, progress, limits, seed, False)
        except LimitExceeded as e:
            raise LimitExceeded(f"{e}; with the mixed axes reduced too it was not verified: {first}") from None
    return res


def _attempt(case: Case, jobs: int, executor: str | None, reduce: bool, progress: Progress | None, limits: Limits,
             seed: int, relax: bool, everywhere: bool = False) -> StagedResult:
    t0 = time.monotonic()
    red = reduce_case(case, limits, relax, everywhere) if reduce else None
    work = red.case if red else case
    t1 = time.monotonic()
    step = (lambda k, n, op: progress("infer", k, n)) if progress else None
    try:
        prepared = direct.prepare(work, limits)   # the second run spreads integer inputs, the others draw them
        values = [direct.numeric_values(prepared, seed + k, limits, spread=k == 1) for k in range(1, 1 + RUNS)]
        deferred = functools.partial(_Deferred, values=values, red=red)
        res = StagedResult(case, red, infer(work, seed, limits, step, chain=deferred, prepared=prepared))
    except direct.ImplFailed:  # the sequential engine reports it
        values = None
        res = StagedResult(case, red, infer(work, seed, limits, step))
    t2 = time.monotonic()
    ok, banned = res.inference.verified and _prove(res, jobs, executor, limits, progress), frozenset()
    for _ in range(REINFER if values else 0):   # infer again without the equations that failed their stage
        if ok or not res.inference.verified or not res.failed - banned:
            break
        res.banned = banned = banned | res.failed
        chain = functools.partial(_Deferred, values=values, red=red, banned=banned)
        res.inference = infer(work, seed, limits, step, chain=chain, prepared=prepared)
        res.failure, res.stages = None, []
        ok = res.inference.verified and _prove(res, jobs, executor, limits, progress)
    if not ok:  # the sequential engine proves as it goes: it drops failing candidates or reports the bug
        res.fallback, res.failure, res.stages = True, None, []
        res.inference = infer(work, seed, limits, step)
        if res.inference.verified:
            _prove(res, jobs, executor, limits, progress)
    t3 = time.monotonic()
    res.seconds = {"reduce": t1 - t0, "infer": t2 - t1, "prove": t3 - t2, "total": t3 - t0}
    return res


def summary(res: StagedResult) -> dict[str, Any]:
    """Numbers for reports and benchmarks."""
    red = res.reduction
    return {"verified": res.verified, "stages": len(res.stages), "classes": res.classes,
            "fallback": res.fallback, "banned": len(res.banned), "volume": list(red.volume) if red else None,
            "reduced_classes": len(red.classes) if red else 0,
            **{f"{k}_s": round(v, 3) for k, v in res.seconds.items()}}
