"""The Why failing page in a real browser (issue 30): the bars of the sample run bm25 are the
core's counts, and a click on a bar opens the Queries page filtered to that reason, the filter
and the sidebar's settings in the URL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.harness import query_params, screenshot, wait_idle

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
RUN = "bm25"
CLICKED = "near_miss"


@pytest.fixture(scope="module")
def counts() -> Iterator[dict[str, int]]:
    """bm25's failing queries per reason in evidence mode at the sidebar's defaults, from the
    core on the sample file in a store of its own (the server holds the e2e store)."""
    import rageval as rv

    with rv.load(REPO / "sample_runs" / f"{RUN}.jsonl") as run:
        d = rv.diagnose(run, relevance="evidence")
        yield {**d.query_counts(), "failing": d.n_failing, "n": int(d.query_ids.size)}


def test_a_bar_click_opens_queries_filtered_to_its_reason(
    app_url: str, page: Any, counts: dict[str, int]
) -> None:
    page.goto(f"{app_url}/why?run={RUN}&relevance=evidence")
    wait_idle(page)
    deadline = time.monotonic() + 120  # the split check runs in the background first
    while page.get_by_text("Checking ", exact=False).count() and time.monotonic() < deadline:
        time.sleep(0.5)
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    main = page.locator("[data-testid='stMain']")
    expect(main).to_contain_text(
        f"{counts['failing']} of {counts['n']} queries fail (evidence mode"
    )
    chart = page.locator(".st-key-why-chart")
    bars = chart.locator(".barlayer .point")
    bars.first.wait_for()
    texts = [t.strip() for t in chart.locator(".barlayer text").all_text_contents()]
    reasons = [
        "numbers_differ",
        "ranked_below_k",
        "split_across_chunks",
        "near_miss",
        "not_retrieved",
    ]
    assert texts == [str(counts[r]) for r in reasons]
    screenshot(page, "why_failing")
    box = bars.nth(reasons.index(CLICKED)).bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] - 3)
    deadline = time.monotonic() + 60
    while "/queries" not in page.url and time.monotonic() < deadline:
        time.sleep(0.3)
    wait_idle(page)
    errors = page.locator("[data-testid='stException']").all_inner_texts()
    assert not errors, errors
    assert page.locator("h1").first.inner_text().strip() == "Queries"
    params = query_params(page)
    assert params.get("queries.reason") == CLICKED
    # the sidebar's settings stay (bm25, the first run, is the select's default: not in the URL)
    assert params.get("relevance") == "evidence" and params.get("run", RUN) == RUN
    expect(page.get_by_text(f"{counts[CLICKED]} of {counts['n']} queries shown")).to_be_visible()
    grid = page.locator("[data-testid='stDataFrame']").first
    expect(grid).to_contain_text(CLICKED)
    for other in ("numbers_differ", "not_retrieved"):
        expect(grid).not_to_contain_text(other)
    screenshot(page, "why_failing_queries")
