"""Answer metric values per query, computed once per run and kept (table answer_scores).

The store reads the texts and keeps the values; the metrics themselves come from the caller
(a score function), so the store needs nothing of rageval_core.metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from rageval_core.store.store import Store

#: queries whose answer metrics are computed at a time: bounds the texts held in memory
ANSWER_BLOCK = 5_000

#: (answers, reference answers, query texts, chunk texts per query: None for a query absent
#: from the run) -> {metric name: one value per query, NaN = not scored}
ScoreAnswers = Callable[
    [list[str], list[str | None], list[str | None], list[list[str | None] | None]],
    Mapping[str, NDArray[np.float64]],
]


def answer_score_counts(store: Store, run_id: int) -> dict[str, int]:
    """Kept rows per answer metric of the run (a metric not kept is absent)."""
    with store._cursor() as cur:
        return dict(
            cur.execute(
                "SELECT metric, count(*) FROM answer_scores WHERE run_id = ? GROUP BY metric",
                [run_id],
            ).fetchall()
        )


def keep_answer_scores(
    store: Store,
    run_id: int,
    n_queries: int,
    score: ScoreAnswers,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Score every answered query of the run, a block at a time, and keep the values; how many.

    One transaction, which first drops what the run kept before (a rageval with fewer answer
    metrics kept some): an interrupted computation keeps nothing. progress(done, total) is
    called per block of queries.
    """
    n_answers = 0
    with store._cursor() as cur:
        cur.begin()
        try:
            cur.execute("DELETE FROM answer_scores WHERE run_id = ?", [run_id])
            for lo in range(0, max(n_queries, 1), ANSWER_BLOCK):
                hi = lo + ANSWER_BLOCK
                n_answers += _keep_block(cur, run_id, lo, hi, score)
                if progress is not None:
                    progress(min(hi, n_queries), n_queries)
            cur.commit()
        except BaseException:
            cur.rollback()
            raise
    return n_answers


def _keep_block(cur: Any, run_id: int, lo: int, hi: int, score: ScoreAnswers) -> int:
    """Score the answered queries with lo <= qidx < hi and insert their rows; how many."""
    q = cur.execute(
        "SELECT qidx, answer, reference_answer, query, in_run FROM queries "
        "WHERE run_id = ? AND qidx >= ? AND qidx < ? AND answer IS NOT NULL ORDER BY qidx",
        [run_id, lo, hi],
    ).fetchall()
    if not q:
        return 0
    ch = cur.execute(
        "SELECT qidx, text FROM chunks WHERE run_id = ? AND qidx >= ? AND qidx < ? AND qidx IN "
        "(SELECT qidx FROM queries WHERE run_id = ? AND qidx >= ? AND qidx < ? "
        "AND answer IS NOT NULL) ORDER BY qidx, rank",
        [run_id, lo, hi, run_id, lo, hi],
    ).fetchall()
    texts: dict[int, list[str | None]] = {}
    for qidx, text in ch:
        texts.setdefault(qidx, []).append(text)
    scores = score(
        [r[1] for r in q],
        [r[2] for r in q],
        [r[3] for r in q],
        # a query absent from the run (judged only) has no chunk list at all, not an empty one
        [texts.get(r[0], []) if r[4] else None for r in q],
    )
    qidx = pa.array(np.asarray([r[0] for r in q], dtype=np.int32))
    parts = []
    for name, values in scores.items():
        n = values.size
        parts.append(
            pa.table(
                {
                    "run_id": pa.array(np.full(n, run_id, dtype=np.int64)),
                    "metric": pa.array([name] * n, type=pa.string()),
                    "qidx": qidx,
                    "value": pa.array(
                        values, mask=np.isnan(values)
                    ),  # NaN (not scored) kept as NULL
                }
            )
        )
    rageval_answers = pa.concat_tables(parts)  # noqa: F841 (read by name in the SQL below)
    cur.execute("INSERT INTO answer_scores SELECT * FROM rageval_answers")
    return len(q)


def kept_answer_scores(
    store: Store, run_id: int, names: Sequence[str]
) -> dict[str, dict[str, NDArray[Any]]] | None:
    """Each metric's kept (qidx, value) columns in qidx order (DuckDB's numpy: value may be masked).

    None when some metric is not kept for every answered query.
    """
    out: dict[str, dict[str, NDArray[Any]]] = {}
    with store._cursor() as cur:
        has_answers = cur.execute(
            "SELECT count(*) FROM queries WHERE run_id = ? AND answer IS NOT NULL", [run_id]
        ).fetchall()[0][0]
        for name in names:
            res = cur.execute(
                "SELECT qidx, value FROM answer_scores WHERE run_id = ? AND metric = ? ORDER BY qidx",
                [run_id, name],
            ).fetchnumpy()
            if len(res["qidx"]) != has_answers:
                return None
            out[name] = res
    return out


def answered_texts(store: Store, run_id: int) -> tuple[NDArray[np.int64], list[str], list[Any]]:
    """(qidx, answer, reference answer) of the run's answered queries, in qidx order."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT qidx, answer, reference_answer FROM queries "
            "WHERE run_id = ? AND answer IS NOT NULL ORDER BY qidx",
            [run_id],
        ).fetchall()
    qidx = np.asarray([r[0] for r in rows], dtype=np.int64)
    return qidx, [r[1] for r in rows], [r[2] for r in rows]


def keep_answer_metric(
    store: Store, run_id: int, metric: str, qidx: NDArray[np.int64], values: NDArray[np.float64]
) -> None:
    """Keep one answer metric's values (a model's: its name carries the model), replacing its
    rows of the run; NaN (not scored) kept as NULL. One transaction."""
    rageval_metric = pa.table(  # noqa: F841 (read by name in the SQL below)
        {
            "run_id": pa.array(np.full(qidx.size, run_id, dtype=np.int64)),
            "metric": pa.array([metric] * qidx.size, type=pa.string()),
            "qidx": pa.array(qidx.astype(np.int32)),
            "value": pa.array(values, mask=np.isnan(values)),
        }
    )
    with store._cursor() as cur:
        cur.begin()
        try:
            cur.execute(
                "DELETE FROM answer_scores WHERE run_id = ? AND metric = ?", [run_id, metric]
            )
            cur.execute("INSERT INTO answer_scores SELECT * FROM rageval_metric")
            cur.commit()
        except BaseException:
            cur.rollback()
            raise
