"""Each run's report at a view's settings, why a preset's numbers differ, built figures, and
the held reports that the core's trends() and sweep() read."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import streamlit as st

from rageval_dashboard.jobs.busy import calm
from rageval_dashboard.keys import View, settings_from_key, settings_key
from rageval_core.errors import RagevalError
from rageval_core.evaluation.evaluate import evaluate, with_breakdown
from rageval_core.evaluation.report import Report
from rageval_core.evaluation.preset_parity import Explanation, explain_preset
from rageval_core.rundata import RunData
from rageval_core.latency.run_summary import ops_summary
from rageval_core.store import RunRecord
from rageval_dashboard.state.storage import judge_signature, run_data, run_key, RunKey, store
from rageval_dashboard.state.labelling import grades_signature


@st.cache_resource(show_spinner=False, max_entries=256)
def _report(
    run: RunKey,
    settings_key: tuple[Any, ...],
    metrics: tuple[str, ...] | None,
    by: str | None,
    judges: tuple[Any, ...] = (),
    grades: tuple[Any, ...] = (),
) -> Report:
    # grades: the store's grades signature; a label given changes it (and only these reports)
    data = run_data(*run)
    if by is not None:  # the breakdown regroups the report's per-query values: no re-evaluation
        return with_breakdown(data, _report(run, settings_key, metrics, None, judges, grades), by)
    return evaluate(
        data,
        list(metrics) if metrics else None,
        store=store(),
        settings=settings_from_key(settings_key),
    )


@calm
def report(view: View, metrics: tuple[str, ...] | None = None, by: str | None = None) -> Report:
    """The core's report for the current view (cached per run, settings, metrics and tag)."""
    return _report(
        run_key(view.run),
        settings_key(view.settings),
        metrics,
        by,
        judge_signature(),
        grades_signature(),
    )


@st.cache_resource(show_spinner=False, max_entries=32)
def _explanation(run: RunKey, preset: str, given: tuple[Any, ...]) -> Explanation:
    data = run_data(*run)
    return explain_preset(store(), data, preset, dict(given))


@calm
def explanation(view: View, given: dict[str, Any]) -> Explanation:
    """Why the view's preset numbers differ from rageval's defaults (rageval_core.evaluation.preset_parity), with
    the settings the user moved away from the preset held fixed at every step (cached)."""
    assert view.settings.preset is not None
    return _explanation(
        run_key(view.run),
        view.settings.preset,
        tuple(sorted(given.items())),
    )


@calm
def data(view: View) -> RunData:
    """The current run's arrays (cached)."""
    return run_data(*run_key(view.run))


@st.cache_resource(show_spinner=False, max_entries=64)
def _figure(name: str, key: tuple[Any, ...], _build: Callable[[], Any]) -> Any:
    return _build()


def figure(name: str, view: View, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """The figure build() makes, built once per run, name and key (what it is drawn from):
    a slider move that leaves a figure's inputs as they were neither rebuilds it (a scatter of
    thousands of points is tens of ms) nor changes what goes to the browser. Shared read-only
    by every session (st.plotly_chart copies it)."""
    return _figure(name, (run_key(view.run), *key), build)


@st.cache_resource(show_spinner=False, max_entries=64)
def _run_ops(run: RunKey) -> dict[str, Any]:
    return ops_summary(run_data(*run))


def held_source(
    db: str | None,
    settings_key: tuple[Any, ...],
    judges: tuple[Any, ...],
    grades: tuple[Any, ...] = (),
) -> Callable[[RunRecord], tuple[RunData, Report | None]]:
    """For the core's trends() and sweep(): each run's cached arrays and report at these
    settings, so a k move evaluates each run once for every page (no store read either)."""

    def source(record: RunRecord) -> tuple[RunData, Report | None]:
        run = RunKey(record.run_id, record.content_hash, db)
        try:
            held = _report(run, settings_key, None, None, judges, grades)
        except RagevalError:
            return run_data(*run), None
        # latency and cost do not move with the settings: the run's summary, not each report's
        return run_data(*run), dataclasses.replace(held, ops=_run_ops(run))

    return source


#: cleared by state.clear_caches() after an import, rename or delete
CACHES = (_report, _explanation, _figure, _run_ops)
