"""Every st.cache_* and session-state key of the dashboard lives here; pages only call these.

Shareable state (run, k, threshold, scorer, normalisation, score cut-off, relevance) lives in
the sidebar widgets, which are bound to the URL's query parameters (bind="query-params"), so a
view is a link. Heavy objects (the Store, each run's arrays, reports) are cache_resource: they
are shared read-only and never pickled.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import streamlit as st

from rageval_core import curves, drilldown, opsview, tuning
from rageval_core.compare import Comparison, TrendRow, compare, trends
from rageval_core.errors import RagevalError
from rageval_core.evaluate import Report, Settings, evaluate, with_breakdown
from rageval_core.importing import ImportOutcome, import_paths
from rageval_core.matching import SCORERS, Normalisation
from rageval_core.metrics import registry
from rageval_core.rundata import RunData, load_run_data
from rageval_core.store import RunRecord, Store
from rageval_core.store.lease import LeasedStore
from rageval_core.store.locking import StoreBusyError
from rageval_core.store.store import default_path

# widget keys = query parameter names (short, stable: they appear in shared links)
RUN, K, THRESHOLD, SCORER, PUNCT, ARTICLES, CUT_ON, CUT, RELEVANCE = (
    "run", "k", "threshold", "scorer", "punct", "articles", "cut_on", "cut", "relevance",
)
#: session keys, namespaced by page
VIEW = "app.view"
SELECTED_QUERY = "queries.selected"

SCORER_NAMES = tuple(SCORERS)


@dataclass(frozen=True)
class View:
    """What the sidebar selected: a run and the settings every page evaluates it with."""

    run: RunRecord
    settings: Settings


#: how long the start of a page waits, saying so, for another process to let go of the store
BUSY_GATE_S = 60.0
#: each try of that wait (the message is refreshed between tries)
BUSY_STEP_S = 1.0
#: how long a store call in the middle of a page waits before the page stops with a message
BUSY_DEEP_S = 120.0
BUSY_WAITING = ("The store is busy: an import (or another rageval process) is writing to it; "
                "retrying ... ({waited:.0f} s so far). Nothing is lost: this page loads as soon "
                "as the store is free.")
BUSY_GAVE_UP = ("The store is still busy: an import (or another rageval process) has held it for "
                "{waited:.0f} s. Nothing is lost: use **Try again** (or reload the page) once it "
                "has finished.")

F = TypeVar("F", bound=Callable[..., Any])


@st.cache_resource(show_spinner=False)
def _store(path: str | None) -> LeasedStore:
    return LeasedStore(path, wait_s=BUSY_DEEP_S)


def store_path() -> str:
    """The store file this server shows, as an absolute path: $RAGEVAL_DB (`rageval dashboard`
    sets it), else the default under the folder the server was started in."""
    return str(Path(default_path()).expanduser().resolve())


def store() -> Store:
    """The store at store_path(), shared by every session of the server process.

    A LeasedStore: the file is opened while some page works on it and let go a moment after,
    so `rageval import` can write to it while the dashboard is open (docs/reliability.md).
    """
    return _store(store_path())


def _calm(fn: F) -> F:
    """A store still busy after BUSY_DEEP_S stops the page with a message, never a traceback."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except StoreBusyError as e:
            st.warning(BUSY_GAVE_UP.format(waited=e.waited_s))
            st.button("Try again", key="app.busy_retry_deep")
            st.stop()

    return call  # type: ignore[return-value]


@st.cache_resource(show_spinner=False)
def _listed() -> dict[str, tuple[tuple[Any, ...], list[RunRecord]]]:
    # store path -> (its files' signature, the runs listed then); shared by every session
    return {}


def _signature(path: str) -> tuple[Any, ...]:
    """(mtime, size) of the store file and its write-ahead log: any committed write changes it."""
    out: list[Any] = []
    for name in (path, path + ".wal"):
        try:
            found = os.stat(name)
        except OSError:
            out.append(None)
        else:
            out.append((found.st_mtime_ns, found.st_size))
    return tuple(out)


