"""Evidence x chunk pair scores, computed once per (run, scorer, normalisation) and kept.

Every k, threshold and retriever-score cut-off is then an array operation on the kept scores:
nothing here is called again when those move.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from rageval_core.matching import Normalisation, get_scorer, score_pairs
from rageval_core.store import journal
from rageval_core.store.schema import first_row
from rageval_core.store.store import RunRef, Store

#: queries scored per block: bounds the texts held in memory at once
BLOCK_QUERIES = 20_000


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


def ensure_scored(
    store: Store,
    ref: RunRef,
    scorer: str = "partial",
    norm: Normalisation = Normalisation(),
    workers: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> Scoring:
    """Score every (gold span, retrieved chunk) pair of the run unless already kept.

    One transaction: an interrupted scoring leaves no partial rows, and its journal row (done
    inside the same transaction) says at the next open that it was interrupted.
    progress(done, total) is called per block of queries.
    """
    get_scorer(scorer)  # unknown names fail before any work
    run = store.run(ref)
    with store._cursor() as cur:
        row = first_row(
            cur.execute(
                "SELECT n_pairs, seconds FROM scorings WHERE run_id = ? AND scorer = ? AND norm = ?",
                [run.run_id, scorer, norm.key],
            ).fetchall()
        )
        if row is not None:
            return Scoring(run.run_id, scorer, norm.key, int(row[0]), float(row[1]), cached=True)
        started = time.perf_counter()
        n_pairs = 0
        entry = journal.begin(store, "scoring", f"run {run.name!r} ({scorer}, {norm.key})")
        cur.begin()
        try:
            for lo in range(0, max(run.n_queries, 1), BLOCK_QUERIES):
                hi = lo + BLOCK_QUERIES
                n_pairs += _score_block(cur, run.run_id, lo, hi, scorer, norm, workers)
                if progress is not None:
                    progress(min(hi, run.n_queries), run.n_queries)
            seconds = time.perf_counter() - started
            cur.execute(
                "INSERT INTO scorings VALUES (?, ?, ?, ?, ?, ?)",
                [run.run_id, scorer, norm.key, n_pairs, seconds,
                 datetime.now(UTC).isoformat(timespec="seconds")],
            )
            journal.finish_in(cur, entry)
            cur.commit()
        except BaseException as e:
            cur.rollback()
            journal.finish(store, entry, journal.FAILED, type(e).__name__)
            raise
    return Scoring(run.run_id, scorer, norm.key, n_pairs, seconds, cached=False)


def _score_block(cur, run_id: int, lo: int, hi: int, scorer: str, norm: Normalisation, workers: int) -> int:  # type: ignore[no-untyped-def]
    ev = cur.execute(
        "SELECT qidx, eidx, text FROM evidence WHERE run_id = ? AND qidx >= ? AND qidx < ? "
        "ORDER BY qidx, eidx",
        [run_id, lo, hi],
    ).fetchnumpy()
    if len(ev["qidx"]) == 0:
        return 0
    ch = cur.execute(
        "SELECT qidx, rank, text FROM chunks WHERE run_id = ? AND qidx >= ? AND qidx < ? "
        "AND text IS NOT NULL ORDER BY qidx, rank",
        [run_id, lo, hi],
    ).fetchnumpy()
    ev_q = np.asarray(ev["qidx"], dtype=np.int64) - lo
    ch_q = np.asarray(ch["qidx"], dtype=np.int64) - lo
    width = hi - lo
    ev_count = np.bincount(ev_q, minlength=width)
    ev_first = np.cumsum(ev_count) - ev_count
    # every chunk paired with every gold span of its query
    per_chunk = ev_count[ch_q]
    pair_ch = np.repeat(np.arange(ch_q.size), per_chunk)
    offsets = np.arange(pair_ch.size) - np.repeat(np.cumsum(per_chunk) - per_chunk, per_chunk)
    pair_ev = ev_first[ch_q][pair_ch] + offsets
    if pair_ch.size == 0:
        return 0
    scores = score_pairs(
        list(ev["text"]), list(ch["text"]), pair_ev, pair_ch, scorer=scorer, norm=norm, workers=workers
    )
    n = int(pair_ch.size)
    table = pa.table(
        {
            "run_id": pa.array(np.full(n, run_id, dtype=np.int64)),
            "scorer": pa.array([scorer] * n, type=pa.string()),
            "norm": pa.array([norm.key] * n, type=pa.string()),
            "qidx": pa.array((ch_q[pair_ch] + lo).astype(np.int32)),
            "rank": pa.array(np.asarray(ch["rank"], dtype=np.int32)[pair_ch]),
            "eidx": pa.array(np.asarray(ev["eidx"], dtype=np.int32)[pair_ev]),
            "score": pa.array(scores.score),
            "span_start": pa.array(scores.start),
            "span_end": pa.array(scores.end),
        }
    )
    cur.register("rageval_scores", table)
    try:
        cur.execute("INSERT INTO pair_scores SELECT * FROM rageval_scores")
    finally:
        cur.unregister("rageval_scores")
    return n


def load_pair_rows(
    store: Store, ref: RunRef, scorer: str = "partial", norm: Normalisation = Normalisation()
) -> PairRows:
    """The kept scores (scoring them first when they are not kept yet)."""
    run = store.run(ref)
    ensure_scored(store, run.run_id, scorer, norm)
    with store._cursor() as cur:
        res = cur.execute(
            "SELECT qidx, rank, eidx, score, span_start, span_end FROM pair_scores "
            "WHERE run_id = ? AND scorer = ? AND norm = ? ORDER BY qidx, rank, eidx",
            [run.run_id, scorer, norm.key],
        ).fetchnumpy()
    return PairRows(
        qidx=np.asarray(res["qidx"], dtype=np.int64),
        rank=np.asarray(res["rank"], dtype=np.int64),
        eidx=np.asarray(res["eidx"], dtype=np.int64),
        score=np.asarray(res["score"], dtype=np.float32),
        start=np.asarray(res["span_start"], dtype=np.int32),
        end=np.asarray(res["span_end"], dtype=np.int32),
    )
