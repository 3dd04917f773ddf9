"""A person's verdicts on scored (gold span, chunk) pairs: kept per (run, scorer, normalisation)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rageval_core.matching.keys import ScorerKey
from rageval_core.store.schema import rollback_quietly
from rageval_core.store.store import Store


def set_pair_label(
    store: Store,
    run_id: int,
    key: ScorerKey,
    qidx: int,
    rank: int,
    eidx: int,
    label: bool | None,
) -> bool:
    """Keep label (True: match) for one kept pair, replacing any earlier one; None removes it.

    False, and nothing changed, when the run keeps no score for that pair. Delete + insert in
    one transaction: a pair never ends up with two labels, or none after a failed replace.
    """
    pair = [run_id, key.stored, key.norm.key, qidx, rank, eidx]
    with store._cursor() as cur:
        found = cur.execute(
            "SELECT count(*) FROM pair_scores WHERE run_id = ? AND scorer = ? AND norm = ? "
            "AND qidx = ? AND rank = ? AND eidx = ?",
            pair,
        ).fetchall()
        if not found[0][0]:
            return False
        cur.begin()
        try:
            cur.execute(
                "DELETE FROM pair_labels WHERE run_id = ? AND scorer = ? AND norm = ? "
                "AND qidx = ? AND rank = ? AND eidx = ?",
                pair,
            )
            if label is not None:
                cur.execute(
                    "INSERT INTO pair_labels (run_id, scorer, norm, qidx, rank, eidx, label, "
                    "labelled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [*pair, bool(label), datetime.now(UTC).isoformat(timespec="seconds")],
                )
            cur.commit()
        except BaseException:
            rollback_quietly(cur)
            raise
    return True


def pair_label_rows(store: Store, run_id: int, key: ScorerKey) -> list[tuple[Any, ...]]:
    """Every label of the run for the key (scorer and normalisation), by query, rank and span.

    Rows are (qidx, rank, eidx, label, score, query_id, doc_id, evidence text, labelled_at).
    """
    with store._cursor() as cur:
        return cur.execute(
            """SELECT l.qidx, l.rank, l.eidx, l.label, p.score, q.query_id, c.doc_id, e.text,
                      l.labelled_at
               FROM pair_labels l
               JOIN pair_scores p ON p.run_id = l.run_id AND p.scorer = l.scorer
                    AND p.norm = l.norm AND p.qidx = l.qidx AND p.rank = l.rank AND p.eidx = l.eidx
               JOIN queries q ON q.run_id = l.run_id AND q.qidx = l.qidx
               JOIN chunks c ON c.run_id = l.run_id AND c.qidx = l.qidx AND c.rank = l.rank
               JOIN evidence e ON e.run_id = l.run_id AND e.qidx = l.qidx AND e.eidx = l.eidx
               WHERE l.run_id = ? AND l.scorer = ? AND l.norm = ?
               ORDER BY l.qidx, l.rank, l.eidx""",
            [run_id, key.stored, key.norm.key],
        ).fetchall()
