"""The table format: CSV or Parquet, one row per retrieved chunk, per-query columns repeated.

Rows are grouped by query_id (queries come out in order of first appearance), so the whole file
is held in memory; docs/formats.md tells users with millions of rows to prefer native JSONL.
"""

from __future__ import annotations

import csv
import datetime as dt
import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import (
    display_path,
    finite_number,
    first_line,
    merge_info,
    read_sidecar,
    type_name,
    unknown_key,
)
from rageval_core.formats.fields import (
    Check,
    optional_text,
    parse_counts,
    parse_evidence,
    parse_numbers,
    parse_relevance,
    parse_tags,
    quoted,
)
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.formats.jsonarray import loads  # deep nesting is a JSON error

FORMAT = "table"
PRIMARY = "run"
COMPANION: str | None = None
COMPANION_REQUIRED = False

PARQUET_MAGIC = b"PAR1"
_BOM = b"\xef\xbb\xbf"
_REQUIRED = ("query_id", "doc_id")
_ROW_COLUMNS = frozenset({"query_id", "doc_id", "rank", "text", "score"})
_QUERY_COLUMNS = frozenset(
    {"query", "relevant_ids", "relevance", "evidence", "answer", "reference_answer"}
)
_ROW_PREFIXES = ("metadata.",)
_QUERY_PREFIXES = ("latency_ms.", "tokens.", "tag.", "judge.")
#: chunk texts can exceed the csv module's default 128 KiB cell limit
_CELL_LIMIT = 64 * 1024 * 1024


def sniff(path: Path, head: bytes) -> str | None:
    """PRIMARY for Parquet (magic bytes) or a CSV whose header row names query_id and doc_id."""
    if head.startswith(PARQUET_MAGIC):
        return PRIMARY
    text = head.removeprefix(_BOM).decode("utf-8", errors="replace")
    try:
        names = {name.strip() for name in next(csv.reader([first_line(text)]), [])}
    except csv.Error:
        return None
    return PRIMARY if set(_REQUIRED) <= names else None


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    """Read a CSV or Parquet run; the rows are read (and grouped) when the queries are iterated."""
    shown = display_path(primary)
    with primary.open("rb") as fh:
        magic = fh.read(len(PARQUET_MAGIC))
    rows = (
        _parquet_rows(primary, shown, log)
        if magic == PARQUET_MAGIC
        else _csv_rows(primary, shown, log)
    )
    info = merge_info(RunInfo(), read_sidecar(primary, log))
    return ParsedRun(
        info, _queries(rows, shown, log, is_csv=magic != PARQUET_MAGIC), FORMAT, (shown,)
    )


def read_arrow(table: Any, log: ProblemLog, label: str = "table") -> ParsedRun:
    """A table already in memory (a pyarrow Table; the API turns a DataFrame into one), read as
    a Parquet file of the same rows would be: problems at label:row."""
    import pyarrow as pa

    if not isinstance(table, pa.Table):
        raise TypeError(f"expected a pyarrow Table, got {type(table).__name__}")

    def rows() -> Iterator[Columns | Row]:
        yield 0, list(table.schema.names)
        yield from enumerate(_without_decimals(table).to_pylist(), 1)

    return ParsedRun(RunInfo(), _queries(rows(), label, log, is_csv=False), FORMAT, (label,))


# --- rows ---------------------------------------------------------------------------------------

#: what a row source yields first: the column names, at line 1 (CSV) or 0 (Parquet schema)
Columns = tuple[int, list[str]]
Row = tuple[int, dict[str, Any]]


