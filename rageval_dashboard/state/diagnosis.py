"""The failure diagnosis's caches (the state package's part for the Why failing page, the
Queries page's reason column and Compare's transition table).

A diagnosis is cached per run, store and settings in two steps. The quick one skips the split
check (rageval_core.diagnosis, check_splits=False: numpy over the kept arrays, no text read),
so a slider move answers at once; the whole one adds the split check, which reads texts and
scores each undecided span's parts (about 12 ms a span). A few undecided spans are checked in
the page's own run; more in one background thread while the page shows the quick diagnosis
and polls (as Compare's resampling, state/compare.py). Every split check runs in that one
thread, one at a time: the part scores it keeps on the run's arrays are never written by two.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import streamlit as st

from rageval_dashboard.jobs.busy import calm
from rageval_dashboard.keys import View, settings_from_key, settings_key
from rageval_dashboard.state.storage import _db, run_data, store
from rageval_core.diagnosis import Diagnosis, Transitions, diagnose, transitions
from rageval_core.diagnosis.stages import GROUP_KEY, STAGE_KEY, STAGES
from rageval_core.rundata import RunData
from rageval_core.store import RunRecord, Store

#: undecided spans (missed, neither refused nor covered below k) up to which the split check
#: runs inside the page's run (about 12 ms each: 25 are 0.3 s); past it in the thread. A test
#: sets it
SPLIT_INLINE_SPANS = 25
#: undecided spans up to which the Why failing page starts the thread by itself (about 6 s);
#: past it a button does, once per run and session: a check running in the thread slows every
#: slider move by half again (it competes for the interpreter), so a long one is asked for
SPLIT_AUTO_SPANS = 500
#: the split check's cost per undecided span (docs/diagnosis.md, Speed), for the button's text
SPLIT_S_PER_SPAN = 0.012
#: queued or finished split checks kept (the oldest go first)
KEPT_JOBS = 32

Key = tuple[Any, ...]


def clear_caches() -> None:
    """After an import, rename or delete."""
    _quick.clear()
    _jobs().clear()


@st.cache_resource(show_spinner=False, max_entries=64)
def _quick(
    run_id: int, content_hash: str, db: str | None, key: Key, first: Key | None
) -> Diagnosis:
    data = run_data(run_id, content_hash, db)
    return diagnose(
        store(),
        data,
        settings_from_key(key),
        first_stage=None if first is None else (store(), run_data(*first, db)),
        check_splits=False,
    )


@st.cache_resource(show_spinner=False)
def _jobs() -> dict[Key, Future[Diagnosis]]:
    # the split checks, started by whole(), newest last
    return {}


@st.cache_resource(show_spinner=False)
def _pool() -> ThreadPoolExecutor:
    # one thread: the split check's kept part scores are written by one check at a time
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="rageval-diagnosis")


def _whole_job(
    db_store: Store, data: RunData, key: Key, first: tuple[Store, RunData] | None
) -> Diagnosis:
    return diagnose(db_store, data, settings_from_key(key), first_stage=first)


def undecided(d: Diagnosis) -> int:
    """Spans the split check would read: missed, neither refused nor covered below k."""
    if d.relevance != "evidence":
        return 0
    wanted = [d.reasons.index(r) for r in ("near_miss", "not_retrieved")]
    return int(np.count_nonzero(np.isin(d.missed.reason, wanted)))


def _first_key(first: RunRecord | None) -> Key | None:
    return None if first is None else (first.run_id, first.content_hash)


@calm
def quick(view: View, first: RunRecord | None = None) -> Diagnosis:
    """The view's diagnosis without the split check (cached per run, settings, first stage).
    Raises the core's RagevalError (a preset, a first stage without gold) for the page."""
    return _quick(
        view.run.run_id,
        view.run.content_hash,
        _db(),
        settings_key(view.settings),
        _first_key(first),
    )


@calm
def whole(view: View, first: RunRecord | None = None, start: bool = True) -> Diagnosis | None:
    """The view's whole diagnosis (with the split check), or None while the thread checks the
    splits (the page shows quick() and polls). Few undecided spans are checked here and now.

    start=False only looks: a page starts the thread from its note's first poll, after the page
    is drawn, so that the check does not compete with drawing it for the interpreter."""
    db, key, first_key = _db(), settings_key(view.settings), _first_key(first)
    fast = _quick(view.run.run_id, view.run.content_hash, db, key, first_key)
    if undecided(fast) == 0:
        return fast  # nothing to check: the quick diagnosis is the whole one
    jobs = _jobs()
    name = (view.run.run_id, view.run.content_hash, db, key, first_key)
    job = jobs.get(name)
    if job is not None and job.cancelled():  # left for other settings, then come back to
        del jobs[name]
        job = None
    inline = undecided(fast) <= SPLIT_INLINE_SPANS
    if job is None:
        if not start and not inline:
            return None
        data = run_data(view.run.run_id, view.run.content_hash, db)
        first_stage = None if first_key is None else (store(), run_data(*first_key, db))
        for old in jobs.values():
            old.cancel()  # queued for settings the user has left (a running one finishes)
        job = jobs[name] = _pool().submit(_whole_job, store(), data, key, first_stage)
        for stale in list(jobs)[:-KEPT_JOBS]:
            jobs.pop(stale, None)
    if inline:
        return job.result()  # a few spans: worth the wait in this run
    if not job.done():
        return None
    return job.result()  # a failed check raises its error here


def best(view: View, first: RunRecord | None = None) -> Diagnosis:
    """The whole diagnosis when it is there (or cheap), else the quick one; starts nothing (the
    Why failing page starts the split check)."""
    found = whole(view, first, start=False)
    return quick(view, first) if found is None else found


@calm
def transition_table(baseline: View, candidate: View, start: bool = True) -> Transitions | None:
    """Compare's transition table: each run's whole diagnosis when ready; None while a split
    check runs (the page says so; start as whole's)."""
    before, after = whole(baseline, start=start), whole(candidate, start=start)
    if before is None or after is None:
        return None
    return transitions(before, after)


def trace_first_stage(run: RunRecord, listed: list[RunRecord]) -> RunRecord | None:
    """The retriever stage stored beside a reranker stage of one OpenInference export (as the
    core's stages.trace_first_stage, over the runs already listed: no store query)."""
    group = run.settings.get(GROUP_KEY)
    if run.settings.get(STAGE_KEY) != STAGES[1] or group is None:
        return None
    return next(
        (
            r
            for r in listed
            if r.settings.get(GROUP_KEY) == group and r.settings.get(STAGE_KEY) == STAGES[0]
        ),
        None,
    )
