"""Scoring a run's evidence pairs for new settings in a background thread, with progress.

A scorer, embedder or normalisation the run was never scored with needs every (gold span,
retrieved chunk) pair scored again: seconds to minutes. Instead of a page greyed out for that
long, the pages that show the run at those settings draw a progress bar (queries done, ETA)
and a Cancel button, polled once a second, while a thread scores; the Runs page and every
setting already scored stay usable. A cancelled scoring keeps nothing of itself and nothing
else is touched: the scores of other settings stay in the store.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from rageval_dashboard import state
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.keys import View
from rageval_core import threads
from rageval_core.errors import RagevalError
from rageval_core.evaluation.scoring import ScoringCancelled, ensure_scored, is_scored

#: how often the progress bar is redrawn (seconds)
POLL_S = 0.5


@dataclass
class Job:
    """One scoring under way (or finished) in its thread."""

    label: str
    total: int
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    cancel: threading.Event = field(default_factory=threading.Event)
    finished: bool = False
    error: str | None = None  # why it stopped ("cancelled" when the user asked)

    def progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def eta_s(self) -> float | None:
        """Seconds left at the rate so far; None before the first block is in."""
        if self.done <= 0:
            return None
        elapsed = time.monotonic() - self.started
        return elapsed / self.done * max(self.total - self.done, 0)

    def text(self) -> str:
        eta = self.eta_s()
        left = "estimating the time left" if eta is None else f"about {eta:,.0f} s left"
        return f"{self.label}: {self.done:,} / {self.total:,} queries, {left}"


def _key(view: View) -> tuple[Any, ...]:
    s = view.settings
    return (state.store_path(), view.run.run_id, view.run.content_hash, s.scorer_key)


def _run(job: Job, view: View, store: Any) -> None:
    s = view.settings
    try:
        ensure_scored(
            store,
            view.run.run_id,
            s.scorer_key,
            progress=job.progress,
            cancel=job.cancel,
        )
    except ScoringCancelled:
        job.error = "cancelled"
    except RagevalError as e:
        job.error = str(e)
    except Exception as e:  # a thread's error would vanish: the page shows it instead
        job.error = f"{type(e).__name__}: {e}"
    finally:
        job.finished = True


def needs_scoring(view: View) -> bool:
    """Whether the view's settings need pair scores the store does not hold yet."""
    s = view.settings
    if not view.run.has_evidence:
        return False
    known = state.scored_keys()
    key = _key(view)
    if key in known:  # scores once kept stay kept: no store query on every slider move
        return False
    if is_scored(state.store(), view.run.run_id, s.scorer_key):
        known.add(key)
        return False
    return True


def start(view: View) -> Job:
    """The job scoring the view's settings: the one under way, else a new one in a thread."""
    jobs = state.scoring_jobs()
    key = _key(view)
    job = jobs.get(key)
    if job is None or (job.finished and job.error != "cancelled"):
        s = view.settings
        job = Job(
            label=f"Scoring {view.run.name} with {s.scorer_key.stored} ({s.norm.key})",
            total=view.run.n_queries,
        )
        jobs[key] = job
        # the store is looked up here: the thread has no Streamlit context for the cache
        # tracked: the server's exit cancels it and waits, never ends it inside DuckDB
        threads.start(_run, job, view, state.store(), name="rageval-scoring", stop=job.cancel.set)
    return job


def gate(view: View) -> None:
    """Stop the page with a progress bar while the view's pair scores are computed."""
    if not needs_scoring(view):
        state.scoring_jobs().pop(_key(view), None)
        return
    job = state.scoring_jobs().get(_key(view))
    if job is not None and job.finished and job.error is not None:
        _stopped(view, job)
    else:
        job = start(view)
        _show_progress(job)
    st.stop()


def _stopped(view: View, job: Job) -> None:
    if job.error == "cancelled":
        st.info(
            "Scoring was cancelled: these settings have no pair scores yet. Pick a scorer "
            "or normalisation the run was scored with (the scores of those are kept), or "
            "start this one again."
        )
    else:
        st.error(escape_text(f"Scoring failed: {job.error}", one_line=True))
    if st.button("Score with these settings", key="rescoring.again"):
        state.scoring_jobs().pop(_key(view), None)
        st.rerun()


@st.fragment(run_every=POLL_S)
def _show_progress(job: Job) -> None:
    if job.finished:
        st.rerun(scope="app")  # the scores are in (or it stopped): the page draws itself again
    st.progress(min(job.done / max(job.total, 1), 1.0), text=escape_text(job.text(), one_line=True))
    st.caption(
        "New settings need every evidence pair scored again (once: then they are kept). "
        "Other pages and settings already scored stay usable meanwhile."
    )
    if st.button("Cancel", key="rescoring.cancel"):
        job.cancel.set()
        st.rerun(scope="app")
