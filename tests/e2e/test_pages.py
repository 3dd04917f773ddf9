"""Every page renders in a real browser without an exception; a screenshot of each is kept."""

from __future__ import annotations

from typing import Any

import pytest

from rageval_dashboard import keys
from tests.e2e.harness import query_params, screenshot, wait_idle

pytestmark = pytest.mark.e2e

#: URL path -> (title, screenshot name); the Overview is the default page at "/"
PAGES = {
    "": ("Overview", "overview"),
    "queries": ("Queries", "queries"),
    "threshold": ("Threshold tuning", "threshold"),
    "latency": ("Latency & cost", "latency"),
}


@pytest.mark.parametrize("path", list(PAGES))
def test_page_renders(app_url: str, page: Any, path: str) -> None:
    title, shot = PAGES[path]
    page.goto(f"{app_url}/{path}?run=hybrid_rerank")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("h1").first.inner_text().strip() == title
    run = page.locator("[data-testid='stSidebar']").get_by_role("combobox", name="Run")
    assert run.input_value() == "hybrid_rerank"
    screenshot(page, shot)


@pytest.mark.parametrize("url_path", [p.url_path for p in keys.PAGES])
def test_every_page_opens_at_its_url_path(app_url: str, page: Any, url_path: str) -> None:
    """A link shared before the dashboard moved to rageval_dashboard opens the same page."""
    title = {p.url_path: p.title for p in keys.PAGES}[url_path]
    page.goto(f"{app_url}/{url_path}?run=bm25")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("h1").first.inner_text().strip() == title
    # the address stays the page's own; the default page's is / (Streamlit's rule)
    shown = "" if url_path == keys.PAGES[0].url_path else url_path
    assert page.url.split("?")[0] == f"{app_url}/{shown}"


def test_latency_page_draws_its_charts(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/latency?run=hybrid_rerank")
    wait_idle(page)
    # percentiles, distribution, cost and latency-against-quality: four plotly charts
    page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    assert page.locator("[data-testid='stPlotlyChart']").count() == 4
    # the bar chart's categories are the stages, in the file's (pipeline) order, total last
    ticks = (
        page.locator("[data-testid='stPlotlyChart']")
        .first.locator(".xtick text")
        .all_text_contents()
    )
    assert ticks == ["retrieval", "rerank", "generation", "total"]
    for message in ("This run has no latency", "This run has no token counts"):
        assert page.get_by_text(message).count() == 0


def test_choosing_a_preset_puts_it_in_the_url(app_url: str, page: Any) -> None:
    """The preset picker is bound to the URL like every setting (AppTest does not show the URL
    a select box with a change callback writes, so the browser checks it)."""
    page.goto(f"{app_url}/?run=bm25")
    wait_idle(page)
    sidebar = page.locator("[data-testid='stSidebar']")
    sidebar.get_by_role("combobox", name="Metrics as").click()
    page.get_by_role("option", name="tat-rag", exact=True).click()
    wait_idle(page)
    page.get_by_text("Why do my numbers differ?").wait_for()
    params = query_params(page)
    assert params["preset"] == "tat-rag" and params["scorer"] == "difflib"
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "overview_preset")
