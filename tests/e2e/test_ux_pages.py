"""The pages issue 19 changed, in a real browser: Sweeps, Runs' facts form, Compare's trends,
the Queries note; each screenshotted (tests/e2e/artifacts)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.harness import open_tab, screenshot, wait_idle

pytestmark = pytest.mark.e2e


def test_sweeps_page_draws_its_chart_and_best_run(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/sweeps?run=bm25")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("h1").first.inner_text().strip() == "Sweeps"
    page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    assert page.get_by_text("Best ").count() >= 1
    screenshot(page, "sweeps")


def test_runs_page_offers_facts_and_compare_trends_have_groups(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/runs")
    wait_idle(page)
    assert page.get_by_role("button", name="Save facts").count() == 1
    screenshot(page, "runs_facts")
    page.goto(f"{app_url}/compare?run=bm25")
    wait_idle(page)
    open_tab(page, "Trends")
    assert page.get_by_role("combobox", name="One line per").count() == 1
    assert page.get_by_role("button", name="Download this view (JSON)").count() == 1
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "compare_trends")


def test_queries_note_box(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/queries?run=bm25&q=q0001")
    wait_idle(page)
    page.get_by_text("Note", exact=True).first.click()
    wait_idle(page)
    assert page.get_by_role("button", name="Save note").count() == 1
    screenshot(page, "queries_note")