def _csv_rows(path: Path, shown: str, log: ProblemLog) -> Iterator[Columns | Row]:
    """The header, then (file line where the record starts, {column: cell or None when blank})."""
    csv.field_size_limit(max(csv.field_size_limit(), _CELL_LIMIT))
    with path.open("r", encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        header: list[str] | None = None
        start = 1
        try:
            for record in reader:
                line, start = start, reader.line_num + 1
                if not record or (len(record) == 1 and not record[0].strip()):
                    continue
                if header is None:
                    header = [name.strip() for name in record]
                    yield line, header
                    continue
                if len(record) != len(header):
                    log.error(
                        shown, line, "file", f"expected {len(header)} cells, got {len(record)}"
                    )
                    continue
                yield (
                    line,
                    {
                        name: cell if cell.strip() else None
                        for name, cell in zip(header, record, strict=True)
                    },
                )
        except UnicodeDecodeError:
            log.error(shown, start, "file", "invalid UTF-8")
        except csv.Error as e:
            log.error(shown, start, "file", f"not valid CSV: {e}")
        if header is None:
            log.error(shown, 0, "file", "empty file")


def _parquet_rows(path: Path, shown: str, log: ProblemLog) -> Iterator[Columns | Row]:
    """The schema's names, then (1-based data row, {column: value}) batch by batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        yield 0, list(pf.schema_arrow.names)
        n = 0
        for batch in pf.iter_batches(batch_size=16_384):
            try:
                records = _without_decimals(batch).to_pylist()
            except UnicodeDecodeError:  # Parquet does not promise valid UTF-8 in a string column
                row, column = _invalid_utf8(batch)
                log.error(shown, n + row, column, "text is not valid UTF-8")
                return
            for record in records:
                n += 1
                yield n, record
    except UnicodeDecodeError:  # the schema's names (the values are caught above)
        log.error(shown, 0, "file", "not a readable Parquet file: a column name is not valid UTF-8")
    except (pa.ArrowException, OSError) as e:
        log.error(shown, 0, "file", f"not a readable Parquet file: {e}")


def _without_decimals(batch: Any) -> Any:
    """batch (a RecordBatch or Table) with its Decimal columns as numbers, as a CSV gives them:
    integers when the scale is 0 and the values fit 64 bits, floats otherwise. (A Decimal is no
    JSON number: it would fail where the run is stored.)"""
    import pyarrow as pa

    columns = list(batch.columns)
    changed = False
    for i, column in enumerate(columns):
        kind = column.type
        if not pa.types.is_decimal(kind):
            continue
        changed = True
        try:
            columns[i] = column.cast(pa.int64() if kind.scale <= 0 else pa.float64())
        except pa.ArrowInvalid:  # an integer beyond 64 bits: a float, checked by the validators
            columns[i] = column.cast(pa.float64(), safe=False)
    if not changed:
        return batch
    return type(batch).from_arrays(columns, names=batch.schema.names)


def _invalid_utf8(batch: Any) -> tuple[int, str]:
    """(1-based row in the batch, column) of the first value that is not valid UTF-8."""
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        try:
            column.to_pylist()
        except UnicodeDecodeError:
            for i in range(len(column)):
                try:
                    column[i].as_py()
                except UnicodeDecodeError:
                    return i + 1, name
    return 1, "file"


# --- grouping -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Group:
    """The rows of one query seen so far."""

    line: int
    ok: bool = True
    chunks: list[tuple[int | None, int, Chunk]] = field(default_factory=list)  # (rank, line, chunk)
    cells: dict[str, tuple[Any, int]] = field(
        default_factory=dict
    )  # per-query column -> (value, line)


def _queries(
    rows: Iterator[Columns | Row], shown: str, log: ProblemLog, *, is_csv: bool
) -> Iterator[Query]:
    """Group the rows per query, check them, and yield one Query per query_id."""
    first = next(rows, None)
    if first is None:
        return
    header_line, names = first
    assert isinstance(names, list)
    if not _check_columns(names, shown, header_line, log):
        return
    has_rank = "rank" in names
    query_cols = [n for n in names if n in _QUERY_COLUMNS or n.startswith(_QUERY_PREFIXES)]
    meta_cols = [n for n in names if n.startswith(_ROW_PREFIXES)]
    groups: dict[str, _Group] = {}
    for line, row in rows:
        assert isinstance(row, dict)
        check = Check(shown, line, log)
        query_id = _identifier(row.get("query_id"), "query_id", check)
        doc_id = _identifier(row.get("doc_id"), "doc_id", check)
        if query_id is None:
            continue
        group = groups.setdefault(query_id, _Group(line))
        rank = _rank(row.get("rank"), check) if has_rank else None
        score = _number(row.get("score"), is_csv)
        if score is not None and finite_number(score) is None:
            check.error("score", f"expected a finite number, got {_cell(score)}")
        metadata: dict[str, Any] = {}
        for col in meta_cols:
            value = _metadata_value(row[col])
            if isinstance(value, float) and not math.isfinite(value):
                check.error(col, f"expected a finite number, got {_cell(value)}")
            elif value is not None and not isinstance(value, (str, int, float)):
                check.error(col, f"expected a string, number or boolean, got {type_name(value)}")
            elif value is not None:
                metadata[col.removeprefix("metadata.")] = value
        text = optional_text(row.get("text"), "text", check)
        for col in query_cols:
            value = row[col]
            if value is None:
                continue  # a blank cell never disagrees
            seen = group.cells.setdefault(col, (value, line))
            if not _same(seen[0], value):
                check.error(col, f"disagrees with line {seen[1]} of query {quoted(query_id)}")
        if doc_id is not None and check.ok:
            chunk = Chunk(doc_id=doc_id, text=text, score=finite_number(score), metadata=metadata)
            group.chunks.append((rank, line, chunk))
        group.ok = group.ok and check.ok
    if not groups:
        log.error(shown, 0, "file", "no rows")
        return
    for query_id, group in groups.items():
        q = _query(query_id, group, has_rank, shown, log, is_csv)
        if q is not None and not (log.full and log.errors):
            yield q


def _check_columns(names: list[str], shown: str, line: int, log: ProblemLog) -> bool:
    """Report missing, duplicate and unknown columns; False when the file cannot be read."""
    ok = True
    for name in _REQUIRED:
        if name not in names:
            log.error(shown, line, name, "missing column")
            ok = False
    seen: set[str] = set()
    for number, name in enumerate(names, start=1):
        # a blank header cell still needs a name in the message
        field = name if name.strip() else f"column {number} (no name)"
        if name in seen:
            log.error(shown, line, field, "column given twice")
            ok = False
        seen.add(name)
        prefixed = name.startswith(_ROW_PREFIXES + _QUERY_PREFIXES)
        if prefixed and name.endswith("."):
            log.error(shown, line, field, "column name needs a key after the dot")
            ok = False
        elif not prefixed and name not in _ROW_COLUMNS and name not in _QUERY_COLUMNS:
            log.warn(
                shown, line, field, unknown_key(name, _ROW_COLUMNS | _QUERY_COLUMNS, what="column")
            )
    return ok


def _query(
    query_id: str, group: _Group, has_rank: bool, shown: str, log: ProblemLog, is_csv: bool
) -> Query | None:
    """The group's Query: chunks in rank order, per-query cells checked where they were read."""
    ok = group.ok
    chunks = group.chunks
    if has_rank:
        chunks = sorted(chunks, key=lambda c: (c[0] or 0, c[1]))
        for (rank_a, line_a, _), (rank_b, line_b, _) in itertools.pairwise(chunks):
            if rank_a == rank_b:
                log.error(
                    shown,
                    max(line_a, line_b),
                    "rank",
                    (
                        f"rank {rank_a} used twice in query {quoted(query_id)} (also on line {min(line_a, line_b)})"
                    ),
                )
                ok = False
    values: dict[str, Any] = {}
    latency: dict[str, float] = {}
    tokens: dict[str, int] = {}
    tags: dict[str, str] = {}
    judge: dict[str, float] = {}
    from_ids: dict[str, float] | None = None
    from_labels: dict[str, float] | None = None
    for col, (raw, line) in group.cells.items():
        check = Check(shown, line, log)
        stem, _, key = col.partition(".")
        if col in ("query", "answer", "reference_answer"):
            values[col] = optional_text(raw, col, check)
        elif col == "evidence":
            values[col] = parse_evidence(_evidence(raw), col, check)
        elif col == "relevant_ids":
            from_ids = parse_relevance(_id_list(raw, check), None, check)
        elif col == "relevance":
            from_labels = parse_relevance(None, _json_cell(raw, col, check), check)
        elif stem == "latency_ms":
            latency |= parse_numbers({key: _number(raw, is_csv)}, stem, check, non_negative=True)
        elif stem == "judge":
            judge |= parse_numbers({key: _number(raw, is_csv)}, stem, check, non_negative=False)
        elif stem == "tokens":
            tokens |= parse_counts({key: _integer(raw, is_csv)}, stem, check)
        elif stem == "tag":
            tags |= parse_tags({key: raw}, stem, check)
        ok = ok and check.ok
    if not ok:
        return None
    # as in the native format: relevant_ids give label 1, relevance wins for an id in both
    relevance = (
        None
        if from_ids is None and from_labels is None
        else {**(from_ids or {}), **(from_labels or {})}
    )
    return Query(
        query_id=query_id,
        retrieved=tuple(c for _, _, c in chunks),
        query=values.get("query"),
        relevance=relevance,
        evidence=values.get("evidence", ()),
        answer=values.get("answer"),
        reference_answer=values.get("reference_answer"),
        latency_ms=latency,
        tokens=tokens,
        tags=tags,
        judge=judge,
        line=group.line,
    )


# --- cells ----------------------------------------------------------------------------------------


def _identifier(value: Any, col: str, check: Check) -> str | None:
    """A non-empty string id; Parquet integer ids become strings (a typed column cannot mix 1 and "01")."""
    if value is None:
        check.error(col, "missing")
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        check.error(col, f"expected a string, got {type_name(value)}")
        return None
    return value


def _rank(value: Any, check: Check) -> int | None:
    rank = _integer(value, True)
    if value is None:
        check.error("rank", "missing (the file has a rank column)")
    elif isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        check.error("rank", f"expected an integer >= 1, got {_cell(value)}")
    else:
        return rank
    return None


def _number(value: Any, is_csv: bool) -> Any:
    """A CSV cell parsed as a number when it is one; other values unchanged for the validators."""
    if is_csv and isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    return value


def _integer(value: Any, is_csv: bool) -> Any:
    """A CSV cell (or integral Parquet float, as pandas writes int columns with gaps) as an int."""
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _id_list(value: Any, check: Check) -> Any:
    """relevant_ids: a list (Parquet), a JSON list, or |-separated ids."""
    if isinstance(value, str):
        if value.lstrip().startswith("["):
            return _json_cell(value, "relevant_ids", check)
        return [part.strip() for part in value.split("|") if part.strip()]
    return value


def _evidence(value: Any) -> Any:
    """A JSON list of spans when the cell is one; otherwise the cell is a single span."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = loads(value)
        except json.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, list) else value
    return value


def _json_cell(value: Any, col: str, check: Check) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return loads(value)
    except json.JSONDecodeError as e:
        check.error(col, f"not valid JSON: {e.msg} (column {e.colno})")
        return None


def _metadata_value(value: Any) -> Any:
    """Parquet dates and times as ISO 8601 text, so metadata stays plain JSON."""
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return value


def _same(a: Any, b: Any) -> bool:
    nan = isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    return nan or a == b


def _cell(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
