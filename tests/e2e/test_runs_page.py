"""The Runs page, in a real browser, lists the imported sample runs."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.harness import screenshot, wait_idle

pytestmark = pytest.mark.e2e


def test_runs_page_lists_the_sample_runs(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/runs")
    wait_idle(page)
    page.get_by_text("3 run(s) in the store").wait_for()
    grid = page.locator("[data-testid='stDataFrame']").first
    grid.wait_for()
    screenshot(page, "runs")
    # the dataframe is a canvas grid: read the names from its accessible cells (filled once drawn)
    for name in ("bm25", "tfidf_char", "hybrid_rerank"):
        expect(grid).to_contain_text(name)
    assert page.locator("[data-testid='stException']").count() == 0
