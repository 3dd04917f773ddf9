"""The Compare page's caches (the state package's part for Compare).

A comparison is cached per runs and settings in two steps: the deltas and t-tests (built on
each run's cached report, so a k move evaluates each run once), then the bootstrap intervals
and randomisation p-values. The second step runs in the page's own run when it is small and in
a thread otherwise (tested_comparison), the page showing the deltas meanwhile and polling.
Both steps share one CompareMemo (the core's): a k or threshold move tests again only the
metrics whose per-query values it changed, on the random draws made before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import streamlit as st

from rageval_dashboard.jobs.busy import calm
from rageval_dashboard.keys import settings_from_key, settings_key
from rageval_dashboard.state.labelling import grades_signature
from rageval_dashboard.state.reports import _report, held_source
from rageval_dashboard.state.storage import _db, judge_signature, run_data, RunKey, runs, store
from rageval_core.compare import Comparison, TrendRow, compare, compare_ops
from rageval_core.compare import shared_query_counts, trends
from rageval_core.compare.memo import CompareMemo
from rageval_core.errors import RagevalError
from rageval_core.evaluation.report import Report, Settings
from rageval_core.rundata import RunData
from rageval_core.store import RunRecord, Store


def clear_caches() -> None:
    """After an import, rename or delete (state.clear_caches calls it)."""
    for cached in (_comparison, _comparison_ops, _memo):
        cached.clear()
    _tested().clear()


@st.cache_resource(show_spinner=False)
def _memo() -> CompareMemo:
    # every comparison's tests and draws, for the next one (bounded by the core)
    return CompareMemo()


@st.cache_data(show_spinner=False, max_entries=32)
def _shared_counts(run_id: int, content_hash: str, db: str | None, listed: Any) -> dict[int, int]:
    return shared_query_counts(store(), run_id)


@calm
def shared_counts(baseline: RunRecord, runs: Sequence[RunRecord]) -> dict[str, int]:
    """{run name: queries it shares with baseline by query_id} for runs (cached per store state)."""
    listed = tuple((r.run_id, r.content_hash) for r in runs)
    counts = _shared_counts(baseline.run_id, baseline.content_hash, _db(), listed)
    return {r.name: counts.get(r.run_id, 0) for r in runs}


Runs = tuple[tuple[int, str, str], ...]


def _signatures() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(judge signature, grades signature): what every cached comparison's reports are keyed by
    besides the runs and settings (judges: this pair below)."""
    return judge_signature(), grades_signature()


#: (query pairs x metrics) up to which a comparison's resampling runs inside the page's run;
#: past it in a thread, while the page shows the deltas (COMPARE_INLINE_CELLS: a test sets it)
COMPARE_INLINE_CELLS = 100_000


def _compare_inputs(
    runs: Runs, db: str | None, key: tuple[Any, ...], judges: tuple[Any, ...]
) -> tuple[list[RunData], list[Report | None]]:
    """Each run's arrays and its cached report at these settings (the single-run pages' own):
    a k move evaluates each run once, whichever page asks first."""
    reports: list[Report | None] = []
    for run_id, content_hash, _ in runs:
        try:
            reports.append(_report(RunKey(run_id, content_hash, db), key, None, None, *judges))
        except RagevalError:  # compare() evaluates it on the metrics it compares, or says why
            reports.append(None)
    return [run_data(run_id, h, db) for run_id, h, _ in runs], reports


@st.cache_resource(show_spinner=False, max_entries=32)
def _comparison(
    runs: Runs,
    db: str | None,
    settings_key: tuple[Any, ...],
    tag: str | None,
    judges: tuple[Any, ...] = (),
    resample: bool = True,
) -> Comparison:
    loaded, reports = _compare_inputs(runs, db, settings_key, judges)
    c = compare(
        loaded,
        store=store(),
        settings=settings_from_key(settings_key),
        by=(tag,) if tag else (),
        resample=resample,
        with_ops=False,
        reports=reports,
        memo=_memo(),
    )
    return dataclasses.replace(c, **_comparison_ops(runs, db, resample))


@st.cache_resource(show_spinner=False, max_entries=16)
def _comparison_ops(runs: Runs, db: str | None, resample: bool) -> dict[str, Any]:
    # latency and cost do not depend on k, the threshold or the scorer: kept across their moves
    found = _tested().get(("ops", runs, db)) if resample else None
    if found is not None and found.done() and found.exception() is None:
        return found.result()  # type: ignore[no-any-return]
    loaded = [run_data(run_id, content_hash, db) for run_id, content_hash, _ in runs]
    latency, cost, note = compare_ops(loaded, store=store(), resample=resample)
    return {"latency": latency, "cost": cost, "cost_note": note}


