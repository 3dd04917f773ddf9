"""Runs: the stored runs with their facts; import (upload or path; a taken name asks), rename,
delete, and facts attached later (date, prices, run tags)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from rageval_dashboard import actions, annotations, keys, sidebar, state
from rageval_dashboard.jobs import imports
from rageval_dashboard.components import tables
from rageval_dashboard.widgets.text_tables import text_table
from rageval_dashboard.components.text import escape_text
from rageval_core.errors import RagevalError
from rageval_core.importing import ImportOutcome
from rageval_core.store import RunRecord

st.title("Runs")
PRICES = {
    c: st.column_config.NumberColumn(c, format="%.5f") for c in ("prompt $/1K", "completion $/1K")
}


def show_outcome(outcome: ImportOutcome, upload_dir: Path | None) -> None:
    """Nothing stored: the problems as a table. Something stored: remember a note and rerun."""
    added = outcome.imported + outcome.existing
    problems = tuple(outcome.problems)
    if not added:
        st.error("The files have problems: nothing was stored.")
        frame = tables.problems_frame(problems, hide_prefix=upload_dir)
        text_table(
            frame, "runs.problems", "import_problems.csv", download_label="Download problems (CSV)"
        )
        return
    parts = [f"Imported {len(outcome.imported)} run(s)."] if outcome.imported else []
    if outcome.existing:
        parts.append(f"{len(outcome.existing)} run(s) were already stored with identical content.")
    bare = [r.name for r in outcome.imported if r.format == "trec" and not r.has_qrels]
    if bare:
        # a TREC run is only ranked doc ids: without qrels no ranking metric can be computed
        parts.append(
            f"{len(bare)} TREC run(s) came without qrels, so they have no relevance and no "
            "ranking metric: attach its qrels file under Attach facts below."
        )
    if outcome.failed:
        parts.append(
            f"{len(outcome.failed)} run(s) had errors and were not stored (see the problems)."
        )
    # upload names are shown without their temporary folder: fixed here, before it is removed
    shown = tables.problems_frame(problems, hide_prefix=upload_dir)
    actions.flash(
        actions.Flash(
            "warning" if outcome.failed or bare else "success",
            " ".join(parts),
            detail="\n".join(bare) or None,
            run_ids=tuple(r.run_id for r in added),
            problems=shown,
        )
    )
    st.rerun()


def open_runs(runs: list[RunRecord], note: actions.Flash) -> None:
    """Under the import's message, each run it stored: "Open NAME" makes it the sidebar's run
    (every page then shows it) and keeps the message; the open one links to its Overview."""
    current = sidebar.view()
    with st.container(horizontal=True, vertical_alignment="center"):
        for r in runs:
            name = escape_text(r.name, one_line=True)  # a label is Markdown; a name is user text
            if current is not None and current.run.run_id == r.run_id:
                st.page_link("app_pages/overview.py", label=f"{name} on the Overview", icon="➡️")
            else:
                st.button(
                    f"Open {name}",
                    key=f"runs.open.{r.run_id}",
                    on_click=actions.open_run,
                    args=(r.name, note),
                )


def follow_sidebar(by_name: dict[str, RunRecord]) -> None:
    """The page's Run selects (rename/delete, attach) show the sidebar's run: at first, and
    again whenever the sidebar's run changes; a run picked here stays until then."""
    ss = st.session_state
    current = sidebar.view()
    shown = current.run.name if current is not None else next(iter(by_name))
    moved = ss.get(keys.RUNS_SIDEBAR_RUN) != shown
    ss[keys.RUNS_SIDEBAR_RUN] = shown
    for key in (keys.RUNS_TARGET, keys.RUNS_FACT_TARGET):
        if moved or ss.get(key) not in by_name:
            ss[key] = shown


def run_import(paths: list[Path], upload_dir: Path | None = None) -> None:
    bar = st.progress(0.0, text="Reading the files ...")

    def progress(stage: str, label: str, done: int, total: int | None) -> None:
        # total: the reader's estimate for an import (None when unknown), exact for scoring
        share = min(done / total, 1.0) if total else 0.0
        if stage == "import":
            of = f" of about {total:,}" if total else ""
            bar.progress(share, text=f"Importing {label}: {done:,}{of} queries read")
        else:
            bar.progress(share, text=f"Scoring the evidence of {label}: {done:,} queries")

    before = {r.name for r in state.runs()}
    try:
        outcome = actions.import_files(paths, progress, upload_dir=upload_dir)
    except RagevalError as e:
        bar.empty()
        st.error("The import failed:")
        st.code(str(e), language=None)
        return
    bar.empty()
    # a name already taken: the store kept the new run as NAME-2; the user decides below
    st.session_state[keys.RUNS_CLASHES] = annotations.name_clashes(outcome.imported, before)
    show_outcome(outcome, upload_dir)


for interrupted in state.take_interrupted():
    # a process killed mid-import (or mid-scoring) since the last look; its source is user text
    st.warning("An import or scoring was interrupted before it finished; nothing of it was stored:")
    st.code(interrupted, language=None, wrap_lines=True)

note = actions.take_flash()
if note is not None:
    {"success": st.success, "warning": st.warning}.get(note.kind, st.error)(note.message)
    if note.detail:
        st.code(note.detail, language=None)
    shown = [r for r in state.runs() if r.run_id in note.run_ids]
    if shown:
        text_table(tables.runs_frame(shown), "runs.imported", None, column_config=PRICES)
        open_runs(shown, note)
    if note.problems is not None and len(note.problems):
        st.caption("Problems found while reading:")
        text_table(note.problems, "runs.import_problems", "import_problems.csv")