def _held_elsewhere(path: str) -> bool:
    """Whether another process holds the store file's lock (DuckDB's, listed in /proc/locks).

    True when that cannot be told (no /proc/locks): the caller then takes the careful path.
    """
    try:
        inode = os.stat(path).st_ino
        lines = Path("/proc/locks").read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return True
    me = os.getpid()
    for line in lines:  # "1: POSIX  ADVISORY  WRITE 12634 fe:00:2149620 0 EOF"
        fields = line.split()
        for i, field in enumerate(fields[1:], start=1):
            if field.count(":") == 2:
                pid, ino = fields[i - 1], field.rsplit(":", 1)[1]
                if pid.isdigit() and ino.isdigit() and int(ino) == inode and int(pid) != me:
                    return True
                break
    return False


def _runs_if_unchanged() -> tuple[tuple[Any, ...], list[RunRecord] | None]:
    """The runs listed before, if no process has written to the store since (no file open).

    None while another process holds the file: the sidebar then takes its turn and says so.
    """
    path = store().path
    sig = _signature(path)
    kept = _listed().get(path)
    if kept is None or kept[0] != sig or _held_elsewhere(path):
        return sig, None
    return sig, kept[1]


@_calm
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
            with leased.hold(wait_s=0 if note is None else BUSY_STEP_S):  # type: ignore[attr-defined]
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


@_calm
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
def _report(run_id: int, content_hash: str, db: str | None, settings_key: tuple[Any, ...],
            metrics: tuple[str, ...] | None, by: str | None) -> Report:
    data = run_data(run_id, content_hash, db)
    if by is not None:  # the breakdown regroups the report's per-query values: no re-evaluation
        return with_breakdown(data, _report(run_id, content_hash, db, settings_key, metrics, None),
                              by)
    return evaluate(data, list(metrics) if metrics else None, store=store(),
                    settings=settings_from_key(settings_key))


@_calm
def report(view: View, metrics: tuple[str, ...] | None = None, by: str | None = None) -> Report:
    """The core's report for the current view (cached per run, settings, metrics and tag)."""
    return _report(view.run.run_id, view.run.content_hash, _db(), settings_key(view.settings),
                   metrics, by)


@_calm
def data(view: View) -> RunData:
    """The current run's arrays (cached)."""
    return run_data(view.run.run_id, view.run.content_hash, _db())


def _db() -> str:
    # part of every cache key: tests (and a user) may point the same server at another store
    return store_path()


def view() -> View | None:
    """The sidebar's current selection (set by app.py before the page runs)."""
    return st.session_state.get(VIEW)


def require_view() -> View:
    """The current view, or a clear message and a stop when there is no run to show."""
    current = view()
    if current is None:
        st.info("No runs yet. Import one on the **Runs** page or with `rageval import FILE` "
                "(`make run` imports the sample runs).")
        st.stop()
    return current


def settings_key(s: Settings) -> tuple[Any, ...]:
    return (s.k, s.threshold, s.scorer, s.norm.strip_punct, s.norm.strip_articles, s.relevance,
            s.score_threshold, s.rel_level, s.complete)


def settings_from_key(key: tuple[Any, ...]) -> Settings:
    k, threshold, scorer, punct, articles, relevance, cut, rel_level, complete = key
    return Settings(k=k, threshold=threshold, scorer=scorer,
                    norm=Normalisation(strip_punct=punct, strip_articles=articles),
                    relevance=relevance, score_threshold=cut, rel_level=rel_level, complete=complete)


def clear_caches() -> None:
    """After an import, rename or delete: every derived result is recomputed (the Store stays)."""
    st.cache_data.clear()
    _listed().clear()
    for cached in (run_data, _report, _query_ops, _latency_by_tag, _query_texts, _query_table,
                   _query_detail, _borderline, _pair_labels):
        cached.clear()


def show_store_path() -> None:
    """The store file, at the foot of the sidebar: which file this dashboard shows is never a guess."""
    st.sidebar.caption("Store file")
    st.sidebar.text(store_path())  # st.text: a path is shown as typed, never as Markdown


