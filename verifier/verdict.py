"""The three verdicts of ``pvcert verify`` and ``pvcert kernels`` (docs/exit-codes.md).

* VERIFIED (exit 0): proved; the certificate replays.
* REFUTED (exit 1): a counterexample that was executed: concrete inputs satisfying the input
  relation on which both programs were run and an expected output differs (values shown).
* UNKNOWN (exit 4): neither a proof nor a counterexample; says what was tried and what would help.

Incompleteness is never reported as a bug, and never as a proof.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from certificates.errors import CheckError

VERIFIED, REFUTED, UNKNOWN = "VERIFIED", "REFUTED", "UNKNOWN"
EXIT = {VERIFIED: 0, REFUTED: 1, UNKNOWN: 4}


class Undecided(CheckError):
    """The engine cannot decide the case as stated (e.g. spec inputs without a relation)."""

    exit_code = EXIT[UNKNOWN]

    def __init__(self, where: str, msg: str) -> None:
        super().__init__(f"{where}: {msg}")


@dataclass(frozen=True)
class Counterexample:
    """An executed counterexample: random inputs (seed) satisfying the input relation, both
    graphs evaluated, and the first element of an expected output that differs."""

    seed: int
    inputs: dict[str, str]        # spec input -> its values, shortened
    output: str                   # the spec output
    expr: str                     # the expected impl expression
    index: tuple[int, ...]
    want: float                   # the spec's value at ``index``
    got: float                    # the impl expression's value there
    differ: int                   # elements that differ, of ...
    size: int
    scale: float = 1.0            # the float inputs' magnitude (``direct.numeric_values``)

    def __str__(self) -> str:
        return (f"{self.output}{list(self.index)} = {self.want:.6g} but {self.expr}{list(self.index)} = "
                f"{self.got:.6g} on random inputs (seed {self.seed}{self._scaled}); {self.differ} of {self.size} elements differ")

    @property
    def _scaled(self) -> str:
        return "" if self.scale == 1 else f", floats scaled by {self.scale:g}"

    def lines(self) -> list[str]:
        shown = list(self.inputs.items())[:6]
        more = len(self.inputs) - len(shown)
        return ([f"  counterexample (executed): {self}",
                 "  spec inputs (the impl's are built from them by the input relation):"]
                + [f"    {k} = {v}" for k, v in shown] + ([f"    ... {more} more"] if more > 0 else []))


@dataclass
class Verdict:
    """One verdict with what a user needs to act on it."""

    word: str                     # VERIFIED, REFUTED or UNKNOWN
    name: str                     # the case or pair
    reason: str = ""              # what was proved, refuted, or (UNKNOWN) what was tried
    help: list[str] = field(default_factory=list)       # UNKNOWN: what would help
    evidence: list[str] = field(default_factory=list)   # REFUTED: the executed counterexample

    def __post_init__(self) -> None:
        if self.word == REFUTED and not self.evidence:
            raise ValueError("REFUTED needs an executed counterexample")

    @property
    def exit_code(self) -> int:
        return EXIT[self.word]

    def lines(self, seconds: float | None = None) -> list[str]:
        took = f" ({seconds:.2f} s)" if seconds is not None else ""
        return self.evidence + [f"  what would help: {h}" for h in self.help] + [
            f"{self.word} {self.name}{': ' + self.reason if self.reason else ''}{took}"]


def unknown_help(spec_outputs: list[str], expected: set[str], other_engine: str) -> list[str]:
    """What would let a later run decide a case that is neither proved nor refuted."""
    unstated = [t for t in spec_outputs if t not in expected]
    return ([f"an expectation for {', '.join(unstated[:8])}{' ...' if len(unstated) > 8 else ''} "
             "(only expected outputs are searched for counterexamples)"] if unstated else []) + [
        "if the program is correct: a relation outside clean expressions (docs/clean-expressions.md), "
        f"{other_engine}, or a larger --timeout"]
