"""pvcert's Python API (docs/api.md): the command line's own code paths, results as objects::

    import pvcert

    def test_tp_mlp():
        r = pvcert.verify("examples/cases/tp_mlp.py")
        assert r.verified, r.output

``verify``, ``kernels`` and ``replay`` return a ``Result`` (``verifier.output.Record``): ``verdict``,
``verified`` / ``refuted`` / ``unknown`` / ``accepted``, ``exit_code`` (as the command's),
``counterexample``, ``certificate`` (the checked certificate as a dict, or None), ``results``,
``timing``, ``errors``, ``output`` (the text the command prints). Nothing is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
from typing import Any

from verifier import __version__
from verifier.case import Case
from verifier.cli import execute, parser
from verifier.output import Record as Result

__all__ = ["verify", "kernels", "replay", "Result", "Case", "__version__"]


def verify(case: str | os.PathLike | Case, engine: str = "per-operator", emit_cert: str | None = None, *,
           staged: bool = False, seed: int = 0, timeout: float | None = None) -> Result:
    """``pvcert verify``: ``case`` is a case file (.json or .py) or a ``Case``; ``emit_cert``: where to
    write the certificate (``Result.certificate`` holds it either way when VERIFIED)."""
    argv = ["verify", "-", "--engine", engine, "--seed", str(seed)] + (["--staged"] if staged else [])
    return _run(argv, emit_cert, timeout, case=case if isinstance(case, Case) else os.fspath(case))


def kernels(*names: str, corpus: str = "examples/kernels", launch: str | None = None,
            emit_cert: str | None = None) -> Result:
    """``pvcert kernels``: the named pairs (default: every pair) of ``corpus``, or one ``launch`` file."""
    return _run(["kernels", *names, "--corpus", corpus] + (["--launch", launch] if launch else []), emit_cert, None)


def replay(path: str | os.PathLike, *, spec: str | None = None, timeout: float | None = None) -> Result:
    """``pvcert replay``: re-check a certificate with the independent checker (``Result.accepted``)."""
    return _run(["replay", os.fspath(path)] + (["--spec", spec] if spec else []), None, timeout)


def _run(argv: list[str], emit_cert: str | None, timeout: float | None, **override: Any) -> Result:
    """Parse ``argv`` as the command line does, then run it as ``pvcert`` does, quietly."""
    args: argparse.Namespace = parser().parse_args([*argv, "-q"])
    vars(args).update(override)
    if timeout is not None:
        args.timeout = timeout
    with tempfile.TemporaryDirectory() as tmp:
        if hasattr(args, "emit_cert"):   # a temporary file when not asked: the checker still replays it
            args.emit_cert = emit_cert or os.path.join(tmp, "certificate.json")
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            result = execute(args)
    result.output = out.getvalue()
    if emit_cert is None:
        result.certificate_path = None
    return result
