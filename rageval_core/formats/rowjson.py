"""What the one-record-per-query JSON readers (deepeval, llamaindex) share: the records of a JSON
array or JSON Lines file, and the checks of their string and list fields."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import display_path, finite_number, merge_info, read_sidecar
from rageval_core.formats.jsonarray import (
    KeyWarner,
    describe,
    id_text,
    iter_records,
    read_text,
    string_list,
    times_text,
)
from rageval_core.model import ParsedRun, Query, RunInfo


class Fields:
    """Typed access to one record's fields; each problem is logged and marks the record bad."""

    def __init__(
        self,
        record: Mapping[str, Any],
        file: str,
        line: int,
        log: ProblemLog,
        warner: KeyWarner | None = None,
    ) -> None:
        self.record = record
        self.file = file
        self.line = line
        self.log = log
        self.ok = True
        self.warner = warner or KeyWarner(file, log)

    def error(self, field: str, problem: str) -> None:
        self.log.error(self.file, self.line, field, problem)
        self.ok = False

    def ignored(self, field: str, problem: str, kind: str = "") -> None:
        """A warning that the value at field is left out (once per field and kind per file, with
        how many times it came); the record itself is good."""
        self.warner.repeated(
            self.line, field, lambda times: f"{problem}; ignored{times_text(times)}", kind
        )

    def score(self, field: str, value: Any, what: str) -> float | None:
        """value as a judge score; one that is not a finite number (NaN, Infinity, null, a
        string, a boolean) is warned about at field and left out (None)."""
        score = finite_number(value)
        if score is None:
            shown = describe(value)
            self.ignored(field, f"expected a finite number ({what}), got {shown}", shown)
        return score

    def key(self, *names: str) -> str | None:
        """The first of names the record has (spellings of one field: snake_case, camelCase)."""
        return next((n for n in names if self.record.get(n) is not None), None)

    def text(self, *names: str, required: bool = False) -> str | None:
        key = self.key(*names)
        if key is None:
            if required:
                self.error(names[0], "required")
            return None
        value = self.record[key]
        if not isinstance(value, str) or (required and not value.strip()):
            self.error(
                key, f"expected a {'non-empty ' if required else ''}string, got {describe(value)}"
            )
            return None
        return value

    def strings(self, *names: str, ids: bool = False) -> list[str] | None:
        """A list of strings (ids: of non-empty strings or integers); None when absent or bad."""
        key = self.key(*names)
        if key is None:
            return None
        return string_list(self.record[key], key, ids, self.error)

    def query_id(self, number: int, *names: str) -> str:
        """The record's id (the first of names it has), else q<number> (1-based position)."""
        key = self.key(*names)
        if key is None:
            return f"q{number}"
        query_id = id_text(self.record[key])
        if query_id is None:
            self.error(
                key, f"expected a non-empty string or an integer, got {describe(self.record[key])}"
            )
            return ""
        return query_id


def read_rows(
    primary: Path,
    log: ProblemLog,
    format: str,
    parse: Callable[[Fields, int], Query | None],
    id_field: str,
) -> ParsedRun:
    """One query per record of primary (a JSON array, JSON Lines, or an object with a list under
    "test_cases" or "goldens"); a query id given twice is an error on the second record."""
    file = display_path(primary)
    info = merge_info(RunInfo(), read_sidecar(primary, log))
    return ParsedRun(info, _queries(primary, file, log, parse, id_field), format, (file,))


def _queries(
    path: Path,
    file: str,
    log: ProblemLog,
    parse: Callable[[Fields, int], Query | None],
    id_field: str,
) -> Iterator[Query]:
    text = read_text(path, file, log)
    if text is None:
        return
    seen: dict[str, int] = {}
    number = 0
    warner = KeyWarner(file, log)
    for line, record in _records(text, file, log):
        number += 1
        if not isinstance(record, Mapping):
            log.error(file, line, "record", f"expected an object, got {describe(record)}")
            continue
        fields = Fields(record, file, line, log, warner)
        query = parse(fields, number)
        if query is None or not fields.ok:
            continue
        if query.query_id in seen:
            log.error(
                file,
                line,
                id_field,
                f'duplicate "{query.query_id}" (first on line {seen[query.query_id]})',
            )
            continue
        seen[query.query_id] = line
        yield query


def _records(text: str, file: str, log: ProblemLog) -> Iterator[tuple[int, Any]]:
    """The records; a lone object holding a list of them ({"test_cases": [...]}) is unwrapped."""
    for line, record in iter_records(text, file, log):
        if isinstance(record, Mapping):
            inner = next((record[k] for k in WRAPPERS if isinstance(record.get(k), list)), None)
            if inner is not None:
                for item in inner:  # lines of a wrapped list are not known: the object's line
                    yield line, item
                continue
        yield line, record


#: keys under which DeepEval's files keep their list of test cases or goldens
WRAPPERS = ("test_cases", "testCases", "goldens")
