"""Every st.cache_* of the dashboard lives in this package: the Store, each run's arrays, and
every result derived from them; pages only call these. The Compare page's caches are in
state/compare.py (`from rageval_dashboard.state import compare`).

Heavy objects (the Store, each run's arrays, reports) are cache_resource: they are shared
read-only and never pickled. Each result is keyed by the run (id and content hash), the store
file and the settings' cache key (keys.settings_key, from the settings schema).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from rageval_dashboard.jobs.busy import (
    BUSY_DEEP_S,
    BUSY_GATE_S,
    BUSY_GAVE_UP,
    BUSY_STEP_S,
    BUSY_WAITING,
    calm,
)
from rageval_dashboard.jobs.busy import held_elsewhere, signature
from rageval_dashboard.keys import View, settings_from_key, settings_key
from rageval_core import curves, drilldown, opsview, tuning
from rageval_core.compare.sweeps import SweepRow, sweep
from rageval_core.errors import RagevalError
from rageval_core.evaluate import Report, Settings, evaluate, with_breakdown
from rageval_core.metrics import registry
from rageval_core.parity import Explanation, explain_preset
from rageval_core.rundata import RunData, load_run_data
from rageval_core.runops import ops_summary
from rageval_core.store import RunRecord, Store
from rageval_core.store import LeasedStore
from rageval_core.store import StoreBusyError
from rageval_core.store import default_path
from rageval_core.store import judgements as jstore

#: borderline pairs fetched per setting (the Threshold page shows them a few at a time)
TUNING_LIMIT = 200
#: evidence metrics over the threshold come from one sweep (fine grid); ranking metrics in
#: evidence mode relabel the chunks per threshold, so they get the coarse grid
THRESHOLD_GRID = tuple(round(i / 100, 2) for i in range(101))
COARSE_GRID = tuple(round(i / 20, 2) for i in range(21))


#: seconds an idle store file stays open while no other process waits for it: a user's next
#: slider move reuses the connection instead of reopening the file (35-65 ms per open, paid
#: more than once by a render whose calls are more than 0.25 s apart)
STORE_LINGER_S = 10.0
#: how long the runs listing waits for the store before saying it is busy: a file let go a
#: moment ago (the linger over, a write of our own) is back well within it, and a message
#: drawn at the top of the page would shift every element under it, so that the browser drew
#: the whole page anew on that move
QUIET_WAIT_S = 0.3


@st.cache_resource(show_spinner=False)
def _store(path: str | None) -> LeasedStore:
    return LeasedStore(path, wait_s=BUSY_DEEP_S, linger_s=STORE_LINGER_S)


def store_path() -> str:
    """The store file this server shows, as an absolute path: $RAGEVAL_DB (`rageval dashboard`
    sets it), else the default under the folder the server was started in."""
    return _resolved(default_path(), os.getcwd())


@functools.lru_cache(maxsize=16)
def _resolved(path: str, cwd: str) -> str:
    # part of every cache key, so called a score of times per rerun: resolving the path walks
    # the file system each time (a few ms per rerun); keyed by the working folder too, as a
    # relative path depends on it
    return str(Path(path).expanduser().resolve())


def store() -> Store:
    """The store at store_path(), shared by every session of the server process.

    A LeasedStore: the file is opened while some page works on it and let go a moment after,
    so `rageval import` can write to it while the dashboard is open (docs/reliability.md).
    """
    return _store(store_path())


@st.cache_resource(show_spinner=False)
def _listed() -> dict[str, tuple[tuple[Any, ...], list[RunRecord]]]:
    # store path -> (its files' signature, the runs listed then); shared by every session
    return {}


def _runs_if_unchanged() -> tuple[tuple[Any, ...], list[RunRecord] | None]:
    """The runs listed before, if no process has written to the store since (no file open).

    None while another process holds the file: the sidebar then takes its turn and says so.
    """
    path = store().path
    sig = signature(path)
    kept = _listed().get(path)
    if kept is None or kept[0] != sig or held_elsewhere(path):
        return sig, None
    return sig, kept[1]


@calm
def runs() -> list[RunRecord]:
    """The stored runs (listed again only when the store's files have changed)."""
    sig, found = _runs_if_unchanged()
    if found is None:
        found = store().runs()
        _listed()[store().path] = (sig, found)
    return found


def runs_when_free() -> list[RunRecord] | None:
    """The stored runs; while another process holds the store, a live "retrying" message.

    Called first on every page (by the sidebar). None, after a clear message and a Try again
    button, when the store stayed busy for BUSY_GATE_S. When the store's files have not changed
    since the last listing, that listing is reused without opening the file: a slider move on
    a page whose results are cached never touches the store (opening it costs 50-100 ms).
    """
    sig, found = _runs_if_unchanged()
    if found is not None:
        return found
    leased = store()
    note = None
    started = time.monotonic()
    while True:
        try:
            with leased.hold(wait_s=QUIET_WAIT_S if note is None else BUSY_STEP_S):  # type: ignore[attr-defined]
                found = leased.runs()
            if note is not None:
                note.empty()
            _listed()[leased.path] = (sig, found)
            return found
        except StoreBusyError:
            waited = time.monotonic() - started
            if note is None:
                note = st.empty()
            if waited >= BUSY_GATE_S:
                note.warning(BUSY_GAVE_UP.format(waited=waited))
                st.button("Try again", key="app.busy_retry")
                return None
            # a widget call: also where Streamlit stops this run if the user moves on
            note.info(BUSY_WAITING.format(waited=waited))


@calm
def take_interrupted() -> list[str]:
    """What imports or scorings a killed process left unfinished, said once (then acknowledged)."""
    leased = store()
    with leased.hold():  # type: ignore[attr-defined]
        found = leased.interrupted()
        leased.acknowledge_interrupted(found)
    return [e.message for e in found]


@st.cache_resource(show_spinner=False, max_entries=8)
def run_data(run_id: int, content_hash: str, db: str | None = None) -> RunData:
    """A run's arrays, loaded once (content_hash in the key: a re-imported run reloads)."""
    return load_run_data(store(), run_id)


@st.cache_resource(show_spinner=False, max_entries=256)
def _report(
    run_id: int,
    content_hash: str,
    db: str | None,
    settings_key: tuple[Any, ...],
    metrics: tuple[str, ...] | None,
    by: str | None,
    judges: tuple[Any, ...] = (),
) -> Report:
    data = run_data(run_id, content_hash, db)
    if by is not None:  # the breakdown regroups the report's per-query values: no re-evaluation
        return with_breakdown(
            data, _report(run_id, content_hash, db, settings_key, metrics, None, judges), by
        )
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
        view.run.run_id,
        view.run.content_hash,
        _db(),
        settings_key(view.settings),
        metrics,
        by,
        judge_signature(),
    )


