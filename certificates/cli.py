"""``pvcert replay CERT`` (also ``python -m certificates CERT``): exit 0 ACCEPT, 1 REJECT,
2 malformed input, 3 resource limit."""

from __future__ import annotations

import argparse
import resource
import sys
import time
import traceback

from .errors import ACCEPT, LIMIT, MALFORMED, REJECT, CheckError
from .limits import Limits
from .replay import replay


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("certificate", help="certificate JSON file")
    p.add_argument("--timeout", type=float, default=Limits.seconds, help="wall-clock limit in seconds")
    p.add_argument("--memory-mb", type=int, default=8192, help="address-space limit of the checker")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def fail(prog: str, e: CheckError, debug: bool) -> int:
    """Print a check error as one line (traceback with ``debug``); return its exit code."""
    if debug:
        traceback.print_exc()
    word = {MALFORMED: "MALFORMED", LIMIT: "LIMIT"}.get(e.exit_code, "REJECT")
    print(f"{prog}: {word}: {e}", file=sys.stderr)
    return e.exit_code


def run(args: argparse.Namespace) -> int:
    """Replay and print one line per claim plus a verdict line; returns the exit code."""
    if args.memory_mb:
        limit = args.memory_mb * 2**20
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or hard >= limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    start = time.monotonic()
    try:
        results = replay(args.certificate, Limits(seconds=args.timeout))
    except CheckError as e:
        return fail("pvcert replay", e, args.debug)
    except MemoryError:
        print(f"pvcert replay: LIMIT: {args.certificate}: memory limit of {args.memory_mb} MiB reached",
              file=sys.stderr)
        return LIMIT
    except RecursionError:
        print(f"pvcert replay: LIMIT: {args.certificate}: nesting too deep", file=sys.stderr)
        return LIMIT
    except Exception as e:  # a checker defect must still never accept, nor dump a traceback
        if args.debug:
            traceback.print_exc()
        print(f"pvcert replay: MALFORMED: {args.certificate}: internal checker error "
              f"({type(e).__name__}: {e}); rerun with --debug and report it", file=sys.stderr)
        return MALFORMED
    for r in results:
        print(f"claim '{r.claim}' ({r.kind}): {'ACCEPT' if r.ok else 'REJECT'}: {r.detail}")
    ok = all(r.ok for r in results)
    print(f"{'ACCEPT' if ok else 'REJECT'} {args.certificate} ({time.monotonic() - start:.2f} s)")
    return ACCEPT if ok else REJECT


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pvcert-replay", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))
