"""The native format: JSONL, one query per line (or one JSON array), optional header record.

The writer half (query_to_json / write_native) is what export and the demo generator use.
The validators of the optional fields, shared with table.py, are in fields.py.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from rageval_core.columns import BATCH_SCHEMAS, ColumnBatch, UseQueries, arrow_table, store_json
from rageval_core.errors import ProblemLog
from rageval_core.formats.base import (
    HEADER_KEY,
    display_path,
    finite_number,
    merge_info,
    non_finite_path,
    parse_run_info,
    read_sidecar,
    type_name,
    unknown_key,
)
from rageval_core.formats.fields import (
    Check,
    optional_text,
    parse_counts,
    parse_evidence,
    parse_judge,
    parse_labels,
    parse_numbers,
    parse_relevance,
    parse_tags,
    quoted,
    shown_value,
)
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo, info_to_json
from rageval_core.terminal import strict_json

# deep nesting, a lone surrogate, a huge integer: a JSON error, never a crash
from rageval_core.formats.jsonarray import DECODER as safe_json
from rageval_core.formats.jsonarray import UnsoundJSON, error_field

FORMAT = "native"


def query_to_json(q: Query) -> dict[str, Any]:
    """The native JSON object for q; empty optional fields are omitted (reading it back gives q)."""
    out: dict[str, Any] = {"query_id": q.query_id}
    if q.query is not None:
        out["query"] = q.query
    if q.retrieved is None:
        out["retrieved"] = None
    else:
        chunks = []
        for c in q.retrieved:
            chunk: dict[str, Any] = {"doc_id": c.doc_id}
            if c.text is not None:
                chunk["text"] = c.text
            if c.score is not None:
                chunk["score"] = c.score
            if c.metadata:
                chunk["metadata"] = dict(c.metadata)
            chunks.append(chunk)
        out["retrieved"] = chunks
    if q.relevance is not None:
        out["relevance"] = dict(q.relevance)
    if q.evidence:
        out["evidence"] = list(q.evidence)
    for key in ("answer", "reference_answer"):
        if getattr(q, key) is not None:
            out[key] = getattr(q, key)
    for key in ("latency_ms", "tokens", "tags", "judge", "labels"):
        if getattr(q, key):
            out[key] = dict(getattr(q, key))
    return out


def write_native(info: RunInfo, queries: Iterable[Query], out: Path | IO[str]) -> int:
    """Write a native JSONL run (header record first when info has facts); returns queries written."""
    if isinstance(out, Path):
        with out.open("w", encoding="utf-8") as fh:
            return write_native(info, queries, fh)
    header = info_to_json(info)
    if header:
        out.write(strict_json({HEADER_KEY: header}, ensure_ascii=False) + "\n")
    n = 0
    for q in queries:
        out.write(json.dumps(query_to_json(q), ensure_ascii=False, allow_nan=False) + "\n")
        n += 1
    return n


# --- the reader --------------------------------------------------------------------------------

PRIMARY = "run"
COMPANION: str | None = None
COMPANION_REQUIRED = False

_BOM = b"\xef\xbb\xbf"
#: the keys a native query record and one of its chunks may have
QUERY_KEYS = frozenset(
    {
        "query_id",
        "query",
        "retrieved",
        "relevant_ids",
        "relevance",
        "evidence",
        "answer",
        "reference_answer",
        "latency_ms",
        "tokens",
        "tags",
        "judge",
        "labels",
    }
)
CHUNK_KEYS = frozenset({"doc_id", "text", "score", "metadata"})
_WS = re.compile(r"[ \t\n\r]*")
#: stands in for a record that could not be decoded (already reported), so it still counts as one
_UNREADABLE = object()


def sniff(path: Path, head: bytes) -> str | None:
    """PRIMARY when head starts a native run (JSONL or a JSON array of query objects), else None."""
    text = head.removeprefix(_BOM).decode("utf-8", errors="replace").lstrip(" \t\r\n")
    if text.startswith("["):
        first = text[1:].lstrip(" \t\r\n")
        if not first.startswith("{"):
            return None
        try:
            obj, _ = safe_json.raw_decode(first)
        except json.JSONDecodeError:
            # cut by the head limit, or broken: fall back to the key names
            return PRIMARY if _names_native_keys(first.split("}", 1)[0]) else None
        return PRIMARY if _is_native_record(obj) else None
    if text.startswith("{"):
        line = text.split("\n", 1)[0]
        try:
            obj = safe_json.decode(line)
        except json.JSONDecodeError:
            return PRIMARY if _names_native_keys(line) else None
        return PRIMARY if _is_native_record(obj) else None
    return None


def _is_native_record(obj: Any) -> bool:
    return isinstance(obj, dict) and (HEADER_KEY in obj or {"query_id", "retrieved"} <= obj.keys())


def _names_native_keys(text: str) -> bool:
    return f'"{HEADER_KEY}"' in text or ('"query_id"' in text and '"retrieved"' in text)


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    """Read a native run: the header record eagerly, the queries as a lazy stream."""
    shown = display_path(primary)
    with primary.open("rb") as fh:
        first_byte, first_line = _first_content(fh)
    if first_byte is None:
        log.error(shown, 0, "file", "empty file")
        return ParsedRun(RunInfo(), iter(()), FORMAT, (shown,))
    expected = None
    if first_byte == b"[":
        records: Iterator[tuple[int, Any]] = _array_records(primary, shown, log)
        info, first = _take_header(records, shown, log)
        queries = _queries(itertools.chain(first, records), shown, log)
        # a JSON array is decoded whole anyway; it takes the query route
        columns = None
    else:
        header = _jsonl_header(primary, first_line, shown, log)
        info = header if header is not None else RunInfo()
        skip = first_line if header is not None else first_line - 1
        queries = _queries(_jsonl_records(primary, shown, log, skip), shown, log)
        columns = _jsonl_columns(primary, skip)
        # a large file DuckDB can vouch for is read by DuckDB; else by the column route above,
        # else (UseQueries) by the line reader
        from rageval_core.formats import native_duckdb  # here: the writer alone needs no DuckDB

        if primary.stat().st_size >= native_duckdb.MIN_FILE_BYTES:
            columns = native_duckdb.columns(primary, skip, header is not None, instead=columns)
            # only large files show a bar long enough to want a total
            expected = max(_count_lines(primary) - skip, 0)
    info = merge_info(info, read_sidecar(primary, log))
    return ParsedRun(info, queries, FORMAT, (shown,), columns, expected_queries=expected)


def read_records(records: Iterable[Any], log: ProblemLog, label: str = "records") -> ParsedRun:
    """Native records given as Python objects (a notebook's list of dicts): the checks a file
    gets, each problem placed at the record's position (1-based) under label. A first record
    {"rageval_run": {...}} is the header, as in a file. Each record is read as its JSON text
    would be (numpy scalars and arrays become numbers and lists; what JSON cannot hold, NaN
    included, is a problem at its record)."""
    numbered = _as_json(records, label, log)
    info, first = _take_header(numbered, label, log)
    return ParsedRun(info, _queries(itertools.chain(first, numbered), label, log), FORMAT, (label,))


def _as_json(records: Iterable[Any], label: str, log: ProblemLog) -> Iterator[tuple[int, Any]]:
    for i, record in enumerate(records, 1):
        try:
            yield i, safe_json.decode(json.dumps(record, default=_plain, allow_nan=False))
        except (TypeError, ValueError, RecursionError) as e:
            log.error(label, i, "record", f"not JSON data: {e}")
            yield i, _UNREADABLE


def _plain(value: Any) -> Any:
    """numpy values as JSON sees them (an array: a list); anything else cannot be written."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"a {type(value).__name__} is not JSON data")


def _count_lines(path: Path, block: int = 1 << 24) -> int:
    """Lines in a file (a last line without a newline counts): one pass of bytes.count, ~GB/s."""
    n, last = 0, b"\n"
    with path.open("rb") as fh:
        while chunk := fh.read(block):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def _first_content(fh: IO[bytes]) -> tuple[bytes | None, int]:
    """The first non-blank byte of the file and its 1-based line (None, 0 for a blank file)."""
    for lineno, raw in enumerate(fh, 1):
        stripped = (raw.removeprefix(_BOM) if lineno == 1 else raw).lstrip(b" \t\r\n")
        if stripped:
            return stripped[:1], lineno
    return None, 0


def _jsonl_header(path: Path, lineno: int, shown: str, log: ProblemLog) -> RunInfo | None:
    """Run facts from the record on line lineno when it is a header record, else None."""
    with path.open("rb") as fh:
        raw = next(itertools.islice(fh, lineno - 1, None))
    try:
        obj = safe_json.decode(raw.removeprefix(_BOM).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None  # reported when the stream reaches this line
    return _header_info(obj, shown, lineno, log)


def _header_info(obj: Any, shown: str, line: int, log: ProblemLog) -> RunInfo | None:
    if not (isinstance(obj, dict) and HEADER_KEY in obj):
        return None
    for key in obj:
        if key != HEADER_KEY:
            log.error(shown, line, key, f"a header record holds only {HEADER_KEY!r}")
    return parse_run_info(obj[HEADER_KEY], shown, line, log)


def _take_header(
    records: Iterator[tuple[int, Any]], shown: str, log: ProblemLog
) -> tuple[RunInfo, list[tuple[int, Any]]]:
    """Consume the array's first element: its run facts if it is a header, else put it back."""
    first = next(records, None)
    if first is None:
        return RunInfo(), []
    info = _header_info(first[1], shown, first[0], log)
    return (info, []) if info is not None else (RunInfo(), [first])


def _jsonl_records(path: Path, shown: str, log: ProblemLog, skip: int) -> Iterator[tuple[int, Any]]:
    """(line, decoded JSON) for each non-blank line after the first skip lines."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if lineno <= skip:
                continue
            if lineno == 1:
                raw = raw.removeprefix(_BOM)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                log.error(shown, lineno, "file", f"invalid UTF-8 at byte {e.start + 1} of the line")
                yield lineno, _UNREADABLE
                continue
            if not text.strip():
                continue
            try:
                # without the line break, a column in the message is a column of this line
                obj = safe_json.decode(text.rstrip("\r\n"))
            except json.JSONDecodeError as e:
                log.error(shown, lineno, error_field(e), f"{e.msg} (column {e.colno})")
                obj = _UNREADABLE
            yield lineno, obj


def _array_records(path: Path, shown: str, log: ProblemLog) -> Iterator[tuple[int, Any]]:
    """(line where the element starts, element) for each element of a top-level JSON array."""
    data = path.read_bytes().removeprefix(_BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        log.error(shown, line, "file", "invalid UTF-8")
        yield line, _UNREADABLE
        return
    decoder = safe_json
    line, counted = 1, 0

    def line_at(pos: int) -> int:
        # lines are counted incrementally: the walk only moves forward
        nonlocal line, counted
        line += text.count("\n", counted, pos)
        counted = pos
        return line

    def syntax(pos: int, problem: str, field: str = "json") -> tuple[int, Any]:
        column = pos - text.rfind("\n", 0, pos)
        log.error(shown, line_at(pos), field, f"{problem} (column {column})")
        return line, _UNREADABLE

    i = _skip_ws(text, text.index("[") + 1)
    if text.startswith("]", i):
        i = _skip_ws(text, i + 1)
        if i < len(text):
            yield syntax(i, "Extra data after the array")
        return
    while True:
        if i >= len(text):
            yield syntax(len(text), "unterminated array: expected ']'")
            return
        try:
            obj, end = decoder.raw_decode(text, i)
        except UnsoundJSON as e:  # reported at its place; the next element is read as usual
            yield syntax(e.pos, e.msg, e.field)
            end = e.end
        except json.JSONDecodeError as e:
            yield syntax(e.pos, e.msg)
            return
        else:
            yield line_at(i), obj
        i = _skip_ws(text, end)
        if text.startswith(",", i):
            i = _skip_ws(text, i + 1)
        elif text.startswith("]", i):
            i = _skip_ws(text, i + 1)
            if i < len(text):
                yield syntax(i, "Extra data after the array")
            return
        elif i >= len(text):
            yield syntax(i, "unterminated array: expected ']'")
            return
        else:
            yield syntax(i, "Expecting ',' delimiter")
            return


def _skip_ws(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _queries(records: Iterable[tuple[int, Any]], shown: str, log: ProblemLog) -> Iterator[Query]:
    """Validate each record into a Query; stops yielding (but keeps checking) once the log is full."""
    seen: dict[str, int] = {}
    warned: set[str] = set()
    n_records = 0
    for lineno, obj in records:
        n_records += 1
        if obj is _UNREADABLE:
            continue
        check = Check(shown, lineno, log)
        if isinstance(obj, dict) and HEADER_KEY in obj:
            check.error(HEADER_KEY, "the header record must be the first record of the file")
            continue
        q = parse_query(obj, check, warned)
        if q is None:
            continue
        first = seen.get(q.query_id)
        if first is not None:  # also on the same line: a JSON array may be one line
            check.error("query_id", f"duplicate {quoted(q.query_id)} (first on line {first})")
            continue
        seen[q.query_id] = lineno
        if check.ok and not (log.full and log.errors):
            yield q
    if n_records == 0:
        log.error(shown, 0, "file", "no queries")


def parse_query(obj: Any, check: Check, warned: set[str]) -> Query | None:
    """The Query a native record describes, or None when it has errors (reported to check)."""
    if not isinstance(obj, dict):
        check.error("record", f"expected an object, got {type_name(obj)}")
        return None
    for key in obj:
        if key not in QUERY_KEYS:
            check.warn_once(key, unknown_key(key, QUERY_KEYS), warned)
    query_id = obj.get("query_id")
    if "query_id" not in obj:
        check.error("query_id", "missing")
    elif not isinstance(query_id, str):
        check.error("query_id", f"expected a string, got {type_name(query_id)}")
    elif not query_id:
        check.error("query_id", "empty string")
    retrieved: tuple[Chunk, ...] | None = None
    if "retrieved" not in obj:
        check.error("retrieved", "missing (use [] for no results, null for a query not in the run)")
    elif obj["retrieved"] is not None:
        retrieved = parse_chunks(obj["retrieved"], check, warned)
    relevance = parse_relevance(obj.get("relevant_ids"), obj.get("relevance"), check)
    q = Query(
        query_id=query_id if isinstance(query_id, str) else "",
        retrieved=retrieved,
        query=optional_text(obj.get("query"), "query", check),
        relevance=relevance,
        evidence=parse_evidence(obj.get("evidence"), "evidence", check),
        answer=optional_text(obj.get("answer"), "answer", check),
        reference_answer=optional_text(obj.get("reference_answer"), "reference_answer", check),
        latency_ms=parse_numbers(obj.get("latency_ms"), "latency_ms", check, non_negative=True),
        tokens=parse_counts(obj.get("tokens"), "tokens", check),
        tags=parse_tags(obj.get("tags"), "tags", check),
        judge=parse_judge(obj.get("judge"), "judge", check),
        labels=parse_labels(obj.get("labels"), "labels", check),
        line=check.line,
    )
    return q if check.ok else None


def parse_chunks(value: Any, check: Check, warned: set[str]) -> tuple[Chunk, ...]:
    if not isinstance(value, list):
        check.error("retrieved", f"expected an array or null, got {type_name(value)}")
        return ()
    chunks = []
    for i, item in enumerate(value):
        fast = _plain_chunk(item)
        if fast is not None:
            chunks.append(fast)
            continue
        where = f"retrieved[{i}]"
        if not isinstance(item, dict):
            check.error(where, f"expected an object, got {type_name(item)}")
            continue
        for key in item:
            if key not in CHUNK_KEYS:
                check.warn_once(f"retrieved[].{key}", unknown_key(key, CHUNK_KEYS), warned)
        doc_id = item.get("doc_id")
        if "doc_id" not in item:
            check.error(f"{where}.doc_id", "missing")
        elif not isinstance(doc_id, str):
            check.error(f"{where}.doc_id", f"expected a string, got {type_name(doc_id)}")
        elif not doc_id:
            check.error(f"{where}.doc_id", "empty string")
        score = item.get("score")
        if score is not None:
            number = finite_number(score)
            if number is None:
                check.error(f"{where}.score", f"expected a finite number, got {shown_value(score)}")
            score = number
        metadata = item.get("metadata")
        if metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            check.error(f"{where}.metadata", f"expected an object, got {type_name(metadata)}")
            metadata = {}
        else:
            bad = non_finite_path(metadata, f"{where}.metadata")
            if bad is not None:
                check.error(bad, "expected a finite number, got NaN or infinity")
        chunks.append(
            Chunk(
                doc_id=doc_id if isinstance(doc_id, str) else "",
                text=optional_text(item.get("text"), f"{where}.text", check),
                score=score,
                metadata=metadata,
            )
        )
    return tuple(chunks)


def _plain_chunk(item: Any) -> Chunk | None:
    """The Chunk for an item that is plainly valid (the common case, checked fast), else None."""
    # a million-query run has tens of millions of chunks: this path skips the per-field messages
    if type(item) is not dict or not item.keys() <= CHUNK_KEYS or "metadata" in item:
        return None
    doc_id, text, score = item.get("doc_id"), item.get("text"), item.get("score")
    if type(doc_id) is not str or not doc_id or not (text is None or type(text) is str):
        return None
    if score is None:
        return Chunk(doc_id, text)
    if (type(score) is float or type(score) is int) and score - score == 0:  # NaN/inf fail this
        return Chunk(doc_id, text, float(score))
    return None


# --- the column route (no Query objects) ------------------------------------------------------

#: JSONL bytes per column batch (whole lines): bounds the memory a batch holds
COLUMN_BLOCK_BYTES = 32 << 20
#: at most this many queries per column batch (as the store's query route batches them)
COLUMN_BATCH_QUERIES = 5_000
_NONE = type(None)
_STR_OR_NONE = frozenset({str, _NONE})
_NUMBER_OR_NONE = frozenset({float, int, _NONE})


def _jsonl_columns(path: Path, skip: int) -> Iterator[ColumnBatch]:
    """The records after the first skip lines as column batches, read a block of lines at a time.

    Only records the line reader would accept without a word are taken; anything else (bad
    JSON or UTF-8, a problem, an unknown key, a duplicate id ...) raises UseQueries, and the
    store reads the file again line by line, which reports it exactly.
    """
    seen: set[str] = set()
    n_done = 0
    with path.open("rb") as fh:
        for _ in range(skip):
            fh.readline()
        first = skip == 0
        while block := fh.read(COLUMN_BLOCK_BYTES):
            if not block.endswith(b"\n"):
                block += fh.readline()
            if first:
                block, first = block.removeprefix(_BOM), False
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError:
                raise UseQueries from None
            del block
            records = []
            # split on "\n" only, as iterating the file does: each piece is one line
            for line in text.split("\n"):
                if not line.strip():
                    continue
                try:
                    records.append(_LOADS(line.rstrip("\r\n")))
                except (ValueError, RecursionError):  # deep nesting: the line reader reports it
                    raise UseQueries from None
            del text
            for lo in range(0, len(records), COLUMN_BATCH_QUERIES):
                part = records[lo : lo + COLUMN_BATCH_QUERIES]
                yield _column_batch(part, n_done, seen)
                n_done += len(part)
    if n_done == 0:
        raise UseQueries  # "no queries" is the line reader's to report


#: the line reader's decoder: a lone surrogate or a huge integer sends the file its way too
_LOADS = safe_json.decode


def _column_batch(records: list[Any], first_qidx: int, seen: set[str]) -> ColumnBatch:
    """One block of decoded records as column tables; UseQueries unless every one is plain."""
    check = Check("", 0, ProblemLog(cap=1))
    queries: dict[str, list[Any]] = {name: [] for name in BATCH_SCHEMAS["queries"].names}
    small: dict[str, dict[str, list[Any]]] = {
        table: {name: [] for name in BATCH_SCHEMAS[table].names}
        for table in ("evidence", "qrels", "latency", "tokens", "tags")
    }
    rankings: list[list[Any]] = []
    depths: list[int] = []
    for qidx, obj in enumerate(records, first_qidx):
        if type(obj) is not dict or not QUERY_KEYS.issuperset(obj):
            raise UseQueries
        query_id = obj.get("query_id")
        if type(query_id) is not str or not query_id or query_id in seen or "retrieved" not in obj:
            raise UseQueries
        if "labels" in obj:  # rare: the line reader keeps them
            raise UseQueries
        seen.add(query_id)
        retrieved = obj["retrieved"]
        if retrieved is not None and type(retrieved) is not list:
            raise UseQueries
        if retrieved:
            rankings.append(retrieved)
        depths.append(len(retrieved) if retrieved else 0)
        # the per-query fields are few: the line reader's own validators, so equal by construction
        relevance = parse_relevance(obj.get("relevant_ids"), obj.get("relevance"), check)
        judge = parse_judge(obj.get("judge"), "judge", check)
        queries["qidx"].append(qidx)
        queries["query_id"].append(query_id)
        queries["query"].append(optional_text(obj.get("query"), "query", check))
        queries["in_run"].append(retrieved is not None)
        queries["has_qrels"].append(relevance is not None)
        queries["answer"].append(optional_text(obj.get("answer"), "answer", check))
        queries["reference_answer"].append(
            optional_text(obj.get("reference_answer"), "reference_answer", check)
        )
        queries["judge"].append(store_json(judge) if judge else None)
        spans = parse_evidence(obj.get("evidence"), "evidence", check)
        if spans:
            ev = small["evidence"]
            ev["qidx"].extend([qidx] * len(spans))
            ev["eidx"].extend(range(len(spans)))
            ev["text"].extend(spans)
        for table, mapping, key_col, val_col in (
            ("qrels", relevance, "doc_id", "rel"),
            (
                "latency",
                parse_numbers(obj.get("latency_ms"), "latency_ms", check, non_negative=True),
                "stage",
                "ms",
            ),
            ("tokens", parse_counts(obj.get("tokens"), "tokens", check), "kind", "n"),
            ("tags", parse_tags(obj.get("tags"), "tags", check), "key", "value"),
        ):
            if mapping:
                rows = small[table]
                rows["qidx"].extend([qidx] * len(mapping))
                rows["pos"].extend(range(len(mapping)))
                rows[key_col].extend(mapping.keys())
                rows[val_col].extend(mapping.values())
        if not check.ok:
            raise UseQueries
    tables = {"queries": arrow_table("queries", queries)}
    if rankings:
        tables["chunks"] = _chunk_table(rankings, np.asarray(depths, dtype=np.int64), first_qidx)
    for table, columns in small.items():
        if columns["qidx"]:
            tables[table] = arrow_table(table, columns)
    return ColumnBatch(len(records), tables)


def _chunk_table(rankings: list[list[Any]], depths: NDArray[np.int64], first_qidx: int) -> pa.Table:
    """Every retrieved item of a block, checked column by column at C speed (no loop per chunk)."""
    items = list(itertools.chain.from_iterable(rankings))
    if set(map(type, items)) != {dict} or not all(map(CHUNK_KEYS.issuperset, items)):
        raise UseQueries
    try:
        doc_ids = list(map(operator.itemgetter("doc_id"), items))
    except KeyError:
        raise UseQueries from None
    texts = list(map(dict.get, items, itertools.repeat("text")))
    scores = list(map(dict.get, items, itertools.repeat("score")))
    if (
        set(map(type, doc_ids)) != {str}
        or not all(doc_ids)
        or not _STR_OR_NONE.issuperset(map(type, texts))
        or not _NUMBER_OR_NONE.issuperset(map(type, scores))
    ):
        raise UseQueries
    try:
        score = pa.array(scores, type=pa.float64())
    except (pa.ArrowException, OverflowError):
        raise UseQueries from None
    if score.null_count < len(score) and not pc.all(pc.is_finite(score)).as_py():
        raise UseQueries
    metadata: list[str | None] | None = None
    if any(map(operator.contains, items, itertools.repeat("metadata"))):
        metadata = []
        for item in items:
            value = item.get("metadata")
            if value is not None and (
                type(value) is not dict or non_finite_path(value, "") is not None
            ):
                raise UseQueries
            metadata.append(store_json(value) if value else None)
    qidx = np.repeat(np.arange(first_qidx, first_qidx + depths.size, dtype=np.int32), depths)
    starts = np.repeat(np.cumsum(depths) - depths, depths)
    rank = (np.arange(qidx.size, dtype=np.int64) - starts + 1).astype(np.int32)
    return arrow_table(
        "chunks",
        {
            "qidx": qidx,
            "rank": rank,
            "doc_id": doc_ids,
            "text": texts,
            "score": score,
            "metadata": metadata if metadata is not None else pa.nulls(qidx.size, pa.string()),
        },
    )
