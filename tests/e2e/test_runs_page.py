"""The first page, in a real browser, lists the imported sample runs."""

from __future__ import annotations

import pytest

from tests.e2e.harness import screenshot

pytestmark = pytest.mark.e2e


def test_runs_page_lists_the_sample_runs(app_url: str, page: object) -> None:
    page.goto(app_url)  # type: ignore[attr-defined]
    page.get_by_text("3 runs in the store").wait_for(timeout=30_000)  # type: ignore[attr-defined]
    grid = page.locator("[data-testid='stDataFrame']")  # type: ignore[attr-defined]
    grid.wait_for(timeout=30_000)
    screenshot(page, "runs")
    # the dataframe is a canvas grid: read the names from its accessible cells
    text = grid.inner_text()
    for name in ("bm25", "tfidf_char", "hybrid_rerank"):
        assert name in text
