"""Compare page's trends: every stored run over time (pure: TrendRows -> plotly Figure /
pandas DataFrame; run names, group values and stage names escaped with escape_text, as in
figures_compare.py). No Streamlit calls here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from rageval_dashboard.components.figures.compare import LAYOUT
from rageval_dashboard.components.text import escape_text
from rageval_core.compare import BY_STEM, TrendRow, trend_group


def trend_stages(rows: Sequence[TrendRow]) -> list[str]:
    """Latency stages any run records, first seen first."""
    return list(dict.fromkeys(s for r in rows for s in r.latency_p95_ms))


def trends_frame(
    rows: Sequence[TrendRow], metrics: Sequence[str], by: str = BY_STEM
) -> pd.DataFrame:
    """One row per run in time order: its line (group), date and where the date comes from,
    queries, the metrics, p95 latency per stage (NaN where a run has no value)."""
    stages = trend_stages(rows)
    out = []
    for r in rows:
        item: dict[str, Any] = {
            "group": trend_group(r, by),
            "run": r.run,
            "date": r.when[:19].replace("T", " "),
            "dated from": r.dated_from,
            "queries": r.n_queries,
        }
        item.update({m: r.metrics.get(m, math.nan) for m in metrics})
        item.update({f"p95 {s} ms": _number(r.latency_p95_ms.get(s)) for s in stages})
        out.append(item)
    columns = ["group", "run", "date", "dated from", "queries", *metrics]
    return pd.DataFrame(out, columns=[*columns, *(f"p95 {s} ms" for s in stages)])


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def trends_figure(
    rows: Sequence[TrendRow], metrics: Sequence[str], stage: str | None, by: str = BY_STEM
) -> go.Figure:
    """Metrics (left axis) and p95 latency of stage (right axis, dashed) over the runs' dates,
    one line per group (a run tag's value or the name's stem) and metric: unrelated runs are
    never joined into one line. A run without created_at sits at its import time (hollow).

    A spec taken unvalidated, as wtl_bars's (the tests validate it)."""
    data: list[dict[str, Any]] = []
    groups = list(dict.fromkeys(trend_group(r, by) for r in rows))
    several = len(groups) > 1
    for g in groups:
        mine = [r for r in rows if trend_group(r, by) == g]
        x = [r.when for r in mine]
        runs = [escape_text(r.run) for r in mine]
        symbols = ["circle" if r.dated_from == "created_at" else "circle-open" for r in mine]
        prefix = f"{escape_text(g)}: " if several else ""
        line = {"type": "scatter", "x": x, "mode": "lines+markers", "customdata": runs}
        for m in metrics:
            y = [r.metrics.get(m, math.nan) for r in mine]
            if all(math.isnan(v) for v in y):
                continue
            data.append(
                {
                    **line,
                    "y": y,
                    "name": prefix + escape_text(m),
                    "marker": {"symbol": symbols, "size": 9},
                    "hovertemplate": f"%{{customdata}}<br>{escape_text(m)}: %{{y:.4f}}<extra></extra>",
                    "connectgaps": True,
                }
            )
        if stage is not None:
            p95 = [_number(r.latency_p95_ms.get(stage)) for r in mine]
            if all(math.isnan(v) for v in p95):
                continue
            data.append(
                {
                    **line,
                    "y": p95,
                    "name": f"{prefix}p95 latency, {escape_text(stage)} (ms)",
                    "line": {"dash": "dash"},
                    "marker": {"symbol": "diamond"},
                    "hovertemplate": "%{customdata}<br>p95 %{y:.1f} ms<extra></extra>",
                    "connectgaps": True,
                    "yaxis": "y2",
                }
            )
    # the legend below the axis title (dates take two lines of ticks), the figure taller by its
    # rows (about three entries a row) so the plot keeps its height
    height = 360 + 22 * math.ceil(len(data) / 3)
    layout: dict[str, Any] = {
        **LAYOUT,
        "height": height,
        "title": {
            "text": "Trends over all runs"
            + (f", one line per {escape_text(by)}" if several else "")
        },
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.12 - 80 / height},
        # room on the right for the latency axis, as a secondary y axis has
        "xaxis": {
            "domain": [0.0, 0.94],
            "anchor": "y",
            "title": {"text": "run date (created_at; hollow: import time)"},
        },
        "yaxis": {"anchor": "x", "title": {"text": "metric value"}},
    }
    if stage is not None:
        layout["yaxis2"] = {
            "anchor": "x",
            "overlaying": "y",
            "side": "right",
            "title": {"text": "p95 latency (ms)"},
            "rangemode": "tozero",
            "tickmode": "auto",
            "showgrid": False,
        }
    return go.Figure({"data": data, "layout": layout}, _validate=False)
