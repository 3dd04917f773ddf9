"""What a person adds to a stored run after its import: its date, prices, run tags, and notes
on its queries. All SQL here is parameterised; the texts are a user's and never formatted in."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from rageval_core.errors import UsageError
from rageval_core.model import label_value
from rageval_core.store.schema import (
    DERIVED_TABLES,
    QUERY_TABLES,
    first_row,
    rollback_quietly,
)
from rageval_core.store.store import RunRecord, RunRef, Store

#: the key of the run settings that holds the run's own tags ({"experiment": "chunking"})
RUN_TAGS = "tags"


def update_run_facts(
    store: Store,
    ref: RunRef,
    *,
    created_at: str | None = None,
    prices: tuple[float | None, float | None] | None = None,
    tags: dict[str, str] | None = None,
) -> RunRecord:
    """Set a stored run's created_at, its (prompt, completion) USD per 1K tokens, and merge tags
    into its run tags (an empty value removes that tag); a fact (or one of the two prices)
    passed as None is kept as is."""
    with store._cursor() as cur:
        run_id = store._resolve(cur, ref)
        cur.begin()
        try:
            if created_at is not None:
                cur.execute("UPDATE runs SET created_at = ? WHERE run_id = ?", [created_at, run_id])
            if prices is not None:
                # a price given as None keeps the stored one (the form's empty field)
                cur.execute(
                    "UPDATE runs SET price_prompt_per_1k = COALESCE(?, price_prompt_per_1k), "
                    "price_completion_per_1k = COALESCE(?, price_completion_per_1k) "
                    "WHERE run_id = ?",
                    [prices[0], prices[1], run_id],
                )
            if tags:
                row = first_row(
                    cur.execute("SELECT settings FROM runs WHERE run_id = ?", [run_id]).fetchall()
                )
                settings: dict[str, Any] = json.loads(row[0]) if row else {}
                own = dict(settings.get(RUN_TAGS) or {})
                for key, value in tags.items():
                    if value:
                        own[key] = value
                    else:
                        own.pop(key, None)
                settings[RUN_TAGS] = own
                cur.execute(
                    "UPDATE runs SET settings = ? WHERE run_id = ?",
                    [json.dumps(settings, sort_keys=True), run_id],
                )
            cur.commit()
        except BaseException:
            rollback_quietly(cur)
            raise
        return store._record(cur, run_id)


def set_query_note(store: Store, ref: RunRef, query_id: str, note: str) -> None:
    """Keep note on the run's query, replacing any earlier one; a blank note removes it."""
    with store._cursor() as cur:
        run_id = store._resolve(cur, ref)
        cur.begin()
        try:
            cur.execute(
                "DELETE FROM query_notes WHERE run_id = ? AND query_id = ?", [run_id, query_id]
            )
            if note.strip():
                cur.execute(
                    "INSERT INTO query_notes (run_id, query_id, note, noted_at) VALUES (?, ?, ?, ?)",
                    [run_id, query_id, note, datetime.now(UTC).isoformat(timespec="seconds")],
                )
            cur.commit()
        except BaseException:
            rollback_quietly(cur)
            raise


def query_notes(store: Store, ref: RunRef) -> dict[str, str]:
    """{query_id: note} of every noted query of the run."""
    with store._cursor() as cur:
        run_id = store._resolve(cur, ref)
        rows = cur.execute(
            "SELECT query_id, note FROM query_notes WHERE run_id = ? ORDER BY query_id", [run_id]
        ).fetchall()
    return {str(q): str(n) for q, n in rows}


def take_over(store: Store, old: int, new: int) -> RunRecord:
    """Make run new stand in for run old, in one transaction: old's derived rows (scores, labels,
    judge results, notes: all keyed by qidx or query_id, which new keeps) move to new, old's own
    rows go, and new takes old's name. For a run stored again with only its relevance changed
    (annotate.attach_qrels)."""
    with store._cursor() as cur:
        cur.begin()
        try:
            row = first_row(cur.execute("SELECT name FROM runs WHERE run_id = ?", [old]).fetchall())
            if row is None:
                raise UsageError(f"no run with id {old}")
            for table in DERIVED_TABLES:
                cur.execute(f"DELETE FROM {table} WHERE run_id = ?", [new])
                cur.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", [new, old])
            for table in (*QUERY_TABLES, "runs"):
                cur.execute(f"DELETE FROM {table} WHERE run_id = ?", [old])
            cur.execute("UPDATE runs SET name = ? WHERE run_id = ?", [row[0], new])
            cur.commit()
        except BaseException:
            rollback_quietly(cur)
            raise
        return store._record(cur, new)


def stored_labels(store: Store, ref: RunRef) -> dict[str, dict[str, float]]:
    """{query_id: {doc_id: label}} of every query of the run that has qrels ({} when judged with
    nothing), in stored order."""
    with store._cursor() as cur:
        run_id = store._resolve(cur, ref)
        judged = cur.execute(
            "SELECT query_id FROM queries WHERE run_id = ? AND has_qrels ORDER BY qidx", [run_id]
        ).fetchall()
        out: dict[str, dict[str, float]] = {str(q): {} for (q,) in judged}
        rows = cur.execute(
            "SELECT q.query_id, r.doc_id, r.rel FROM qrels r JOIN queries q "
            "ON q.run_id = r.run_id AND q.qidx = r.qidx WHERE r.run_id = ? ORDER BY r.qidx, r.pos",
            [run_id],
        ).fetchall()
    for qid, doc, rel in rows:
        out[str(qid)][str(doc)] = label_value(rel)
    return out
