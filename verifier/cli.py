"""The ``pvcert`` command. Exit codes (docs/exit-codes.md): 0 VERIFIED/ACCEPT,
1 REFUTED (an executed counterexample)/REJECT, 2 malformed input, 3 resource limit,
4 UNKNOWN (neither proved nor refuted)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import sys
import time
import traceback
from pathlib import Path

from certificates import approx, cli as checker_cli
from certificates.errors import ACCEPT, LIMIT, MALFORMED, REJECT, CheckError, LimitExceeded, Malformed, Unsupported
from certificates.limits import Limits

from .output import Record
from .progress import Progress
from .verdict import EXIT, REFUTED, UNKNOWN, VERIFIED, Verdict, unknown_help


def cmd_verify(args: argparse.Namespace) -> int:
    from .case import Case, load_case
    from .provenance import user_sources

    if isinstance(args.case, Case):   # the Python API's in-memory case
        case, args.sources = args.case, []
    elif getattr(args, "spec", None):   # saved torch.export programs + a relation file
        t0 = time.monotonic()
        with args.progress.phase("load"):
            case = _load_saved(args)
        args.record.timing["capture_s"] = time.monotonic() - t0
        args.sources = [os.path.abspath(p) for p in (args.relation, args.spec, *args.impl)]
    elif args.case.endswith(".py") and _defines(args.case, "make_template"):
        return _verify_template(args)
    else:
        before, t0 = set(sys.modules), time.monotonic()
        with args.progress.phase("capture" if args.case.endswith(".py") else "load"):
            case = load_case(args.case)
        args.record.timing["capture_s"] = time.monotonic() - t0
        args.sources = user_sources(args.case, before, (case.spec, case.impl))
    args.record.name = case.name
    limits = Limits(seconds=args.timeout)
    if case.approximations:
        approx.apply(case.spec, case.approximations, f"{args.case}: approximations")   # malformed: exit 2
        if args.staged:
            raise Malformed(args.case, "declared approximations are not supported with --staged")
        print(f"{case.name}: assuming {approx.describe(case.approximations)} (the spec is rewritten accordingly)")
    for a in case.assumptions:
        print(f"{case.name}: assuming custom op {a['custom_op']} computes its declared function "
              f"(the certificate holds its source; the claim lists it)")
    if args.engine == "whole-graph":
        return _verify_whole_graph(case, args, limits)
    why = None   # why the graphs are not reduced, where they are too large and a staged claim would refuse them
    try:
        if args.staged:
            return _verify_staged(case, args, limits)
        if not case.approximations and _over(case, limits):
            if not (why := _untrusted_by_staged(case)):
                print(f"{case.name}: a tensor has more than {limits.max_elements} elements: verifying on the "
                      "shape-reduced graphs, as --staged does (docs/stages.md)")
                return _verify_staged(case, args, limits)
            print(f"{case.name}: a tensor has more than {limits.max_elements} elements, and the graphs are not "
                  f"reduced: {why}")
        return _verify_per_operator(case, args, limits)
    except LimitExceeded as e:
        if not _over(case, limits):
            raise
        return _full_size(case, args, limits, LimitExceeded(f"{e}; not reduced: {why}") if why else e)


def _over(case, limits: Limits) -> bool:
    """Whether a tensor of the case has more elements than can be decided element by element."""
    return any(math.prod(t["shape"]) > limits.max_elements for g in (case.spec, case.impl)
               for t in g["tensors"].values())


FULL_ELEMENTS = 1 << 27   # the largest tensor run at full size (1 GiB of float64)


def _full_size(case, args: argparse.Namespace, limits: Limits, limit: LimitExceeded, tried: str | None = None) -> int:
    """A case too large to decide (``tried``: or to search at full size after a staged run that did not prove
    it): both graphs run at full size (verifier/fullsize.py). REFUTED with the executed counterexample and the
    spec operator where the values first part, else the LIMIT stands (``tried``: UNKNOWN)."""
    from . import direct, fullsize
    from .refine import report

    print(f"{case.name}: not decided ({tried or limit}); running both graphs at full size for a counterexample")
    if not args.debug:   # the frames of the failed proof (reduced graphs, inference) are not needed again
        limit.__traceback__ = None
    big = dataclasses.replace(limits, max_elements=FULL_ELEMENTS)   # the same clock
    t0 = time.monotonic()
    try:
        with args.progress.phase("full-size counterexample search"):
            found = fullsize.search(direct.prepare(case, big), args.seed, big)
    except (Unsupported, LimitExceeded) as e:
        print(f"  the full-size run stopped: {e}")
        if tried:
            return _emit(args, Verdict(UNKNOWN, case.name, f"{tried}; the full-size run stopped: {e}"),
                         time.monotonic() - t0)
        raise limit from None
    seconds = args.record.timing["search_s"] = time.monotonic() - t0
    cx, n = found.counterexample, found.located
    if cx is None:
        draws = (f"{found.draws} draws, float magnitudes fan-in (1/sqrt of the last axis), "
                 f"{', '.join(f'{x:g}' for x in direct.SCALES)}, {seconds:.1f} s")
        print(f"  no counterexample at full size ({draws})")
        if tried:
            return _emit(args, Verdict(UNKNOWN, case.name, f"{tried}; no counterexample at full size ({draws})"),
                         seconds)
        raise limit
    lines = cx.lines()
    if n is not None:
        lines.insert(1, f"  located by value at full size: spec operator '{n.name}' ({report.where(n)}) is the first "
                        "whose result no impl tensor carries (as a copy, a sum or mean over ranks, or a concatenation "
                        "across ranks, of the copies or of their halves) while its inputs' are carried")
    where = {"operator": n.name, "target": n.target, **(n.source or {})} if n is not None else None
    why = f"{tried} at reduced shapes" if tried else "too large to prove: the LIMIT above"
    return _emit(args, Verdict(REFUTED, case.name, f"'{cx.output}' differs at full size ({why})", evidence=lines),
                 seconds, cx, where)


def _untrusted_by_staged(case) -> str | None:
    """Why a staged claim would refuse the case's operators (``certificates.stages.STAGED``), if it would."""
    from certificates.graph import parse_graph, require_families
    from certificates.stages import STAGED

    from .ir import UNBOUNDED

    try:
        require_families(STAGED, f"{case.name} (--staged)",
                         *(parse_graph(g, case.name, UNBOUNDED) for g in (case.spec, case.impl)))
    except CheckError as e:
        return str(e)
    return None


