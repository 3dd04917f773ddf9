"""Issue 27, point 10 in a real browser: every card label whole at common window widths, and the
Queries table ticking the query that is open however it was opened."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.conftest import RUN
from tests.e2e.harness import query_params, screenshot, wait_idle

pytestmark = pytest.mark.e2e

#: the labels whose text does not fit the box showing it (the grid cuts them with an ellipsis)
CUT_LABELS = """() => [...document.querySelectorAll(
    "[data-testid='stMetricLabel'] [data-testid='stMarkdownContainer']")]
    .filter(e => e.scrollWidth > e.clientWidth).map(e => e.textContent)"""
LABELS = """() => [...document.querySelectorAll("[data-testid='stMetricLabel']")]
    .map(e => e.textContent)"""


@pytest.mark.parametrize("width", [1024, 1280, 1600])
@pytest.mark.parametrize("preset", ["", "tat-rag"])
def test_no_overview_card_label_is_cut(app_url: str, page: Any, width: int, preset: str) -> None:
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(f"{app_url}/?run={RUN}" + (f"&preset={preset}" if preset else ""))
    wait_idle(page)
    page.locator("[data-testid='stProgress']").wait_for(state="detached", timeout=120_000)
    wait_idle(page)
    labels = page.evaluate(LABELS)
    longest = "PerQueryCoverage@10"
    assert longest in labels, labels  # the label the issue found cut ("PerQueryCoverag…")
    assert page.evaluate(CUT_LABELS) == []
    if width == 1280 and not preset:
        screenshot(page, "overview_cards_1280")


def _ticked_rows(page: Any) -> list[str]:
    """The query ids of the rows the Queries table shows ticked (its accessible table)."""
    grid = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']").first
    grid.locator("tr[aria-rowindex='2'] td").first.wait_for(state="attached")
    return grid.evaluate(  # type: ignore[no-any-return]
        "g => [...g.querySelectorAll(\"tr[aria-selected='true'] td:first-child\")]"
        ".map(td => td.textContent)"
    )


def _first_rows(page: Any, n: int) -> list[str]:
    grid = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']").first
    grid.locator(f"tr[aria-rowindex='{n + 1}'] td").first.wait_for(state="attached")
    return [grid.locator(f"tr[aria-rowindex='{i + 2}'] td").first.text_content() for i in range(n)]


def test_a_query_opened_by_link_or_next_is_ticked_in_the_table(app_url: str, page: Any) -> None:
    page.goto(f"{app_url}/queries?run={RUN}")
    wait_idle(page)
    ids = _first_rows(page, 4)
    assert _ticked_rows(page) == []  # nothing open, nothing ticked
    page.goto(f"{app_url}/queries?run={RUN}&q={ids[2]}")
    wait_idle(page)
    page.get_by_text(f"Query {ids[2]}", exact=True).first.wait_for()
    assert _ticked_rows(page) == [ids[2]]
    # a click on another row moves the tick there (and opens that row)
    _click_row(page, 0)
    wait_idle(page)
    assert query_params(page)["q"] == ids[0]
    assert _ticked_rows(page) == [ids[0]]
    page.get_by_role("button", name="Next failing ▶").click()
    wait_idle(page)
    opened = query_params(page)["q"]
    assert opened != ids[0]
    # its row may sit further down the table: scroll the grid until a ticked row shows
    grid = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']").first
    box = grid.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(60):
        if _ticked_rows(page):
            break
        page.mouse.wheel(0, 300)
        time.sleep(0.1)
    assert _ticked_rows(page) == [opened]
    screenshot(page, "queries_ticked")


def _click_row(page: Any, row: int) -> None:
    """Click a row's selection box (the first column; header and rows 35 px high)."""
    grid = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']").first
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 * (row + 1) + 17)


@pytest.mark.parametrize("width", [1024, 1280])
def test_no_compare_side_by_side_label_is_cut(app_url: str, page: Any, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(f"{app_url}/compare?run={RUN}&compare.query=q0007")
    wait_idle(page)
    page.get_by_text("Side by side", exact=True).wait_for()
    labels = page.evaluate(LABELS)
    assert labels.count("Spans covered in top 10") == 2, labels  # one per run
    assert page.evaluate(CUT_LABELS) == []
