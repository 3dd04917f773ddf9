"""Queries page: the table's filters against the core, the drilldown opened by link, prev/next."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard import keys
from rageval_dashboard.components.highlight import HIT_CLASS, chunk_card, highlight
from rageval_dashboard.components.text import escape_text
from tests.dashboard.conftest import url_param
from rageval_core.evaluation import drilldown as dd
from rageval_core.errors import ProblemLog
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store

REPO = Path(__file__).resolve().parents[2]
MARK = re.compile(r'<mark class="rageval-hit"[^>]*>(.*?)</mark>')
#: the sidebar's defaults on a sample run (qrels present: relevance ids)
DEFAULTS = Settings(k=10, threshold=0.7, relevance="ids")


def core_table(db: Path, run: str = "bm25", settings: Settings = DEFAULTS) -> dd.QueryTable:
    """The core's table at the page's default settings, computed apart from the app."""
    store = Store(db)
    data = load_run_data(store, run)
    return dd.query_table(
        evaluate(data, store=store, settings=settings), data, dd.query_texts(store, data)
    )


def shown_ids(at: AppTest) -> list[str]:
    return list(at.dataframe[0].value["query_id"])


def opened(at: AppTest) -> str:
    """The query id the drilldown shows (its heading block)."""
    heads = [m.value for m in at.markdown if "Query " in m.value and "font-weight:600" in m.value]
    assert len(heads) == 1, heads
    found = re.search(r">Query ([^<]+)</span>", heads[0])
    assert found
    return html.unescape(found.group(1))


def sample_query(query_id: str) -> dict:  # type: ignore[type-arg]
    """A query of the bm25 sample run read straight from its file (independent of the store)."""
    for line in (REPO / "sample_runs" / "bm25.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("query_id") == query_id:
            return record  # type: ignore[no-any-return]
    raise AssertionError(query_id)


# --- the table -------------------------------------------------------------------------------


def test_failing_filter_shows_the_cores_failing_queries(
    make_app: Callable[..., AppTest], app_db: Path
) -> None:
    at = make_app("queries.py", run="bm25")
    assert not at.exception, [e.value for e in at.exception]
    table = core_table(app_db)
    # worst first lists the scored queries; those without gold are left out, and counted
    n_no_gold = int(table.no_gold.sum())
    assert table.n_queries == 360 and 0 < n_no_gold < 360
    # one page of them (keys.QUERIES_PAGE_ROWS), and their count
    n_listed = 360 - n_no_gold
    assert len(shown_ids(at)) == min(n_listed, keys.QUERIES_PAGE_ROWS) < n_listed
    assert any(f"{n_listed} of 360 queries match" in c.value for c in at.caption)
    assert any(f"{n_no_gold} without gold ({n_no_gold} left out" in c.value for c in at.caption)
    at.toggle(key="queries.no_gold").set_value(True).run()
    assert set(shown_ids(at)) == set(table.query_ids[table.no_gold])
    assert not at.dataframe[0].value["failing"].any()  # nothing to find: never failing
    at.toggle(key="queries.no_gold").set_value(False).run()
    at.toggle(key="queries.failing").set_value(True).run()
    assert not at.exception
    failing = set(table.query_ids[table.failing])
    assert 0 < len(failing) < 360
    assert set(shown_ids(at)) == failing and len(shown_ids(at)) == len(failing)
    assert bool(at.dataframe[0].value["failing"].all())
    # the metric values shown are the report's (nDCG@10 of the first shown query)
    df = at.dataframe[0].value
    first = dd.qidx_of(load_run_data(Store(app_db), "bm25"), df["query_id"].iloc[0])
    assert df["nDCG@10"].iloc[0] == pytest.approx(table.metrics["nDCG@10"][first], nan_ok=True)
    # worst first: every failing row before the others
    at.toggle(key="queries.failing").set_value(False).run()
    flags = [bool(f) for f in at.dataframe[0].value["failing"]]
    assert flags[0] and flags == sorted(flags, reverse=True)


def test_search_and_tag_filters(make_app: Callable[..., AppTest], app_db: Path) -> None:
    at = make_app("queries.py", run="bm25")
    table = core_table(app_db)
    at.text_input(key="queries.search").set_value("SENTINEL dwelling").run()
    expected = [
        str(i)
        for i, t in zip(table.query_ids, table.texts, strict=True)
        if "sentinel dwelling" in str(t).lower()
    ]
    assert expected and sorted(shown_ids(at)) == sorted(expected)
    at.text_input(key="queries.search").set_value("").run()
    at.selectbox(key="queries.tag").set_value("evidence").run()
    at.multiselect(key="queries.tag_values").set_value(["split"]).run()
    assert not at.exception
    split = [
        str(q) for q, v in zip(table.query_ids, table.tags["evidence"], strict=True) if v == "split"
    ]
    assert len(split) == 25 and sorted(shown_ids(at)) == sorted(split)
    at.selectbox(key="queries.sort").set_value("total_ms ↓").run()
    times = at.dataframe[0].value["total_ms"].to_numpy()
    assert np.all(np.diff(times) <= 0)


# --- the drilldown ---------------------------------------------------------------------------


def test_link_opens_a_query_with_its_span_marked(make_app: Callable[..., AppTest]) -> None:
    record = sample_query("q0003")  # evidence "exact": the gold span is verbatim in chunk 1
    (span,) = record["evidence"]
    assert span in record["retrieved"][0]["text"]
    at = make_app("queries.py", run="bm25", q="q0003")
    assert not at.exception, [e.value for e in at.exception]
    assert opened(at) == "q0003"
    cards = [m.value for m in at.markdown if 'class="rageval-chunk"' in m.value]
    assert cards, "no chunk cards rendered"
    first_card = cards[0].split('<div class="rageval-chunk"')[1]
    assert 'data-covers="true"' in first_card and "#2e9e4f" in first_card  # green border
    marked = [html.unescape(m) for m in MARK.findall(first_card)]
    assert marked == [span]
    assert url_param(at, "q") == "q0003"  # the selection stays in the URL


def test_prev_next_move_between_failing_queries(
    make_app: Callable[..., AppTest], app_db: Path
) -> None:
    table = core_table(app_db)
    failing = np.flatnonzero(table.failing)
    middle = int(failing[5])
    prev, nxt = dd.neighbours(table.failing, middle)
    assert (prev, nxt) == (int(failing[4]), int(failing[6]))
    at = make_app("queries.py", run="bm25", q=str(table.query_ids[middle]))
    assert opened(at) == table.query_ids[middle]
    at.button(key="queries.next").click().run()
    assert not at.exception
    assert opened(at) == table.query_ids[nxt]
    assert url_param(at, "q") == table.query_ids[nxt]  # mirrored to the URL
    at.button(key="queries.prev").click().run()
    at.button(key="queries.prev").click().run()
    assert opened(at) == table.query_ids[prev]
    # from the first failing query there is no previous one
    first = make_app("queries.py", run="bm25", q=str(table.query_ids[failing[0]]))
    assert first.button(key="queries.prev").disabled
    assert not first.button(key="queries.next").disabled


def test_without_a_selection_the_page_says_how_to_open_one(
    make_app: Callable[..., AppTest],
) -> None:
    at = make_app("queries.py", run="tfidf_char")
    assert not at.exception
    assert any("Select a row" in i.value for i in at.info)
    unknown = make_app("queries.py", run="bm25", q="no-such-query")
    assert any("not in this run" in i.value for i in unknown.info)


@pytest.fixture()
def edge_db(tmp_path: Path) -> Path:
    """A run without evidence: a query with nothing retrieved, one with hostile chunk text
    followed by a chunk the run gave no text for."""
    queries = [
        Query(query_id="empty", query="nothing here", retrieved=(), relevance={"d1": 1}),
        Query(
            query_id="evil",
            query="<script>alert(1)</script>",
            retrieved=(
                Chunk("<b>doc</b>", "<img src=x onerror=alert(1)> and $x$ :red[hi]", 1.0),
                Chunk("d2", None, 0.5),
            ),
            relevance={"<b>doc</b>": 1},
        ),
    ]
    db = tmp_path / "edge.duckdb"
    with Store(db) as store:
        store.import_run(
            ParsedRun(RunInfo(name="edge"), queries, "native", ("edge.jsonl",)), ProblemLog()
        )
    return db


def test_edge_states_show_messages(make_app: Callable[..., AppTest], edge_db: Path) -> None:
    at = make_app("queries.py", db=edge_db, q="empty")
    assert not at.exception, [e.value for e in at.exception]
    infos = " ".join(i.value for i in at.info)
    assert "no gold evidence" in infos and "Nothing was retrieved" in infos
    evil = make_app("queries.py", db=edge_db, q="evil")
    assert not evil.exception
    rendered = " ".join(m.value for m in evil.markdown)
    assert "<script" not in rendered and "<img" not in rendered and "<b>doc" not in rendered
    assert (
        escape_text("<img src=x onerror=alert(1)>") in rendered
        and escape_text("<b>doc</b>") in rendered
    )
    assert "(no chunk text in the run)" in rendered


# --- highlight() -----------------------------------------------------------------------------


def test_highlight_escapes_every_piece() -> None:
    text = "<script>alert('x')</script> and <img src=x onerror=alert(1)> & more"
    start = text.index("<img")
    end = start + len("<img src=x onerror=alert(1)>")
    out = highlight(text, start, end)
    assert "<script" not in out and "<img" not in out
    assert out.count("<mark") == 1 and out.count("</mark>") == 1
    assert html.unescape(MARK.findall(out)[0]) == "<img src=x onerror=alert(1)>"
    assert html.unescape(out.split("<mark")[0]) == text[:start]
    assert html.unescape(out.split("</mark>")[1]) == text[end:]
    assert f'class="{HIT_CLASS}"' in out


def test_highlight_window_boundaries_and_no_window() -> None:
    text = "abcdef"
    assert MARK.findall(highlight(text, 0, 6)) == ["abcdef"]
    # a window inside a word marks the whole word (word_window)
    assert MARK.findall(highlight(text, 2, 4)) == ["abcdef"]
    out = highlight("abc def", 4, 7)
    assert out.startswith("abc <mark") and MARK.findall(out) == ["def"]
    assert MARK.findall(highlight("ab cd ef", 3, 5)) == ["cd"]
    for start, end in ((-1, -1), (3, 3), (4, 2), (0, 7), (-1, 3)):
        assert highlight(text, start, end) == "abcdef"
    assert highlight("<b>", -1, -1) == "&#60;b&#62;"


def test_highlight_multibyte_text() -> None:
    text = "日本語 — naïve café: crème brûlée 🍮 done"
    start = text.index("crème")
    end = text.index(" 🍮") + 2
    out = highlight(text, start, end)
    assert html.unescape(MARK.findall(out)[0]) == "crème brûlée 🍮"
    assert html.unescape(out.replace(MARK.findall(out)[0], "")).startswith("日本語 — naïve café")


def test_chunk_card_borders_and_markdown_safety() -> None:
    green = chunk_card("#1 · <doc>", "line one\n\n# not a heading $1$ :red[x]", 0, 4, covers=True)
    grey = chunk_card("#2", "text", -1, -1, covers=False)
    assert "#2e9e4f" in green and "#c4c4c4" in grey
    assert "\n" not in green  # one line: Markdown never ends the HTML block inside a chunk
    assert "&#60;doc&#62;" in green and "<doc>" not in green
    assert "$" not in green and ":red[" not in green
    assert "(no chunk text in the run)" in chunk_card("#3", None, -1, -1, covers=False)


def test_downloads_hold_the_filtered_rows(app_db: Path) -> None:
    """The CSV and JSON the page offers: exactly the filtered rows, NaN as null in JSON."""
    from rageval_dashboard.components.figures import queries as fq
    from rageval_dashboard.widgets.downloads import csv_bytes, json_bytes

    table = core_table(app_db)
    rows = dd.sort_rows(table, dd.filter_rows(table, failing_only=True))
    frame = fq.table_frame(table, rows)
    csv_lines = csv_bytes(frame).decode("utf-8").splitlines()
    assert csv_lines[0].startswith("query_id,failing,no_gold,query,")
    assert len(frame) == int(table.failing.sum())
    doc = json.loads(json_bytes(fq.table_document(table, rows, {"run": "bm25"})))
    assert doc["run"] == "bm25" and len(doc["queries"]) == len(rows)
    assert [q["query_id"] for q in doc["queries"]] == list(frame["query_id"])
    assert all(q["failing"] is True for q in doc["queries"])
    # every row: a query without gold spans has no coverage, written as null (JSON has no NaN)
    text = json_bytes(fq.table_document(table, np.arange(table.n_queries), {"run": "bm25"})).decode(
        "utf-8"
    )
    assert "NaN" not in text
    assert any(q["PerQueryCoverage@10"] is None for q in json.loads(text)["queries"])


# --- numbers differ ----------------------------------------------------------------------------

ODD = re.compile(r'<mark class="rageval-odd"[^>]*>(.*?)</mark>')


def test_highlight_marks_odd_figures_inside_the_window_escaped() -> None:
    text = "<b>Revenue</b> was $48,811 in 2019 & more"
    a = text.index("48,811")
    out = highlight(text, 0, text.index(" & more"), odd=[(a, a + 6), (len(text) - 2, len(text))])
    assert [html.unescape(m) for m in ODD.findall(out)] == [
        "48,811"
    ]  # the range outside the window is not marked
    assert "<b>" not in out and out.count("<mark") == 2 and out.count("</mark>") == 2
    inner = out.split('<mark class="rageval-hit"', 1)[1]
    assert html.unescape(re.sub(r"<[^>]+>", "", inner.split(">", 1)[1])) == text  # nothing lost


def store_one_query(
    store: Store, name: str, retrieved: tuple[Chunk, ...], evidence: tuple[str, ...]
) -> None:
    """Import a run of one query, "a", with these chunks and gold spans."""
    query = Query(query_id="a", query="q?", retrieved=retrieved, evidence=evidence)
    store.import_run(
        ParsedRun(RunInfo(name=name), [query], "native", (f"{name}.jsonl",)), ProblemLog()
    )


def test_drilldown_says_numbers_differ_and_marks_the_figure(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    db = tmp_path / "numbers.duckdb"
    with Store(db) as store:
        store_one_query(
            store,
            "fig",
            (
                Chunk("near", "Net revenue was $48,811 in 2019.", 0.9),
                Chunk("same", "net revenue was $48881 in 2019", 0.5),
            ),
            ("Net revenue was $48,881 in 2019",),
        )
    for guard, covers in (("false", "true"), ("true", "false")):
        at = make_app("queries.py", db=db, run="fig", q="a", numbers=guard)
        assert not at.exception, [e.value for e in at.exception]
        cards = [m.value for m in at.markdown if 'class="rageval-chunk"' in m.value]
        first = cards[0].split('<div class="rageval-chunk"')[1]
        assert "numbers differ" in first and f'data-covers="{covers}"' in first
        assert [html.unescape(m) for m in ODD.findall(first)] == ["48,811"]
        assert ("not counted" in first) == (guard == "true")
        assert at.sidebar.checkbox(key="numbers").value is (guard == "true")


def test_drilldown_guard_is_on_by_default(make_app: Callable[..., AppTest], tmp_path: Path) -> None:
    """A link without `numbers`: the guard is on (issue 27): the chunk stating another figure
    ("32MB" for "128MB", 0.86 to partial) is drawn as not covering and said not to count, the
    span is not covered, and the switch shows on; `numbers=false` turns it off."""
    db = tmp_path / "default.duckdb"
    with Store(db) as store:
        store_one_query(
            store,
            "mb",
            (
                Chunk("near", "The default block size is 32 megabytes (32MB).", 0.9),
                Chunk("other", "unrelated text", 0.5),
            ),
            ("128 megabytes (128MB)",),
        )
    at = make_app("queries.py", db=db, run="mb", q="a")
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.checkbox(key="numbers").value is True
    cards = [m.value for m in at.markdown if 'class="rageval-chunk"' in m.value]
    first = cards[0].split('<div class="rageval-chunk"')[1]
    assert 'data-covers="false"' in first and "not counted" in first
    assert 'class="rageval-hit weak"' in first  # its window marked weakly: not a match
    assert [html.unescape(m) for m in ODD.findall(first)] == ["32"]
    at = make_app("queries.py", db=db, run="mb", q="a", numbers="false")
    first = next(m.value for m in at.markdown if 'class="rageval-chunk"' in m.value)
    assert 'data-covers="true"' in first and "not counted" not in first


def test_a_covering_chunk_shows_the_match_that_counts() -> None:
    """A chunk that covers one span and is a near-duplicate of another: the drilldown shows the
    window of the span it covers (not the refused one's), so what is drawn as covering counts."""
    store = Store(":memory:")
    chunk = "Revenue was $48,811 in 2019. The board met in Paris on Monday."
    # partial: 0.96 to the first span (another figure), 0.91 to the second
    spans = ("Revenue was $48,881 in 2019", "the board met at Paris")
    store_one_query(store, "two", (Chunk("c", chunk, 0.9),), spans)
    data = load_run_data(store, "two")
    (c,) = dd.query_detail(store, data, 0, Settings(k=1)).chunks
    assert c.covers and c.match_eidx == 1 and not c.numbers_differ and not c.odd_numbers
    assert "board met in Paris" in chunk[c.match_start : c.match_end]
    assert "48,811" not in chunk[c.match_start : c.match_end]
    (off,) = dd.query_detail(store, data, 0, Settings(k=1, numbers_must_match=False)).chunks
    assert off.covers and off.match_eidx in (0, 1)  # both count without the guard


# --- search in every text --------------------------------------------------------------------

FOUND = re.compile(r'<span class="rageval-found"[^>]*>(.*?)</span>')


def test_search_all_texts_finds_chunks_answers_and_evidence(app_db: Path) -> None:
    store = Store(app_db)
    data = load_run_data(store, "bm25")
    record = sample_query("q0003")
    chunk_word = record["retrieved"][4]["text"].split()[3]
    rows = dd.search_all_texts(store, data, chunk_word.upper())  # case-insensitive
    assert dd.qidx_of(data, "q0003") in rows

    # independent check: every query of the file whose texts hold the term, and no other
    def holding(term: str) -> set[str]:
        found = set()
        for line in (REPO / "sample_runs" / "bm25.jsonl").read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if "query_id" not in r:  # the header record
                continue
            texts = [r.get("query"), r.get("answer"), r.get("reference_answer"), r["query_id"]]
            texts += [c.get("text") for c in r.get("retrieved") or []]
            texts += list(r.get("evidence") or [])
            if any(t and term.casefold() in t.casefold() for t in texts):
                found.add(r["query_id"])
        return found

    for term in (chunk_word, "%", "_", "q001"):  # % and _ are plain characters, not patterns
        rows = dd.search_all_texts(store, data, term)
        assert {str(data.query_ids[i]) for i in rows} == holding(term), term
    assert dd.search_all_texts(store, data, "zz_no_such_text_zz") == []


def test_search_all_texts_in_the_page_outlines_the_term(
    make_app: Callable[..., AppTest],
) -> None:
    record = sample_query("q0003")
    word = record["evidence"][0].split()[2]
    at = make_app("queries.py", run="bm25", q="q0003")
    at.text_input(key="queries.search").set_value(word).run()
    at.toggle(key="queries.search_all").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "q0003" in shown_ids(at)
    cards = " ".join(m.value for m in at.markdown if 'class="rageval-chunk"' in m.value)
    hits = [html.unescape(h) for h in FOUND.findall(cards)]
    assert hits and all(h.casefold() == word.casefold() for h in hits)


def test_found_ranges_and_escaping() -> None:
    from rageval_dashboard.components.highlight import found_ranges

    assert found_ranges("Abc abc ABC", "abc") == [(0, 3), (4, 7), (8, 11)]
    assert found_ranges("abc", "  ") == []
    out = highlight("<b>x</b> <b>", 0, 3, find="<b>")
    assert "<b>" not in out and out.count('class="rageval-found"') == 2