def _load_saved(args: argparse.Namespace):
    """The case of ``--spec S.pt2 --impl R0.pt2 ... --relation REL.json`` (docs/cases.md)."""
    try:
        from .capture.saved_case import load_saved_case
    except ImportError:
        raise Malformed(args.spec, "reading .pt2 files needs PyTorch: install torch==2.13.0 "
                                   "(docs/capture.md)") from None
    return load_saved_case(args.spec, args.impl, args.relation)


def _defines(path: str, name: str) -> bool:
    """Whether the module at ``path`` defines a top-level function ``name`` (read, not run)."""
    import ast

    try:
        tree = ast.parse(open(path).read(), path)
    except (OSError, SyntaxError, ValueError):
        return False   # load_case reports it
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


def _verify_template(args: argparse.Namespace) -> int:
    """A templated plan (``make_template()``, docs/templates.md): blocks, then the wiring."""
    from .provenance import user_sources
    from .train.template import load_template, verify

    t0, before = time.perf_counter(), set(sys.modules)
    try:
        with args.progress.phase("capture"):
            tc = load_template(args.case)
    except ValueError as e:
        raise Malformed(args.case, str(e)) from None
    args.sources, args.record.name = user_sources(args.case, before), tc.name
    with args.progress.phase("proving (blocks, wiring)"):
        res = verify(tc)
    secs = time.perf_counter() - t0
    if res.block is not None and res.block.prepared is not None:   # a block not proved: search its inputs
        return _not_proved(res.block.prepared, tc.name, res.reason, args, Limits(seconds=args.timeout), secs)
    if not res.ok:   # the wiring runs no program: no counterexample to show
        v = Verdict(UNKNOWN, tc.name, res.reason, ["verify the same plan as a plan module (make_case) for a "
                                                   "per-operator report and a counterexample search"])
        return _emit(args, v, secs)
    args.record.timing.update(res.times)
    if args.emit_cert:
        _write_cert(args, res.cert)
    return _emit(args, Verdict(VERIFIED, tc.name, f"{res.reason}; blocks {res.times['blocks_s']:.1f} s, "
                               f"wiring {res.times['wiring_s']:.1f} s"), secs)


