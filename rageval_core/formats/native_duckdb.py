"""The native JSONL reader's DuckDB route: DuckDB parses the file, Python only vouches for it.

Two scans of the file run side by side, each in a private in-memory DuckDB (multithreaded C++):

- the rows: read_json with the store's types, streamed as Arrow batches in file order and cut
  into the store's tables with Arrow slices (no Python object per value); values the line
  reader would refuse (an empty id, a NaN score, a blank evidence span, a repeated query_id ...)
  are looked for column by column on each batch;
- the witness: every line as raw text (read_csv), its json_structure (every key, at every
  level, with the JSON type of every value) and two raw-text checks for what DuckDB's JSON
  parser accepts but Python's does not (a trailing comma; a form feed or vertical tab, which
  DuckDB strips from a line's ends). read_json alone cannot vouch for a file: it drops keys it
  was not asked for, turns a number into a string when a string is expected, reads a missing
  key and a null alike, and accepts trailing commas.

A file is taken only when every line passes: the keys are the native format's own, the types
are the ones the line reader accepts without a word, and the rows carry no problem. Anything
else (a problem, an unknown key, a shape this route does not cover, such as chunk metadata or
evidence given as one string) raises UseQueries before the store commits anything; the store
drops the rows taken so far and the Python readers read the file again, which report every
problem at its file:line.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from rageval_core import threads
from rageval_core.columns import BATCH_SCHEMAS, ColumnBatch, UseQueries
from rageval_core.formats.base import HEADER_KEY, MAX_MEASURE
from rageval_core.formats.jsonarray import DECODER
from rageval_core.formats.native import CHUNK_KEYS, QUERY_KEYS

#: smaller files take the Python column route: starting DuckDB's scans costs about as much as
#: reading this many bytes in Python
MIN_FILE_BYTES = 32 << 20
#: JSON bytes per batch of rows (whole records), as the Python column route cuts its blocks
BATCH_BYTES = 32 << 20
#: bounds on the queries per batch, whatever the size of a record
MIN_BATCH_QUERIES, MAX_BATCH_QUERIES = 256, 50_000
#: lines the witness checks before any row is read: a file of a shape this route does not cover
#: goes to the Python readers at once instead of after its first batches
SAMPLE_LINES = 1_000
#: threads of each private DuckDB (at most: the machine's cores), and its memory: both scans
#: stream, holding a few batches and each thread's read buffers
MAX_THREADS = 4
MEMORY_MB_BASE, MEMORY_MB_PER_THREAD = 128, 64
#: the longest record read (read_csv's default line limit; a longer one goes the Python way)
MAX_RECORD_BYTES = 2_097_152

#: every character str.isspace() holds true for: the line reader's test for a blank evidence
#: span (span.strip()); a test compares this with Python's own definition
PY_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

_COLUMNS = (
    "{query_id: 'VARCHAR', query: 'VARCHAR', "
    "retrieved: 'STRUCT(doc_id VARCHAR, text VARCHAR, score DOUBLE)[]', "
    "relevant_ids: 'VARCHAR[]', relevance: 'MAP(VARCHAR, INTEGER)', evidence: 'VARCHAR[]', "
    "answer: 'VARCHAR', reference_answer: 'VARCHAR', latency_ms: 'MAP(VARCHAR, DOUBLE)', "
    "tokens: 'MAP(VARCHAR, BIGINT)', tags: 'MAP(VARCHAR, VARCHAR)'}"
)
# The store's types: a label outside INTEGER or a count outside BIGINT is a cast error, and
# read_json stops at a key given twice in one object (Python keeps the last, DuckDB would not).
_ROWS_SQL = (
    "SELECT *, hash(query_id) AS id_hash, "
    "coalesce(len(list_distinct(relevant_ids)) < len(relevant_ids), false) AS ids_repeat "
    "FROM read_json(?, format = 'newline_delimited', compression = 'none', "
    f"maximum_object_size = {MAX_RECORD_BYTES}, columns = {_COLUMNS})"
)
# Lines as the file has them (read_csv: no quoting, a delimiter no valid line holds), blank
# ones left out as read_json leaves them out. DuckDB's JSON parser takes "[1,]" and strips
# "\f" and "\v" from a line's ends, Python's refuses both: such lines are flagged here.
_WITNESS_SQL = (
    "SELECT json_structure(line) AS shape, "
    "CASE WHEN regexp_matches(line, ',[ \\t\\r\\n]*[\\]}]') THEN line END AS suspect, "
    "contains(line, chr(11)) OR contains(line, chr(12)) AS bad "
    "FROM read_csv(?, columns = {'line': 'VARCHAR'}, delim = chr(1), quote = '', escape = '', "
    "header = false, auto_detect = false, strict_mode = true, compression = 'none') "
    "WHERE line IS NOT NULL AND NOT regexp_full_match(line, '[ \\t\\r]*')"
)


def columns(
    path: Path, skip: int, header: bool, instead: Iterable[ColumnBatch] | None
) -> Iterator[ColumnBatch]:
    """The file's records as column batches, read by DuckDB; UseQueries(instead) when in doubt.

    skip is the number of lines before the first query record (header and blank lines), header
    whether one of them is a header record; instead is the route to try next.
    """
    try:
        yield from _read(path, skip, header)
    except (_Doubt, duckdb.Error) as e:
        raise UseQueries(instead) from e


class _Doubt(Exception):
    """The route cannot vouch for the file (a problem, or a shape it does not cover)."""


def _read(path: Path, skip: int, header: bool) -> Iterator[ColumnBatch]:
    sample = _Witness(path, header, SAMPLE_LINES)
    sample.run()
    if not sample.ok:
        raise _Doubt(sample.why)
    witness = _Witness(path, header, None)
    # tracked: at exit its scan is interrupted and it is waited for (rageval_core.threads)
    threads.track(witness, witness.interrupt)
    witness.start()
    con = _connect()
    try:
        reader = con.sql(_ROWS_SQL, params=[str(path)]).to_arrow_reader(_batch_queries(path, skip))
        seen: set[int] = set()
        n_rows = n_queries = 0
        to_drop = 1 if header else 0  # the header record, read by read() already
        for rb in reader:
            if witness.done.is_set() and not witness.ok:
                raise _Doubt(witness.why)
            n_rows += rb.num_rows
            if to_drop and rb.num_rows:
                rb, to_drop = rb.slice(1), 0
            if rb.num_rows:
                yield _column_batch(rb, n_queries, seen)
                n_queries += rb.num_rows
        witness.join()
        if not witness.ok:
            raise _Doubt(witness.why)
        if witness.n_rows != n_rows:
            raise _Doubt(f"{witness.n_rows} lines but {n_rows} records")
        if n_queries == 0:
            raise _Doubt("no queries")  # the line reader's to report
    finally:
        witness.stop()
        con.close()


def _connect() -> duckdb.DuckDBPyConnection:
    threads = max(1, min(MAX_THREADS, os.cpu_count() or 1))
    # results stream in file order (preserve_insertion_order): qidx is the record's position
    con = duckdb.connect(
        ":memory:",
        config={
            "threads": threads,
            "preserve_insertion_order": True,
            "memory_limit": f"{MEMORY_MB_BASE + MEMORY_MB_PER_THREAD * threads}MB",
        },
    )
    con.execute("SET enable_progress_bar = false")  # never DuckDB's own bar on the terminal
    return con


def _batch_queries(path: Path, skip: int) -> int:
    """Queries per batch, so a batch holds about BATCH_BYTES of JSON (from the first lines)."""
    with path.open("rb") as fh:
        head = fh.read(1 << 20)
    lines = head.count(b"\n") - skip
    per_line = len(head) / lines if lines > 0 else float(len(head) or 1)
    return int(min(MAX_BATCH_QUERIES, max(MIN_BATCH_QUERIES, BATCH_BYTES // per_line)))


# --- the witness -----------------------------------------------------------------------------

_TEXT = frozenset({"VARCHAR", "NULL"})
# json_structure's names for JSON numbers (HUGEINT: integers of both signs beyond BIGINT)
_NUMBER = frozenset({"UBIGINT", "BIGINT", "HUGEINT", "DOUBLE"})
_TEXT_LIST = ("NULL", ["VARCHAR"], ["NULL"])
#: value types each map may hold, as the line reader accepts them: labels and counts are
#: integers (counts never negative), latencies any number, tags strings (a number or boolean tag
#: is spelled by json.dumps, which DuckDB does not copy exactly: it goes the Python way)
_MAP_VALUES = {
    "relevance": frozenset({"UBIGINT", "BIGINT"}),
    "latency_ms": _NUMBER,
    "tokens": frozenset({"UBIGINT"}),
    "tags": frozenset({"VARCHAR"}),
}


def valid_shape(shape: Any) -> bool:
    """True when a record of this json_structure is one the route reads exactly as Python does.

    The structure merges the elements of a list (so one shape covers every chunk) and shows a key
    given with null as "NULL", an absent key not at all. Nulls inside lists, empty strings and
    number ranges are checked on the rows (see _column_batch).
    """
    if type(shape) is not dict or not QUERY_KEYS.issuperset(shape):
        return False  # not an object, or an unknown key (a warning the line reader gives)
    if shape.get("query_id") != "VARCHAR" or "retrieved" not in shape:
        return False
    retrieved = shape["retrieved"]
    if retrieved != "NULL":
        if type(retrieved) is not list or len(retrieved) != 1:
            return False
        chunk = retrieved[0]
        if chunk != "NULL" and not (
            type(chunk) is dict
            and CHUNK_KEYS.issuperset(chunk)
            and chunk.get("doc_id", "NULL") in _TEXT
            and chunk.get("text", "NULL") in _TEXT
            and (chunk.get("score", "NULL") == "NULL" or chunk.get("score") in _NUMBER)
            and chunk.get("metadata", "NULL") == "NULL"  # metadata is kept as JSON text
        ):
            return False
    for key in ("query", "answer", "reference_answer"):
        if shape.get(key, "NULL") not in _TEXT:
            return False
    for key in ("relevant_ids", "evidence"):
        if shape.get(key, "NULL") not in _TEXT_LIST:
            return False
    if shape.get("judge", "NULL") != "NULL":
        return False  # kept as JSON text, like metadata
    if shape.get("labels", "NULL") != "NULL":
        return False  # rare: the line reader keeps them
    for key, allowed in _MAP_VALUES.items():
        value = shape.get(key, "NULL")
        # "JSON" is an empty object here (a value that is no object fails the rows' scan)
        if value not in ("NULL", "JSON") and not (
            type(value) is dict and all(type(v) is str and v in allowed for v in value.values())
        ):
            return False
    return True


class _Witness(threading.Thread):
    """Scans the raw lines; ok when every line is one the rows' scan reads as Python would."""

    def __init__(self, path: Path, header: bool, limit: int | None) -> None:
        super().__init__(name="rageval-witness", daemon=True)
        self.path, self.header, self.limit = path, header, limit
        self.ok = False
        self.why = "not run"
        self.n_rows = 0
        self.done = threading.Event()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def run(self) -> None:
        try:
            self.ok, self.why = self._scan(), ""
        except duckdb.Error as e:
            self.ok, self.why = False, f"DuckDB: {e}"
        except _Doubt as e:
            self.ok, self.why = False, str(e)
        except Exception as e:  # anything unforeseen: not vouched for, the Python way decides
            self.ok, self.why = False, repr(e)
        finally:
            with self._lock:
                if self._con is not None:
                    self._con.close()
                    self._con = None
            self.done.set()

    def interrupt(self) -> None:
        """Interrupt the scan; the thread ends soon after."""
        with self._lock:
            self._stopped = True
            if self._con is not None:
                with contextlib.suppress(duckdb.Error):
                    self._con.interrupt()

    def stop(self) -> None:
        """Interrupt the scan (when the rows' scan ended first) and wait for the thread."""
        self.interrupt()
        if self.is_alive():
            self.join()

    def _scan(self) -> bool:
        sql = _WITNESS_SQL + (f" LIMIT {int(self.limit)}" if self.limit is not None else "")
        with self._lock:
            if self._stopped:
                raise _Doubt("stopped")
            self._con = _connect()
            reader = self._con.sql(sql, params=[str(self.path)]).to_arrow_reader(50_000)
        known: dict[str, bool] = {}
        for rb in reader:
            shapes, suspects, bad = rb.column("shape"), rb.column("suspect"), rb.column("bad")
            if self.n_rows == 0 and self.header and rb.num_rows:
                first = json.loads(shapes[0].as_py())
                if type(first) is not dict or HEADER_KEY not in first:
                    raise _Doubt("the first record is not the header read() found")
                shapes, suspects, bad = shapes[1:], suspects[1:], bad[1:]
            self.n_rows += rb.num_rows
            if pc.any(bad).as_py():
                raise _Doubt("a form feed or vertical tab")
            for text in pc.drop_null(suspects).to_pylist():
                try:  # "[1,]" or "[1, ]" in a string is fine: Python's reader decides
                    DECODER.decode(text.rstrip("\r\n"))
                except json.JSONDecodeError:
                    raise _Doubt("a trailing comma") from None
            for text in pc.unique(shapes).to_pylist():
                ok = known.get(text)
                if ok is None:
                    if len(known) > 10_000:
                        known.clear()  # rankings of doc ids as relevance keys: all differ
                    ok = known[text] = valid_shape(json.loads(text))
                if not ok:
                    raise _Doubt(f"shape {text[:200]}")
        return True


