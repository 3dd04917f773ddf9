"""What a person adds to stored runs from the app: notes on a query (the drilldown) and a run's
date, prices, tags and qrels (the Runs page). Callbacks and reads over rageval_core.annotate."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import streamlit as st

from rageval_dashboard import actions, keys
from rageval_dashboard.jobs import imports
from rageval_dashboard.state import clear_caches, store
from rageval_core import annotate
from rageval_core.errors import RagevalError
from rageval_core.importing import confined
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


def attach_qrels(run_id: int) -> None:
    """on_click of Attach qrels on the Runs page: the uploaded qrels file becomes the run's
    relevance (annotate.attach_qrels); problems name the file as the user knows it."""
    upload = st.session_state.get(keys.RUNS_FACT_QRELS)
    if upload is None:
        actions.flash(actions.Flash("warning", "Choose a qrels file first."))
        return
    with tempfile.TemporaryDirectory(prefix="rageval-qrels-") as tmp:
        try:
            (path,) = imports.save_uploads([upload], Path(tmp).resolve())
            with confined(imports.upload_policy(Path(tmp))):
                record = annotate.attach_qrels(store(), run_id, path, shown=upload.name)
        except RagevalError as e:
            detail = str(e).replace(str(Path(tmp).resolve() / upload.name), upload.name)
            actions.flash(actions.Flash("error", "The qrels were not attached.", detail=detail))
            return
    clear_caches()
    actions.flash(
        actions.Flash(
            "success",
            "Qrels attached.",
            detail=f"{record.name} now has the relevance labels of {upload.name}",
            run_ids=(record.run_id,),
        )
    )


def name_clashes(imported: list[RunRecord], before: set[str]) -> list[tuple[str, str]]:
    """[(stored name, the taken name)] of new runs the store renamed NAME-2, NAME-3 ... because
    a run named NAME was already stored."""
    out = []
    for r in imported:
        m = re.fullmatch(r"(.+)-\d+", r.name)
        if m and m.group(1) in before:
            out.append((r.name, m.group(1)))
    return out


def settle_clash(new: str, old: str, choice: str) -> None:
    """on_click of the clash buttons: "overwrite" (the old run goes, the new one takes its
    name), "cancel" (the new run goes) or "keep" (both stay, the new one under its new name)."""
    ss = st.session_state
    ss[keys.RUNS_CLASHES] = [c for c in ss.get(keys.RUNS_CLASHES, []) if c != (new, old)]
    try:
        if choice == "overwrite":
            store().delete(old)
            store().rename(new, old)
            message = f"{old} was replaced by the new import."
        elif choice == "cancel":
            store().delete(new)
            message = "The new import was removed; the stored run is unchanged."
        else:
            message = f"Both kept: the new import is {new}."
    except RagevalError as e:
        actions.flash(actions.Flash("error", "The name clash was not settled.", detail=str(e)))
        return
    clear_caches()
    if ss.get(keys.RUN) in (new, old) and choice != "keep":
        ss[keys.RUN] = old
    actions.flash(actions.Flash("success", "Name clash settled.", detail=message))
