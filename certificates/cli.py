"""``pvcert replay CERT`` (``python -m certificates CERT``): exit 0 ACCEPT, 1 REJECT, 2 malformed input,
3 resource limit. Replay runs in a child process killed at the time limit; it sends results as JSON."""

import argparse
import hashlib
import json
import multiprocessing
import re
import resource
import signal
import sys
import time
import traceback

from .errors import ACCEPT, LIMIT, MALFORMED, REJECT, CheckError, Malformed
from .limits import Limits, canonical_bytes, load_json, read_bytes
from .replay import replay


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("certificate", help="certificate JSON file")
    p.add_argument("--timeout", type=float, default=Limits.seconds, help="wall-clock limit in seconds")
    p.add_argument("--memory-mb", type=int, default=8192, help="address-space limit of the checker")
    p.add_argument("--spec", metavar="FILE", help="REJECT unless every claim's spec is this graph file")
    p.add_argument("--spec-sha256", metavar="HEX", help="REJECT unless every claim's spec has this sha256")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def _replay(args: argparse.Namespace) -> dict:
    """Replay in this (child) process: ``{"results": [...]}`` or ``{"code", "line"}``."""
    limit, hard = args.memory_mb * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]
    if args.memory_mb and (hard == resource.RLIM_INFINITY or hard >= limit):
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        results = replay(args.certificate, Limits(seconds=args.timeout), _wanted_spec(args))
        return {"results": [r.__dict__ for r in results]}
    except CheckError as e:
        word = {MALFORMED: "MALFORMED", LIMIT: "LIMIT"}.get(e.exit_code, "REJECT")
        code, line = e.exit_code, f"{word}: {e}"
    except MemoryError:
        code, line = LIMIT, f"LIMIT: {args.certificate}: memory limit of {args.memory_mb} MiB reached"
    except RecursionError:
        code, line = LIMIT, f"LIMIT: {args.certificate}: nesting too deep"
    except Exception as e:  # a checker defect must still never accept, nor dump a traceback
        code, line = MALFORMED, (f"MALFORMED: {args.certificate}: internal checker error ({type(e).__name__}: "
                                 f"{e}); rerun with --debug and report it")
    if args.debug:
        traceback.print_exc()
    return {"code": code, "line": line}


def _wanted_spec(args: argparse.Namespace) -> tuple[str, set[str]] | None:
    """(what the auditor named, the sha256 values that match it) from ``--spec`` / ``--spec-sha256``."""
    if args.spec_sha256 is not None:
        if not re.fullmatch(r"[0-9a-f]{64}", args.spec_sha256):
            raise Malformed("--spec-sha256", f"{args.spec_sha256!r} is not 64 lowercase hex digits")
        return f"sha256 {args.spec_sha256[:12]}", {args.spec_sha256}
    if args.spec is None:
        return None
    raw = hashlib.sha256(read_bytes(args.spec)).hexdigest()   # a graph referenced by path
    return args.spec, {raw, hashlib.sha256(canonical_bytes(load_json(args.spec))).hexdigest()}  # embedded


def _run_child(args: argparse.Namespace) -> dict:
    """Replay in a forked child (bytes over a pipe, never pickle); wait at most the time limit, then kill it."""
    ctx = multiprocessing.get_context("fork")
    rd, wr = ctx.Pipe(duplex=False)
    child = ctx.Process(target=lambda: wr.send_bytes(json.dumps(_replay(args)).encode()))
    child.start()
    wr.close()
    try:
        if rd.poll(args.timeout + 0.5):
            return json.loads(rd.recv_bytes())
        child.kill()
        return {"code": LIMIT, "line": f"LIMIT: {args.certificate}: time limit of {args.timeout:g} s reached"}
    except (EOFError, ValueError):   # no result, or a cut one
        child.join()
        killed = child.exitcode == -signal.SIGKILL
        return {"code": LIMIT if killed else MALFORMED,
                "line": f"{'LIMIT' if killed else 'MALFORMED'}: {args.certificate}: the checker process ended "
                        f"without a result (exit code {child.exitcode}; killed for memory?)"}
    finally:
        child.join()


def show(args: argparse.Namespace, out: dict, start: float) -> int:
    """Print the replay child's ``out`` (``_run_child``); its exit code."""
    if "results" not in out:
        print(f"pvcert replay: {out['line']}", file=sys.stderr)
        return out["code"]
    for r in out["results"]:
        print(f"claim '{r['claim']}' ({r['kind']}): {'ACCEPT' if r['ok'] else 'REJECT'}: {r['detail']}")
        for line in r["shown"]:
            print(f"  {line}")
    ok = all(r["ok"] for r in out["results"])
    print(f"{'ACCEPT' if ok else 'REJECT'} {args.certificate} ({time.monotonic() - start:.2f} s)")
    return ACCEPT if ok else REJECT


def main(argv: list[str] | None = None) -> int:
    """Replay and print each claim (what it states, then its verdict) and a verdict line."""
    p = argparse.ArgumentParser(prog="pvcert-replay", description=__doc__)
    add_arguments(p)
    args, start = p.parse_args(argv), time.monotonic()
    return show(args, _run_child(args), start)