@st.cache_resource(show_spinner=False, max_entries=32)
def _explanation(
    run_id: int, content_hash: str, db: str | None, preset: str, given: tuple[Any, ...]
) -> Explanation:
    data = run_data(run_id, content_hash, db)
    return explain_preset(store(), data, preset, dict(given))


@calm
def explanation(view: View, given: dict[str, Any]) -> Explanation:
    """Why the view's preset numbers differ from rageval's defaults (rageval_core.parity), with
    the settings the user moved away from the preset held fixed at every step (cached)."""
    assert view.settings.preset is not None
    return _explanation(
        view.run.run_id,
        view.run.content_hash,
        _db(),
        view.settings.preset,
        tuple(sorted(given.items())),
    )


@calm
def data(view: View) -> RunData:
    """The current run's arrays (cached)."""
    return run_data(view.run.run_id, view.run.content_hash, _db())


def _db() -> str:
    # part of every cache key: tests (and a user) may point the same server at another store
    return store_path()


@st.cache_resource(show_spinner=False, max_entries=8)
def _judge_signature(db: str, files: tuple[Any, ...]) -> tuple[Any, ...]:
    leased = store()
    with leased.hold():  # type: ignore[attr-defined]
        return jstore.judge_signature(leased)


@calm
def judge_signature() -> tuple[Any, ...]:
    """(run_id, judge_id, status) of every judge result set: part of the key of every result
    that holds judge.* values, so a judge run (here, or by `rageval judge` in another process)
    shows at once. Read again only when the store's files have changed."""
    return _judge_signature(_db(), signature(store().path))


