"""Latency & cost: per-query latency, tokens and cost, and latency percentiles inside a tag."""

from __future__ import annotations

from typing import Any

import streamlit as st

from rageval_dashboard.jobs.busy import calm
from rageval_dashboard.keys import View
from rageval_core.latency import per_query as opsview
from rageval_dashboard.state.storage import run_data, run_key, RunKey


@st.cache_resource(show_spinner=False, max_entries=8)
def _query_ops(run: RunKey) -> opsview.QueryOps:
    return opsview.query_ops(run_data(*run))


@calm
def query_ops(view: View) -> opsview.QueryOps:
    """Per-query latency, tokens and cost of the current run, aligned with report(view)."""
    return _query_ops(run_key(view.run))


@st.cache_resource(show_spinner=False, max_entries=32)
def _latency_by_tag(run: RunKey, tag: str) -> dict[str, Any]:
    return opsview.latency_by_tag(run_data(*run), tag)


@calm
def latency_by_tag(view: View, tag: str) -> dict[str, Any]:
    """Latency percentiles per stage inside each value of a tag (independent of k/threshold)."""
    return _latency_by_tag(run_key(view.run), tag)


#: cleared by state.clear_caches() after an import, rename or delete
CACHES = (_query_ops, _latency_by_tag)