for new, old in st.session_state.get(keys.RUNS_CLASHES, []):
    st.warning(
        escape_text(
            f"A run named {old} was already stored, so the new import is stored as {new}. "
            f"Overwrite {old} with it, keep both, or cancel the new import?",
            one_line=True,
        )
    )
    with st.container(horizontal=True):
        for label, choice in (
            (f"Overwrite {old}", "overwrite"),
            ("Keep both", "keep"),
            ("Cancel the import", "cancel"),
        ):
            st.button(
                label,
                key=f"runs.clash.{choice}.{new}",
                on_click=annotations.settle_clash,
                args=(new, old, choice),
                type="primary" if choice == "overwrite" else "secondary",
            )

st.subheader("Import")
upload_tab, path_tab = st.tabs(
    ["Upload files", "From a path"], key=keys.RUNS_TAB, bind="query-params"
)
with upload_tab:
    files = st.file_uploader(
        "Run files (a run may come with its qrels or gold file)",
        accept_multiple_files=True,
        key=keys.RUNS_UPLOAD,
    )
    if st.button("Import uploaded files", disabled=not files, key="runs.import_upload"):
        with tempfile.TemporaryDirectory(prefix="rageval-upload-") as tmp:
            folder = Path(tmp).resolve()
            try:
                saved = imports.save_uploads(files or [], folder)
            except RagevalError as e:
                st.error("The upload cannot be imported:")
                st.code(str(e), language=None)
            else:
                run_import(saved, upload_dir=folder)
with path_tab:
    st.caption(
        "Files inside these folders can be imported (set `RAGEVAL_IMPORT_DIRS` to change them):"
    )
    st.code("\n".join(str(d) for d in imports.import_dirs()), language=None)
    typed = st.text_area("Paths, one per line (e.g. a TREC run and its qrels)", key=keys.RUNS_PATHS)
    # not disabled while empty: the text commits on blur, which a click on the button is
    clicked = st.button("Import from paths", key="runs.import_paths")
    if clicked and not typed.strip():
        st.warning("Type the path of at least one file first.")
    elif clicked:
        checked, refused = [], []
        for line in filter(str.strip, typed.splitlines()):
            try:
                checked.append(imports.check_import_path(line))
            except RagevalError as e:
                refused.append(str(e))
        if refused:
            st.error(
                "Refused: every path must name a file inside the folders listed above. "
                "Nothing was imported."
            )
            st.code("\n".join(refused), language=None)
        else:
            run_import(checked)

st.subheader("Stored runs")
runs = state.runs()
if not runs:
    st.info(
        "No runs yet. Import one above, with `rageval import FILE`, or run `make run` to "
        "import the sample runs."
    )
else:
    st.caption(f"{len(runs)} run(s) in the store")
    frame = tables.runs_frame(runs)
    text_table(
        frame,
        "runs.list",
        "runs.csv",
        column_config=PRICES,
        download_label="Download the run list (CSV)",
    )

    st.subheader("Rename or delete")
    by_name = {r.name: r for r in runs}
    follow_sidebar(by_name)
    target = by_name[st.selectbox("Run", list(by_name), key=keys.RUNS_TARGET)]
    rename_col, delete_col = st.columns(2)
    with rename_col:
        st.text_input("New name", key=keys.RUNS_NEW_NAME)
        st.button("Rename", key="runs.rename", on_click=actions.rename_run, args=(target.run_id,))
    with delete_col:
        st.checkbox("Yes, delete this run and everything stored with it", key=keys.RUNS_CONFIRM)
        st.button(
            "Delete",
            key="runs.delete",
            type="primary",
            on_click=actions.delete_run,
            args=(target.run_id,),
            disabled=not st.session_state.get(keys.RUNS_CONFIRM),
        )

    st.subheader("Attach facts")
    st.caption(
        "Add what the import did not bring: the run's date (ISO 8601, used by Trends), its "
        "token prices (USD per 1K) and run tags (one `key=value` a line; `key=` removes a "
        "tag). Fields left empty keep the stored value. Qrels replace the run's relevance "
        "labels, as if they had been imported with it; its scores, judge results and notes "
        "are kept."
    )
    fact_run = by_name[st.selectbox("Run", list(by_name), key=keys.RUNS_FACT_TARGET)]
    f1, f2, f3 = st.columns(3)
    f1.text_input(
        "Date (created_at)",
        key=keys.RUNS_FACT_DATE,
        placeholder=fact_run.created_at or "2026-05-01",
    )
    f2.number_input(
        "Prompt $/1K", min_value=0.0, value=None, format="%.5f", key=keys.RUNS_FACT_PROMPT
    )
    f3.number_input(
        "Completion $/1K", min_value=0.0, value=None, format="%.5f", key=keys.RUNS_FACT_COMPLETION
    )
    st.text_area("Run tags", key=keys.RUNS_FACT_TAGS, placeholder="experiment=chunking", height=80)
    st.button(
        "Save facts",
        key="runs.save_facts",
        on_click=annotations.attach_facts,
        args=(fact_run.run_id,),
    )
    st.file_uploader(
        "Qrels (TREC, BEIR's qrels TSV or ranx JSON): replace the run's relevance labels",
        key=keys.RUNS_FACT_QRELS,
    )
    st.button(
        "Attach qrels",
        key="runs.attach_qrels",
        on_click=annotations.attach_qrels,
        args=(fact_run.run_id,),
        disabled=st.session_state.get(keys.RUNS_FACT_QRELS) is None,
    )