def clear_caches() -> None:
    """After an import, rename or delete: every derived result is recomputed (the Store stays)."""
    st.cache_data.clear()
    _listed().clear()
    from rageval_dashboard.state import compare  # it imports this module

    compare.clear_caches()
    for cached in (
        run_data,
        _report,
        _explanation,
        _query_ops,
        _figure,
        _run_ops,
        _latency_by_tag,
        _query_texts,
        _query_table,
        _query_detail,
        _borderline,
        _pair_labels,
        _judge_signature,
        _judge_sets,
        _judge_verdicts,
        _repeatability,
        _calibration,
        _human_labels,
    ):
        cached.clear()


# --- latency ---


@st.cache_resource(show_spinner=False, max_entries=8)
def _query_ops(run_id: int, content_hash: str, db: str | None) -> opsview.QueryOps:
    return opsview.query_ops(run_data(run_id, content_hash, db))


@calm
def query_ops(view: View) -> opsview.QueryOps:
    """Per-query latency, tokens and cost of the current run, aligned with report(view)."""
    return _query_ops(view.run.run_id, view.run.content_hash, _db())


@st.cache_resource(show_spinner=False, max_entries=32)
def _latency_by_tag(run_id: int, content_hash: str, db: str | None, tag: str) -> dict[str, Any]:
    return opsview.latency_by_tag(run_data(run_id, content_hash, db), tag)


@calm
def latency_by_tag(view: View, tag: str) -> dict[str, Any]:
    """Latency percentiles per stage inside each value of a tag (independent of k/threshold)."""
    return _latency_by_tag(view.run.run_id, view.run.content_hash, _db(), tag)


@st.cache_resource(show_spinner=False, max_entries=64)
def _figure(name: str, key: tuple[Any, ...], _build: Callable[[], Any]) -> Any:
    return _build()


