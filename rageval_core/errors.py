"""Errors rageval raises. Every problem with a user's file names its place: file:line: field: problem."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]

_ONE_LINE = {ord("\n"): "\\n", ord("\r"): "\\r"}

#: How many problems an import collects before it stops reading (the rest are summarised).
MAX_PROBLEMS = 50


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem found in an input file, at a line (1-based; 0 = the file as a whole)."""

    file: str
    line: int
    field: str
    problem: str
    severity: Severity = "error"

    def __str__(self) -> str:
        # one problem, one line: a line break inside a quoted key or value is shown escaped
        text = f"{self.file}:{self.line}: {self.field}: {self.problem}".translate(_ONE_LINE)
        return text if self.severity == "error" else f"{text} (warning)"


#: the CLI's exit codes, as `rageval --help` and the README say them
EXIT_CODES = (
    "exit codes: 0 ok; 1 a gate rule failed; 2 bad input or usage; 3 store unavailable (in use, "
    "corrupt, unwritable); 4 the judge (or collect's retrieval endpoint) got no answer; "
    "130 interrupted (nothing stored); 141 output pipe closed"
)


class RagevalError(Exception):
    """Base of every error rageval raises on purpose; the CLI prints it without a traceback."""

    exit_code = 2


class InputError(RagevalError):
    """One or more input files are invalid; carries every problem found (capped)."""

    exit_code = 2

    def __init__(self, problems: list[Problem], truncated: int = 0) -> None:
        self.problems = list(problems)
        self.truncated = truncated
        lines = [str(p) for p in self.problems]
        if truncated:
            lines.append(f"... and {truncated} more problems")
        super().__init__("\n".join(lines) if lines else "invalid input")


class UsageError(RagevalError):
    """A bad argument: unknown format, unknown run, unknown metric ..."""

    exit_code = 2


class NotFoundError(UsageError):
    """A run (or other named thing) is not in the store."""


class StoreError(RagevalError):
    """The DuckDB store is unavailable (in use, corrupt, unwritable, a migration failed ...)."""

    exit_code = 3


class StoreCorruptError(StoreError):
    """The store file is damaged: DuckDB cannot read it."""


class ProblemLog:
    """Collects problems while a file is read; raise_if_errors() turns errors into an InputError."""

    def __init__(self, cap: int = MAX_PROBLEMS) -> None:
        self.cap = cap
        self.problems: list[Problem] = []
        self.dropped = 0
        self.dropped_errors = 0

    def error(self, file: str, line: int, field: str, problem: str) -> None:
        self._add(Problem(file, line, field, problem, "error"))

    def warn(self, file: str, line: int, field: str, problem: str) -> None:
        self._add(Problem(file, line, field, problem, "warning"))

    def clear(self) -> None:
        """Forget every problem (between the runs of one import, which share a log)."""
        self.problems.clear()
        self.dropped = self.dropped_errors = 0

    def _add(self, p: Problem) -> None:
        if len(self.problems) < self.cap:
            self.problems.append(p)
        else:
            self.dropped += 1
            self.dropped_errors += p.severity == "error"

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def full(self) -> bool:
        """True once the cap is reached: readers may stop early."""
        return len(self.problems) >= self.cap

    def raise_if_errors(self) -> None:
        if self.errors or self.dropped_errors:
            raise InputError(self.problems, self.dropped)
