"""What the failure diagnosis (rageval_core.diagnosis) asks of a stored run: the texts its split
check reads, and where each relevant document of the qrels is ranked (its two-stage split)."""

from __future__ import annotations

from rageval_core.store.reads import Row
from rageval_core.store.store import Store


def split_texts(store: Store, run_id: int, qidx: list[int]) -> tuple[list[Row], list[Row]]:
    """The gold spans (qidx, eidx, text) and the chunks (qidx, rank, text) of the given queries,
    each ordered by query, then index or rank (a chunk without text has text None)."""
    with store._cursor() as cur:
        spans = cur.execute(
            "SELECT qidx, eidx, text FROM evidence WHERE run_id = ? "
            "AND qidx IN (SELECT unnest(?::INTEGER[])) ORDER BY qidx, eidx",
            [run_id, qidx],
        ).fetchall()
        chunks = cur.execute(
            "SELECT qidx, rank, text FROM chunks WHERE run_id = ? "
            "AND qidx IN (SELECT unnest(?::INTEGER[])) ORDER BY qidx, rank",
            [run_id, qidx],
        ).fetchall()
    return spans, chunks


def relevant_ranks(store: Store, run_id: int, rel_level: float) -> list[Row]:
    """(query_id, doc_id, first rank or None) of every document the run's qrels label at least
    rel_level, in query then qrels order; None when the run's list does not hold it."""
    with store._cursor() as cur:
        return cur.execute(
            """SELECT q.query_id, r.doc_id, min(c.rank) AS rank
               FROM qrels r
               JOIN queries q ON q.run_id = r.run_id AND q.qidx = r.qidx
               LEFT JOIN chunks c ON c.run_id = r.run_id AND c.qidx = r.qidx AND c.doc_id = r.doc_id
               WHERE r.run_id = ? AND r.rel >= ?
               GROUP BY q.query_id, r.qidx, r.pos, r.doc_id
               ORDER BY r.qidx, r.pos""",
            [run_id, rel_level],
        ).fetchall()
