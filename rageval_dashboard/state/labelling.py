"""The ground truth made in the app: the grades signature every labelled result is keyed by, the
grades and added spans of the queries shown, and the labelling queue.

A label written here changes the store's files, so grades_signature() is read again (one cheap
query) and every result keyed by it (reports, the query table, progress) follows; results that
no label changes (a run's arrays, pair scores, the queue's candidates) keep their keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from rageval_dashboard.jobs.busy import calm, signature
from rageval_dashboard.state.storage import RunKey, run_data, run_key, store, store_path
from rageval_core import annotate
from rageval_core.evaluation import agreement, label_queue
from rageval_core.store import RunRecord

#: the sources whose grades count as "labelled" in the queue's progress (people's own)
PEOPLE_SOURCES = ("people", "adjudicated")


@st.cache_resource(show_spinner=False, max_entries=8)
def _grades_signature(db: str, files: tuple[Any, ...]) -> tuple[int, int, int, int]:
    leased = store()
    with leased.hold():  # type: ignore[attr-defined]
        return annotate.grades_signature(leased)


@calm
def grades_signature() -> tuple[int, int, int, int]:
    """Changes with every grade or span given, changed or taken back (here or by another
    process): part of the key of every result labels change. Read again only when the store's
    files have changed."""
    return _grades_signature(store_path(), signature(store().path))


@st.cache_resource(show_spinner=False, max_entries=64)
def _grades(db: str, sig: tuple[int, ...], query_ids: tuple[str, ...]) -> list[annotate.GradeRow]:
    return annotate.grade_rows(store(), query_ids)


@calm
def grades(query_ids: Sequence[str]) -> dict[tuple[str, str], list[tuple[str, str, float]]]:
    """(query_id, doc_id) -> [(source, annotator, grade)] of the stored grades of query_ids."""
    out: dict[tuple[str, str], list[tuple[str, str, float]]] = {}
    for row in _grades(store_path(), grades_signature(), tuple(query_ids)):
        out.setdefault((row.query_id, row.doc_id), []).append(
            (row.source, row.annotator, row.grade)
        )
    return out


@st.cache_resource(show_spinner=False, max_entries=64)
def _spans(db: str, sig: tuple[int, ...], query_id: str) -> list[annotate.AddedSpan]:
    return annotate.added_spans(store(), [query_id])


@calm
def added_spans(query_id: str) -> list[annotate.AddedSpan]:
    """The gold spans people added to query_id, by time added."""
    return _spans(store_path(), grades_signature(), query_id)


@st.cache_resource(show_spinner=False, max_entries=16)
def _queue(runs: tuple[RunKey, ...], k: int) -> list[label_queue.QueueItem]:
    return label_queue.queue(store(), [run_data(*r) for r in runs], k)


@calm
def queue(runs: Sequence[RunRecord], k: int) -> list[label_queue.QueueItem]:
    """The labelling queue of runs' top k (the first run's order; no label changes it)."""
    return _queue(tuple(run_key(r) for r in runs), k)


@st.cache_resource(show_spinner=False, max_entries=16)
def _positions(runs: tuple[RunKey, ...], k: int) -> dict[tuple[str, str], int]:
    return label_queue.positions(_queue(runs, k))


@calm
def progress(runs: Sequence[RunRecord], k: int) -> tuple[int, int]:
    """(labelled, to go) of the queue: counted over the labelled pairs, not the queue's items."""
    keys_ = tuple(run_key(r) for r in runs)
    return label_queue.progress(_queue(keys_, k), labelled(), _positions(keys_, k))


@st.cache_resource(show_spinner=False, max_entries=16)
def _labelled(db: str, sig: tuple[int, ...]) -> frozenset[tuple[str, str]]:
    rows = annotate.grade_rows(store(), sources=PEOPLE_SOURCES)
    return frozenset((r.query_id, r.doc_id) for r in rows)


@calm
def labelled() -> frozenset[tuple[str, str]]:
    """Every (query_id, doc_id) a person (or an adjudication) has graded."""
    return _labelled(store_path(), grades_signature())


@st.cache_resource(show_spinner=False, max_entries=8)
def _agreement(db: str, sig: tuple[int, ...], run: RunKey) -> agreement.Agreement:
    data = run_data(*run)
    return agreement.agreement(store(), [str(q) for q in data.query_ids])


@calm
def run_agreement(run: RunRecord) -> agreement.Agreement:
    """The people annotators' agreement over run's queries (kappa per pair, alpha with its
    bootstrap interval, disagreements), read again when a grade changes."""
    return _agreement(store_path(), grades_signature(), run_key(run))


#: cleared by state.clear_caches() after an import, rename or delete
CACHES = (_grades_signature, _grades, _spans, _queue, _positions, _labelled, _agreement)
