"""A failing query's drilldown, opened by a link, highlights the matched text of its chunk."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from tests.e2e.conftest import RUN, Facts
from tests.e2e.harness import query_params, screenshot, wait_idle

pytestmark = pytest.mark.e2e


def test_drilldown_highlights_the_best_window(app_url: str, page: Any, facts: Facts) -> None:
    qid = facts.failing_query
    page.goto(f"{app_url}/queries?run={RUN}&q={quote(qid)}")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert query_params(page).get("q") == qid
    page.get_by_text(f"Query {qid}").first.wait_for()
    # full marks: chunks that cover a gold span at the threshold ("weak" marks are near misses)
    marks = page.locator(".rageval-chunk mark.rageval-hit:not(.weak)")
    # <br> stands for a newline in the card and has no text of its own
    expected = [m.replace("\r\n", "").replace("\n", "") for m in facts.expected_marks]
    assert marks.all_text_contents() == expected
    card = marks.first.locator("xpath=ancestor::div[contains(@class,'rageval-chunk')]")
    assert card.get_attribute("data-covers") == "true"
    # the mark sits inside the chunk's own text
    assert expected[0] in card.text_content()
    screenshot(page, "drilldown")
