"""Reading, links and downloads in a real browser, on the three sample runs (one server for the session):
long text read whole, the no-gold category, every view a link, downloads of what is shown,
search in chunk texts, Trends without None, the system's dark mode, notes, Sweeps' click.

What the pages must show is read from the sample JSONL files themselves, not from rageval.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from playwright.sync_api import expect

from rageval_dashboard import keys
from tests.e2e.conftest import K, REPO, THRESHOLD, Facts
from tests.e2e.harness import open_tab, query_params, screenshot, wait_idle

pytestmark = pytest.mark.e2e

RUN = "bm25"
#: a phrase of the retrieved chunks that no query, answer or gold span of the run holds
CHUNK_PHRASE = "declarations page"


def sample_rows(name: str = RUN) -> list[dict[str, Any]]:
    """The query lines of a sample run file (the first line is the run's own facts)."""
    lines = (REPO / "sample_runs" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [row for row in map(json.loads, lines) if "query_id" in row]


def no_gold_ids() -> list[str]:
    """The run's queries with nothing to find: no relevant document judged and no gold span."""
    return [
        r["query_id"]
        for r in sample_rows()
        if not r.get("evidence") and not any((r.get("relevance") or {}).values())
    ]


def grid_after(page: Any, heading: str) -> Any:
    """The first table (a canvas grid) after the element showing heading."""
    return page.get_by_text(heading, exact=True).locator(
        "xpath=following::*[@data-testid='stDataFrame'][1]"
    )


def click_row(grid: Any, row: int) -> None:
    """Click a grid row's selection box (the first column; header and rows 35 px high)."""
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    grid.page.mouse.click(box["x"] + 18, box["y"] + 35 * (row + 1) + 17)


def download(page: Any, name: str) -> bytes:
    with page.expect_download() as info:
        page.get_by_role("button", name=name).first.click()
    return Path(info.value.path()).read_bytes()


# --- 5. long text in tables, read whole ---------------------------------------------------------


def test_a_picked_row_shows_its_long_text_whole(app_url: str, page: Any) -> None:
    row = next(r for r in sample_rows() if r.get("evidence") and len(r["evidence"][0]) > 60)
    page.goto(f"{app_url}/queries?run={RUN}&q={quote(row['query_id'])}")
    wait_idle(page)
    page.get_by_text("Long texts are cut in the table (evidence)").wait_for()
    assert page.locator(".rageval-fulltext").count() == 0
    click_row(grid_after(page, "Gold evidence spans"), 0)
    wait_idle(page)
    block = page.locator(".rageval-fulltext")
    expect(block).to_have_count(1)
    # the span as the file has it (a line break is a <br>, no text of its own)
    assert row["evidence"][0].replace("\n", "") in block.text_content()
    assert block.text_content().startswith("evidence")
    screenshot(page, "fulltext_spans")


def test_a_queries_row_opens_its_whole_text_below(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/queries?run={RUN}")
    wait_idle(page)
    grid = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']").first
    grid.wait_for()
    qid = grid.locator("tr[aria-rowindex='2'] td").first.text_content()
    click_row(grid, 0)
    wait_idle(page)
    assert query_params(page)["q"] == qid
    text = next(r["query"] for r in sample_rows() if r["query_id"] == qid)
    block = page.get_by_text(f"Query {qid}", exact=True).locator("xpath=..")
    expect(block).to_have_text(f"Query {qid}{text}")


# --- 3. unanswerable queries; 2. the Queries view in the URL; 6. the CSV holds the rows shown ---


def test_no_gold_filter_sort_and_download_survive_a_reload(app_url: str, page: Any) -> None:
    want = no_gold_ids()
    assert want, "the sample run has no query without gold"
    page.goto(f"{app_url}/queries?run={RUN}")
    wait_idle(page)
    main = page.locator("[data-testid='stMain']")
    # worst-first leaves them out, and says how many
    expect(main).to_contain_text(f"{len(want)} without gold ({len(want)} left out of the worst")
    page.get_by_text("No gold only", exact=True).click()
    wait_idle(page)
    sort = page.get_by_role("combobox", name="Sort by")
    sort.click()
    options = page.get_by_role("option").all_inner_texts()
    choice = next(o for o in options if o.strip() != sort.input_value())
    page.get_by_role("option", name=choice, exact=True).click()
    wait_idle(page)
    expect(main).to_contain_text(f"{len(want)} of {len(sample_rows())} queries shown")
    params = query_params(page)
    assert params[keys.QUERIES_NO_GOLD] == "true" and params[keys.QUERIES_SORT] == choice
    # what the download holds is what the table shows: the no-gold queries, every one
    rows = list(csv.DictReader(io.StringIO(download(page, "Download CSV").decode("utf-8"))))
    assert sorted(r["query_id"] for r in rows) == sorted(want)
    assert all(r["no_gold"] == "True" for r in rows)
    grid = main.locator("[data-testid='stDataFrame']").first
    expect(grid).to_contain_text(want[0])
    assert "None" not in grid.text_content()  # unscored cells show a dash
    page.reload()
    wait_idle(page)
    assert page.locator("label", has_text="No gold only").locator("input").is_checked()
    assert page.get_by_role("combobox", name="Sort by").input_value() == choice
    expect(main).to_contain_text(f"{len(want)} of {len(sample_rows())} queries shown")
    screenshot(page, "queries_no_gold")


def test_an_unknown_run_in_a_link_is_named(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/?run=no_such_run")
    wait_idle(page)
    notice = page.locator("[data-testid='stAlert']", has_text="which this store does not hold")
    expect(notice).to_contain_text("no_such_run")
    assert page.locator("[data-testid='stException']").count() == 0


# --- 6. "download this view" carries its link, and the link reopens the view -------------------


def test_download_this_view_holds_its_url(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/?run=tfidf_char&k=5")
    wait_idle(page)
    doc = json.loads(download(page, "Download this view (JSON)"))
    assert doc["run"] == "tfidf_char" and doc["settings"]["k"] == 5
    assert doc["url"].startswith(app_url) and "run=tfidf_char" in doc["url"]
    page.goto(doc["url"])
    wait_idle(page)
    sidebar = page.locator("[data-testid='stSidebar']")
    assert sidebar.get_by_role("combobox", name="Run").input_value() == "tfidf_char"
    assert query_params(page)["k"] == "5"
    # plotly's own PNG export stays on every chart
    assert page.locator(".modebar-btn[data-title='Download plot as a PNG']").count() >= 1


# --- 7. search in chunk texts, hits highlighted -------------------------------------------------


def test_search_of_all_texts_finds_and_outlines_chunk_text(app_url: str, page: Any) -> None:
    rows = sample_rows()
    assert not any(CHUNK_PHRASE in r["query"].casefold() for r in rows)
    hits = [
        r["query_id"]
        for r in rows
        if any(CHUNK_PHRASE in (c.get("text") or "").casefold() for c in r["retrieved"][:10])
    ]
    params = {keys.QUERIES_SEARCH: CHUNK_PHRASE, "run": RUN}
    page.goto(f"{app_url}/queries?{urlencode(params)}")
    wait_idle(page)
    main = page.locator("[data-testid='stMain']")
    expect(main).to_contain_text(f"0 of {len(rows)} queries shown")
    page.goto(f"{app_url}/queries?{urlencode({**params, keys.QUERIES_SEARCH_ALL: 'true'})}")
    wait_idle(page)
    # the no-gold queries among the hits are left out of the worst-first order (and counted)
    answerable = set(hits) - set(no_gold_ids())
    expect(main).to_contain_text(f"{len(answerable)} of {len(rows)} queries shown")
    page.goto(
        f"{app_url}/queries?{urlencode({**params, keys.QUERIES_SEARCH_ALL: 'true', 'q': hits[0]})}"
    )
    wait_idle(page)
    found = page.locator(".rageval-chunk .rageval-found")
    assert found.count() >= 1
    assert {t.casefold() for t in found.all_text_contents()} == {CHUNK_PHRASE}
    screenshot(page, "search_chunk_text")


# --- 4. Trends ------------------------------------------------------------------------------------


def test_trends_show_no_none_and_no_missing_date(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/compare?run={RUN}")
    wait_idle(page)
    open_tab(page, "Trends")
    page.get_by_role("combobox", name="One line per").wait_for()
    text = page.locator("[data-testid='stMain']").inner_text()
    assert "None" not in text and "no date" not in text
    assert page.locator("[data-testid='stException']").count() == 0


# --- 9. the system's light/dark setting; notes ------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_theme_follows_the_system_setting(app_url: str, browser: Any, scheme: str) -> None:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=scheme)
    try:
        p = ctx.new_page()
        p.goto(f"{app_url}/?run={RUN}")
        wait_idle(p)
        rgb = p.evaluate(
            "() => getComputedStyle(document.querySelector(\"[data-testid='stApp']\"))"
            ".backgroundColor"
        )
        r, g, b = (int(v) for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
        assert (r + g + b < 150) if scheme == "dark" else (r + g + b > 600), rgb
        screenshot(p, f"overview_{scheme}")
    finally:
        ctx.close()


def test_a_saved_note_survives_a_reload(app_url: str, page: Any) -> None:
    qid = sample_rows()[5]["query_id"]
    note = "the gold span is in chunk 3 <b>not bold</b>"
    page.goto(f"{app_url}/queries?run={RUN}&q={quote(qid)}")
    wait_idle(page)
    page.get_by_text("Note", exact=True).first.click()
    box = page.get_by_role("textbox", name="Note on this query (kept with the run)")
    box.fill(note)
    box.blur()
    wait_idle(page)
    page.get_by_role("button", name="Save note").click()
    wait_idle(page)
    page.reload()
    wait_idle(page)
    page.get_by_text("Note (1)").wait_for()
    box = page.get_by_role("textbox", name="Note on this query (kept with the run)")
    assert box.input_value() == note


# --- 10. Sweeps: a click on a point opens its run ------------------------------------------------


def test_clicking_a_sweep_point_opens_its_run(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/sweeps?run={RUN}")
    wait_idle(page)
    chart = page.locator("[data-testid='stPlotlyChart']").first
    points = chart.locator(".scatterlayer .trace .points path")
    points.first.wait_for()
    sidebar_run = page.locator("[data-testid='stSidebar']").get_by_role("combobox", name="Run")
    for i in range(points.count()):
        box = points.nth(i).bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.up()
        wait_idle(page)
        button = page.get_by_role("button", name=re.compile(r"^Open \S+$"))
        if button.count() and button.first.inner_text().strip() != f"Open {RUN}":
            break
    picked = button.first.inner_text().strip().removeprefix("Open ")
    assert picked in {"tfidf_char", "hybrid_rerank"}
    button.first.click()
    wait_idle(page)
    assert sidebar_run.input_value() == picked
    assert query_params(page)["run"] == picked
    screenshot(page, "sweeps_opened")


@pytest.mark.parametrize(
    ("settings", "kind"),
    [
        (["retriever", "rerank_top_n"], "heatmap"),
        (["retriever", "rerank_top_n", "k1"], "parcoords"),
    ],
)
def test_two_sweep_settings_make_a_heat_map_and_more_parallel_coordinates(
    app_url: str, page: Any, settings: list[str], kind: str
) -> None:
    query = urlencode([("run", RUN), *((keys.SWEEP_SETTINGS, s) for s in settings)])
    page.goto(f"{app_url}/sweeps?{query}")
    wait_idle(page)
    page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    kinds = page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot')]"
        ".map(g => (g.data || []).map(t => t.type))"
    )
    assert kinds == [[kind]], kinds
    assert page.locator("[data-testid='stException']").count() == 0


# --- 5. per-metric bands; the curves drawn over their marker lines -----------------------------


def test_cards_carry_the_metric_band_and_curves_sit_above_markers(
    app_url: str, page: Any, facts: Facts
) -> None:
    page.goto(f"{app_url}/?run={RUN}")
    wait_idle(page)
    # the band for recall: above 0.8 good, below 0.5 poor, between them nothing
    value = facts.evidence_recall[THRESHOLD]
    want = "good" if value > 0.8 else "poor" if value < 0.5 else None
    card = page.locator("[data-testid='stMetric']", has_text=f"EvidenceRecall@{K}").first
    expect(card).to_contain_text(f"{value:.3f}")
    delta = card.locator("[data-testid='stMetricDelta']")
    if want is None:
        expect(delta).to_have_count(0)
    else:
        expect(delta).to_have_text(want)
    assert page.locator("[data-testid='stException']").count() == 0
    # marker lines (Threshold tuning's; Overview's curves mark no setting) are drawn below the
    # bars and curves, never over them
    page.goto(f"{app_url}/threshold?run={RUN}")
    wait_idle(page)
    chart = page.locator("[data-testid='stPlotlyChart']", has_text="Best score of each gold span")
    chart.locator(".main-svg").first.wait_for()
    assert chart.locator(".layer-above .shapelayer path").count() == 0
    assert chart.locator(".shapelayer path").count() >= 1
    assert page.locator("[data-testid='stException']").count() == 0


def test_a_borderline_pair_reads_whole_under_its_table(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/threshold?run={RUN}")
    wait_idle(page)
    page.get_by_text("borderline pairs as a table").click()
    wait_idle(page)
    grid = page.locator("[data-testid='stExpander'] [data-testid='stDataFrame']").first
    grid.wait_for()
    qid = grid.locator("tr[aria-rowindex='2'] td").first.text_content()
    click_row(grid, 0)
    wait_idle(page)
    parts = page.locator(".rageval-fulltext > div")
    expect(parts).to_have_count(2)
    labels = [parts.nth(i).locator("span").first.text_content() for i in range(2)]
    values = [parts.nth(i).locator("span").nth(1).text_content() for i in range(2)]
    assert labels == ["evidence", "window"]
    row = next(r for r in sample_rows() if r["query_id"] == qid)
    flat = [e.replace("\n", "") for e in row["evidence"]]
    assert values[0] in flat  # the gold span whole, as the file has it
    chunks = [(c.get("text") or "").replace("\n", "") for c in row["retrieved"]]
    assert values[1] and any(values[1] in c for c in chunks)  # a window of its chunk
    screenshot(page, "threshold_pair_whole")


def test_a_hostile_text_read_whole_stays_text(hostile_url: str, page: Any) -> None:
    """The full text under a table is run text: markup in it is shown, never run."""
    from tests.e2e.test_security import EVIDENCE, INJECTED

    page.goto(f"{hostile_url}/queries?q=xss-1")
    wait_idle(page)
    click_row(grid_after(page, "Gold evidence spans"), 0)
    wait_idle(page)
    value = page.locator(".rageval-fulltext > div").first.locator("span").nth(1)
    expect(value).to_have_text(EVIDENCE)
    found = page.evaluate(INJECTED)
    assert found == {"xss": "undefined", "js_links": 0, "handlers": 0, "scripts": 0, "imgs_x": 0}
    assert page.locator("[data-testid='stException']").count() == 0
