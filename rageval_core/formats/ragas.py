"""RAGAS-style rows: user_input, retrieved_contexts, reference_contexts, response, reference.

One row per query, as JSON Lines (streamed), a JSON array (loaded whole) or CSV (streamed; list
columns hold a JSON list or a Python-literal list, the way pandas writes them). Contexts carry
no ids unless the newer retrieved_context_ids / reference_context_ids columns are present; without
them chunk ids are synthetic (ctx1, ctx2 ... by rank), so id-based metrics need those columns
and evidence metrics (reference_contexts matched against chunk texts) do not.
Numeric columns beyond these (a RAGAS result table's context_precision, faithfulness ...)
become judge scores.
"""

from __future__ import annotations

import ast
import csv
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import (
    HEADER_KEY,
    display_path,
    first_line,
    merge_info,
    read_sidecar,
    unreadable,
)
from rageval_core.formats.safejson import unsound
from rageval_core.formats.jsonarray import (
    KeyWarner,
    describe,
    first_record,
    id_text,
    iter_array,
    iter_lines,
    loads,
    read_text,
    string_list,
    subfield,
    UnsoundJSON,
)
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo

FORMAT = "ragas"
PRIMARY = "rows"
COMPANION = None
COMPANION_REQUIRED = False

_ID_KEYS = ("query_id", "id")
_KNOWN = frozenset(
    {
        "user_input",
        "retrieved_contexts",
        "retrieved_context_ids",
        "reference_contexts",
        "reference_context_ids",
        "response",
        "reference",
        *_ID_KEYS,
    }
)
#: Columns pandas adds for the index when a frame is written with to_csv(index=True).
_INDEX_COLUMNS = {"", "Unnamed: 0"}
#: Contexts can be long: allow CSV cells far above the csv module's default 128 KiB.
_CSV_FIELD_LIMIT = 2**31 - 1


def sniff(path: Path, head: bytes) -> str | None:
    """PRIMARY when the first row (JSON) or the CSV header names user_input."""
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff").lstrip()
    if not text:
        return None
    if text[0] in "[{":
        record = first_record(head)
        if not isinstance(record, Mapping):
            return None
        if HEADER_KEY in record or ("query_id" in record and "retrieved" in record):
            return None  # native
        return PRIMARY if "user_input" in record else None
    try:
        header = next(csv.reader([first_line(text)]))
    except (csv.Error, StopIteration):
        return None
    return PRIMARY if "user_input" in (cell.strip() for cell in header) else None


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    """The rows of primary as queries (a lazy stream for JSON Lines and CSV)."""
    file = display_path(primary)
    info = merge_info(RunInfo(), read_sidecar(primary, log))
    return ParsedRun(info, _queries(primary, file, log), FORMAT, (file,))


def _queries(path: Path, file: str, log: ProblemLog) -> Iterator[Query]:
    first = _first_char(path, file, log)
    if first is None:
        return
    rows = _RowParser(file, log, from_csv=first not in "[{")
    seen: dict[str, int] = {}
    try:
        for number, (line, record) in enumerate(_records(path, file, log, first), start=1):
            query = rows.parse(record, number, line)
            if query is None:
                continue
            if query.query_id in seen:
                log.error(
                    file,
                    line,
                    rows.id_field(record),
                    f'duplicate "{query.query_id}" (first on line {seen[query.query_id]})',
                )
                continue
            seen[query.query_id] = line
            yield query
    except UnicodeDecodeError as e:
        log.error(file, 0, "file", f"not valid UTF-8 (byte {e.start} of a block)")


def _first_char(path: Path, file: str, log: ProblemLog) -> str | None:
    """The first non-blank character, which tells JSON from CSV; None (logged) when unusable."""
    try:
        with path.open(encoding="utf-8-sig") as fh:
            while chunk := fh.read(65536):
                if chunk.strip():
                    return chunk.lstrip()[0]
    except (OSError, UnicodeDecodeError) as e:
        log.error(file, 0, "file", unreadable(e))
        return None
    log.error(file, 0, "file", "empty file")
    return None


def _records(path: Path, file: str, log: ProblemLog, first: str) -> Iterator[tuple[int, Any]]:
    if first == "[":
        text = read_text(path, file, log)
        if text is not None:
            yield from iter_array(text, file, log)
        return
    with path.open(encoding="utf-8-sig", newline="") as fh:
        if first == "{":
            yield from iter_lines(fh, file, log)
        else:
            yield from _csv_rows(fh, file, log)


def _csv_rows(fh: Any, file: str, log: ProblemLog) -> Iterator[tuple[int, dict[str, str]]]:
    """(line where the row starts, {column: cell}) with blank cells left out."""
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    reader = csv.reader(fh)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        return
    except csv.Error as e:
        log.error(file, 1, "csv", str(e))
        return
    duplicates = sorted({h for h in header if header.count(h) > 1 and h not in _INDEX_COLUMNS})
    if duplicates:
        log.error(file, 1, duplicates[0], "column appears more than once")
        return
    if "user_input" not in header:
        log.error(file, 1, "user_input", "missing column")
        return
    previous = reader.line_num
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            log.error(file, previous + 1, "csv", str(e))
            return
        start, previous = previous + 1, reader.line_num
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            log.error(file, start, "row", f"expected {len(header)} cells, got {len(cells)}")
            continue
        yield (
            start,
            {
                h: c
                for h, c in zip(header, cells, strict=True)
                if h not in _INDEX_COLUMNS and c.strip()
            },
        )


