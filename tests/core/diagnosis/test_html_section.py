"""The HTML report's "Why queries fail" section (rageval_core.html_report): per run, the
failing queries and missed spans per reason of the built run, exactly; the what-if lines are the
core's; query ids are HTML-escaped; a preset says why there is no diagnosis."""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import Any

import rageval as rv
from rageval_core.diagnosis import EVIDENCE_REASONS
from rageval_core.evaluate import Settings
from rageval_core.html_report import report_html
from tests.core.diagnosis import runs
from tests.core.test_html_report import Page

HOSTILE_ID = '<img src=x onerror="alert(1)">'


def hostile_records() -> list[dict[str, Any]]:
    """The built run with q_none's id an HTML payload."""
    out = runs.evidence_records()
    for record in out:
        if record["query_id"] == "q_none":
            record["query_id"] = HOSTILE_ID
    return out


def _section(html: str) -> str:
    start = html.index("<h2>Why queries fail</h2>")
    end = html.index("<h2>", start + 1)
    return html[start:end]


def test_the_section_counts_each_constructed_reason() -> None:
    settings = Settings(relevance="evidence")
    with rv.load(hostile_records(), name="built") as run:
        html = report_html([(run.store, run.data)], settings=settings)
        core = rv.diagnose(run, relevance="evidence")
    section = _section(html)
    page = Page()
    page.feed(section)
    cells = [a["data-value"] for t, a in page.tags if t == "td" and "data-value" in a]
    primary = Counter(r for r in runs.PRIMARY.values() if r not in ("passing", "no_gold"))
    spans = Counter(r for reasons in runs.EXPECTED.values() for r in reasons)
    # per reason: missed spans, queries, share of failing (3 numeric cells a row)
    got = {
        reason: (int(cells[3 * i]), int(cells[3 * i + 1]))  # type: ignore[arg-type]
        for i, reason in enumerate(EVIDENCE_REASONS)
    }
    assert got == {r: (spans.get(r, 0), primary.get(r, 0)) for r in EVIDENCE_REASONS}
    assert "7 of 9 queries fail (evidence mode)" in section
    for w in core.what_if:
        assert f"<li>{escape(w.text())}</li>" in section
    # the hostile id is an example of not_retrieved, as text: no tag of it reaches the page
    assert escape(HOSTILE_ID) in section
    assert not [t for t, _ in page.tags if t == "img"]


def test_a_preset_says_why_there_is_no_diagnosis() -> None:
    with rv.load(runs.evidence_records(), name="built") as run:
        html = report_html([(run.store, run.data)], settings=Settings(preset="eggai"))
    assert "Not diagnosed: the diagnosis reads rageval&#x27;s own coverage" in _section(html)