def _verify_staged(case, args: argparse.Namespace, limits: Limits) -> int:
    from .refine import report
    from .stages.certificate import staged_certificate
    from .stages.run import summary, verify_staged

    why = _untrusted_by_staged(case)   # what a staged claim's checker trusts (certificates/stages.py STAGED)
    if why:
        return _emit(args, Verdict(UNKNOWN, case.name, why, ["verify it without --staged: a refinement claim "
                                                             "trusts the ATen and training operator families"]), 0.0)
    with args.progress.phase("staged") as p:
        res = verify_staged(case, jobs=args.jobs, executor=args.executor, reduce=not args.full_shapes,
                            limits=limits, seed=args.seed, progress=lambda phase, k, n: p.update(k, n, phase))
    s, r = summary(res), res.inference.prepared
    args.record.timing.update({k: s[k] for k in ("reduce_s", "infer_s", "prove_s") if k in s})
    print(f"{case.name}: spec '{r.spec.name}' ({len(r.spec.nodes)} ops), impl '{r.impl.name}' "
          f"({r.impl.world_size} ranks, {len(r.impl.nodes)} ops), staged"
          + (f", reduced to {s['volume'][1]} of {s['volume'][0]} elements" if s["volume"] else ""))
    if not res.verified:
        if res.inference.failure is not None:
            print(report.text(res.inference.failure, r.impl))
        elif res.failure:
            print(f"  {res.failure}")
        from . import direct

        if _over(case, limits):   # too large for the search at ``limits``: both graphs run at full size
            return _full_size(case, args, limits, LimitExceeded("staged: not proved"), tried="staged: not proved")
        return _not_proved(direct.prepare(case, limits), case.name, "staged: not proved", args, limits,
                           s["total_s"])
    if args.emit_cert:
        _write_cert(args, staged_certificate(res))
    return _emit(args, Verdict(VERIFIED, case.name, f"{s['stages']} stages in {s['classes']} classes"
                               f"{' (sequential fallback)' if s['fallback'] else ''}"
                               f"{f' (inferred again without {n} equations)' if (n := s['banned']) else ''}; "
                               f"reduce {s['reduce_s']:.2f} s, "
                               f"infer {s['infer_s']:.2f} s, prove {s['prove_s']:.2f} s"), s["total_s"])


def _verify_whole_graph(case, args: argparse.Namespace, limits: Limits) -> int:
    from . import certificate, direct

    with args.progress.phase("proving (whole graph)"):
        r = direct.verify(case, seed=args.seed, limits=limits)
    args.record.timing["prove_s"] = r.seconds
    print(f"{case.name}: spec '{r.spec.name}' ({len(r.spec.nodes)} ops), impl '{r.impl.name}' "
          f"({r.impl.world_size} ranks, {len(r.impl.nodes)} ops), whole-graph")
    if r.counterexample:
        v = Verdict(REFUTED, case.name, f"'{r.counterexample.output}' differs", evidence=r.counterexample.lines())
        return _emit(args, v, r.seconds, r.counterexample)
    for o in r.outcomes:
        how = ", ".join(f"{k} {m}" for m, k in sorted(o.methods.items()))
        print(f"  {o.spec} = {o.expr}: {'proved' if o.holds else 'FAILED'} ({o.elements} elements"
              f"{': ' + how if how else ''}){'' if o.holds else chr(10) + '    ' + o.failure}")
    if not r.verified:
        failed = [o.spec for o in r.outcomes if not o.holds]
        v = Verdict(UNKNOWN, case.name, f"{len(failed)} of {len(r.outcomes)} output equations not proved, no "
                    f"counterexample on {direct.TRIES} random input draws",
                    unknown_help(r.spec.outputs, set(r.expect), "the per-operator engine (the default)"))
        return _emit(args, v, r.seconds)
    if args.emit_cert:
        _write_cert(args, certificate.whole_graph_certificate(r))
    return _emit(args, Verdict(VERIFIED, case.name), r.seconds)


