"""The Queries page: the per-query table, the search over stored texts, one query's drilldown."""

from __future__ import annotations

from typing import Any

import streamlit as st

from rageval_dashboard.jobs.busy import calm
from rageval_dashboard.keys import View, settings_from_key, settings_key
from rageval_core.evaluation import drilldown
from rageval_dashboard.state.storage import judge_signature, run_data, run_key, RunKey, store
from rageval_dashboard.state.reports import _report
from rageval_dashboard.state.labelling import grades_signature


@st.cache_resource(show_spinner=False, max_entries=8)
def _query_texts(run: RunKey) -> Any:
    return drilldown.query_texts(store(), run_data(*run))


@st.cache_resource(show_spinner=False, max_entries=64)
def _query_table(
    run: RunKey,
    settings_key: tuple[Any, ...],
    judges: tuple[Any, ...] = (),
    grades: tuple[Any, ...] = (),
) -> drilldown.QueryTable:
    return drilldown.query_table(
        _report(run, settings_key, None, None, judges, grades),
        run_data(*run),
        _query_texts(run),
    )


@st.cache_data(show_spinner=False, max_entries=64)
def _search_all(run: RunKey, text: str) -> list[int]:
    return drilldown.search_all_texts(store(), run_data(*run), text)


@calm
def search_all(view: View, text: str) -> list[int]:
    """Rows of the queries any of whose stored texts holds text (cached per run and text)."""
    return _search_all(run_key(view.run), text)


@calm
def query_table(view: View) -> drilldown.QueryTable:
    """The per-query table of the current view (cached per run and settings)."""
    return _query_table(
        run_key(view.run),
        settings_key(view.settings),
        judge_signature(),
        grades_signature(),
    )


@st.cache_resource(show_spinner=False, max_entries=128)
def _query_detail(
    run: RunKey, settings_key: tuple[Any, ...], qidx: int, grades: tuple[Any, ...] = ()
) -> drilldown.QueryDetail:
    return drilldown.query_detail(store(), run_data(*run), qidx, settings_from_key(settings_key))


@calm
def query_detail(view: View, qidx: int) -> drilldown.QueryDetail:
    """One query's drilldown at the current settings (cached)."""
    return _query_detail(run_key(view.run), settings_key(view.settings), qidx, grades_signature())


@calm
def query_texts_detail(view: View, qidx: int) -> drilldown.QueryDetail:
    """One query's drilldown for its texts, spans and highlights: kept across grades given (only
    an added span makes it anew), so its labels may be older than the last grade. The labelling
    queue shows it for chunks the imported qrels do not judge: a grade there reads the store
    once, not once per query shown."""
    spans = ("spans", *grades_signature()[2:])
    return _query_detail(run_key(view.run), settings_key(view.settings), qidx, spans)


#: cleared by state.clear_caches() after an import, rename or delete
CACHES = (_query_texts, _query_table, _query_detail)
