"""Checker outcomes as exceptions, and the documented exit codes."""

from typing import Any


ACCEPT, REJECT, MALFORMED, LIMIT = 0, 1, 2, 3


class CheckError(Exception):
    """Base: carries the exit code of the command that hits it."""

    exit_code = REJECT


class Malformed(CheckError):
    """Input that is not well formed: names the file and the element."""

    exit_code = MALFORMED

    def __init__(self, where: str, msg: str) -> None:
        super().__init__(f"{where}: {msg}" if where else msg)
        self.where, self.msg = where, msg


class LimitExceeded(CheckError):
    """A stated size or time limit was reached; nothing was decided."""

    exit_code = LIMIT


class Unsupported(CheckError):
    """A construct the semantics does not cover (the claim cannot be checked)."""


class Rejected(CheckError):
    """A claim that does not hold (or cannot be re-derived); carries the reason."""


def fail_if(bad, exc: type, *args) -> None:
    """Raise ``exc(*args)`` if ``bad``."""
    if bad:
        raise exc(*args)


def field(obj: Any, key: str, kind, where: str) -> Any:
    """``obj[key]``, which must exist and be a ``kind``; else ``Malformed``."""
    if not isinstance(obj, dict) or key not in obj or not isinstance(obj[key], kind):
        raise Malformed(where, f"missing or mistyped field '{key}'")
    return obj[key]