def _verify_per_operator(case, args: argparse.Namespace, limits: Limits) -> int:
    from certificates import symint
    from certificates.precise import PRECISE

    from . import certificate
    from .refine import infer, report

    with args.progress.phase("inference") as p:
        inf = infer(case, seed=args.seed, limits=limits, progress=p.update, check=symint.check, precise=PRECISE)
    r, args.inference = inf.prepared, inf   # --report-html reads the inference (_html_report)
    args.record.timing["infer_s"] = inf.seconds
    print(f"{case.name}: spec '{r.spec.name}' ({len(r.spec.nodes)} ops), impl '{r.impl.name}' "
          f"({r.impl.world_size} ranks, {len(r.impl.nodes)} ops), per-operator")
    if inf.failure is not None:
        print(report.text(inf.failure, r.impl))
        if args.report_dot:
            _write_report(args.report_dot, report.dot(inf.failure, r.impl))
        f = inf.failure
        tried = (f"no relation for spec operator '{f.node.name}' ({len(inf.steps)} of {len(r.spec.nodes)} related)"
                 if f.node is not None else "an expectation not met")
        return _not_proved(r, case.name, tried, args, limits, inf.seconds)
    for t in r.spec.outputs:
        print(f"  {t} = {' = '.join(str(e) for e in inf.relation[t])}")
    for o in inf.outcomes[-sum(len(v) for v in r.expect.values()):]:
        print(f"  expectation {o.spec} = {o.expr}: met")
    if args.emit_cert:
        _write_cert(args, certificate.per_operator_certificate(inf))
    return _emit(args, Verdict(VERIFIED, case.name, f"{len(inf.steps)} operators, {inf.obligations} distinct "
                               f"obligations ({inf.reused} reused)"), inf.seconds)


def _not_proved(r, name: str, tried: str, args: argparse.Namespace, limits: Limits, seconds: float) -> int:
    """No proof of ``r`` (a ``direct.Result``): REFUTED if random runs of both graphs find an expected
    output that differs, else UNKNOWN saying what was tried and what would help."""
    from . import direct

    t0 = time.monotonic()
    try:
        with args.progress.phase("counterexample search"):
            cx = direct.refute(r, args.seed, limits)
    except CheckError as e:   # e.g. a limit at full size: the search is best effort
        cx, tried = None, f"{tried}; the counterexample search stopped: {e}"
    args.record.timing["search_s"] = time.monotonic() - t0
    seconds += time.monotonic() - t0
    if cx is not None:
        return _emit(args, Verdict(REFUTED, name, f"'{cx.output}' differs ({tried})", evidence=cx.lines()),
                     seconds, cx)
    return _emit(args, Verdict(UNKNOWN, name, f"{tried}; no counterexample on {direct.TRIES} random input draws"
                               f" (float magnitudes {', '.join(f'{x:g}' for x in direct.SCALES)})",
                               unknown_help(r.spec.outputs, set(r.expect), "--engine whole-graph")), seconds)


def _emit(args: argparse.Namespace, v: Verdict, seconds: float, cx=None, where: dict | None = None) -> int:
    """Print a verdict (its evidence and help, then the verdict line) and record it; its exit code."""
    print("\n".join(v.lines(seconds)))
    rec = args.record
    rec.verdict = v.word
    inf = getattr(args, "inference", None)
    failure = getattr(inf, "failure", None)
    if failure is not None and failure.node is not None:
        where = {"operator": failure.node.name, "target": failure.node.target, **(failure.location or {})}
    rec.result(v.name, v.word, v.reason, seconds=round(seconds, 4), **({"location": where} if where else {}))
    if cx is not None:
        rec.refute(cx)
    if v.word == UNKNOWN:
        rec.undecided = {"tried": v.reason, "help": v.help}
    _html_report(args, v)
    return v.exit_code


