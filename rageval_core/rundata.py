"""One run's rows as numpy arrays (queries x ranks), loaded from the store once.

Everything that moves in the UI (k, threshold, score cut-off, relevance level) is then an array
operation on these: no SQL and no text scoring per change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.matching import Normalisation
from rageval_core.store import RunRecord, Store
from rageval_core.store.scores import load_pair_rows
from rageval_core.store.store import RunRef

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class RunData:
    """The arrays of one stored run; row q is the query at qidx q (file order)."""

    run: RunRecord
    query_ids: NDArray[np.object_]  # (n,)
    in_run: NDArray[np.bool_]  # (n,) False: judged only, absent from the run
    has_qrels: NDArray[np.bool_]  # (n,)
    n_ret: Ints  # (n,) chunks retrieved
    labels: NDArray[np.int32]  # (n, depth) qrels label at each rank, >= 0 (0: unjudged)
    chunk_score: Floats  # (n, depth) retriever score, NaN when absent or beyond the list
    judged_q: Ints  # one row per qrels line: query index
    judged_label: NDArray[np.int32]  # ... and its label
    n_spans: Ints  # (n,) gold evidence spans
    tags: dict[str, NDArray[np.object_]]  # key -> (n,) value or None
    latency_q: Ints  # one row per (query, stage)
    latency_stage: NDArray[np.object_]
    latency_ms: Floats
    tokens_q: Ints  # one row per (query, kind)
    tokens_kind: NDArray[np.object_]
    tokens_n: Ints
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def n_queries(self) -> int:
        return int(self.query_ids.size)

    @property
    def depth(self) -> int:
        return int(self.labels.shape[1])


def load_run_data(store: Store, ref: RunRef) -> RunData:
    """Read one run's numeric rows (not its texts) into dense arrays."""
    run = store.run(ref)
    rid = run.run_id
    n = run.n_queries
    with store._cursor() as cur:
        q = cur.execute(
            "SELECT query_id, in_run, has_qrels FROM queries WHERE run_id = ? ORDER BY qidx", [rid]
        ).fetchnumpy()
        # The label of a chunk is its document's qrels label, at the document's first rank only
        # (a repeated document cannot be found twice): as trec_eval's -c/duplicate handling.
        ch = cur.execute(
            """SELECT c.qidx, c.rank, c.score,
                      CASE WHEN row_number() OVER (PARTITION BY c.qidx, c.doc_id ORDER BY c.rank) = 1
                           THEN coalesce(r.rel, 0) ELSE 0 END AS label
               FROM chunks c LEFT JOIN qrels r
                 ON r.run_id = c.run_id AND r.qidx = c.qidx AND r.doc_id = c.doc_id
               WHERE c.run_id = ?""",
            [rid],
        ).fetchnumpy()
        judged = cur.execute("SELECT qidx, rel FROM qrels WHERE run_id = ?", [rid]).fetchnumpy()
        spans = cur.execute(
            "SELECT qidx, count(*) AS n FROM evidence WHERE run_id = ? GROUP BY qidx", [rid]
        ).fetchnumpy()
        tags = cur.execute("SELECT qidx, key, value FROM tags WHERE run_id = ?", [rid]).fetchnumpy()
        lat = cur.execute("SELECT qidx, stage, ms FROM latency WHERE run_id = ?", [rid]).fetchnumpy()
        tok = cur.execute("SELECT qidx, kind, n FROM tokens WHERE run_id = ?", [rid]).fetchnumpy()

    depth = run.max_depth
    cq = np.asarray(ch["qidx"], dtype=np.int64)
    cr = np.asarray(ch["rank"], dtype=np.int64) - 1
    labels = np.zeros((n, depth), dtype=np.int32)
    # a negative label is "judged, never relevant" (trec_eval): gain 0, as RankedLabels expects
    labels[cq, cr] = np.maximum(np.asarray(ch["label"], dtype=np.int32), 0)
    chunk_score = np.full((n, depth), np.nan)
    chunk_score[cq, cr] = _floats(ch["score"])
    n_ret = np.bincount(cq, minlength=n).astype(np.int64)
    n_spans = np.zeros(n, dtype=np.int64)
    n_spans[np.asarray(spans["qidx"], dtype=np.int64)] = np.asarray(spans["n"], dtype=np.int64)
    tag_values: dict[str, NDArray[np.object_]] = {}
    keys = np.asarray(tags["key"], dtype=object)
    for key in dict.fromkeys(keys.tolist()):
        col = np.full(n, None, dtype=object)
        sel = keys == key
        col[np.asarray(tags["qidx"], dtype=np.int64)[sel]] = np.asarray(tags["value"], dtype=object)[sel]
        tag_values[key] = col
    return RunData(
        run=run,
        query_ids=np.asarray(q["query_id"], dtype=object),
        in_run=np.asarray(q["in_run"], dtype=bool),
        has_qrels=np.asarray(q["has_qrels"], dtype=bool),
        n_ret=n_ret,
        labels=labels,
        chunk_score=chunk_score,
        judged_q=np.asarray(judged["qidx"], dtype=np.int64),
        judged_label=np.asarray(judged["rel"], dtype=np.int32),
        n_spans=n_spans,
        tags=tag_values,
        latency_q=np.asarray(lat["qidx"], dtype=np.int64),
        latency_stage=np.asarray(lat["stage"], dtype=object),
        latency_ms=_floats(lat["ms"]),
        tokens_q=np.asarray(tok["qidx"], dtype=np.int64),
        tokens_kind=np.asarray(tok["kind"], dtype=object),
        tokens_n=np.asarray(tok["n"], dtype=np.int64),
    )


def _floats(column: Any) -> Floats:
    """A DuckDB numeric column (maybe masked for NULLs) as float64 with NaN for NULL."""
    if isinstance(column, np.ma.MaskedArray):
        return np.ma.filled(column.astype(np.float64), np.nan)
    return np.asarray(column, dtype=np.float64)


def evidence_tensor(
    store: Store, data: RunData, scorer: str = "partial", norm: Normalisation = Normalisation()
) -> NDArray[np.float32]:
    """(n, depth, max spans) pair scores: NaN where the chunk or the span does not exist.

    A retrieved chunk without text scores 0 against every span. Scored once per
    (run, scorer, normalisation) and kept in the store; cached on data as well.
    """
    key = ("evidence", scorer, norm.key)
    if key in data._cache:
        return data._cache[key]  # type: ignore[no-any-return]
    rows = load_pair_rows(store, data.run.run_id, scorer, norm)
    width = int(data.n_spans.max()) if data.n_queries else 0
    tensor = np.full((data.n_queries, data.depth, width), np.nan, dtype=np.float32)
    exists = (np.arange(data.depth)[None, :, None] < data.n_ret[:, None, None]) & (
        np.arange(width)[None, None, :] < data.n_spans[:, None, None]
    )
    tensor[exists] = 0.0
    tensor[rows.qidx, rows.rank - 1, rows.eidx] = rows.score
    data._cache[key] = tensor
    return tensor
