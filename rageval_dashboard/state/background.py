"""The registries of work under way in threads, shared by every session of the server
(rageval_dashboard.jobs runs the work; these say where it is)."""

from __future__ import annotations

from typing import Any

import streamlit as st


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