def sidebar() -> View | None:
    """The shared controls; None (with a message on the page) when there is no run yet."""
    try:
        all_runs = runs_when_free()
    except RagevalError as e:
        st.error("The store cannot be read:")
        st.code(str(e), language=None)  # may hold a path: shown as typed, never as Markdown
        return None
    if all_runs is None:  # still busy: the message and a Try again button are on the page
        st.stop()
    if not all_runs:
        show_store_path()
        return None
    by_name = {r.name: r for r in all_runs}
    sb = st.sidebar
    if st.session_state.get(RUN) not in by_name:
        st.session_state[RUN] = all_runs[0].name
    name = sb.selectbox("Run", list(by_name), key=RUN, bind="query-params")
    run = by_name[name]
    depth = max(run.max_depth, 1)
    if st.session_state.get(K, 0) > depth:  # another run may be shallower than the last
        st.session_state[K] = depth
    if depth > 1:
        k = sb.slider("k (cut-off)", 1, depth, min(10, depth), key=K, bind="query-params")
    else:  # a slider needs min < max: every list of this run holds at most one chunk
        k = 1
        sb.caption("k = 1 (every ranked list of this run holds at most one chunk)")
    threshold = sb.slider("Fuzzy threshold", 0.0, 1.0, 0.7, 0.01, key=THRESHOLD,
                          bind="query-params",
                          help="a chunk covers a gold span when their match score is at least this")
    modes = [m for m, ok in (("ids", run.has_qrels), ("evidence", run.has_evidence)) if ok]
    relevance = None
    if modes:
        relevance = sb.radio("Relevance", modes, key=RELEVANCE, bind="query-params",
                             horizontal=True,
                             help="ids: the run's qrels; evidence: a chunk is relevant when it "
                                  "covers a gold span at the threshold")
    with sb.expander("Matching and cut-off"):
        scorer = st.selectbox("Scorer", SCORER_NAMES, key=SCORER, bind="query-params")
        punct = st.checkbox("Strip punctuation", key=PUNCT, bind="query-params")
        articles = st.checkbox("Strip articles (a, an, the)", key=ARTICLES, bind="query-params")
        cut_on = st.checkbox("Drop chunks below a retriever score", key=CUT_ON, bind="query-params")
        cut = None
        if cut_on:
            cut = st.number_input("Retriever score cut-off", value=0.0, step=0.05, key=CUT,
                                  bind="query-params")
    show_store_path()
    settings = Settings(
        k=int(k), threshold=round(float(threshold), 2), scorer=scorer,
        norm=Normalisation(strip_punct=punct, strip_articles=articles),
        relevance=relevance, score_threshold=None if cut is None else float(cut),
    )
    return View(run=run, settings=settings)


# --- latency ---

LATENCY_METRIC, LATENCY_TAG, LATENCY_BY = "latency.metric", "latency.tag", "latency.by"
LATENCY_BY_STAGE = "latency.by_stage"
LATENCY_LOG_X, LATENCY_DIST = "latency.log_x", "latency.dist"
#: the per-query table's page (rows per page as the Queries page)
LATENCY_PAGE, LATENCY_PAGE_ROWS = "latency.page", 1000


@st.cache_resource(show_spinner=False, max_entries=8)
def _query_ops(run_id: int, content_hash: str, db: str | None) -> opsview.QueryOps:
    return opsview.query_ops(run_data(run_id, content_hash, db))


@_calm
def query_ops(view: View) -> opsview.QueryOps:
    """Per-query latency, tokens and cost of the current run, aligned with report(view)."""
    return _query_ops(view.run.run_id, view.run.content_hash, _db())


@st.cache_resource(show_spinner=False, max_entries=32)
def _latency_by_tag(run_id: int, content_hash: str, db: str | None, tag: str) -> dict[str, Any]:
    return opsview.latency_by_tag(run_data(run_id, content_hash, db), tag)


@_calm
def latency_by_tag(view: View, tag: str) -> dict[str, Any]:
    """Latency percentiles per stage inside each value of a tag (independent of k/threshold)."""
    return _latency_by_tag(view.run.run_id, view.run.content_hash, _db(), tag)


