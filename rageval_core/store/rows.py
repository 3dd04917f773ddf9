"""Column batches from Query objects, the content hash, and rows back to Query objects."""

from __future__ import annotations

import hashlib
import json
import queue
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

from numpy.typing import NDArray

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rageval_core import threads
from rageval_core.columns import (
    BATCH_SCHEMAS,
    OPTIONAL_TABLES,
    WHOLE_AS_INTEGER,
    ColumnBatch,
    store_json,
)
from rageval_core.model import Chunk, Query, RunInfo, info_to_json, label_value

T = TypeVar("T")

# Built once: json.dumps with any non-default option builds a new encoder per call.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_DECODE = json.JSONDecoder().decode


def canonical_json(obj: Any) -> bytes:
    """One spelling per value: sorted keys, no spaces, UTF-8."""
    return _CANONICAL_JSON.encode(obj).encode("utf-8", "surrogatepass")


# --- the content hash ----------------------------------------------------------------------------


class ContentHasher:
    """sha256 over the run facts (minus the name) and every stored column, in row order.

    Each column of each per-query table is a stream of its values in (qidx, position) order,
    hashed by its own sha256 (validity bytes, fixed-width values little-endian, and for
    strings their byte lengths then their UTF-8 bytes): the digest depends on the rows only,
    never on how they were cut into batches or which reader route made them. docs/formats.md
    ("Store notes") defines it.
    """

    def __init__(self, info: RunInfo) -> None:
        facts = info_to_json(info)
        facts.pop("name", None)
        prices = facts.get("prices_per_1k")
        if prices:
            facts["prices_per_1k"] = {k: float(v) for k, v in prices.items()}
        self._facts = canonical_json({"rageval_run": facts}) + b"\n"
        self.reset()

    def reset(self) -> None:
        """Forget every row added (the run facts stay)."""
        self._seen: set[str] = set()
        self._streams = {
            (table, column.name, part): hashlib.sha256()
            for table, schema in BATCH_SCHEMAS.items()
            for column in schema
            for part in _PARTS[_kind(column.type)]
        }

    def add(self, batch: ColumnBatch) -> None:
        """Hash the rows of one batch (batches must come in qidx order)."""
        for table, rows in batch.tables.items():
            schema = BATCH_SCHEMAS[table]
            if rows.num_rows:
                self._seen.add(table)
            if rows.schema != schema:
                rows = rows.cast(schema)
            for field in schema:
                for chunk in rows.column(field.name).chunks:
                    self._add_array(table, field, chunk)

    def _add_array(self, table: str, field: pa.Field, array: pa.Array) -> None:
        kind = _kind(field.type)
        key = (table, field.name)
        self._streams[(*key, "valid")].update(
            array.is_valid().to_numpy(zero_copy_only=False).view(np.uint8).tobytes()
        )
        if kind == "string":
            filled = pc.fill_null(array, "") if array.null_count else array
            lengths = pc.binary_length(filled).to_numpy(zero_copy_only=False)
            self._streams[(*key, "length")].update(lengths.astype("<i8").tobytes())
            data = filled.buffers()[2]
            if data is not None and len(filled):
                offsets = np.frombuffer(filled.buffers()[1], dtype="<i4")
                lo, hi = int(offsets[filled.offset]), int(offsets[filled.offset + len(filled)])
                self._streams[(*key, "data")].update(memoryview(data)[lo:hi])
        else:
            values = (
                pc.fill_null(array, False if kind == "bool" else 0) if array.null_count else array
            )
            dtype = {"bool": "u1", "int": "<i8", "float": "<f8"}[kind]
            data = values.to_numpy(zero_copy_only=False).astype(dtype)
            if key in WHOLE_AS_INTEGER:
                data = _whole_as_integer(data)
            self._streams[(*key, "data")].update(data.tobytes())

    def hexdigest(self) -> str:
        sha = hashlib.sha256(self._facts)
        for (table, column, part), stream in self._streams.items():
            if table in OPTIONAL_TABLES and table not in self._seen:
                continue
            sha.update(f"{table}.{column}.{part} {stream.hexdigest()}\n".encode())
        return sha.hexdigest()


