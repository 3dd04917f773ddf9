"""Issue 27, point 10 in the app (AppTest): what a page shows is what it does (the relevance
mode a preset scores in, the run the Runs page acts on, a just-imported run one click away, no
internal index column)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from rageval_dashboard import keys
from rageval_dashboard.components.text import escape_text
from rageval_core import api
from rageval_core.evaluation import tuning
from rageval_core.compare import compare
from rageval_core.evaluation.report import Settings
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from tests.dashboard.conftest import wait_for_scores
from tests.dashboard.test_runs import db, names, runs_page, tiny_run  # noqa: F401 (the fixture)
from tests.dashboard.test_threshold import bm25_db  # noqa: F401 (the fixture)

#: the sidebar's defaults on the sample runs (they have qrels: relevance ids)
DEFAULT = Settings(k=10, threshold=0.7, relevance="ids")


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


def _chart(at: AppTest, key: str) -> dict[str, Any]:
    (found,) = [c for c in at.get("plotly_chart") if c.proto.id.endswith(key)]
    return json.loads(found.proto.spec)  # type: ignore[no-any-return]


def test_no_latency_ecdf_line_hides_under_another(make_app: Callable[..., AppTest]) -> None:
    at = make_app("latency.py", run="hybrid_rerank")
    assert not at.exception, [e.value for e in at.exception]
    traces = _chart(at, "latency.dist.chart")["data"]
    # the sample run's total is its generation plus a few ms: on the log axis the two coincide
    assert {"total", "generation"} <= {t["name"] for t in traces}
    widths = [t["line"]["width"] for t in traces]
    dashes = [t["line"]["dash"] for t in traces]
    # plotly draws later traces on top: each is narrower than every one beneath it, so a line
    # under another still shows on both sides of it, and each has its own dash
    assert all(a > b for a, b in itertools.pairwise(widths)), widths
    assert len(set(dashes)) == len(dashes), dashes


def _regressed(at: AppTest) -> Any:
    return at.selectbox(key=keys.COMPARE_REGRESSED)


def test_compare_select_shows_the_open_query(
    make_app: Callable[..., AppTest], app_db: Path
) -> None:
    with Store(app_db) as store:
        c = compare(["bm25", "hybrid_rerank", "tfidf_char"], store=store, settings=DEFAULT)
        every = [str(q) for q in load_run_data(store, "bm25").query_ids]
    worst = [w["query_id"] for w in c.worst["hybrid_rerank"]["nDCG@10"]]
    # nothing open: the select asks for a pick
    at = make_app("compare.py", **{keys.COMPARE_SECTION: "Per query"})
    assert not at.exception, [e.value for e in at.exception]
    assert _regressed(at).options[0] == "(pick a regressed query)"
    assert _regressed(at).value == "(pick a regressed query)"
    # a link opens a regressed query: the select shows it
    at = make_app("compare.py", **{keys.COMPARE_QUERY: worst[1]})
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"Query {worst[1]}" in m.value for m in at.markdown)
    assert _regressed(at).value == worst[1]
    # a query that is not among the regressed ones: the select says so, not "pick one"
    other = next(q for q in every if q not in worst)
    at = make_app("compare.py", **{keys.COMPARE_QUERY: other})
    assert any(f"Query {other}" in m.value for m in at.markdown)
    assert _regressed(at).options[0] == "(the open query is not among these)"
    assert "(pick a regressed query)" not in _regressed(at).options


def _ticked(at: AppTest) -> list[int]:
    return list(at.session_state[keys.QUERIES_TABLE]["selection"]["rows"])


def test_a_query_opened_by_link_or_next_is_ticked_in_the_table(
    make_app: Callable[..., AppTest],
) -> None:
    at = make_app("queries.py", run="bm25")
    ids = list(at.dataframe[0].value["query_id"])
    at = make_app("queries.py", run="bm25", q=ids[3])
    assert not at.exception, [e.value for e in at.exception]
    assert _ticked(at) == [3]
    at.button(key="queries.next").click().run()
    opened_id = at.query_params["q"]
    opened_id = opened_id[0] if isinstance(opened_id, list) else opened_id
    assert opened_id != ids[3] and _ticked(at) == [ids.index(opened_id)]
