"""The Compare page in a real browser: the summary and the metrics table, and a scatter click
that opens one query's drilldown for both runs side by side."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.harness import open_tab, screenshot, wait_idle

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
WIDE = {"width": 1600, "height": 1000}  # the metrics table's columns fit beside the sidebar


@pytest.fixture(scope="module")
def expected() -> Iterator[dict[str, Any]]:
    """What the page must show, from compare() on the sample files in a store of their own
    (the server holds the e2e store file; the sidebar's defaults: bm25, k 10, threshold 0.7)."""
    from rageval_dashboard.components.figures import compare as fc
    from rageval_core.compare import compare
    from rageval_core.errors import ProblemLog
    from rageval_core.evaluation.report import Settings
    from rageval_core.formats import read_inputs
    from rageval_core.store import Store

    with Store(":memory:") as store:
        for path in sorted((REPO / "sample_runs").glob("*.jsonl")):
            log = ProblemLog()
            store.import_run(read_inputs([path], None, log)[0], log)
        names = [r.name for r in store.runs()]
        c = compare(names, store=store, settings=Settings(k=10, threshold=0.7, relevance="ids"))
    yield {
        "summary": fc.summary_lines(c),
        "ndcg_delta": c.test("hybrid_rerank", "nDCG@10").diff,
        "n_worse": c.test("hybrid_rerank", "nDCG@10").losses,
    }


def open_compare(page: Any, app_url: str) -> None:
    page.set_viewport_size(WIDE)
    page.goto(f"{app_url}/compare")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("h1").first.inner_text().strip() == "Compare"


def test_summary_line_and_metrics_table(app_url: str, page: Any, expected: dict[str, Any]) -> None:
    open_compare(page, app_url)
    summary = page.locator(".rageval-summary")
    assert [s.strip() for s in summary.all_inner_texts()] == expected["summary"]
    assert summary.first.inner_text().startswith("hybrid_rerank beats bm25 on ")
    # the table is a canvas grid: its cells (raw values, for assistive tech) are in the DOM
    grid = page.locator("[data-testid='stDataFrame']").first
    expect(grid).to_contain_text("nDCG@10")
    expect(grid).to_contain_text(repr(expected["ndcg_delta"])[:10])
    expect(grid).to_contain_text("▲ improved")
    screenshot(page, "compare")
    open_tab(page, "Per query")  # won/tied/lost of every metric, then the scatter
    page.locator(".st-key-compare-wtl .main-svg").first.wait_for()
    expect(page.locator(".st-key-compare-wtl")).to_contain_text("won")


def test_clicking_a_scatter_point_opens_both_drilldowns(
    app_url: str, page: Any, expected: dict[str, Any]
) -> None:
    open_compare(page, app_url)
    open_tab(page, "Per query")
    chart = page.locator(".st-key-compare-scatter")
    chart.scroll_into_view_if_needed()
    # the third trace holds the queries the candidate got worse on, one point each
    worse = chart.locator(".scatterlayer .trace").nth(2).locator(".point")
    assert worse.count() == expected["n_worse"]
    # a point alone at its position, so the click and the hover label name the same query
    centres = [(round(b["x"]), round(b["y"])) for b in (p.bounding_box() for p in worse.all())]
    point = worse.nth(next(i for i, c in enumerate(centres) if centres.count(c) == 1))
    point.hover(force=True)
    label = chart.locator(".hoverlayer .hovertext").first
    label.wait_for()
    query_id = label.locator("text").first.text_content().strip().split("baseline")[0].strip()
    assert query_id.startswith("q")
    box = point.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.up()
    base = page.locator(".st-key-compare-detail-baseline")
    cand = page.locator(".st-key-compare-detail-candidate")
    deadline = time.monotonic() + 60
    while base.count() == 0 and time.monotonic() < deadline:
        time.sleep(0.3)
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_text(f"Query {query_id}", exact=True).count() == 1
    expect(base).to_contain_text("bm25 (baseline)")
    expect(cand).to_contain_text("hybrid_rerank (candidate)")
    # each side lists its own run's top 10 chunks
    assert base.locator(".rageval-chunk").count() == 10
    assert cand.locator(".rageval-chunk").count() == 10
    cand.scroll_into_view_if_needed()
    screenshot(page, "compare_drilldown")
