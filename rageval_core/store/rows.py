"""Query objects to column batches (for bulk inserts) and table rows back to Query objects."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from rageval_core.formats.base import info_to_json
from rageval_core.formats.native import query_to_json
from rageval_core.model import Chunk, Query, RunInfo

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
        [("qidx", pa.int32()), ("pos", pa.int32()), ("doc_id", pa.string()), ("rel", pa.int32())]
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
}


# Encoders built once: json.dumps with any non-default option builds a new encoder per call,
# which dominated import time with one metadata object per chunk.
_STORE_JSON = json.JSONEncoder(ensure_ascii=False)
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_DECODE = json.JSONDecoder().decode


def _dumps(value: Mapping[str, Any]) -> str:
    return _STORE_JSON.encode(value if type(value) is dict else dict(value))


def canonical_json(obj: Any) -> bytes:
    """One spelling per value: sorted keys, no spaces, UTF-8."""
    return _CANONICAL_JSON.encode(obj).encode("utf-8", "surrogatepass")


def _hashable_query(q: Query) -> dict[str, Any]:
    """query_to_json(q) with numbers typed as the store keeps them (12 and 12.0 hash alike)."""
    obj = query_to_json(q)
    for chunk in obj.get("retrieved") or ():
        if "score" in chunk:
            chunk["score"] = float(chunk["score"])
    if "relevance" in obj:
        obj["relevance"] = {k: int(v) for k, v in obj["relevance"].items()}
    if "latency_ms" in obj:
        obj["latency_ms"] = {k: float(v) for k, v in obj["latency_ms"].items()}
    if "tokens" in obj:
        obj["tokens"] = {k: int(v) for k, v in obj["tokens"].items()}
    return obj


class ContentHasher:
    """sha256 over the run facts (minus the name) and every query, one canonical JSON line each."""

    def __init__(self, info: RunInfo) -> None:
        facts = info_to_json(info)
        facts.pop("name", None)
        prices = facts.get("prices_per_1k")
        if prices:
            facts["prices_per_1k"] = {k: float(v) for k, v in prices.items()}
        self._sha = hashlib.sha256(canonical_json({"rageval_run": facts}) + b"\n")

    def add(self, q: Query) -> None:
        self._sha.update(canonical_json(_hashable_query(q)) + b"\n")

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


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
        qc["judge"].append(_dumps(q.judge) if q.judge else None)
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
                cc["metadata"].append(_dumps(c.metadata) if c.metadata else None)
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
        ):
            if mapping:
                tc = cols[table]
                for pos, (key, value) in enumerate(mapping.items()):
                    tc["qidx"].append(qidx)
                    tc["pos"].append(pos)
                    tc[key_col].append(key)
                    tc[val_col].append(value)
                self.n_rows += len(mapping)

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
                relevance={d: r for _, d, r in qrels.get(qidx, ())} if has_qrels else None,
                evidence=tuple(text for _, text in evidence.get(qidx, ())),
                answer=answer,
                reference_answer=reference_answer,
                latency_ms={s: ms for _, s, ms in latency.get(qidx, ())},
                tokens={k: n for _, k, n in tokens.get(qidx, ())},
                tags={k: v for _, k, v in tags.get(qidx, ())},
                judge=_DECODE(judge) if judge is not None else {},
            )
        )
    return out
