"""Line charts as inline SVG text, for the HTML report: no script, no font, no request.

A chart is drawn from plain numbers (x values and one y series per run); every text in it (run
names, metric names) is HTML-escaped here, so a caller can put the result straight into a page.
Each point carries an SVG <title>, which browsers show as a tooltip without any script.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

#: one colour per series (colour-blind safe, Okabe-Ito), repeated past eight
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
WIDTH, HEIGHT = 440, 260  # the plot and its axes; the legend adds rows below
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 28, 40
LEGEND_COLUMNS, LEGEND_ROW = 3, 14
#: pixels between the plot's frame and the data's extremes (a marker's radius and more)
INSET = 6


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _step(span: float, n: int) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) giving about n intervals over span."""
    raw = span / max(n, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))


def nice_axis(
    lo: float, hi: float, n: int = 4, whole: bool = False
) -> tuple[float, float, list[float]]:
    """(axis low, axis high, ticks): round ticks (multiples of a 1-2-2.5-5 step) whose first
    and last enclose [lo, hi], so every value lies on the axis; whole: integer steps only."""
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    step = _step(hi - lo, n)
    if whole:
        step = max(1.0, round(step))
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    ticks = [round(i * step, 10) for i in range(first, last + 1)]
    return ticks[0], ticks[-1], ticks


def line_chart(
    title: str,
    xs: Sequence[float],
    series: Sequence[tuple[str, Sequence[float]]],
    x_label: str,
    y_range: tuple[float, float] | None = (0.0, 1.0),
) -> str:
    """An SVG line chart: one polyline (with point markers) per (name, ys); NaN ys are gaps.

    y_range None: from the data (for measures not bounded by [0, 1]). Both axes have round
    ticks; the data are drawn INSET pixels inside the plot's frame, so a line at the axis' end
    (a recall of 1) and its markers stay inside the plot, off the frame.
    """
    finite = [y for _, ys in series for y in ys if math.isfinite(y)]
    if y_range is None or any(y < y_range[0] or y > y_range[1] for y in finite):
        y_lo, y_hi, y_ticks = nice_axis(min(finite, default=0.0), max(finite, default=1.0))
    else:
        y_lo, y_hi, y_ticks = nice_axis(*y_range)
    whole = all(float(x).is_integer() for x in xs)  # cut-offs: whole ticks only
    x_min, x_max = (min(xs), max(xs)) if xs else (0.0, 1.0)
    x_lo, x_hi, x_ticks = nice_axis(x_min, x_max, 5, whole)
    # the axis starts at the data, not at the round number below it (k starts at 1)
    x_lo, x_hi = (x_min, x_max) if x_max > x_min else (x_lo, x_hi)
    x_ticks = [x for x in x_ticks if x_lo <= x <= x_hi]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + INSET + (x - x_lo) / (x_hi - x_lo) * (plot_w - 2 * INSET)

    def py(y: float) -> float:
        return TOP + INSET + (1 - (y - y_lo) / (y_hi - y_lo)) * (plot_h - 2 * INSET)

    legend_rows = -(-len(series) // LEGEND_COLUMNS)
    total_h = HEIGHT + LEGEND_ROW * legend_rows
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {total_h}" width="{WIDTH}" '
        f'height="{total_h}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{LEFT}" y="16" class="chart-title">{escape(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>',
    ]
    for y in y_ticks:
        parts.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{py(y):.1f}" y2="{py(y):.1f}" class="grid"/>'
            f'<text x="{LEFT - 4}" y="{py(y) + 3:.1f}" class="tick" text-anchor="end">{_fmt(y)}</text>'
        )
    for x in x_ticks:
        parts.append(
            f'<text x="{px(x):.1f}" y="{TOP + plot_h + 14}" class="tick" text-anchor="middle">'
            f"{_fmt(x)}</text>"
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" class="axis" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    for i, (name, ys) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        segments: list[list[tuple[float, float]]] = [[]]
        for x, y in zip(xs, ys, strict=True):
            if not math.isfinite(y):
                segments.append([])
            else:
                segments[-1].append((x, y))
        for seg in segments:
            if len(seg) > 1:
                points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in seg)
                parts.append(
                    f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.8"/>'
                )
            for x, y in seg:
                parts.append(
                    f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.4" fill="{colour}">'
                    f"<title>{escape(name)}: {escape(x_label)} {_fmt(x)} -> {_fmt(y)}</title></circle>"
                )
    # the legend, under the axis label (never over the lines), three entries a row
    column_w = (WIDTH - 2 * 8) / LEGEND_COLUMNS
    for i, (name, _) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        x = 8 + column_w * (i % LEGEND_COLUMNS)
        y = HEIGHT + LEGEND_ROW * (i // LEGEND_COLUMNS) + 4
        short = name if len(name) <= 24 else name[:23] + "…"
        parts.append(
            f'<rect x="{x:.1f}" y="{y - 8}" width="9" height="9" fill="{colour}"/>'
            f'<text x="{x + 13:.1f}" y="{y}" class="legend">{escape(short)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