def figure(name: str, view: View, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """The figure build() makes, built once per run, name and key (what it is drawn from):
    a slider move that leaves a figure's inputs as they were neither rebuilds it (a scatter of
    thousands of points is tens of ms) nor changes what goes to the browser. Shared read-only
    by every session (st.plotly_chart copies it)."""
    return _figure(name, (view.run.run_id, view.run.content_hash, _db(), *key), build)


# --- queries ---


@st.cache_resource(show_spinner=False, max_entries=8)
def _query_texts(run_id: int, content_hash: str, db: str | None) -> Any:
    return drilldown.query_texts(store(), run_data(run_id, content_hash, db))


@st.cache_resource(show_spinner=False, max_entries=64)
def _query_table(
    run_id: int,
    content_hash: str,
    db: str | None,
    settings_key: tuple[Any, ...],
    judges: tuple[Any, ...] = (),
) -> drilldown.QueryTable:
    return drilldown.query_table(
        _report(run_id, content_hash, db, settings_key, None, None, judges),
        run_data(run_id, content_hash, db),
        _query_texts(run_id, content_hash, db),
    )


@st.cache_data(show_spinner=False, max_entries=64)
def _search_all(run_id: int, content_hash: str, db: str | None, text: str) -> list[int]:
    return drilldown.search_all_texts(store(), run_data(run_id, content_hash, db), text)


@calm
def search_all(view: View, text: str) -> list[int]:
    """Rows of the queries any of whose stored texts holds text (cached per run and text)."""
    return _search_all(view.run.run_id, view.run.content_hash, _db(), text)


@calm
def query_table(view: View) -> drilldown.QueryTable:
    """The per-query table of the current view (cached per run and settings)."""
    return _query_table(
        view.run.run_id,
        view.run.content_hash,
        _db(),
        settings_key(view.settings),
        judge_signature(),
    )


@st.cache_resource(show_spinner=False, max_entries=128)
def _query_detail(
    run_id: int, content_hash: str, db: str | None, settings_key: tuple[Any, ...], qidx: int
) -> drilldown.QueryDetail:
    return drilldown.query_detail(
        store(), run_data(run_id, content_hash, db), qidx, settings_from_key(settings_key)
    )


@calm
def query_detail(view: View, qidx: int) -> drilldown.QueryDetail:
    """One query's drilldown at the current settings (cached)."""
    return _query_detail(
        view.run.run_id, view.run.content_hash, _db(), settings_key(view.settings), qidx
    )


# --- threshold ---


@st.cache_resource(show_spinner=False, max_entries=64)
def _borderline(
    run_id: int,
    content_hash: str,
    db: str | None,
    settings_key: tuple[Any, ...],
    band: float,
    limit: int,
) -> list[tuning.BorderlinePair]:
    return tuning.borderline_pairs(
        store(),
        run_data(run_id, content_hash, db),
        settings_from_key(settings_key),
        band=band,
        limit=limit,
    )


@calm
def borderline(view: View, band: float, limit: int = TUNING_LIMIT) -> list[tuning.BorderlinePair]:
    """The pairs near the view's threshold (cached per run, settings and band; labels are not)."""
    return _borderline(
        view.run.run_id,
        view.run.content_hash,
        _db(),
        settings_key(view.settings),
        round(float(band), 4),
        limit,
    )


@st.cache_resource(show_spinner=False, max_entries=16)
def _pair_labels(
    run_id: int,
    content_hash: str,
    db: str | None,
    scorer: str,
    norm: str,
    signature: tuple[Any, ...],
) -> tuning.Labels:
    return tuning.labels(store(), run_id, scorer, norm)


@calm
def pair_labels(view: View) -> tuning.Labels:
    """The run's labels for the view's scorer and normalisation.

    Keyed by the store files' signature: a label written here or by another process changes
    the files, so it is read again then, and not on every slider move.
    """
    return _pair_labels(
        view.run.run_id,
        view.run.content_hash,
        _db(),
        view.settings.scorer_key,
        view.settings.norm.key,
        signature(store().path),
    )


# --- overview ---


@st.cache_data(show_spinner=False, max_entries=64)
def _curves_k(
    run_id: int, content_hash: str, db: str | None, key: tuple[Any, ...], names: tuple[str, ...]
) -> dict[str, np.ndarray]:
    return curves.curves_over_k(
        store(), run_data(run_id, content_hash, db), settings_from_key(key), list(names)
    )


@calm
def curves_k(view: View, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Run values at k = 1..depth (cached; keyed without k: moving k reuses them).

    With relevance from the qrels (ids), ranking curves do not depend on the threshold: they
    are keyed without it, so a threshold move recomputes only the evidence curves.
    """
    s = view.settings
    key = settings_key(dataclasses.replace(s, k=1))
    run = (view.run.run_id, view.run.content_hash, _db())
    if s.relevance != "ids":
        return _curves_k(*run, key, tuple(names))
    ranking = tuple(
        n for n in names if registry.REGISTRY[registry.ALIASES.get(n, n)].family == "ranking"
    )
    other = tuple(n for n in names if n not in ranking)
    found: dict[str, np.ndarray] = {}
    if ranking:
        found.update(
            _curves_k(*run, settings_key(dataclasses.replace(s, k=1, threshold=0.0)), ranking)
        )
    if other:
        found.update(_curves_k(*run, key, other))
    return {n: found[n] for n in names}


@st.cache_data(show_spinner=False, max_entries=64)
def _curves_t(
    run_id: int,
    content_hash: str,
    db: str | None,
    key: tuple[Any, ...],
    grid: tuple[float, ...],
    names: tuple[str, ...] | None,
) -> dict[str, np.ndarray]:
    return curves.curves_over_threshold(
        store(), run_data(run_id, content_hash, db), settings_from_key(key), grid, names
    )


@calm
def curves_t(
    view: View, grid: Sequence[float], names: Sequence[str] | None = None
) -> dict[str, np.ndarray]:
    """Run values at k over the thresholds of grid (cached; keyed without the threshold)."""
    key = settings_key(dataclasses.replace(view.settings, threshold=0.0))
    return _curves_t(
        view.run.run_id,
        view.run.content_hash,
        _db(),
        key,
        tuple(grid),
        None if names is None else tuple(names),
    )


# --- judge ---


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
    run_id: int,
    content_hash: str,
    db: str | None,
    settings_key: tuple[Any, ...],
    label: str,
    files: tuple[Any, ...],
) -> Any:
    from rageval_core.calibration import calibrate

    return calibrate(store(), run_id, label=label, settings=settings_from_key(settings_key))


@calm
def calibration(view: View, label: str) -> Any:
    """The judge against people on one label name (rageval_core.calibration.calibrate), keyed
    by the store's files: a label given on the page or a new judge set recomputes it."""
    return _calibration(
        view.run.run_id,
        view.run.content_hash,
        _db(),
        settings_key(view.settings),
        label,
        signature(store().path),
    )


# --- sweeps ---


@st.cache_resource(show_spinner=False, max_entries=64)
def _run_ops(run_id: int, content_hash: str, db: str | None) -> dict[str, Any]:
    return ops_summary(run_data(run_id, content_hash, db))


def held_source(
    db: str | None, settings_key: tuple[Any, ...], judges: tuple[Any, ...]
) -> Callable[[RunRecord], tuple[RunData, Report | None]]:
    """For the core's trends() and sweep(): each run's cached arrays and report at these
    settings, so a k move evaluates each run once for every page (no store read either)."""

    def source(record: RunRecord) -> tuple[RunData, Report | None]:
        run = (record.run_id, record.content_hash, db)
        try:
            held = _report(*run, settings_key, None, None, judges)
        except RagevalError:
            return run_data(*run), None
        # latency and cost do not move with the settings: the run's summary, not each report's
        return run_data(*run), dataclasses.replace(held, ops=_run_ops(*run))

    return source


@st.cache_data(show_spinner=False, max_entries=16)
def _sweep_rows(
    runs: tuple[tuple[int, str, str, str], ...],
    db: str | None,
    settings_key: tuple[Any, ...],
    metrics: tuple[str, ...],
    judges: tuple[Any, ...],
) -> list[SweepRow]:
    source = held_source(db, settings_key, judges)
    return sweep(store(), settings_from_key(settings_key), list(metrics), source)


@calm
def sweep_rows(settings: Settings, metrics: Sequence[str]) -> list[SweepRow]:
    """Every run with retriever settings, its metrics, p95 latency and cost (cached)."""
    key = tuple((r.run_id, r.content_hash, r.name, repr(r.settings)) for r in runs())
    return _sweep_rows(key, _db(), settings_key(settings), tuple(metrics), judge_signature())


# --- rescoring in the background ---


@st.cache_resource(show_spinner=False)
def judge_jobs() -> dict[str, Any]:
    """store path -> its newest judge_jobs.JudgeJob, shared by every session of the server: a
    judge run started in one tab shows its progress in any tab that opens the Judge page."""
    return {}


@st.cache_resource(show_spinner=False)
def scoring_jobs() -> dict[tuple[Any, ...], Any]:
    """(store, run, scorer, norm) -> its rescoring.Job, shared by every session of the server:
    a scoring started on one page goes on while the user moves to another."""
    return {}


@st.cache_resource(show_spinner=False)
def scored_keys() -> set[tuple[Any, ...]]:
    """The (store, run, scorer, norm) keys known to have their pair scores kept."""
    return set()