def _html_report(args: argparse.Namespace, v: Verdict) -> None:
    """``--report-html``: the page of verifier/report_html.py (per-operator engine runs)."""
    from . import report_html

    path = getattr(args, "report_html", None)
    inf = getattr(args, "inference", None)
    if not path:
        return
    if inf is None:
        print(f"--report-html: not written ({path}): the HTML report covers per-operator runs only",
              file=sys.stderr)
        return
    r, t = inf.prepared, args.record.timing
    run = report_html.Run(v, r.spec, r.impl, r.case.spec, r.case.impl, r.inputs, r.expect, inf.failure,
                          phases={k.removesuffix("_s"): s for k, s in t.items() if isinstance(s, (int, float))})
    if inf.failure is None:
        run.proved = {o: [str(e) for e in inf.relation[o]] for o in r.spec.outputs}
        run.obligations = (inf.obligations, inf.reused)
    _write_report(path, report_html.page(run))


def _write_report(path: str, text: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise Malformed(path, f"cannot write the report: {e.strerror}") from None
    print(f"report written to {path}")


def _write_cert(args: argparse.Namespace, cert: dict) -> None:
    """Add the run's provenance to ``cert``, write it where ``--emit-cert`` says (the checker replays it
    first, ``certificate.write``, within the run's ``--timeout``) and record it."""
    from . import certificate
    from .provenance import provenance

    t0 = time.monotonic()
    cert["header"]["provenance"] = args.record.provenance = provenance(args.sources)
    certificate.write(cert, args.emit_cert, Limits(seconds=getattr(args, "timeout", Limits.seconds)))
    args.record.timing["certificate_s"] = time.monotonic() - t0
    args.record.certificate, args.record.certificate_path = cert, args.emit_cert
    print(f"certificate written to {args.emit_cert}")


def cmd_kernels(args: argparse.Namespace) -> int:
    """Kernel equivalence on the pairs of a corpus (or one launch description): CTA ``check_cta``, or
    every CTA with ``--grid``."""
    from pathlib import Path

    from .kernels.certificate import kernel_certificate, pair_claim
    from .kernels.equiv import check_pair, load_pairs
    from .kernels.launch import load_launch

    if args.launch:
        base = Path(args.launch).parent
        entry = load_launch(args.launch)
        pairs = {entry["name"]: entry}
    else:
        base = Path(args.corpus)
        try:
            pairs = load_pairs(base)
        except (OSError, ValueError, KeyError) as e:
            raise Malformed(str(base / "pairs.json"), f"cannot read the pairs: {e}") from None
    names = args.names or sorted(pairs)
    unknown = [n for n in names if n not in pairs]
    if unknown:
        raise Malformed(args.launch or str(base / "pairs.json"), f"no pair named '{unknown[0]}'")
    if args.grid:   # the same as "check_cta": "all" in the launch or pairs file
        pairs = {n: {**pairs[n], "check_cta": "all"} for n in names}
    ok, words, certified = True, set(), []
    args.sources = [args.launch or str(base / "pairs.json")]
    for k, name in enumerate(names):
        t0 = time.monotonic()
        with args.progress.phase(f"kernel pair {k + 1}/{len(names)} {name}"):
            report = check_pair(pairs[name], base)
        expected = (pairs[name].get("expected") or {}).get("verdict")
        ok &= report.verdict == expected if args.check_expected else report.verdict == "equivalent"
        words.add(word := _kernel_verdict(report.verdict))
        side = f" ({report.kernel})" if report.kernel else ""
        print(f"{name:40s} {word:9s} {report.verdict + side:28s} {time.monotonic() - t0:7.2f} s"
              f"{'' if expected in (None, report.verdict) else f'  (expected {expected})'}")
        args.record.result(name, word, report.message, seconds=round(time.monotonic() - t0, 4),
                           kernel_verdict=report.verdict, expected=expected,
                           counterexample=_jsonable(report.mismatch))
        print(f"    {report.message}")   # for an equivalent pair: which CTA(s) and outputs
        if args.emit_cert and report.verdict == "equivalent":
            certified.append(pair_claim(name, pairs[name], base, report))
    if args.emit_cert:
        if certified:
            print(f"certificate: {len(certified)} equivalent pair(s)")
            _write_cert(args, kernel_certificate(certified))
        else:
            print("certificate: not written (no pair was proved equivalent)")
    args.record.verdict = REFUTED if REFUTED in words else UNKNOWN if UNKNOWN in words else VERIFIED
    if args.check_expected or ok:
        return ACCEPT if ok else REJECT
    return EXIT[REFUTED] if REFUTED in words else EXIT[UNKNOWN]


def _jsonable(x):
    """``x`` with tuples as lists and other non-JSON values as strings (a kernel mismatch's witness)."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x if x is None or isinstance(x, (bool, int, float, str)) else str(x)


def cmd_replay(args: argparse.Namespace) -> int:
    """``pvcert replay``: the checker's own command (certificates/cli.py), recorded for --json/--junitxml."""
    t0 = time.monotonic()
    with args.progress.phase("replay"):
        out = checker_cli._run_child(args)
    rec = args.record
    rec.timing["replay_s"] = time.monotonic() - t0
    if "results" not in out:   # one line for the whole certificate: "WORD: FILE: message"
        word, _, rest = out["line"].partition(": ")
        file, _, msg = rest.partition(": ")
        if out["code"] == REJECT:
            rec.result(file, "REJECT", msg)
        else:
            rec.errors.append({"kind": word, "file": file, "element": None, "message": msg})
    for r in out.get("results", []):
        rec.result(r["claim"], "ACCEPT" if r["ok"] else "REJECT", r["detail"], kind=r["kind"], shown=r["shown"])
    rec.verdict = ("ERROR" if rec.errors else "ACCEPT" if rec.results and all(r["verdict"] == "ACCEPT"
                                                                               for r in rec.results) else "REJECT")
    return checker_cli.show(args, out, t0)


def _kernel_verdict(v: str) -> str:
    """A pair's verdict word: a race, a deadlock or a differing output element are found by running
    the CTA (the element's values at concrete inputs): REFUTED; unsupported or undecided: UNKNOWN."""
    return {"equivalent": "VERIFIED", "racy": REFUTED, "deadlock": REFUTED, "not-equivalent": REFUTED}.get(v, UNKNOWN)


def cmd_validate(args: argparse.Namespace) -> int:
    from .ir import load_graph

    for path in args.graphs:
        g = load_graph(path)
        colls = sum(1 for n in g.nodes if n.op.collective)
        print(f"ok {path}: '{g.name}', world {g.world_size}, {len(g.nodes)} nodes "
              f"({colls} collective), {len(g.tensors)} tensors")
    return ACCEPT


def cmd_ops(args: argparse.Namespace) -> int:
    from certificates.ops import REGISTRY

    trusted = {"ops": "every graph claim", "ops_grad": "every graph claim", "ops_index": "refinement, staged-refinement",
               "ops_aten": "refinement", "ops_train": "training-refinement"}   # docs/architecture.md, "Operator families"
    for target in sorted(REGISTRY):
        o = REGISTRY[target]
        kind, family = "collective" if o.collective else "op", o.run.__module__.rsplit(".", 1)[-1]
        print(f"{target:55s} {kind:10s} {' '.join(o.slots):40s} {family} ({trusted[family]})")
    return ACCEPT


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import main as bench_main

    return bench_main(args.quick, args.results)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pvcert", description="Proof-carrying verifier for distributed "
                                "deep learning and GPU kernels.")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="verify a case and optionally emit a certificate")
    v.add_argument("case", nargs="?", help="case file (.json, or .py captured from PyTorch); or give --spec, "
                   "--impl and --relation")
    v.add_argument("--spec", metavar="SPEC.pt2", help="the one-device program saved by torch.export.save "
                   "(or its print_readable text, .txt)")
    v.add_argument("--impl", metavar="RANK.pt2", nargs="+", help="one saved program per rank, in rank order")
    v.add_argument("--relation", metavar="REL.json", help="with --spec/--impl: relations and collective "
                   "groups (docs/cases.md)")
    v.add_argument("--emit-cert", metavar="FILE", help="write the certificate here (replayed first, within --timeout)")
    v.add_argument("--engine", choices=("per-operator", "whole-graph"), default="per-operator",
                   help="per-operator inference of clean relations (default), or one whole-graph obligation")
    v.add_argument("--report-dot", metavar="FILE", help="on failure, write the explored impl subgraph (Graphviz "
                   "DOT; docs/reports.md)")
    v.add_argument("--report-html", metavar="FILE", help="write an HTML report: verdict, claim, the failing "
                   "operator with its source lines and graphs, or what was proved (docs/reports.md)")
    v.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    v.add_argument("--timeout", type=float, default=Limits.seconds, help="wall-clock limit in seconds")
    v.add_argument("--staged", action="store_true",
                   help="stage by stage on reduced shapes, identical stages proved once (docs/stages.md)")
    v.add_argument("--jobs", type=int, default=1, help="with --staged: local processes proving stages")
    v.add_argument("--executor", metavar="dask://HOST:PORT", help="with --staged: an existing Dask cluster")
    v.add_argument("--full-shapes", action="store_true", help="with --staged: do not reduce shapes")
    v.set_defaults(run=cmd_verify)
    r = sub.add_parser("replay", help="re-check a certificate with the independent checker")
    checker_cli.add_arguments(r)
    r.set_defaults(run=cmd_replay)
    g = sub.add_parser("validate", help="validate graph IR files")
    g.add_argument("graphs", nargs="+")
    g.set_defaults(run=cmd_validate)
    k = sub.add_parser("kernels", help="prove reference/optimized PTX kernel pairs equivalent (one CTA)")
    k.add_argument("names", nargs="*", help="pair names (default: every pair)")
    k.add_argument("--corpus", default="examples/kernels", help="folder with pairs.json and the PTX")
    k.add_argument("--launch", metavar="FILE", help="one pair's launch description (JSON) instead of a corpus")
    k.add_argument("--emit-cert", metavar="FILE", help="write a certificate of the equivalent pairs here")
    k.add_argument("--check-expected", action="store_true",
                   help="exit 0 iff every verdict is the one pairs.json expects (else: iff all equivalent)")
    k.add_argument("--verbose", action="store_true", help="print the message of every pair")
    k.add_argument("--grid", action="store_true", help="check every CTA of each launch (no two CTAs may write "
                   "the same output byte): the claim is about the whole launch, not one CTA")
    k.set_defaults(run=cmd_kernels)
    o = sub.add_parser("ops", help="list the operator registry")
    o.set_defaults(run=cmd_ops)
    b = sub.add_parser("bench", help="run the benchmarks; prints a table and writes JSON")
    b.add_argument("--quick", action="store_true", help="small sizes only (as in CI)")
    b.add_argument("--json", dest="results", default="bench/results/foundation.json",
                   help="where to write results (a file: bench has no JSON stdout mode)")
    b.set_defaults(run=cmd_bench)
    for sp in (v, g, o, b, k):
        sp.add_argument("--debug", action="store_true", help="show tracebacks")
    for sp in (v, k, r):   # docs/output.md
        sp.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout (docs/schema/output-v1.json); text goes to stderr")
        sp.add_argument("--junitxml", metavar="FILE", help="write a JUnit XML report here (one testcase per "
                        "claim, pair or case)")
        sp.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return p