# --- queries ---

QUERIES_FAILING, QUERIES_TAG, QUERIES_TAG_VALUES = "queries.failing", "queries.tag", "queries.tag_values"
QUERIES_SEARCH, QUERIES_SORT, QUERIES_TABLE = "queries.search", "queries.sort", "queries.table"
#: the table selection last acted on (a new one opens its query) and the "q" last mirrored to the URL
QUERIES_SEEN_ROWS, QUERIES_MIRRORED = "queries.seen_rows", "queries.mirrored"
#: the table shows this many rows at a time (a page); filters and sorts act on every row, and
#: the downloads hold every filtered row: a 100,000-query run never ships 100,000 rows per rerun
QUERIES_PAGE, QUERIES_PAGE_ROWS = "queries.page", 1000
QUERY_PARAM = "q"


@st.cache_resource(show_spinner=False, max_entries=8)
def _query_texts(run_id: int, content_hash: str, db: str | None) -> Any:
    return drilldown.query_texts(store(), run_data(run_id, content_hash, db))


@st.cache_resource(show_spinner=False, max_entries=64)
def _query_table(run_id: int, content_hash: str, db: str | None,
                 settings_key: tuple[Any, ...]) -> drilldown.QueryTable:
    return drilldown.query_table(_report(run_id, content_hash, db, settings_key, None, None),
                                  run_data(run_id, content_hash, db),
                                  _query_texts(run_id, content_hash, db))


@_calm
def query_table(view: View) -> drilldown.QueryTable:
    """The per-query table of the current view (cached per run and settings)."""
    return _query_table(view.run.run_id, view.run.content_hash, _db(), settings_key(view.settings))


@st.cache_resource(show_spinner=False, max_entries=128)
def _query_detail(run_id: int, content_hash: str, db: str | None, settings_key: tuple[Any, ...],
                  qidx: int) -> drilldown.QueryDetail:
    return drilldown.query_detail(store(), run_data(run_id, content_hash, db), qidx,
                                   settings_from_key(settings_key))


@_calm
def query_detail(view: View, qidx: int) -> drilldown.QueryDetail:
    """One query's drilldown at the current settings (cached)."""
    return _query_detail(view.run.run_id, view.run.content_hash, _db(), settings_key(view.settings),
                         qidx)


# --- threshold ---

TUNING_BAND, TUNING_PAGE, TUNING_HIDE = "threshold.band", "threshold.page", "threshold.hide_labelled"
#: borderline pairs fetched per setting (the page shows them a few at a time)
TUNING_LIMIT = 200


@st.cache_resource(show_spinner=False, max_entries=64)
def _borderline(run_id: int, content_hash: str, db: str | None, settings_key: tuple[Any, ...],
                band: float, limit: int) -> list[tuning.BorderlinePair]:
    return tuning.borderline_pairs(store(), run_data(run_id, content_hash, db),
                                   settings_from_key(settings_key), band=band, limit=limit)


@_calm
def borderline(view: View, band: float, limit: int = TUNING_LIMIT) -> list[tuning.BorderlinePair]:
    """The pairs near the view's threshold (cached per run, settings and band; labels are not)."""
    return _borderline(view.run.run_id, view.run.content_hash, _db(), settings_key(view.settings),
                       round(float(band), 4), limit)


@st.cache_resource(show_spinner=False, max_entries=16)
def _pair_labels(run_id: int, content_hash: str, db: str | None, scorer: str, norm: str,
                 signature: tuple[Any, ...]) -> tuning.Labels:
    return tuning.labels(store(), run_id, scorer, norm)


@_calm
def pair_labels(view: View) -> tuning.Labels:
    """The run's labels for the view's scorer and normalisation.

    Keyed by the store files' signature: a label written here or by another process changes
    the files, so it is read again then, and not on every slider move.
    """
    return _pair_labels(view.run.run_id, view.run.content_hash, _db(), view.settings.scorer,
                        view.settings.norm.key, _signature(store().path))


