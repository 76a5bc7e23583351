"""Resource limits of the checker and a bounded JSON reader."""

import json
import math
import os
import re
import stat
import time
from dataclasses import dataclass, field

from .errors import LimitExceeded, Malformed, fail_if


@dataclass
class Limits:
    """Bounds that keep replay finite on any input (see docs/certificates.md)."""

    max_bytes: int = 64 * 2**20       # size of a certificate or artifact file
    max_depth: int = 64               # JSON nesting depth
    max_term_depth: int = 64          # nesting of clean expressions
    max_elements: int = 200_000       # scalar elements in one symbolic tensor
    max_assignments: int = 4_096      # enumerated assignments of integer inputs
    seconds: float = 600.0            # wall clock for one replay
    start: float = field(default_factory=time.monotonic)

    def tick(self) -> None:
        """Raise once the time budget is spent; called from every loop that can grow."""
        if time.monotonic() - self.start > self.seconds:
            raise LimitExceeded(f"time limit of {self.seconds:g} s reached")


# The default of functions called without limits (the engine, tests): sizes bounded, no clock, since
# a clock started at import would expire in any long-lived process. Replay always passes its own Limits.
DEFAULT = Limits(seconds=math.inf)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)   # a JSON string, or an unterminated one to the end


def _scan_depth(text: str, where: str, max_depth: int) -> None:
    """Reject nesting deeper than ``max_depth`` before the recursive parser sees it."""
    depth = 0
    for ch in _STRING.sub("", text):
        depth += (ch in "[{") - (ch in "]}")
        if depth > max_depth:
            raise LimitExceeded(f"{where}: JSON nested deeper than {max_depth}")


def _no_duplicates(pairs: list) -> dict:
    obj: dict = {}
    for k, v in pairs:
        if k in obj:
            raise ValueError(f"duplicate key {k!r}")
        obj[k] = v
    return obj


def _no_constant(name: str) -> None:
    raise ValueError(f"non-finite number {name}")


def parse_json(text: str, where: str, limits: Limits = DEFAULT):
    """Parse JSON text strictly: bounded depth, no duplicate keys, no NaN/Infinity."""
    _scan_depth(text, where, limits.max_depth)
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise Malformed(where, f"invalid JSON: {e}") from None


def read_bytes(path: str, limits: Limits = DEFAULT) -> bytes:
    """Read a regular file no larger than ``limits.max_bytes``; opened without blocking (a FIFO would wait
    for a writer), then FIFOs, devices, directories and links to them refused on the open file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            fail_if(not stat.S_ISREG(st.st_mode), Malformed, path, "not a regular file (a FIFO, device or directory)")
            if st.st_size > limits.max_bytes:
                raise LimitExceeded(f"{path}: {st.st_size} bytes exceeds the limit of {limits.max_bytes}")
            data = f.read(limits.max_bytes + 1)
    except OSError as e:
        raise Malformed(path, f"cannot read: {e.strerror or e}") from None
    if len(data) > limits.max_bytes:
        raise LimitExceeded(f"{path}: grew past the limit of {limits.max_bytes} bytes while read")
    return data


def load_json(path: str, limits: Limits = DEFAULT, data: bytes | None = None):
    """Read and parse a JSON file within the limits (``data``: its bytes, read once already)."""
    try:
        text = (read_bytes(path, limits) if data is None else data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed(path, f"not UTF-8: {e.reason} at byte {e.start}") from None
    return parse_json(text, path, limits)


def canonical_bytes(obj) -> bytes:
    """The canonical serialization that artifact hashes are taken over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
