"""The ground truth made in rageval: relevance grades per (query, document) and added gold
evidence spans, by people, adjudication or an LLM judge (issue 31).

Both are store-wide, keyed by query_id and doc_id like a TREC qrels file (migration 10): every
run of the store with that query id sees them, and nothing here belongs to one run, so renaming,
re-importing or deleting a run, or attaching its qrels, loses none of them. A run's own imported
qrels and evidence stay in its tables and are never overwritten; which labels count is the
`labels` setting (rageval_core.evaluation.labels).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from rageval_core.errors import UsageError
from rageval_core.store.schema import rollback_quietly
from rageval_core.store.store import Store

#: Sources of a grade made in rageval. An LLM's source is "llm:" + its model name.
PEOPLE = "people"
ADJUDICATED = "adjudicated"
LLM_PREFIX = "llm:"


@dataclass(frozen=True, slots=True)
class GradeRow:
    """One stored grade: who (source, annotator) gave which grade to (query_id, doc_id), when."""

    query_id: str
    doc_id: str
    source: str
    annotator: str
    grade: float
    labelled_at: str


@dataclass(frozen=True, slots=True)
class AddedSpan:
    """A gold evidence span a person added to a query (doc_id: the chunk's document, or None)."""

    query_id: str
    text: str
    doc_id: str | None
    annotator: str
    added_at: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_source(source: str) -> str:
    """source itself when it is 'people', 'adjudicated' or 'llm:MODEL' (UsageError otherwise)."""
    if source in (PEOPLE, ADJUDICATED) or (
        source.startswith(LLM_PREFIX) and len(source) > len(LLM_PREFIX)
    ):
        return source
    raise UsageError(f"label source {source!r}: expected people, adjudicated or llm:MODEL")


def _check_name(what: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{what} must not be empty")
    return value


def set_grade(
    store: Store,
    query_id: str,
    doc_id: str,
    grade: float | None,
    *,
    annotator: str,
    source: str = PEOPLE,
) -> None:
    """Keep annotator's grade of doc_id for query_id under source, replacing their earlier one;
    None takes it back. One transaction: never two grades from one annotator, nor none after a
    failed replace."""
    set_grades(store, [(query_id, doc_id, grade)], annotator=annotator, source=source)


def set_grades(
    store: Store,
    grades: Iterable[tuple[str, str, float | None]],
    *,
    annotator: str,
    source: str = PEOPLE,
) -> int:
    """set_grade for many (query_id, doc_id, grade) in one transaction; returns how many."""
    check_source(source)
    _check_name("an annotator's name", annotator)
    rows = list(grades)
    for _, _, grade in rows:
        if grade is not None and not (isinstance(grade, int | float) and math.isfinite(grade)):
            raise UsageError(f"a grade must be a finite number, not {grade!r}")
    now = _now()
    _keep(store, [(q, d, source, annotator, g, now) for q, d, g in rows])
    return len(rows)


def grade_rows(
    store: Store, query_ids: Iterable[str] | None = None, sources: Iterable[str] | None = None
) -> list[GradeRow]:
    """Every stored grade (of query_ids and sources when given), by query, document, source,
    annotator."""
    sql = "SELECT query_id, doc_id, source, annotator, grade, labelled_at FROM relevance_labels"
    where: list[str] = []
    params: list[object] = []
    # a semi-join on the unnested list: list_contains per row is far slower on many ids
    if query_ids is not None:
        where.append("query_id IN (SELECT unnest(?::VARCHAR[]))")
        params.append(list(query_ids))
    if sources is not None:
        where.append("source IN (SELECT unnest(?::VARCHAR[]))")
        params.append(list(sources))
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY query_id, doc_id, source, annotator"
    with store._cursor() as cur:
        rows = cur.execute(sql, params).fetchall()
    return [GradeRow(str(q), str(d), str(s), str(a), float(g), str(t)) for q, d, s, a, g, t in rows]


def label_sources(store: Store) -> list[tuple[str, str, int]]:
    """(source, annotator, number of grades) of every label set in the store."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT source, annotator, count(*) FROM relevance_labels "
            "GROUP BY source, annotator ORDER BY source, annotator"
        ).fetchall()
    return [(str(s), str(a), int(n)) for s, a, n in rows]


def grades_signature(store: Store) -> tuple[int, int, int, int]:
    """(grades, hash of every grade, spans, hash of every span): cheap, and it changes with every
    label or span given, changed or taken back, so a cache keyed by it sees them."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT (SELECT count(*) FROM relevance_labels),"
            " (SELECT coalesce(sum(hash(query_id, doc_id, source, annotator, grade)::HUGEINT), 0)"
            "  FROM relevance_labels),"
            " (SELECT count(*) FROM added_evidence),"
            " (SELECT coalesce(sum(hash(query_id, text, doc_id, annotator)::HUGEINT), 0)"
            "  FROM added_evidence)"
        ).fetchall()
    return int(rows[0][0]), int(rows[0][1]), int(rows[0][2]), int(rows[0][3])


def add_span(
    store: Store, query_id: str, text: str, *, annotator: str, doc_id: str | None = None
) -> bool:
    """Add text as a gold evidence span of query_id; False when that span was added already."""
    _check_name("an annotator's name", annotator)
    if not text.strip():
        raise UsageError("an evidence span must not be empty")
    with store._cursor() as cur:
        found = cur.execute(
            "SELECT count(*) FROM added_evidence WHERE query_id = ? AND text = ?", [query_id, text]
        ).fetchall()
        if found[0][0]:
            return False
        cur.execute(
            "INSERT INTO added_evidence (query_id, text, doc_id, annotator, added_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [query_id, text, doc_id, annotator, _now()],
        )
    return True


def remove_span(store: Store, query_id: str, text: str) -> bool:
    """Take an added span back; False when there was none (imported spans are never touched)."""
    with store._cursor() as cur:
        found = cur.execute(
            "SELECT count(*) FROM added_evidence WHERE query_id = ? AND text = ?", [query_id, text]
        ).fetchall()
        if not found[0][0]:
            return False
        cur.execute("DELETE FROM added_evidence WHERE query_id = ? AND text = ?", [query_id, text])
    return True


def added_spans(store: Store, query_ids: Iterable[str] | None = None) -> list[AddedSpan]:
    """Every added span (of query_ids when given), by query and time added."""
    sql = "SELECT query_id, text, doc_id, annotator, added_at FROM added_evidence"
    params: list[object] = []
    if query_ids is not None:
        sql += " WHERE query_id IN (SELECT unnest(?::VARCHAR[]))"
        params.append(list(query_ids))
    sql += " ORDER BY query_id, added_at, text"
    with store._cursor() as cur:
        rows = cur.execute(sql, params).fetchall()
    return [
        AddedSpan(str(q), str(t), None if d is None else str(d), str(a), str(w))
        for q, t, d, a, w in rows
    ]


def run_label_rows(
    store: Store, run_id: int, qidxs: Iterable[int]
) -> tuple[list[tuple[int, str, float]], list[tuple[int, int, str]]]:
    """The imported qrels (qidx, doc_id, rel) and the retrieved documents (qidx, rank, doc_id)
    of run_id's queries qidxs, by query and rank: what the labels setting merges grades into."""
    wanted = list(qidxs)
    if not wanted:
        return [], []
    with store._cursor() as cur:
        qrels = cur.execute(
            "SELECT qidx, doc_id, rel FROM qrels WHERE run_id = ? "
            "AND qidx IN (SELECT unnest(?::INTEGER[])) ORDER BY qidx, pos",
            [run_id, wanted],
        ).fetchall()
        chunks = cur.execute(
            "SELECT qidx, rank, doc_id FROM chunks WHERE run_id = ? "
            "AND qidx IN (SELECT unnest(?::INTEGER[])) ORDER BY qidx, rank",
            [run_id, wanted],
        ).fetchall()
    return (
        [(int(q), str(d), float(r)) for q, d, r in qrels],
        [(int(q), int(r), str(d)) for q, r, d in chunks],
    )


def copy_grades(store: Store, rows: Iterable[GradeRow]) -> int:
    """Keep rows as they are (source, annotator, time) in store, replacing each annotator's
    grade of the same (query, document, source): another store's grades brought into a scratch
    store, whose file a run is evaluated from. One transaction; returns how many."""
    kept = [(r.query_id, r.doc_id, r.source, r.annotator, r.grade, r.labelled_at) for r in rows]
    _keep(store, kept)
    return len(kept)


def _keep(store: Store, rows: Sequence[tuple[str, str, str, str, float | None, str]]) -> None:
    """Each (query_id, doc_id, source, annotator, grade, time) in place of that annotator's
    earlier grade (None: taken back), in one transaction."""
    with store._cursor() as cur:
        cur.begin()
        try:
            for query_id, doc_id, source, annotator, grade, at in rows:
                cur.execute(
                    "DELETE FROM relevance_labels WHERE query_id = ? AND doc_id = ? "
                    "AND source = ? AND annotator = ?",
                    [query_id, doc_id, source, annotator],
                )
                if grade is not None:
                    cur.execute(
                        "INSERT INTO relevance_labels (query_id, doc_id, source, annotator, "
                        "grade, labelled_at) VALUES (?, ?, ?, ?, ?, ?)",
                        [query_id, doc_id, source, annotator, float(grade), at],
                    )
            cur.commit()
        except BaseException:
            rollback_quietly(cur)
            raise


def run_qrels(store: Store, run_id: int) -> tuple[list[str], list[tuple[str, str, float]]]:
    """run_id's query ids (file order) and its imported qrels (query_id, doc_id, rel), by query
    and file order: what `export --to qrels` resolves the labels over."""
    with store._cursor() as cur:
        ids = cur.execute(
            "SELECT query_id FROM queries WHERE run_id = ? ORDER BY qidx", [run_id]
        ).fetchall()
        rows = cur.execute(
            "SELECT q.query_id, r.doc_id, r.rel FROM qrels r JOIN queries q "
            "ON q.run_id = r.run_id AND q.qidx = r.qidx WHERE r.run_id = ? ORDER BY r.qidx, r.pos",
            [run_id],
        ).fetchall()
    return [str(q) for (q,) in ids], [(str(q), str(d), float(r)) for q, d, r in rows]