def label_pair(view: View, key: tuple[int, int, int], label: bool | None) -> None:
    """on_click of a pair's "match" / "no match" button: store the person's verdict."""
    qidx, rank, eidx = key
    try:
        tuning.set_label(store(), view.run.run_id, qidx, rank, eidx, view.settings.scorer,
                         view.settings.norm, label)
    except StoreBusyError:
        st.toast("The store is busy (an import is running): the label was not saved; try again.")


def use_threshold(value: float) -> None:
    """on_click of "use it": callbacks run before the rerun, so the sidebar slider shows value."""
    st.session_state[THRESHOLD] = round(float(value), 2)


# --- overview/runs ---



OVERVIEW_TAG = "overview.tag"
RUNS_UPLOAD, RUNS_PATHS, RUNS_FLASH = "runs.upload", "runs.paths", "runs.flash"
RUNS_TARGET, RUNS_NEW_NAME, RUNS_CONFIRM = "runs.target", "runs.new_name", "runs.confirm_delete"
#: evidence metrics over the threshold come from one sweep (fine grid); ranking metrics in
#: evidence mode relabel the chunks per threshold, so they get the coarse grid
THRESHOLD_GRID = tuple(round(i / 100, 2) for i in range(101))
COARSE_GRID = tuple(round(i / 20, 2) for i in range(21))


