"""Compare never dead-ends, in a real browser (issue 19): each candidate is paired with the
baseline on the queries the two of them hold, the page says each pair's size, and a run that
shares nothing is listed with that reason, never an error page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import REPO, import_runs, serve
from tests.e2e.harness import open_tab, screenshot, wait_idle

pytestmark = pytest.mark.e2e

BASE = REPO / "sample_runs" / "bm25.jsonl"
DISJOINT = REPO / "tests" / "data" / "good" / "native_full.jsonl"  # q1.. ids: shares nothing
N_NARROW = 40


def narrow_run(folder: Path) -> Path:
    """tfidf_char's first N_NARROW queries as a run called narrow (ids unchanged: they pair)."""
    lines = (REPO / "sample_runs" / "tfidf_char.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    head["rageval_run"]["name"] = "narrow"
    path = folder / "narrow.jsonl"
    path.write_text("\n".join([json.dumps(head), *lines[1 : 1 + N_NARROW]]) + "\n")
    return path


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """A served store with bm25, narrow and the disjoint run, and the summary line of
    bm25 vs narrow compared alone (the independent reference for narrow's pair)."""
    from rageval_dashboard.components.figures import compare as fc
    from rageval_core.compare import compare
    from rageval_core.errors import ProblemLog
    from rageval_core.evaluation.report import Settings
    from rageval_core.formats import read_inputs
    from rageval_core.store import Store

    folder = tmp_path_factory.mktemp("pairs")
    narrow = narrow_run(folder)
    with Store(":memory:") as store:
        for path in (BASE, narrow):
            log = ProblemLog()
            store.import_run(read_inputs([path], None, log)[0], log)
        alone = compare(
            ["bm25", "narrow"], store=store, settings=Settings(k=10, threshold=0.7, relevance="ids")
        )
    db = folder / "rageval.duckdb"
    import_runs(db, [BASE, narrow, DISJOINT])
    with serve(db) as url:
        yield url, fc.summary_lines(alone)


def test_each_pair_on_its_own_queries_and_a_run_sharing_none_listed(
    pairs: tuple[str, list[str]], page: Any
) -> None:
    url, alone = pairs
    page.goto(f"{url}/compare?run=bm25")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    # the default candidates: the runs that share queries with bm25, not the disjoint one
    picker = page.locator("[data-testid='stMultiSelect']").first
    expect(picker).to_contain_text("narrow")
    expect(picker).not_to_contain_text("bm25-k3")
    # narrow's pair is its own 40 queries: the summary equals bm25 vs narrow compared alone
    summary = page.locator(".rageval-summary")
    assert [s.strip() for s in summary.all_inner_texts()] == alone
    expect(page.get_by_text(f"narrow: {N_NARROW} queries")).to_contain_text(
        f"({360 - N_NARROW} of bm25's left out)"
    )
    # the run sharing nothing, picked anyway: named with its reason, the page still compares
    picker.click()
    page.get_by_role("option", name="bm25-k3 (shares no query)").click()
    page.keyboard.press("Escape")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    left_out = page.locator("[data-testid='stAlert']", has_text="Left out: bm25-k3")
    expect(left_out).to_contain_text("no query")
    assert [s.strip() for s in summary.all_inner_texts()] == alone
    # Trends: the disjoint run records stages the others do not: a dash there, never "None"
    open_tab(page, "Trends")
    trends = page.locator("[data-testid='stDataFrame']", has_text="dated from")
    trends.scroll_into_view_if_needed()
    expect(trends).to_contain_text("bm25-k3")
    # (the grid's DOM holds raw values for assistive tech; tests/dashboard/test_app_smoke.py
    # checks every table is sent with the dash as its missing-value placeholder)
    assert "None" not in (trends.text_content() or "")
    screenshot(page, "compare_pairs")

    # the disjoint run as the baseline: said so, with the runs it shares nothing with
    page.goto(f"{url}/compare?run=bm25-k3")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    told = page.locator("[data-testid='stAlert']", has_text="No other stored run shares")
    expect(told).to_contain_text("bm25")
    expect(told).to_contain_text("narrow")
