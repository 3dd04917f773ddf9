"""What a person adds to stored runs from the app: notes on a query (the drilldown) and a run's
date, prices and tags (the Runs page). Callbacks and reads over rageval_core.annotate."""

from __future__ import annotations

import streamlit as st

from dashboard import actions, keys
from dashboard.state import clear_caches, store
from rageval_core import annotate
from rageval_core.errors import RagevalError
from rageval_core.store import RunRecord


def note_key(run_id: int, query_id: str) -> str:
    """The session key of the note box of one query of one run (a box per query: switching
    queries never carries a note over)."""
    return f"{keys.QUERIES_NOTE}.{run_id}.{query_id}"


def notes(run: RunRecord) -> dict[str, str]:
    """{query_id: note} of the run, read fresh (a note just saved shows at once)."""
    return annotate.query_notes(store(), run.run_id)


def save_note(run_id: int, query_id: str) -> None:
    """on_click of Save note: the box's text, kept with the run (blank removes the note)."""
    text = str(st.session_state.get(note_key(run_id, query_id)) or "")
    try:
        annotate.set_query_note(store(), run_id, query_id, text)
    except RagevalError as e:
        st.session_state[keys.QUERIES_NOTE_ERROR] = str(e)
    else:
        st.session_state[keys.QUERIES_NOTE_ERROR] = None


def _number(key: str) -> float | None:
    value = st.session_state.get(key)
    return None if value is None else float(value)


def attach_facts(run_id: int) -> None:
    """on_click of Save facts on the Runs page: date, prices and tags from the form's widgets."""
    ss = st.session_state
    date = str(ss.get(keys.RUNS_FACT_DATE) or "").strip()
    prompt, completion = _number(keys.RUNS_FACT_PROMPT), _number(keys.RUNS_FACT_COMPLETION)
    tags: dict[str, str] = {}
    for line in str(ss.get(keys.RUNS_FACT_TAGS) or "").splitlines():
        if line.strip():
            key, _, value = line.partition("=")
            tags[key.strip()] = value.strip()
    try:
        record = annotate.attach_facts(
            store(),
            run_id,
            created_at=date or None,
            prices=None if prompt is None and completion is None else (prompt, completion),
            tags=tags or None,
        )
    except RagevalError as e:
        actions.flash(actions.Flash("error", "The facts were not saved.", detail=str(e)))
        return
    clear_caches()
    actions.flash(
        actions.Flash("success", "Facts saved.", detail=record.name, run_ids=(record.run_id,))
    )
