"""Threshold's borderline cards mark the matched window from a word's start to a word's end,
as the drilldown does ("Brightli[ne defines ...]" was marked from inside a word)."""

from __future__ import annotations

import html
import re

import pytest

from rageval_dashboard.components.figures.threshold import window_html
from rageval_core.evaluation.tuning import BorderlinePair


def pair(before: str, window: str, after: str, *, clipped: bool = False) -> BorderlinePair:
    return BorderlinePair(
        qidx=0,
        query_id="q1",
        query=None,
        rank=1,
        cut_rank=1,
        eidx=0,
        doc_id="d1",
        score=0.7,
        distance=0.0,
        evidence="defines Adjusted EBITDA",
        before=before,
        window=window,
        after=after,
        clipped_before=clipped,
        clipped_after=clipped,
    )


def marked(markup: str) -> str:
    found = re.search(r"<mark[^>]*>(.*?)</mark>", markup)
    assert found is not None
    return html.unescape(found.group(1))


@pytest.mark.parametrize(
    ("before", "window", "after", "want"),
    [
        ("Brightli", "ne defines Adjusted EBIT", "DA as net", "Brightline defines Adjusted EBITDA"),
        ("Pellucid ", "defines Adjusted", " EBITDA", "defines Adjusted"),  # whole words already
        ("a-", "b", "-c", "b"),  # punctuation is a boundary
    ],
)
def test_the_window_is_marked_in_whole_words(
    before: str, window: str, after: str, want: str
) -> None:
    out = window_html(pair(before, window, after, clipped=True))
    assert marked(out) == want
    # nothing lost or repeated around the mark; the clipped ends still say so
    text = html.unescape(re.sub(r"<[^>]+>", "", out.split("</div>", 1)[1]))
    assert text.replace("…", "") == before + window + after
    assert text.startswith("…") and text.endswith("…")


def test_no_window_marks_nothing() -> None:
    out = window_html(pair("the chunk's head", "", ""))
    assert "<mark" not in out and "chunk (no window located)" in out