# --- rows to column batches -------------------------------------------------------------------


def _any(mask: pa.Array | pa.ChunkedArray) -> bool:
    return bool(pc.any(mask).as_py())


def _positions(
    lengths: NDArray[np.int64], first_qidx: int
) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """(qidx, 0-based position) of every element of consecutive lists of these lengths."""
    qidx = np.repeat(np.arange(first_qidx, first_qidx + lengths.size, dtype=np.int32), lengths)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return qidx, (np.arange(qidx.size, dtype=np.int64) - starts).astype(np.int32)


def _lengths(lists: pa.Array) -> NDArray[np.int64]:
    """Each list's (or map's) length, 0 for a null one."""
    lengths = np.diff(np.asarray(lists.offsets)).astype(np.int64)
    if lists.null_count:
        lengths[lists.is_null().to_numpy(zero_copy_only=False)] = 0
    return lengths


def _column_batch(rb: pa.RecordBatch, first_qidx: int, seen: set[int]) -> ColumnBatch:
    """One batch of typed records as store tables; _Doubt at any value the line reader refuses."""
    n = rb.num_rows
    query_id = rb.column("query_id")
    if query_id.null_count or _any(pc.equal(pc.binary_length(query_id), 0)):
        raise _Doubt("a null or empty query_id")
    # a repeated id, or (once in 2**64) two ids with one hash: the line reader decides
    before = len(seen)
    seen.update(rb.column("id_hash").to_numpy(zero_copy_only=False).tolist())
    if len(seen) != before + n:
        raise _Doubt("a repeated query_id")

    tables: dict[str, pa.Table] = {}
    retrieved = rb.column("retrieved")
    depths = _lengths(retrieved)
    if depths.sum():
        chunks = retrieved.flatten()
        if chunks.null_count:
            raise _Doubt("a null chunk")
        doc_id, text, score = chunks.flatten()
        if doc_id.null_count or _any(pc.equal(pc.binary_length(doc_id), 0)):
            raise _Doubt("a null or empty doc_id")
        if score.null_count < len(score) and _any(pc.invert(pc.is_finite(score))):
            raise _Doubt("a score that is not finite")
        qidx, pos = _positions(depths, first_qidx)
        tables["chunks"] = _table(
            "chunks",
            [
                qidx,
                pos + 1,
                doc_id,
                text,
                score,
                pa.nulls(len(doc_id), pa.string()),
            ],
        )

    evidence = rb.column("evidence")
    lengths = _lengths(evidence)
    if lengths.sum():
        spans = evidence.flatten()
        if spans.null_count or _any(pc.equal(pc.utf8_trim(spans, characters=PY_WHITESPACE), "")):
            raise _Doubt("a null or blank evidence span")
        qidx, pos = _positions(lengths, first_qidx)
        tables["evidence"] = _table("evidence", [qidx, pos, spans])

    ids, labels = rb.column("relevant_ids"), rb.column("relevance")
    if _any(pc.and_(ids.is_valid(), labels.is_valid())):
        raise _Doubt("relevant_ids and relevance together")  # merged by the line reader
    if _any(rb.column("ids_repeat")):
        raise _Doubt("a repeated relevant id")
    qrels = []
    lengths = _lengths(ids)
    if lengths.sum():
        flat = ids.flatten()
        if flat.null_count or _any(pc.equal(pc.binary_length(flat), 0)):
            raise _Doubt("a null or empty relevant id")
        qidx, pos = _positions(lengths, first_qidx)
        qrels.append(_table("qrels", [qidx, pos, flat, np.ones(len(flat), dtype=np.int32)]))
    rel = _map_table("qrels", labels, first_qidx)
    if rel is not None:
        if _any(pc.equal(pc.binary_length(rel.column("doc_id")), 0)):
            raise _Doubt("an empty doc_id in relevance")
        qrels.append(rel)
    if qrels:
        table = pa.concat_tables(qrels)
        if len(qrels) > 1:  # rows of a query come from one of the two: a stable sort keeps pos
            order = np.argsort(table.column("qidx").to_numpy(), kind="stable")
            table = table.take(pa.array(order))
        tables["qrels"] = table

    latency = _map_table("latency", rb.column("latency_ms"), first_qidx)
    if latency is not None:
        ms = latency.column("ms")
        if (
            _any(pc.invert(pc.is_finite(ms)))
            or _any(pc.less(ms, 0))
            or _any(pc.greater(ms, MAX_MEASURE))
        ):
            raise _Doubt("a latency that is negative, not finite or too large")
        tables["latency"] = latency
    for table, column in (("tokens", "tokens"), ("tags", "tags")):
        mapped = _map_table(table, rb.column(column), first_qidx)
        if mapped is not None:
            tables[table] = mapped
    if "tokens" in tables and _any(pc.less(tables["tokens"].column("n"), 0)):
        raise _Doubt("a negative token count")

    has_qrels = pc.or_(ids.is_valid(), labels.is_valid())
    tables["queries"] = _table(
        "queries",
        [
            np.arange(first_qidx, first_qidx + n, dtype=np.int32),
            query_id,
            rb.column("query"),
            retrieved.is_valid(),
            has_qrels,
            rb.column("answer"),
            rb.column("reference_answer"),
            pa.nulls(n, pa.string()),
        ],
    )
    return ColumnBatch(n, tables)


