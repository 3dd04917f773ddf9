"""Evidence x chunk pair scores, computed once per (run, scorer, normalisation) and kept.

Every k, threshold and retriever-score cut-off is then an array operation on the kept scores:
nothing here is called again when those move.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb
import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from rageval_core.matching.scorers import (
    Normalisation,
    PairScorer,
    PairScores,
    open_pair_scorer,
)
from rageval_core.errors import RagevalError
from rageval_core.matching.keys import ScorerKey
import rageval_core.store.journal as journal
from rageval_core.store.embeddings import StoreVectors
from rageval_core.store.schema import first_row, rollback_quietly
from rageval_core.store.store import IMPORT_MEMORY_LIMIT, RunRef, Store, _bytes

#: queries read and scored per block: two blocks' texts are held at once (one being scored,
#: the next being read), about 10 MB of chunk text each at 20 chunks of 500 characters
BLOCK_QUERIES = 1_000


@dataclass(frozen=True, slots=True)
class Scoring:
    """How a run's pairs were scored: cached (True) or just computed, with the time it took."""

    run_id: int
    scorer: str
    norm: str
    n_pairs: int
    seconds: float
    cached: bool


@dataclass(frozen=True, slots=True)
class PairRows:
    """The kept scores of one (run, scorer, normalisation), one row per (evidence, chunk) pair."""

    qidx: NDArray[np.int64]
    rank: NDArray[np.int64]  # 1-based rank of the chunk
    eidx: NDArray[np.int64]  # index of the gold span within its query
    score: NDArray[np.float32]
    start: NDArray[np.int32]  # best window in the original chunk text, -1 when none
    end: NDArray[np.int32]


#: one scoring at a time in a process: two at once (the dashboard's background thread and a
#: page scoring another run) would both insert the same embedding rows and clash on their key
_SCORING_LOCK = threading.RLock()


class ScoringCancelled(RagevalError):
    """ensure_scored stopped by its cancel event: nothing of that scoring is kept."""


def is_scored(
    store: Store, ref: RunRef, scorer: ScorerKey | str, norm: Normalisation | None = None
) -> bool:
    """Whether the run's pair scores for the key (or scorer and normalisation) are kept."""
    key = ScorerKey.parse(scorer, norm)
    run = store.run(ref)
    with store._cursor() as cur:
        return (
            first_row(
                cur.execute(
                    "SELECT 1 FROM scorings WHERE run_id = ? AND scorer = ? AND norm = ?",
                    [run.run_id, key.stored, key.norm.key],
                ).fetchall()
            )
            is not None
        )