def _whole_as_integer(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """Each whole value as its int64, any other as its double's bits: whole labels hash as they
    did when the column was an integer. The two never meet: the bits of a double that is not
    whole and within the label range (readers refuse subnormal ones) lie outside that range."""
    whole = values == np.floor(values)
    out = values.view("<i8").copy()
    out[whole] = values[whole].astype("<i8")
    return out


_PARTS = {
    "string": ("valid", "length", "data"),
    "bool": ("valid", "data"),
    "int": ("valid", "data"),
    "float": ("valid", "data"),
}


def _kind(dtype: pa.DataType) -> str:
    if pa.types.is_string(dtype):
        return "string"
    if pa.types.is_boolean(dtype):
        return "bool"
    if pa.types.is_integer(dtype):
        return "int"
    if pa.types.is_floating(dtype):
        return "float"
    raise TypeError(f"no content hash for Arrow type {dtype}")


# --- Query objects to column batches -----------------------------------------------------------


def batches_from_queries(
    queries: Iterable[Query], max_queries: int, max_rows: int
) -> Iterator[ColumnBatch]:
    """The queries as column batches of at most max_queries queries (or about max_rows rows)."""
    batch = Batch()
    for n, q in enumerate(queries):
        batch.add(n, q)
        if batch.n_queries >= max_queries or batch.n_rows >= max_rows:
            yield batch.column_batch()
            batch = Batch()
    if batch.n_queries:
        yield batch.column_batch()


def prefetch(items: Iterable[T], depth: int = 1) -> Iterator[T]:
    """items, each produced in a worker thread while the consumer works on the previous one.

    Reading (Python, holding the GIL) then overlaps the store's inserts (DuckDB, which releases
    it). An exception in the worker is raised in the consumer; when the consumer stops early,
    the worker stops after its current item and the source is closed.
    """
    slots: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(message: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                slots.put(message, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        source = iter(items)
        try:
            for item in source:
                if not put(("item", item)):
                    return
            put(("done", None))
        except BaseException as e:  # handed to the consumer, raised there
            put(("error", e))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    # tracked: at exit it is asked to stop and waited for, never ended inside DuckDB or Arrow
    worker = threads.start(work, name="rageval-read", stop=stop.set)
    try:
        while True:
            kind, value = slots.get()
            if kind == "item":
                yield value
            elif kind == "done":
                return
            else:
                raise value
    finally:
        stop.set()
        worker.join()


class Batch:
    """Column lists for one batch of queries, ready to become Arrow tables."""

    def __init__(self) -> None:
        self.columns: dict[str, dict[str, list[Any]]] = {
            table: {name: [] for name in schema.names} for table, schema in BATCH_SCHEMAS.items()
        }
        self.n_queries = 0
        #: rows held across all tables (to bound a batch's memory)
        self.n_rows = 0
        self.n_chunks = 0
        self.max_depth = 0

    def add(self, qidx: int, q: Query) -> None:
        """Append q's rows (q is the qidx-th query of the file, 0-based)."""
        cols = self.columns
        qc = cols["queries"]
        qc["qidx"].append(qidx)
        qc["query_id"].append(q.query_id)
        qc["query"].append(q.query)
        qc["in_run"].append(q.retrieved is not None)
        qc["has_qrels"].append(q.relevance is not None)
        qc["answer"].append(q.answer)
        qc["reference_answer"].append(q.reference_answer)
        qc["judge"].append(store_json(q.judge) if q.judge else None)
        self.n_queries += 1
        self.n_rows += 1
        if q.retrieved:
            cc = cols["chunks"]
            for rank, c in enumerate(q.retrieved, 1):
                cc["qidx"].append(qidx)
                cc["rank"].append(rank)
                cc["doc_id"].append(c.doc_id)
                cc["text"].append(c.text)
                cc["score"].append(None if c.score is None else float(c.score))
                cc["metadata"].append(store_json(c.metadata) if c.metadata else None)
            self.n_chunks += len(q.retrieved)
            self.n_rows += len(q.retrieved)
            self.max_depth = max(self.max_depth, len(q.retrieved))
        if q.evidence:
            ec = cols["evidence"]
            for eidx, text in enumerate(q.evidence):
                ec["qidx"].append(qidx)
                ec["eidx"].append(eidx)
                ec["text"].append(text)
            self.n_rows += len(q.evidence)
        for table, mapping, key_col, val_col in (
            ("qrels", q.relevance, "doc_id", "rel"),
            ("latency", q.latency_ms, "stage", "ms"),
            ("tokens", q.tokens, "kind", "n"),
            ("tags", q.tags, "key", "value"),
            ("labels", q.labels, "name", "label"),
        ):
            if mapping:
                tc = cols[table]
                for pos, (key, value) in enumerate(mapping.items()):
                    tc["qidx"].append(qidx)
                    tc["pos"].append(pos)
                    tc[key_col].append(key)
                    tc[val_col].append(value)
                self.n_rows += len(mapping)

    def column_batch(self) -> ColumnBatch:
        """The batch's rows as Arrow tables."""
        return ColumnBatch(self.n_queries, dict(self.tables()))

    def tables(self) -> Iterable[tuple[str, pa.Table]]:
        """(table name, Arrow table) for every table with rows in this batch."""
        for table, schema in BATCH_SCHEMAS.items():
            cols = self.columns[table]
            if cols["qidx"]:
                yield table, pa.Table.from_pydict(cols, schema=schema)


def build_queries(
    query_rows: list[tuple[Any, ...]], children: Mapping[str, list[tuple[Any, ...]]]
) -> list[Query]:
    """Rebuild Query objects from one batch of rows; every child row starts with its qidx."""
    grouped: dict[str, defaultdict[int, list[tuple[Any, ...]]]] = {}
    for table, rows in children.items():
        by_qidx: defaultdict[int, list[tuple[Any, ...]]] = defaultdict(list)
        for row in rows:
            by_qidx[row[0]].append(row)
        grouped[table] = by_qidx
    chunks, evidence = grouped["chunks"], grouped["evidence"]
    qrels, latency, tokens, tags = (
        grouped["qrels"],
        grouped["latency"],
        grouped["tokens"],
        grouped["tags"],
    )
    labels: Mapping[int, list[tuple[Any, ...]]] = grouped.get("labels", {})
    out = []
    for qidx, query_id, query, in_run, has_qrels, answer, reference_answer, judge in query_rows:
        out.append(
            Query(
                query_id=query_id,
                retrieved=tuple(
                    Chunk(doc_id, text, score, _DECODE(meta) if meta is not None else {})
                    for _, doc_id, text, score, meta in chunks.get(qidx, ())
                )
                if in_run
                else None,
                query=query,
                relevance={d: label_value(r) for _, d, r in qrels.get(qidx, ())}
                if has_qrels
                else None,
                evidence=tuple(text for _, text in evidence.get(qidx, ())),
                answer=answer,
                reference_answer=reference_answer,
                latency_ms={s: ms for _, s, ms in latency.get(qidx, ())},
                tokens={k: n for _, k, n in tokens.get(qidx, ())},
                tags={k: v for _, k, v in tags.get(qidx, ())},
                judge=_DECODE(judge) if judge is not None else {},
                labels={k: v for _, k, v in labels.get(qidx, ())},
            )
        )
    return out
