"""The store this server shows, its runs (listed again only when the store's files change),
each run's arrays, and the judge signature that keys every result holding judge values."""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

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
from rageval_core.rundata import RunData, load_run_data
from rageval_core.store import LeasedStore, RunRecord, Store, StoreBusyError, default_path
from rageval_core.store import judgements as jstore


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


def clear_listing() -> None:
    """Forget every store's runs listing (state.clear_caches, after a write of our own)."""
    _listed().clear()


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


class RunKey(NamedTuple):
    """A run as every cache keys it: a re-imported run (a new content hash) or another store
    file is another key."""

    run_id: int
    content_hash: str
    db: str | None


def run_key(run: RunRecord) -> RunKey:
    """The cache key of a stored run in the store this server shows."""
    return RunKey(run.run_id, run.content_hash, _db())


@st.cache_resource(show_spinner=False, max_entries=8)
def run_data(run_id: int, content_hash: str, db: str | None = None) -> RunData:
    """A run's arrays, loaded once (content_hash in the key: a re-imported run reloads)."""
    return load_run_data(store(), run_id)


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


#: cleared by state.clear_caches() after an import, rename or delete
CACHES = (run_data, _judge_signature)