def _map_table(table: str, mapped: pa.MapArray, first_qidx: int) -> pa.Table | None:
    """A MAP column's entries as (qidx, pos, key, value) rows, or None when it holds none."""
    lengths = _lengths(mapped)
    if not lengths.sum():
        return None
    # keys and items are the whole children, which the (sliced) offsets index into; a null
    # map may span entries (Arrow allows it), which are not its own
    offsets = np.asarray(mapped.offsets)
    lo, hi = int(offsets[0]), int(offsets[-1])
    keys, values = mapped.keys.slice(lo, hi - lo), mapped.items.slice(lo, hi - lo)
    spans = np.diff(offsets)
    if spans.sum() != lengths.sum():
        keep = pa.array(np.repeat(lengths > 0, spans))
        keys, values = keys.filter(keep), values.filter(keep)
    if values.null_count:
        raise _Doubt(f"a null value in {table}")
    qidx, pos = _positions(lengths, first_qidx)
    return _table(table, [qidx, pos, keys, values])


def _table(table: str, arrays: list[Any]) -> pa.Table:
    schema = BATCH_SCHEMAS[table]
    return pa.Table.from_arrays(
        [
            pa.array(a, type=f.type) if isinstance(a, np.ndarray) else a.cast(f.type)
            for a, f in zip(arrays, schema, strict=True)
        ],
        schema=schema,
    )
