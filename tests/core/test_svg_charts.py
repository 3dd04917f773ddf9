"""The report's SVG charts: user text escaped, NaN values left as gaps, one marker per value."""

from __future__ import annotations

import itertools
import math
import re
from html.parser import HTMLParser

from rageval_core.outputs.svg_charts import line_chart


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


def _geometry(
    t: Tags,
) -> tuple[tuple[float, float, float, float], list[tuple[float, float, float]]]:
    """The plot frame (x0, y0, x1, y1) and every drawn point (x, y, reach from its centre:
    a marker's radius, a line's half stroke)."""
    frame = next(a for tag, a in t.tags if tag == "rect" and a.get("class") == "plot")
    x0, y0 = float(frame["x"] or 0), float(frame["y"] or 0)
    box = (x0, y0, x0 + float(frame["width"] or 0), y0 + float(frame["height"] or 0))
    points = []
    for tag, a in t.tags:
        if tag == "circle":
            points.append((float(a["cx"] or 0), float(a["cy"] or 0), float(a["r"] or 0)))
        if tag == "polyline":
            half = float(a["stroke-width"] or 0) / 2
            for xy in (a["points"] or "").split():
                x, y = map(float, xy.split(","))
                points.append((x, y, half))
    return box, points


def _is_round(value: float) -> bool:
    """A multiple of 1, 2, 2.5 or 5 times a power of ten, as an axis tick should be."""
    if value == 0:
        return True
    power = 10.0 ** math.floor(math.log10(abs(value)))
    return any(
        math.isclose(value / (m * power), round(value / (m * power))) for m in (1, 2, 2.5, 5)
    )


def _y_ticks(svg: str) -> list[float]:
    """The tick labels left of the plot (right-aligned), as numbers."""
    return [float(v) for v in re.findall(r'class="tick" text-anchor="end">([^<]*)<', svg)]


def test_ticks_are_round_and_every_line_and_marker_stays_inside_the_plot() -> None:
    # the report's BestRank curve (1 to 3.606: ticks were 1, 1.652, 2.303 ...) and a recall
    # curve at exactly 1 (drawn on the frame's top edge, half of each marker outside)
    cases = [
        (
            "BestRank",
            list(range(1, 11)),
            [1.0, 1.4, 1.8, 2.05, 2.4, 2.66, 2.9, 3.1, 3.3, 3.606],
            None,
        ),
        ("R", [round(0.05 * i, 2) for i in range(21)], [1.0] * 10 + [0.9] * 10 + [0.0], (0.0, 1.0)),
        ("flat", [1, 2, 3], [0.5, 0.5, 0.5], None),
    ]
    for title, xs, ys, y_range in cases:
        svg = line_chart(title, xs, [("a", ys)], "k", y_range)
        t = parsed(svg)
        (x0, y0, x1, y1), points = _geometry(t)
        assert points
        for x, y, reach in points:
            assert x0 < x - reach and x + reach < x1, (title, x, reach, x0, x1)
            assert y0 < y - reach and y + reach < y1, (title, y, reach, y0, y1)
        ticks = _y_ticks(svg)
        assert len(ticks) >= 3 and all(_is_round(v) for v in ticks), (title, ticks)
        assert min(ticks) <= min(ys) and max(ticks) >= max(ys), (title, ticks)
        steps = {round(b - a, 9) for a, b in itertools.pairwise(ticks)}
        assert len(steps) == 1, (title, ticks)  # evenly spaced
    # the honest negative: a value outside a declared range still widens the axis to it
    assert max(_y_ticks(line_chart("R", [1, 2], [("a", [0.2, 1.7])], "k", (0.0, 1.0)))) == 2.0