class _RowParser:
    """Turns one row (typed JSON values, or CSV text cells) into a Query, logging problems."""

    def __init__(self, file: str, log: ProblemLog, from_csv: bool) -> None:
        self.file = file
        self.log = log
        self.from_csv = from_csv
        self.keys = KeyWarner(file, log)
        self.bad_judge: set[str] = set()
        self.line = 0  # of the row being parsed
        self.ok = True  # no error in the row being parsed

    @staticmethod
    def id_field(record: Any) -> str:
        if isinstance(record, Mapping):
            for key in _ID_KEYS:
                if record.get(key) is not None:
                    return key
        return "query_id"

    def parse(self, record: Any, number: int, line: int) -> Query | None:
        if not isinstance(record, Mapping):
            self.log.error(self.file, line, "row", f"expected an object, got {describe(record)}")
            return None
        self.line = line
        self.ok = True
        user_input = record.get("user_input")
        if not isinstance(user_input, str) or not user_input.strip():
            problem = (
                "required"
                if user_input is None
                else (f"expected a non-empty string, got {describe(user_input)}")
            )
            self._error("user_input", problem)
        query_id = f"q{number}"
        key = self.id_field(record)
        if record.get(key) is not None:
            query_id = id_text(record[key]) or ""
            if not query_id:
                self._error(
                    key, f"expected a non-empty string or an integer, got {describe(record[key])}"
                )
        contexts = self._list(record, "retrieved_contexts", ids=False)
        ids = self._list(record, "retrieved_context_ids", ids=True)
        chunks: tuple[Chunk, ...] = ()
        if contexts is None and ids is None:
            given = (record.get(k) for k in ("retrieved_contexts", "retrieved_context_ids"))
            if all(v is None for v in given):
                self._error("retrieved_contexts", "required (or retrieved_context_ids)")
        elif contexts is not None and ids is not None and len(contexts) != len(ids):
            self._error(
                "retrieved_context_ids", f"{len(ids)} ids for {len(contexts)} retrieved_contexts"
            )
        else:
            n = len(ids if ids is not None else contexts or [])
            chunks = tuple(
                Chunk(
                    doc_id=ids[i] if ids is not None else f"ctx{i + 1}",
                    text=contexts[i] if contexts is not None else None,
                )
                for i in range(n)
            )
        evidence = self._list(record, "reference_contexts", ids=False) or []
        if any(not span.strip() for span in evidence):
            self._error("reference_contexts", "expected non-empty strings")
        relevant = self._list(record, "reference_context_ids", ids=True)
        answer = self._text(record, "response")
        reference = self._text(record, "reference")
        judge = {}
        for name, value in record.items():
            if name in _KNOWN:
                continue
            score = self._number(value)
            if score is None:
                self.keys.unknown(line, name, _KNOWN)
            elif math.isfinite(score):
                judge[name] = score
            elif name not in self.bad_judge:  # a RAGAS metric that failed is written as NaN
                self.bad_judge.add(name)
                self.log.warn(
                    self.file, line, name, f"{describe(score)} score ignored (and in any later row)"
                )
        if not self.ok:
            return None
        return Query(
            query_id=query_id,
            retrieved=chunks,
            query=user_input,
            relevance=None if relevant is None else dict.fromkeys(relevant, 1),
            evidence=tuple(evidence),
            answer=answer,
            reference_answer=reference,
            judge=judge,
            line=line,
        )

    def _error(self, field: str, problem: str) -> None:
        self.log.error(self.file, self.line, field, problem)
        self.ok = False

    def _list(self, record: Mapping[str, Any], key: str, ids: bool) -> list[str] | None:
        value = record.get(key)
        if value is None:
            return None
        if self.from_csv:
            parsed = _parse_list_cell(value)
            if isinstance(parsed, tuple):
                self._error(subfield(key, parsed[0]), parsed[1])
                return None
            value = parsed
        return string_list(value, key, ids, self._error)

    def _text(self, record: Mapping[str, Any], key: str) -> str | None:
        value = record.get(key)
        if value is None or isinstance(value, str):
            return value
        self._error(key, f"expected a string, got {describe(value)}")
        return None

    def _number(self, value: Any) -> float | None:
        if self.from_csv:
            try:
                return float(value)
            except ValueError:
                return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)


def _parse_list_cell(cell: str) -> list[Any] | tuple[str, str]:
    """A CSV cell holding a list: JSON first, then a Python literal (never eval); or (field in
    the cell, problem) when it holds none, or a lone surrogate or too long integer."""
    not_a_list = ("json", "expected a JSON list or a Python list literal")
    try:
        value = loads(cell, strict=False)  # strict=False: a raw newline inside a string
    except UnsoundJSON as e:
        return e.field, e.msg
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(cell.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return not_a_list
        found = unsound(value)  # a Python literal spells a lone surrogate too: '\ud800'
        if found is not None:
            return found
    if isinstance(value, tuple):
        value = list(value)
    return value if isinstance(value, list) else not_a_list
