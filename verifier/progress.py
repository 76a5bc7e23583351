"""Progress on standard error (docs/output.md): a ``rich`` bar on a terminal; elsewhere (CI logs) a
plain line ``pvcert: PHASE [done/total] (N s)`` every ``EVERY`` seconds while a phase lasts (a quick
run prints none); nothing with ``-q``."""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, TextIO

EVERY = float(os.environ.get("PVCERT_PROGRESS_EVERY", "10"))   # seconds between two plain lines


class Progress:
    """Phases (capture, inference, proving, replay, ...) with optional counts (done of total)."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None, every: float = EVERY) -> None:
        self.stream = stream or sys.stderr
        self.quiet, self.every = quiet, every
        self.tty = not quiet and self.stream.isatty()
        self._bar: Any = None
        self._task: Any = None
        self._name, self._done, self._total = "", 0, 0

    @contextmanager
    def phase(self, name: str, total: int = 0) -> Iterator[Progress]:
        """Show ``name`` while the block runs; ``update`` reports counts inside it."""
        self._name, self._done, self._total = name, 0, total
        if self.quiet:
            yield self
        elif self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=Console(file=self.stream), transient=True)
            self._task = self._bar.add_task(name, total=total or None)
            try:
                with self._bar:
                    yield self
            finally:
                self._bar = None
        else:
            stop = threading.Event()
            ticker = threading.Thread(target=self._tick, args=(stop, time.monotonic()), daemon=True)
            ticker.start()
            try:
                yield self
            finally:
                stop.set()
                ticker.join()

    def update(self, done: int, total: int, label: str = "") -> None:
        """``done`` of ``total`` items of the current phase; ``label``: the item being worked on.
        (The argument order of the engines' ``progress(done, total, op)`` hooks.)"""
        self._done, self._total = done, total
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total,
                             description=f"{self._name} {label[:40]}".rstrip())

    def _tick(self, stop: threading.Event, start: float) -> None:
        while not stop.wait(self.every):
            counts = f" {self._done}/{self._total}" if self._total else ""
            print(f"pvcert: {self._name}{counts} ({time.monotonic() - start:.0f} s)", file=self.stream, flush=True)