PIPE_CLOSED = 141   # standard output closed early (``pvcert ops | head``), as a shell reports SIGPIPE


class _Version(argparse.Action):
    """``--version``: print ``version()`` and exit."""

    def __init__(self, option_strings, dest, **kw) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version (and git commit) and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(version())
        parser.exit()


def version() -> str:
    """pvcert's version, with the git commit when it runs from a checkout."""
    from . import __version__

    from .provenance import git_commit

    commit = git_commit()
    return f"pvcert {__version__}" + (f" (git {commit})" if commit else "")


def _fail(prog: str, e: CheckError, debug: bool) -> int:
    """Print a check error as one line (traceback with ``debug``); return its exit code."""
    if debug:
        traceback.print_exc()
    word = {MALFORMED: "MALFORMED", LIMIT: "LIMIT"}.get(e.exit_code, "REJECT")
    print(f"{prog}: {word}: {e}", file=sys.stderr)
    return e.exit_code


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:   # the reader left: stop quietly, claiming nothing
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no second error at exit
        except (OSError, ValueError):
            pass
        return PIPE_CLOSED


def _main(argv: list[str] | None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.command == "verify":
        saved = (args.spec, args.impl, args.relation)
        if args.case is not None and any(saved) or args.case is None and not all(saved):
            p.error("verify takes a case file, or --spec, --impl and --relation (saved programs)")
        args.case = args.case or args.relation   # the subject named in messages and records
    rec = execute(args)
    if getattr(args, "junitxml", None):
        try:
            Path(args.junitxml).write_text(rec.junit())
        except OSError as e:
            print(f"pvcert {args.command}: MALFORMED: {args.junitxml}: cannot write the JUnit report "
                  f"({e.strerror})", file=sys.stderr)
            return MALFORMED
    if getattr(args, "json", False):
        print(rec.dumps(version()))
    return rec.exit_code


def execute(args: argparse.Namespace) -> Record:
    """Run a parsed command as ``pvcert`` does (the Python API too): its text goes to stdout (to stderr
    with ``--json``); what it found is returned, with ``exit_code`` the command's exit code."""
    subject = {"verify": "case", "replay": "certificate"}.get(args.command)
    subject = getattr(args, subject, None) if subject else getattr(args, "launch", None) or getattr(args, "corpus", "")
    args.record = rec = Record(args.command, str(getattr(subject, "name", subject)))
    args.progress = Progress(quiet=getattr(args, "quiet", False))
    t0 = time.monotonic()
    with contextlib.redirect_stdout(sys.stderr if getattr(args, "json", False) else sys.stdout):
        rec.exit_code = _run(args)
    rec.timing["total_s"] = time.monotonic() - t0
    if rec.verdict is None:   # a command that ended without a verdict of its own
        rec.verdict = {0: "ACCEPT" if args.command == "replay" else VERIFIED, 1: "REJECT",
                       EXIT[UNKNOWN]: UNKNOWN}.get(rec.exit_code, "ERROR")
    return rec


def _run(args: argparse.Namespace) -> int:
    """``args.run(args)``; a check error, an interrupt or a defect as one line on stderr, and recorded."""
    rec = args.record
    if args.command == "replay":   # the checker reports its own errors
        return args.run(args)
    try:
        return args.run(args)
    except CheckError as e:
        if args.command in ("verify", "kernels") and e.exit_code in (REJECT, EXIT[UNKNOWN]):
            # not proved and no executed counterexample (e.g. an unsupported construct)
            if args.debug:
                raise
            print(f"pvcert {args.command}: UNKNOWN: {e}", file=sys.stderr)
            rec.verdict, rec.undecided = UNKNOWN, {"tried": str(e), "help": []}
            rec.result(rec.name or rec.subject, UNKNOWN, str(e))
            return EXIT[UNKNOWN]
        rec.error(e)
        return _fail(f"pvcert {args.command}", e, args.debug)
    except KeyboardInterrupt:
        print(f"pvcert {args.command}: interrupted", file=sys.stderr)
        rec.verdict = "ERROR"
        rec.errors.append({"kind": "LIMIT", "file": rec.subject, "element": None, "message": "interrupted"})
        return LIMIT
    except BrokenPipeError:
        raise
    except Exception as e:
        if args.debug:
            raise
        msg = f"internal error ({type(e).__name__}: {e}); rerun with --debug and report it"
        print(f"pvcert {args.command}: {msg}", file=sys.stderr)
        rec.verdict = "ERROR"
        rec.errors.append({"kind": "INTERNAL", "file": rec.subject, "element": None, "message": msg})
        return MALFORMED


if __name__ == "__main__":
    sys.exit(main())
