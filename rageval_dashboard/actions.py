"""What the app's buttons do (callbacks and verbs): import, rename, delete, label a pair, use
a threshold, and the one-shot message the Runs page shows after a change.

Each change that makes cached results stale clears them (state.clear_caches).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from rageval_dashboard import keys
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.jobs import imports
from rageval_dashboard.keys import View
from rageval_dashboard.state import clear_caches, store
from rageval_core.evaluation import tuning
from rageval_core.errors import RagevalError
from rageval_core.importing import ImportOutcome, confined, import_paths
from rageval_core.store import StoreBusyError


@dataclass(frozen=True)
class Flash:
    """A message the Runs page shows once, after the rerun that follows a change."""

    kind: str  # "success" | "warning" | "error"
    message: str  # our own words only: rendered as Markdown
    detail: str | None = None  # may hold user text (names, paths): rendered as code
    run_ids: tuple[int, ...] = ()
    problems: Any = None  # a problems table (DataFrame) to show with the message


def flash(message: Flash) -> None:
    st.session_state[keys.RUNS_FLASH] = message


def take_flash() -> Flash | None:
    return st.session_state.pop(keys.RUNS_FLASH, None)


def import_files(
    paths: Sequence[Path], progress: Any = None, upload_dir: Path | None = None
) -> ImportOutcome:
    """The core's import verb on the app's store; caches are cleared when a run is added.

    progress(stage, label, done, total) as rageval_core.importing.import_paths. upload_dir: the
    temporary folder uploads were written to; it is cut from the runs' recorded sources.
    Every file the readers open (companions, sidecars, BEIR's corpus and queries beside its
    qrels) must lie in the import folders, or in upload_dir for uploads.
    """

    def shown(source: str) -> str:
        if upload_dir is not None and source.startswith(str(upload_dir) + os.sep):
            return source[len(str(upload_dir)) + 1 :]
        return source

    policy = imports.path_policy() if upload_dir is None else imports.upload_policy(upload_dir)
    with confined(policy):
        out = import_paths(store(), list(paths), progress=progress, show_source=shown)
    if out.imported:
        clear_caches()
    return out


def open_run(name: str, note: Flash | None = None) -> None:
    """on_click of an "Open NAME" button: the run becomes the sidebar's (a callback runs before
    the sidebar's Run widget is drawn), so every page shows it; note: the Runs page's message
    the button was in, kept for one more look (it then holds the link to the run's Overview)."""
    st.session_state[keys.RUN] = name
    if note is not None:
        flash(note)


def rename_run(run_id: int) -> None:
    """on_click of Rename: callbacks run before the page, so the sidebar can follow the new name."""
    new_name = str(st.session_state.get(keys.RUNS_NEW_NAME) or "").strip()
    try:
        old = store().run(run_id)
        renamed = store().rename(run_id, new_name)
    except RagevalError as e:
        flash(Flash("error", "The run was not renamed.", detail=str(e)))
        return
    clear_caches()
    if st.session_state.get(keys.RUN) == old.name:
        st.session_state[keys.RUN] = renamed.name
    st.session_state[keys.RUNS_TARGET] = renamed.name
    st.session_state[keys.RUNS_NEW_NAME] = ""
    flash(
        Flash(
            "success",
            "Run renamed.",
            detail=f"{old.name} -> {renamed.name}",
            run_ids=(renamed.run_id,),
        )
    )


def delete_run(run_id: int) -> None:
    """on_click of Delete: only with the confirmation box ticked."""
    if not st.session_state.get(keys.RUNS_CONFIRM):
        flash(Flash("error", "Tick the confirmation box first: deleting a run cannot be undone."))
        return
    try:
        deleted = store().delete(run_id)
    except RagevalError as e:
        flash(Flash("error", "The run was not deleted.", detail=str(e)))
        return
    clear_caches()
    st.session_state[keys.RUNS_CONFIRM] = False
    st.session_state.pop(keys.RUNS_TARGET, None)
    flash(Flash("success", "Run deleted.", detail=deleted.name))


def label_pair(view: View, key: tuple[int, int, int], label: bool | None) -> None:
    """on_click of a pair's "match" / "no match" button: store the person's verdict."""
    qidx, rank, eidx = key
    try:
        tuning.set_label(
            store(),
            view.run.run_id,
            qidx,
            rank,
            eidx,
            view.settings.scorer_key,
            None,
            label,
        )
    except StoreBusyError:
        st.toast("The store is busy (an import is running): the label was not saved; try again.")


def use_threshold(value: float) -> None:
    """on_click of "use it": callbacks run before the rerun, so the sidebar slider shows value."""
    st.session_state[keys.THRESHOLD] = round(float(value), 2)


def apply_preset() -> None:
    """on_change of the sidebar's "Metrics as": the sidebar's widgets take the chosen preset's
    values (rageval's defaults when none), so its numbers come out as its script's; a widget
    moved afterwards overrides the preset, as a flag beside --preset does."""
    from rageval_core.settings.presets import PRESETS, get_preset
    from rageval_core.settings.schema import BY_NAME, DEFAULTS

    name = st.session_state.get(keys.PRESET)
    values = get_preset(name).values if name in PRESETS else {}  # "rageval": rageval's own
    for setting in keys.PRESET_SETTINGS:
        set_widget(BY_NAME[setting], values.get(setting, DEFAULTS[setting]))


def set_widget(s: Any, value: Any) -> None:
    """Put a setting's value in its sidebar widget (and its switch, for an optional number)."""
    if s.url_switch:
        st.session_state[s.url_switch] = value is not None
        if value is None:
            return
    st.session_state[s.url_key] = value


def give_label(view: View, qidx: int, name: str, label: str | None) -> None:
    """on_click of the calibration page's "Save label": a person's label of one query (None:
    take back the one given here). Read back through the store's files' signature."""
    from rageval_core.store import judgements

    try:
        judgements.set_human_label(store(), view.run.run_id, qidx, name, label)
    except StoreBusyError:
        st.toast("The store is busy (an import is running): the label was not saved; try again.")


def annotator() -> str:
    """The sidebar's annotator name, stripped ("" when none is set)."""
    return str(st.session_state.get(keys.ANNOTATOR) or "").strip()


def give_grade(query_id: str, doc_id: str, grade: int | None, then_focus: int | None) -> None:
    """on_click of a grade button or key: the sidebar's annotator grades (query_id, doc_id)
    (None takes their grade back); the focus moves to then_focus. No cache is cleared: every
    result labels change is keyed by the grades signature, which the write changes."""
    from rageval_core import annotate

    name = annotator()
    if not name:  # the buttons are disabled without a name; a stale click changes nothing
        return
    try:
        annotate.set_grade(store(), query_id, doc_id, grade, annotator=name)
    except StoreBusyError:
        st.toast("The store is busy (an import is running): the label was not saved; try again.")
        return
    except RagevalError as e:
        st.toast(escape_text(f"The label was not saved: {e}", one_line=True))
        return
    said = "took back your grade" if grade is None else f"graded {grade}"
    st.session_state[keys.LABEL_SAID] = f"{said} for document {doc_id} of query {query_id}"
    if then_focus is not None:
        st.session_state[keys.LABEL_FOCUS] = then_focus


def add_gold_span(query_id: str, doc_id: str | None, text: str) -> None:
    """on_click of "Add as gold span": text becomes a gold evidence span of query_id."""
    from rageval_core import annotate

    name = annotator()
    if not name or not text.strip():
        return
    try:
        added = annotate.add_span(store(), query_id, text, annotator=name, doc_id=doc_id)
    except (StoreBusyError, RagevalError) as e:
        st.toast(escape_text(f"The gold span was not added: {e}", one_line=True))
        return
    st.session_state[keys.LABEL_SAID] = (
        "added a gold span" if added else "that gold span was there already"
    ) + f" to query {query_id}"


def remove_gold_span(query_id: str, text: str) -> None:
    """on_click of an added span's Remove: the span is taken back (imported ones never are)."""
    from rageval_core import annotate

    try:
        annotate.remove_span(store(), query_id, text)
    except (StoreBusyError, RagevalError) as e:
        st.toast(escape_text(f"The gold span was not removed: {e}", one_line=True))
        return
    st.session_state[keys.LABEL_SAID] = f"removed a gold span of query {query_id}"


def adjudicate(query_id: str, doc_id: str, grade_key: str) -> None:
    """on_click of "Keep as final": the sidebar's annotator's final grade of the item (kept under
    the source 'adjudicated', beside the annotators' own)."""
    from rageval_core.evaluation.agreement import adjudicate as keep_final

    name, grade = annotator(), st.session_state.get(grade_key)
    if not name or grade is None:
        return
    try:
        keep_final(store(), query_id, doc_id, int(grade), annotator=name)
    except (StoreBusyError, RagevalError) as e:
        st.toast(escape_text(f"The final grade was not kept: {e}", one_line=True))
        return
    st.session_state[keys.LABEL_SAID] = f"kept {grade} as the final grade of {doc_id}"
