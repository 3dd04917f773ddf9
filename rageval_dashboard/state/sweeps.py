"""The Sweeps page: every run with retriever settings, its metrics, latency and cost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from rageval_dashboard.jobs.busy import calm
from rageval_dashboard.keys import settings_from_key, settings_key
from rageval_core.compare.sweeps import SweepRow, sweep
from rageval_core.evaluation.report import Settings
from rageval_dashboard.state.storage import _db, judge_signature, runs, store
from rageval_dashboard.state.labelling import grades_signature
from rageval_dashboard.state.reports import held_source


@st.cache_data(show_spinner=False, max_entries=16)
def _sweep_rows(
    runs: tuple[tuple[int, str, str, str], ...],
    db: str | None,
    settings_key: tuple[Any, ...],
    metrics: tuple[str, ...],
    judges: tuple[Any, ...],
) -> list[SweepRow]:
    source = held_source(db, settings_key, *judges)
    return sweep(store(), settings_from_key(settings_key), list(metrics), source)


@calm
def sweep_rows(settings: Settings, metrics: Sequence[str]) -> list[SweepRow]:
    """Every run with retriever settings, its metrics, p95 latency and cost (cached)."""
    key = tuple((r.run_id, r.content_hash, r.name, repr(r.settings)) for r in runs())
    return _sweep_rows(
        key, _db(), settings_key(settings), tuple(metrics), (judge_signature(), grades_signature())
    )
