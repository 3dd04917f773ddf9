"""The report's SVG charts: user text escaped, NaN values left as gaps, one marker per value."""

from __future__ import annotations

import math
from html.parser import HTMLParser

from rageval_core.svg_charts import line_chart


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(svg: str) -> Tags:
    t = Tags()
    t.feed(svg)
    return t


def test_user_text_is_escaped() -> None:
    name = '<script>alert(1)</script><img src=x onerror="y">'
    t = parsed(line_chart(name, [1, 2], [(name, [0.1, 0.2])], "k & <b>"))
    assert {tag for tag, _ in t.tags} <= {
        "svg",
        "title",
        "text",
        "rect",
        "line",
        "polyline",
        "circle",
    }
    assert all(not k.startswith("on") for _, attrs in t.tags for k in attrs)
    assert name in "".join(t.text)  # shown as text


def test_nan_is_a_gap_and_every_value_a_marker() -> None:
    t = parsed(line_chart("R", [1, 2, 3, 4, 5], [("a", [0.1, 0.2, math.nan, 0.4, 0.5])], "k"))
    lines = [a for tag, a in t.tags if tag == "polyline"]
    assert len(lines) == 2  # 1-2 and 4-5, nothing across the NaN
    assert sum(tag == "circle" for tag, _ in t.tags) == 4


def test_values_outside_the_unit_range_widen_the_axis() -> None:
    t = parsed(line_chart("BestRank", [1, 2], [("a", [1.0, 3.5])], "k"))
    ticks = [float(x) for x in t.text if x.replace(".", "", 1).isdigit()]
    assert max(ticks) >= 3.5 and min(ticks) <= 1.0
