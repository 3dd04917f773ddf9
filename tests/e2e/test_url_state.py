"""Every view is a link: choices made in the browser reach the URL, and reloading restores them."""

from __future__ import annotations

from typing import Any

import pytest

from rageval_dashboard import keys
from tests.e2e.harness import query_params, screenshot, wait_idle

pytestmark = pytest.mark.e2e


def test_queries_filters_reach_the_url_and_survive_a_reload(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/queries?run=bm25")
    wait_idle(page)
    page.get_by_text("Failing only").click()
    wait_idle(page)
    search = page.get_by_role("textbox", name="Search")
    search.fill("revenue")
    search.press("Enter")
    wait_idle(page)
    params = query_params(page)
    assert params.get(keys.QUERIES_FAILING) == "true"
    assert params.get(keys.QUERIES_SEARCH) == "revenue"
    page.reload()
    wait_idle(page)
    assert page.get_by_role("textbox", name="Search").input_value() == "revenue"
    assert page.locator("label", has_text="Failing only").locator("input").is_checked()
    screenshot(page, "queries_from_link")


def test_compare_baseline_reaches_the_url_and_survives_a_reload(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/compare?run=bm25")
    wait_idle(page)
    box = page.get_by_role("combobox", name="Baseline")
    box.click()
    page.get_by_role("option", name="tfidf_char").click()
    wait_idle(page)
    assert query_params(page).get(keys.COMPARE_BASELINE) == "tfidf_char"
    page.reload()
    wait_idle(page)
    assert page.get_by_role("combobox", name="Baseline").input_value() == "tfidf_char"
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "compare_from_link")
