"""The Judge and Judge calibration pages: result sets, verdicts, repeatability, people's
labels and the judge against them."""

from __future__ import annotations

from typing import Any

import streamlit as st

from rageval_dashboard.jobs.busy import calm
from rageval_dashboard.jobs.busy import signature
from rageval_dashboard.keys import View, settings_from_key, settings_key
from rageval_core.store import RunRecord
from rageval_core.store import judgements as jstore
from rageval_dashboard.state.storage import _db, judge_signature, run_key, RunKey, store


@st.cache_resource(show_spinner=False, max_entries=16)
def _judge_sets(run_id: int, db: str | None, judges: tuple[Any, ...]) -> list[jstore.JudgeSet]:
    return jstore.judge_sets(store(), run_id)


@calm
def judge_sets(run: RunRecord) -> list[jstore.JudgeSet]:
    """The run's judge result sets, oldest first (read again when a set is added)."""
    return _judge_sets(run.run_id, _db(), judge_signature())


@st.cache_resource(show_spinner=False, max_entries=128)
def _judge_verdicts(
    run_id: int, db: str | None, judges: tuple[Any, ...], which: str | None, qidx: int
) -> list[jstore.JudgeResult]:
    from rageval_core.judging.scores import judge_verdicts

    return judge_verdicts(store(), run_id, qidx, which)


@calm
def judge_verdicts(view: View, qidx: int) -> list[jstore.JudgeResult]:
    """One query's verdicts in the view's judge result set (label, cited contexts, notes)."""
    return _judge_verdicts(view.run.run_id, _db(), judge_signature(), view.settings.judge, qidx)


@st.cache_resource(show_spinner=False, max_entries=16)
def _repeatability(run_id: int, db: str | None, judges: tuple[Any, ...], which: str | None) -> Any:
    from rageval_core.judging.scores import repeatability

    return repeatability(store(), run_id, which)


@calm
def repeatability(run: RunRecord, which: str | None) -> Any:
    """How far a result set judged with repeats agrees with itself (scores.Repeatability)."""
    return _repeatability(run.run_id, _db(), judge_signature(), which)


@st.cache_resource(show_spinner=False, max_entries=16)
def _human_labels(run_id: int, db: str | None, files: tuple[Any, ...]) -> dict[int, dict[str, str]]:
    return jstore.human_labels(store(), run_id)


@calm
def human_labels(run: RunRecord) -> dict[int, dict[str, str]]:
    """qidx -> {name: label} people gave (imported, or on the calibration page)."""
    return _human_labels(run.run_id, _db(), signature(store().path))


@st.cache_resource(show_spinner=False, max_entries=16)
def _calibration(
    run: RunKey,
    settings_key: tuple[Any, ...],
    label: str,
    files: tuple[Any, ...],
) -> Any:
    from rageval_core.evaluation.calibration import calibrate

    return calibrate(store(), run.run_id, label=label, settings=settings_from_key(settings_key))


@calm
def calibration(view: View, label: str) -> Any:
    """The judge against people on one label name (rageval_core.evaluation.calibration.calibrate), keyed
    by the store's files: a label given on the page or a new judge set recomputes it."""
    return _calibration(
        run_key(view.run),
        settings_key(view.settings),
        label,
        signature(store().path),
    )


@st.cache_resource(show_spinner=False, max_entries=16)
def _label_calibrations(run: RunKey, files: tuple[Any, ...]) -> list[Any]:
    from rageval_core.evaluation.agreement import calibrate_labels, llm_label_sets
    from rageval_core.store.judgements import query_ids

    leased = store()
    qids = query_ids(leased, run.run_id)
    return [calibrate_labels(leased, qids, llm) for llm in llm_label_sets(leased)]


@calm
def label_calibrations(view: View) -> list[Any]:
    """Each llm:MODEL relevance label set against the people's grades over the run's queries
    (rageval_core.evaluation.agreement.calibrate_labels), keyed by the store's files: a label
    given or an LLM run recomputes it."""
    return _label_calibrations(run_key(view.run), signature(store().path))


@st.cache_resource(show_spinner=False, max_entries=16)
def _metrics_by_labels(
    run: RunKey, settings_key: tuple[Any, ...], metrics: tuple[str, ...], files: tuple[Any, ...]
) -> Any:
    from rageval_core.evaluation.agreement import metrics_by_labels
    from rageval_dashboard.state.storage import run_data

    return metrics_by_labels(
        run_data(*run), store(), settings_from_key(settings_key), list(metrics)
    )


@calm
def metrics_by_labels(view: View, metrics: tuple[str, ...]) -> Any:
    """The run's metrics with people's labels only, with the LLM's filling the holes, with the
    LLM's only (agreement.metrics_by_labels)."""
    return _metrics_by_labels(
        run_key(view.run), settings_key(view.settings), metrics, signature(store().path)
    )


#: cleared by state.clear_caches() after an import, rename or delete
CACHES = (
    _judge_sets,
    _judge_verdicts,
    _repeatability,
    _calibration,
    _human_labels,
    _label_calibrations,
    _metrics_by_labels,
)