def ensure_scored(
    store: Store,
    ref: RunRef,
    scorer: ScorerKey | str = "partial",
    norm: Normalisation | None = None,
    workers: int = 0,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> Scoring:
    """Score every (gold span, retrieved chunk) pair of the run unless already kept.

    One transaction: an interrupted scoring leaves no partial rows, and its journal row (done
    inside the same transaction) says at the next open that it was interrupted.
    progress(done, total) is called per block of queries. Blocks are pipelined: while the
    pool scores one, the next is read and the previous one's scores are inserted.
    cancel: checked between blocks; once set, the scoring stops with ScoringCancelled and its
    transaction is rolled back (scorings of other settings are untouched).
    scorer: a ScorerKey, or a key string read with norm (None: the default normalisation).
    """
    key = ScorerKey.parse(scorer, norm)  # unknown names fail before any work
    scorer, norm_key = key.stored, key.norm.key
    run = store.run(ref)
    with _SCORING_LOCK, store._cursor() as cur:
        row = first_row(
            cur.execute(
                "SELECT n_pairs, seconds FROM scorings WHERE run_id = ? AND scorer = ? AND norm = ?",
                [run.run_id, scorer, norm_key],
            ).fetchall()
        )
        if row is not None:
            return Scoring(run.run_id, scorer, norm_key, int(row[0]), float(row[1]), cached=True)
        started = time.perf_counter()
        n_pairs = 0
        entry = journal.begin(store, "scoring", f"run {run.name!r} ({scorer}, {norm_key})")
        cur.begin()
        try:
            pair_scorer = open_pair_scorer(key, workers, cache=StoreVectors(cur))
            with _capped_cache(cur), pair_scorer as pairs:
                waiting: _Block | None = None
                for lo in range(0, max(run.n_queries, 1), BLOCK_QUERIES):
                    if cancel is not None and cancel.is_set():
                        raise ScoringCancelled(f"scoring of run {run.name!r} cancelled")
                    block = _start_block(cur, pairs, run.run_id, lo, lo + BLOCK_QUERIES)
                    if waiting is not None:
                        n_pairs += _store_block(cur, waiting, run.run_id, key)
                        if progress is not None:
                            progress(min(waiting.hi, run.n_queries), run.n_queries)
                    waiting = block
                if waiting is not None:
                    n_pairs += _store_block(cur, waiting, run.run_id, key)
                    if progress is not None:
                        progress(min(waiting.hi, run.n_queries), run.n_queries)
            seconds = time.perf_counter() - started
            cur.execute(
                "INSERT INTO scorings VALUES (?, ?, ?, ?, ?, ?)",
                [
                    run.run_id,
                    scorer,
                    norm_key,
                    n_pairs,
                    seconds,
                    datetime.now(UTC).isoformat(timespec="seconds"),
                ],
            )
            journal.finish_in(cur, entry)
            cur.commit()
        except BaseException as e:
            rollback_quietly(cur)
            journal.finish(store, entry, journal.FAILED, type(e).__name__)
            raise
    return Scoring(run.run_id, scorer, norm_key, n_pairs, seconds, cached=False)


@contextmanager
def _capped_cache(cur: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB's memory_limit lowered to the import's cap while a file-backed store is scored.

    Scoring reads every chunk text of the run once, and DuckDB keeps each block it reads
    cached up to its limit (80% of RAM by default): the process would grow by the texts' size
    on disk (300 MB at 100,000 queries). A limit set by hand, or lower already, is left alone.
    """
    path = first_row(
        cur.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()
    )
    query = "SELECT current_setting('memory_limit')"
    before = first_row(cur.execute(query).fetchall())
    if path is None or path[0] is None or before is None:
        yield
        return
    with duckdb.connect(":memory:") as fresh:
        default = first_row(fresh.execute(query).fetchall())
    if before != default or _bytes(str(before[0])) <= _bytes(IMPORT_MEMORY_LIMIT):
        yield
        return
    cur.execute(f"SET memory_limit = '{IMPORT_MEMORY_LIMIT}'")  # our own constant
    try:
        yield
    finally:
        with suppress(duckdb.Error):
            cur.execute("RESET memory_limit")


@dataclass(frozen=True, slots=True)
class _Block:
    """One block of queries whose pairs are being scored: their keys, and the scores to come."""

    hi: int
    qidx: NDArray[np.int32]
    rank: NDArray[np.int32]
    eidx: NDArray[np.int32]
    scores: Callable[[], PairScores]


def _start_block(cur, pairs: PairScorer, run_id: int, lo: int, hi: int) -> _Block:  # type: ignore[no-untyped-def]
    """Read the texts of queries [lo, hi) and hand every (span, chunk) pair to the scorer."""
    ev = _in_order(
        cur.execute(
            "SELECT qidx, eidx, text FROM evidence WHERE run_id = ? AND qidx >= ? AND qidx < ?",
            [run_id, lo, hi],
        ).fetchnumpy(),
        "eidx",
    )
    empty = np.zeros(0, dtype=np.int32)
    if len(ev["qidx"]) == 0:
        return _Block(hi, empty, empty, empty, _nothing)
    ch = _in_order(
        cur.execute(
            "SELECT qidx, rank, text FROM chunks WHERE run_id = ? AND qidx >= ? AND qidx < ? "
            "AND text IS NOT NULL",
            [run_id, lo, hi],
        ).fetchnumpy(),
        "rank",
    )
    ev_q = np.asarray(ev["qidx"], dtype=np.int64) - lo
    ch_q = np.asarray(ch["qidx"], dtype=np.int64) - lo
    ev_count = np.bincount(ev_q, minlength=hi - lo)
    ev_first = np.cumsum(ev_count) - ev_count
    # every chunk paired with every gold span of its query
    per_chunk = ev_count[ch_q]
    pair_ch = np.repeat(np.arange(ch_q.size), per_chunk)
    offsets = np.arange(pair_ch.size) - np.repeat(np.cumsum(per_chunk) - per_chunk, per_chunk)
    pair_ev = ev_first[ch_q][pair_ch] + offsets
    if pair_ch.size == 0:
        return _Block(hi, empty, empty, empty, _nothing)
    scores = pairs.submit(ev["text"].tolist(), ch["text"].tolist(), pair_ev, pair_ch)
    return _Block(
        hi,
        qidx=(ch_q[pair_ch] + lo).astype(np.int32),
        rank=np.asarray(ch["rank"], dtype=np.int32)[pair_ch],
        eidx=np.asarray(ev["eidx"], dtype=np.int32)[pair_ev],
        scores=scores,
    )


def _in_order(columns: dict[str, np.ndarray], then: str) -> dict[str, np.ndarray]:
    """Rows ordered by (qidx, then): sorted here, as SQL's ORDER BY costs more on long texts."""
    order = np.lexsort((columns[then], columns["qidx"]))
    if np.array_equal(order, np.arange(order.size)):  # rows come in insertion order, usually sorted
        return columns
    return {name: values[order] for name, values in columns.items()}


def _nothing() -> PairScores:
    empty = np.zeros(0, dtype=np.int32)
    return PairScores(np.zeros(0, dtype=np.float32), empty, empty)


def _store_block(cur, block: _Block, run_id: int, key: ScorerKey) -> int:  # type: ignore[no-untyped-def]
    """Wait for a block's scores and insert them; the number of pairs."""
    n = int(block.qidx.size)
    if n == 0:
        return 0
    scores = block.scores()
    rageval_scores = pa.table(  # noqa: F841 (read by name in the SQL: DuckDB's replacement scan)
        {
            "qidx": block.qidx,
            "rank": block.rank,
            "eidx": block.eidx,
            "score": scores.score,
            "span_start": scores.start,
            "span_end": scores.end,
        }
    )
    # Read by name, not register()ed: DuckDB 2.0 keeps every registered table alive until the
    # transaction ends, ~2 MB a block, 400 MB more at 100,000 queries. The run, scorer and
    # normalisation are the same on every row: parameters, not columns.
    cur.execute(
        "INSERT INTO pair_scores (run_id, scorer, norm, qidx, rank, eidx, score, span_start, "
        "span_end) SELECT ?, ?, ?, qidx, rank, eidx, score, span_start, span_end "
        "FROM rageval_scores",
        [run_id, key.stored, key.norm.key],
    )
    return n


def load_pair_rows(
    store: Store,
    ref: RunRef,
    scorer: ScorerKey | str = "partial",
    norm: Normalisation | None = None,
) -> PairRows:
    """The kept scores (scoring them first when they are not kept yet)."""
    run = store.run(ref)
    key = ScorerKey.parse(scorer, norm)
    ensure_scored(store, run.run_id, key)
    with store._cursor() as cur:
        res = cur.execute(
            "SELECT qidx, rank, eidx, score, span_start, span_end FROM pair_scores "
            "WHERE run_id = ? AND scorer = ? AND norm = ? ORDER BY qidx, rank, eidx",
            [run.run_id, key.stored, key.norm.key],
        ).fetchnumpy()
    return PairRows(
        qidx=np.asarray(res["qidx"], dtype=np.int64),
        rank=np.asarray(res["rank"], dtype=np.int64),
        eidx=np.asarray(res["eidx"], dtype=np.int64),
        score=np.asarray(res["score"], dtype=np.float32),
        start=np.asarray(res["span_start"], dtype=np.int32),
        end=np.asarray(res["span_end"], dtype=np.int32),
    )


def pair_score_table(store: Store, run_id: int, key: ScorerKey) -> pa.Table:
    """The kept scores as Arrow: qidx, rank, eidx, score only, in storage order (no sort)."""
    with store._cursor() as cur:
        return cur.sql(  # type: ignore[union-attr]
            "SELECT qidx, rank, eidx, score FROM pair_scores "
            "WHERE run_id = ? AND scorer = ? AND norm = ?",
            params=[run_id, key.stored, key.norm.key],
        ).to_arrow_table()


def kept_pair_count(store: Store, ref: RunRef, scorer: ScorerKey | str) -> int:
    """How many pair scores the run keeps for scorer, every normalisation together."""
    run_id = store.run(ref).run_id
    stored = ScorerKey.parse(scorer).stored
    with store._cursor() as cur:
        row = first_row(
            cur.execute(
                "SELECT count(*) FROM pair_scores WHERE run_id = ? AND scorer = ?", [run_id, stored]
            ).fetchall()
        )
    return int(row[0]) if row else 0


@dataclass(frozen=True, slots=True)
class SpanPairs:
    """One span's scores against every retrieved chunk with text of its query (not kept)."""

    rank: NDArray[np.int64]  # 1-based
    score: NDArray[np.float32]
    start: NDArray[np.int64]  # window in the original chunk text; -1: none
    end: NDArray[np.int64]
    numbers_ok: NDArray[np.bool_]  # False: the span holds a number the chunk does not


def score_spans(
    store: Store, run_id: int, key: ScorerKey, spans: list[tuple[int, str]]
) -> list[SpanPairs]:
    """Score spans (qidx, text) that are not the run's own (gold spans added in rageval: the
    store-wide added_evidence) against their queries' retrieved chunks, by the scorer the
    run's own pairs are scored with; one SpanPairs per span, in order. Not kept: the caller
    keeps them for as long as its arrays live, and scores a new span alone."""
    from rageval_core.matching.numbers import missing_numbers

    wanted = sorted({q for q, _ in spans})
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT qidx, rank, text FROM chunks WHERE run_id = ? "
            "AND qidx IN (SELECT unnest(?::INTEGER[])) AND text IS NOT NULL ORDER BY qidx, rank",
            [run_id, wanted],
        ).fetchall()
        by_query: dict[int, list[tuple[int, str]]] = {}
        for q, r, t in rows:
            by_query.setdefault(int(q), []).append((int(r), str(t)))
        texts: list[str] = []
        ranks: list[int] = []
        pair_ev: list[int] = []
        ok: list[bool] = []
        for i, (q, span) in enumerate(spans):
            for r, t in by_query.get(q, []):
                pair_ev.append(i)
                ranks.append(r)
                texts.append(t)
                ok.append(not missing_numbers(span, t))
        if texts:
            with open_pair_scorer(key, 1, cache=StoreVectors(cur)) as pairs:
                got = pairs.submit(
                    [s for _, s in spans],
                    texts,
                    np.asarray(pair_ev, dtype=np.int64),
                    np.arange(len(texts), dtype=np.int64),
                )()
        else:
            got = _nothing()
    ev = np.asarray(pair_ev, dtype=np.int64)
    out = []
    for i in range(len(spans)):
        sel = np.flatnonzero(ev == i)
        out.append(
            SpanPairs(
                rank=np.asarray(ranks, dtype=np.int64)[sel],
                score=np.asarray(got.score, dtype=np.float32)[sel],
                start=np.asarray(got.start, dtype=np.int64)[sel],
                end=np.asarray(got.end, dtype=np.int64)[sel],
                numbers_ok=np.asarray(ok, dtype=np.bool_)[sel],
            )
        )
    return out
