"""Issue 27, point 10 in the app (AppTest): what a page shows is what it does (the relevance
mode a preset scores in, the run the Runs page acts on, a just-imported run one click away, no
internal index column)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard import keys
from dashboard.components.text import escape_text
from rageval_core import api, tuning
from rageval_core.evaluate import Settings
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from tests.dashboard.conftest import wait_for_scores
from tests.dashboard.test_runs import db, names, runs_page, tiny_run  # noqa: F401 (the fixture)
from tests.dashboard.test_threshold import bm25_db  # noqa: F401 (the fixture)


def _relevance_radio(at: AppTest) -> tuple[str, bool]:
    (radio,) = [r for r in at.sidebar.radio if r.label == "Relevance"]
    return str(radio.value), bool(radio.disabled)


def test_under_a_preset_the_relevance_radio_shows_the_mode_it_scores_in(
    make_app: Callable[..., AppTest], app_db: Path
) -> None:
    at = make_app(run="bm25")
    assert _relevance_radio(at) == ("ids", False)  # bm25 has qrels: ids, and movable
    at.sidebar.selectbox(key="preset").select("eggai").run()
    wait_for_scores(at)
    assert not at.exception, [e.value for e in at.exception]
    with Store(app_db) as store, api.load("bm25", store=store) as run:
        scored_in = api.evaluate(run, preset="eggai").settings["relevance"]
    assert scored_in == "evidence"
    assert _relevance_radio(at) == (scored_in, True)  # what the preset does, not movable
    # back to rageval's own: the run's own mode again, movable
    at.sidebar.selectbox(key="preset").select("rageval").run()
    wait_for_scores(at)
    assert _relevance_radio(at) == ("ids", False)


def test_the_runs_page_acts_on_the_run_the_sidebar_shows(
    make_app: Callable[..., AppTest],
) -> None:
    at = make_app("runs.py", run="hybrid_rerank")
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.selectbox(key=keys.RUN).value == "hybrid_rerank"
    assert at.selectbox(key=keys.RUNS_TARGET).value == "hybrid_rerank"
    assert at.selectbox(key=keys.RUNS_FACT_TARGET).value == "hybrid_rerank"
    # a run picked on the page stays while the sidebar's does not move ...
    at.selectbox(key=keys.RUNS_FACT_TARGET).set_value("bm25").run()
    at.text_input(key=keys.RUNS_FACT_DATE).input("2026-01-02").run()
    assert at.selectbox(key=keys.RUNS_FACT_TARGET).value == "bm25"
    assert at.selectbox(key=keys.RUNS_TARGET).value == "hybrid_rerank"
    # ... and both follow the sidebar when it does
    at.sidebar.selectbox(key=keys.RUN).set_value("tfidf_char").run()
    assert at.selectbox(key=keys.RUNS_TARGET).value == "tfidf_char"
    assert at.selectbox(key=keys.RUNS_FACT_TARGET).value == "tfidf_char"


def test_a_just_imported_run_opens_from_the_success_message(
    make_app: Callable[..., AppTest],
    db: Path,  # noqa: F811
) -> None:
    at = runs_page(make_app, db)
    assert at.sidebar.selectbox(key=keys.RUN).value == "first"
    at.file_uploader(key="runs.upload").set_value(
        ("second.jsonl", tiny_run("<b>second</b>", 4), "application/json")
    )
    at.run()
    at.button(key="runs.import_upload").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Imported 1 run(s)" in s.value for s in at.success)
    assert set(names(db)) == {"<b>second</b>", "first"}
    with Store(db) as store:
        new_id = store.run("<b>second</b>").run_id
    shown = escape_text("<b>second</b>", one_line=True)  # the name as text, never as HTML
    assert "<b>" not in shown
    opener = at.button(key=f"runs.open.{new_id}")
    assert opener.label == f"Open {shown}"
    opener.click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the run is now the sidebar's (every page shows it), the message is still there, and it
    # links to the run's Overview
    assert at.sidebar.selectbox(key=keys.RUN).value == "<b>second</b>"
    assert any("Imported 1 run(s)" in s.value for s in at.success)
    links = [e.proto for e in at.get("page_link")]
    assert [link.label for link in links] == [f"{shown} on the Overview"]
    assert links[0].page_script_hash  # a page of the app (the Overview), not an address
    assert not [b for b in at.button if b.key == f"runs.open.{new_id}"]


def test_the_threshold_labels_table_has_no_internal_index_column(
    make_app: Callable[..., AppTest],
    bm25_db: Path,  # noqa: F811
) -> None:
    at = make_app("threshold.py", db=bm25_db, run="bm25")
    with Store(bm25_db) as store:
        pairs = tuning.borderline_pairs(store, load_run_data(store, "bm25"), Settings(), band=0.1)
    at.button(key="threshold.match.{}.{}.{}".format(*pairs[0].key)).click().run()
    assert not at.exception, [e.value for e in at.exception]
    (table,) = [d.value for d in at.dataframe if "labelled_at" in d.value.columns]
    assert len(table) == 1 and table["query_id"].iloc[0] == pairs[0].query_id
    assert "qidx" not in table.columns
    assert list(table.columns) == [
        "query_id",
        "rank",
        "doc_id",
        "span",
        "score",
        "label",
        "evidence",
        "labelled_at",
    ]