@st.cache_data(show_spinner=False, max_entries=64)
def _curves_k(run_id: int, content_hash: str, db: str | None, key: tuple[Any, ...],
              names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return curves.curves_over_k(store(), run_data(run_id, content_hash, db), settings_from_key(key),
                                 list(names))


@_calm
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
    ranking = tuple(n for n in names
                    if registry.REGISTRY[registry.ALIASES.get(n, n)].family == "ranking")
    other = tuple(n for n in names if n not in ranking)
    found: dict[str, np.ndarray] = {}
    if ranking:
        found.update(_curves_k(*run, settings_key(dataclasses.replace(s, k=1, threshold=0.0)),
                               ranking))
    if other:
        found.update(_curves_k(*run, key, other))
    return {n: found[n] for n in names}


@st.cache_data(show_spinner=False, max_entries=64)
def _curves_t(run_id: int, content_hash: str, db: str | None, key: tuple[Any, ...],
              grid: tuple[float, ...], names: tuple[str, ...] | None) -> dict[str, np.ndarray]:
    return curves.curves_over_threshold(store(), run_data(run_id, content_hash, db),
                                         settings_from_key(key), grid, names)


@_calm
def curves_t(view: View, grid: Sequence[float], names: Sequence[str] | None = None
             ) -> dict[str, np.ndarray]:
    """Run values at k over the thresholds of grid (cached; keyed without the threshold)."""
    key = settings_key(dataclasses.replace(view.settings, threshold=0.0))
    return _curves_t(view.run.run_id, view.run.content_hash, _db(), key, tuple(grid),
                     None if names is None else tuple(names))


@dataclass(frozen=True)
class Flash:
    """A message the Runs page shows once, after the rerun that follows a change."""

    kind: str  # "success" | "warning" | "error"
    message: str  # our own words only: rendered as Markdown
    detail: str | None = None  # may hold user text (names, paths): rendered as code
    run_ids: tuple[int, ...] = ()
    problems: Any = None  # a problems table (DataFrame) to show with the message


def flash(message: Flash) -> None:
    st.session_state[RUNS_FLASH] = message


def take_flash() -> Flash | None:
    return st.session_state.pop(RUNS_FLASH, None)


def import_files(paths: Sequence[Path], progress: Any = None,
                 upload_dir: Path | None = None) -> ImportOutcome:
    """The core's import verb on the app's store; caches are cleared when a run is added.

    progress(stage, label, done, total) as rageval_core.importing.import_paths. upload_dir: the
    temporary folder uploads were written to; it is cut from the runs' recorded sources.
    """

    def shown(source: str) -> str:
        if upload_dir is not None and source.startswith(str(upload_dir) + os.sep):
            return source[len(str(upload_dir)) + 1:]
        return source

    out = import_paths(store(), list(paths), progress=progress, show_source=shown)
    if out.imported:
        clear_caches()
    return out


def rename_run(run_id: int) -> None:
    """on_click of Rename: callbacks run before the page, so the sidebar can follow the new name."""
    new_name = str(st.session_state.get(RUNS_NEW_NAME) or "").strip()
    try:
        old = store().run(run_id)
        renamed = store().rename(run_id, new_name)
    except RagevalError as e:
        flash(Flash("error", "The run was not renamed.", detail=str(e)))
        return
    clear_caches()
    if st.session_state.get(RUN) == old.name:
        st.session_state[RUN] = renamed.name
    st.session_state[RUNS_TARGET] = renamed.name
    st.session_state[RUNS_NEW_NAME] = ""
    flash(Flash("success", "Run renamed.", detail=f"{old.name} -> {renamed.name}",
                run_ids=(renamed.run_id,)))


def delete_run(run_id: int) -> None:
    """on_click of Delete: only with the confirmation box ticked."""
    if not st.session_state.get(RUNS_CONFIRM):
        flash(Flash("error", "Tick the confirmation box first: deleting a run cannot be undone."))
        return
    try:
        deleted = store().delete(run_id)
    except RagevalError as e:
        flash(Flash("error", "The run was not deleted.", detail=str(e)))
        return
    clear_caches()
    st.session_state[RUNS_CONFIRM] = False
    st.session_state.pop(RUNS_TARGET, None)
    flash(Flash("success", "Run deleted.", detail=deleted.name))


# --- compare ---

COMPARE_BASELINE, COMPARE_CANDIDATES = "compare.baseline", "compare.candidates"
#: the sidebar run the baseline last followed, and the baseline before the current one
COMPARE_SIDEBAR_RUN, COMPARE_PREV_BASELINE = "compare.sidebar_run", "compare.prev_baseline"
#: the candidate and metric of the per-query views (scatter, regressed queries, drilldown)
COMPARE_FOCUS, COMPARE_METRIC = "compare.focus", "compare.metric"
#: the query opened side by side; the scatter's widget key and its selection last acted on
COMPARE_QUERY, COMPARE_REGRESSED = "compare.query", "compare.regressed"
COMPARE_SCATTER, COMPARE_SEEN_POINTS = "compare.scatter", "compare.seen_points"
COMPARE_TAG, COMPARE_TREND_METRICS, COMPARE_TREND_STAGE = (
    "compare.tag", "compare.trend_metrics", "compare.trend_stage")
COMPARE_MAX_CANDIDATES = 4


@st.cache_data(show_spinner=False, max_entries=32)
def _comparison(runs: tuple[tuple[int, str, str], ...], db: str | None,
                settings_key: tuple[Any, ...], tag: str | None) -> Comparison:
    loaded = [run_data(run_id, content_hash, db) for run_id, content_hash, _ in runs]
    return compare(loaded, store=store(), settings=settings_from_key(settings_key),
                   by=(tag,) if tag else ())


@_calm
def comparison(baseline: RunRecord, candidates: Sequence[RunRecord], settings: Settings,
               tag: str | None = None) -> Comparison:
    """The core's comparison of candidates with baseline (cached per runs, settings and tag).

    Raises the core's RagevalError (e.g. no shared query) for the page to show.
    """
    key = tuple((r.run_id, r.content_hash, r.name) for r in (baseline, *candidates))
    return _comparison(key, _db(), settings_key(settings), tag)


@st.cache_data(show_spinner=False, max_entries=16)
def _trend_rows(runs: tuple[tuple[int, str, str, str | None], ...], db: str | None,
                settings_key: tuple[Any, ...], metrics: tuple[str, ...]) -> list[TrendRow]:
    return trends(store(), settings_from_key(settings_key), list(metrics))


@_calm
def trend_rows(settings: Settings, metrics: Sequence[str]) -> list[TrendRow]:
    """Every stored run in created_at order with its metrics and p95 latency (cached)."""
    key = tuple((r.run_id, r.content_hash, r.name, r.created_at) for r in runs())
    return _trend_rows(key, _db(), settings_key(settings), tuple(metrics))
