"""Column batches: a run's rows as Arrow tables, one per store table (the readers' fast route).

A reader that can produce these skips Query objects altogether (ParsedRun.columns); the store
inserts them as they come. The shape belongs to the model, not to either side: readers build
batches, the store consumes them, and neither imports the other.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

#: Arrow schema of each per-query table without its run_id (added by the INSERT as a parameter).
BATCH_SCHEMAS: dict[str, pa.Schema] = {
    "queries": pa.schema(
        [
            ("qidx", pa.int32()),
            ("query_id", pa.string()),
            ("query", pa.string()),
            ("in_run", pa.bool_()),
            ("has_qrels", pa.bool_()),
            ("answer", pa.string()),
            ("reference_answer", pa.string()),
            ("judge", pa.string()),
        ]
    ),
    "chunks": pa.schema(
        [
            ("qidx", pa.int32()),
            ("rank", pa.int32()),
            ("doc_id", pa.string()),
            ("text", pa.string()),
            ("score", pa.float64()),
            ("metadata", pa.string()),
        ]
    ),
    "evidence": pa.schema([("qidx", pa.int32()), ("eidx", pa.int32()), ("text", pa.string())]),
    "qrels": pa.schema(
        [("qidx", pa.int32()), ("pos", pa.int32()), ("doc_id", pa.string()), ("rel", pa.float64())]
    ),
    "latency": pa.schema(
        [("qidx", pa.int32()), ("pos", pa.int32()), ("stage", pa.string()), ("ms", pa.float64())]
    ),
    "tokens": pa.schema(
        [("qidx", pa.int32()), ("pos", pa.int32()), ("kind", pa.string()), ("n", pa.int64())]
    ),
    "tags": pa.schema(
        [("qidx", pa.int32()), ("pos", pa.int32()), ("key", pa.string()), ("value", pa.string())]
    ),
    "labels": pa.schema(
        [("qidx", pa.int32()), ("pos", pa.int32()), ("name", pa.string()), ("label", pa.string())]
    ),
}
#: tables a run without them hashes as if they did not exist (content hashes from before the
#: table was added stay valid)
OPTIONAL_TABLES = frozenset({"labels"})
#: real-valued columns that held integers until they could hold fractions (relevance labels):
#: a whole value hashes as the integer it was, so content hashes from before stay valid
WHOLE_AS_INTEGER = frozenset({("qrels", "rel")})


# Built once: json.dumps with any non-default option builds a new encoder per call, which
# dominated import time with one metadata object per chunk.
_STORE_JSON = json.JSONEncoder(ensure_ascii=False)


def store_json(value: Mapping[str, Any]) -> str:
    """How a chunk's metadata and a query's judge object are kept in the store (one spelling)."""
    return _STORE_JSON.encode(value if type(value) is dict else dict(value))


class UseQueries(Exception):
    """Raised by a reader's column stream: this input needs another route.

    instead, when given, is the next column route to try (the native reader's DuckDB route hands
    over to its Python column route); else the line reader (ParsedRun.queries).
    """

    def __init__(self, instead: Iterable[ColumnBatch] | None = None) -> None:
        super().__init__()
        self.instead = instead


@dataclass(frozen=True, slots=True)
class ColumnBatch:
    """Rows of consecutive queries, one Arrow table per store table (BATCH_SCHEMAS, no run_id).

    qidx is each query's 0-based position in the whole run; rows are in (qidx, rank / eidx /
    pos) order, as the Query route writes them. Tables without rows may be left out.
    """

    n_queries: int
    tables: Mapping[str, pa.Table]

    @property
    def n_chunks(self) -> int:
        chunks = self.tables.get("chunks")
        return 0 if chunks is None else chunks.num_rows

    @property
    def max_depth(self) -> int:
        """The longest ranking in the batch (ranks run 1..n within each query)."""
        chunks = self.tables.get("chunks")
        if chunks is None or chunks.num_rows == 0:
            return 0
        return int(pc.max(chunks.column("rank")).as_py())


def arrow_table(table: str, columns: Mapping[str, Any]) -> pa.Table:
    """An Arrow table of one store table from column lists or arrays (typed by BATCH_SCHEMAS)."""
    return pa.Table.from_pydict(dict(columns), schema=BATCH_SCHEMAS[table])