@st.cache_resource(show_spinner=False)
def _tested() -> dict[tuple[Any, ...], Future[Any]]:
    # the resampling jobs, started by tested_comparison, newest last
    return {}


@st.cache_resource(show_spinner=False)
def _test_pool() -> ThreadPoolExecutor:
    # one thread: a user moving k again queues the new job behind the one running (and the
    # queued ones for settings left behind are cancelled)
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="rageval-compare")


def _comparison_key(baseline: RunRecord, candidates: Sequence[RunRecord]) -> Runs:
    return tuple((r.run_id, r.content_hash, r.name) for r in (baseline, *candidates))


@calm
def comparison(
    baseline: RunRecord,
    candidates: Sequence[RunRecord],
    settings: Settings,
    tag: str | None = None,
    resample: bool = True,
) -> Comparison:
    """The core's comparison of candidates with baseline (cached per runs, settings and tag).

    resample=False: without the bootstrap intervals and randomisation tests, a fraction of the
    cost, for the page to show the deltas first. Raises the core's RagevalError for the page.
    """
    key = _comparison_key(baseline, candidates)
    return _comparison(key, _db(), settings_key(settings), tag, _signatures(), resample)


@calm
def tested_comparison(
    baseline: RunRecord, candidates: Sequence[RunRecord], settings: Settings, start: bool = True
) -> Comparison | None:
    """The comparison with its intervals and randomisation p-values, or None while a thread
    computes them (the page polls). A small one is computed here and now.

    start=False only looks: the page's note starts the thread from its first poll, after the
    page is drawn, so the resampling does not compete with drawing the deltas for the
    interpreter and the cores.
    """
    runs, db, key, judges = (
        _comparison_key(baseline, candidates),
        _db(),
        settings_key(settings),
        _signatures(),
    )
    quick = _comparison(runs, db, key, None, judges, False)
    cells = sum(p.n_shared for p in quick.alignment.pairs) * max(len(quick.metrics), 1)
    if cells <= COMPARE_INLINE_CELLS:
        return _comparison(runs, db, key, None, judges, True)
    jobs = _tested()
    job = jobs.get((runs, db, key, judges))
    if job is None and not start:
        return None
    if job is None:
        for name, old in list(jobs.items()):
            if name[0] != "ops":
                old.cancel()  # queued for settings the user has left (a running one finishes)
        loaded, reports = _compare_inputs(runs, db, key, judges)
        ops = jobs.get(("ops", runs, db))
        if ops is None or ops.cancelled():
            ops = jobs[("ops", runs, db)] = _test_pool().submit(_ops_job, loaded, store())
        job = jobs[(runs, db, key, judges)] = _test_pool().submit(
            _tests_job, loaded, reports, list(quick.metrics), key, store(), ops, _memo()
        )
        for stale in list(jobs)[:-32]:  # bounded: the oldest results go first
            jobs.pop(stale, None)
    if not job.done():
        return None
    return job.result()  # type: ignore[no-any-return]  # a failed job raises its error here


def _ops_job(loaded: list[RunData], db_store: Store) -> dict[str, Any]:
    latency, cost, note = compare_ops(loaded, store=db_store)
    return {"latency": latency, "cost": cost, "cost_note": note}


def _tests_job(
    loaded: list[RunData],
    reports: list[Report | None],
    metrics: list[str],
    key: tuple[Any, ...],
    db_store: Store,
    ops: Future[dict[str, Any]],
    memo: CompareMemo,
) -> Comparison:
    # in the thread: no Streamlit call; the reports hold every metric, so no store read either
    c = compare(
        loaded,
        metrics,
        store=db_store,
        settings=settings_from_key(key),
        with_ops=False,
        reports=reports,
        memo=memo,
    )
    return dataclasses.replace(c, **ops.result())


@st.cache_data(show_spinner=False, max_entries=16)
def _trend_rows(
    runs: tuple[tuple[int, str, str, str | None], ...],
    db: str | None,
    settings_key: tuple[Any, ...],
    metrics: tuple[str, ...],
    judges: tuple[Any, ...] = (),
) -> list[TrendRow]:
    source = held_source(db, settings_key, *judges)
    return trends(store(), settings_from_key(settings_key), list(metrics), source)


@calm
def trend_rows(settings: Settings, metrics: Sequence[str]) -> list[TrendRow]:
    """Every stored run in created_at order with its metrics and p95 latency (cached)."""
    key = tuple((r.run_id, r.content_hash, r.name, r.created_at) for r in runs())
    return _trend_rows(key, _db(), settings_key(settings), tuple(metrics), _signatures())
