"""``pvcert replay CERT`` (``python -m certificates CERT``): exit 0 ACCEPT, 1 REJECT, 2 malformed input,
3 resource limit. Replay runs in a child process killed at the time limit; it sends results as JSON."""

import argparse
import hashlib
import json
import os
import re
import resource
import select
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
    """Fork, replay in the child, wait at most the time limit (then kill it)."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: never returns into the caller
        os.close(rd)
        try:
            data = json.dumps(_replay(args)).encode()
            with os.fdopen(wr, "wb") as f:
                f.write(data)
        finally:
            os._exit(0)
    os.close(wr)
    deadline, chunks = time.monotonic() + args.timeout + 0.5, []
    with os.fdopen(rd, "rb") as f:
        while time.monotonic() < deadline:
            if select.select([f], [], [], max(0.0, deadline - time.monotonic()))[0]:
                chunk = os.read(f.fileno(), 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"code": LIMIT, "line": f"LIMIT: {args.certificate}: time limit of {args.timeout:g} s reached"}
    _, status = os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks))
    except ValueError:   # no result, or a cut one
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    return {"code": LIMIT if sig == signal.SIGKILL else MALFORMED,
            "line": f"{'LIMIT' if sig == signal.SIGKILL else 'MALFORMED'}: {args.certificate}: the checker "
                    f"process ended without a result (status {status}; killed for memory?)"}


def run(args: argparse.Namespace) -> int:
    """Replay and print each claim (what it states, then its verdict) and a verdict line."""
    start = time.monotonic()
    return show(args, _run_child(args), start)


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
    p = argparse.ArgumentParser(prog="pvcert-replay", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))
