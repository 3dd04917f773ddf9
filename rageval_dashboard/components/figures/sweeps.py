"""Sweep figures (pure: SweepRows -> plotly Figure / DataFrame): a value against one setting,
two settings as a heat map, many as parallel coordinates; the best configuration marked."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from rageval_dashboard.components.text import escape_text
from rageval_core.compare.sweeps import COST, LATENCY, SweepRow

_LAYOUT: dict[str, Any] = {"margin": {"l": 10, "r": 10, "t": 50, "b": 10}, "height": 460}
BEST_COLOUR = "#d62728"


def sweep_frame(
    rows: Sequence[SweepRow], settings: Sequence[str], metrics: Sequence[str]
) -> pd.DataFrame:
    """One row per run: its settings, metrics, p95 latency and cost (NaN where unknown)."""
    out = []
    for r in rows:
        item: dict[str, Any] = {"run": r.run}
        item.update({s: r.settings.get(s) for s in settings})
        item.update({m: r.value(m) for m in metrics})
        item[LATENCY], item[COST] = r.latency_p95_ms, r.cost_per_query_usd
        out.append(item)
    return pd.DataFrame(out, columns=["run", *settings, *metrics, LATENCY, COST])


def setting_text(value: Any) -> str:
    """A setting's value in the table: numbers as written (1.2, not 1.200000), a dash for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _label(value: Any) -> str:
    return "(none)" if value is None else escape_text(str(value), one_line=True)


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def against_setting(
    rows: Sequence[SweepRow], setting: str, y: str, best: SweepRow | None
) -> go.Figure:
    """y against one setting, a point per run (click: customdata is the run); best: a star."""
    xs = [r.settings.get(setting) for r in rows]
    numeric = _numeric(xs)
    fig = go.Figure(
        go.Scatter(
            x=xs if numeric else [_label(x) for x in xs],
            y=[r.value(y) for r in rows],
            mode="markers+text",
            text=[escape_text(r.run, one_line=True) for r in rows],
            textposition="top center",
            marker={"size": 12},
            customdata=[r.run for r in rows],
            hovertemplate=f"%{{text}}<br>{escape_text(setting)} = %{{x}}<br>"
            f"{escape_text(y)} = %{{y:.4g}}<extra></extra>",
            name="runs",
        )
    )
    if best is not None:
        bx = best.settings.get(setting)
        fig.add_trace(
            go.Scatter(
                x=[bx if numeric else _label(bx)],
                y=[best.value(y)],
                mode="markers",
                marker={"symbol": "star", "size": 22, "color": BEST_COLOUR},
                customdata=[best.run],
                name="best under the budget",
                hovertemplate="best: %{customdata}<extra></extra>",
            )
        )
    fig.update_layout(
        title=f"{escape_text(y)} against {escape_text(setting)}",
        xaxis_title=escape_text(setting),
        yaxis_title=escape_text(y),
        clickmode="event+select",
        **_LAYOUT,
    )
    return fig


def heat_map(rows: Sequence[SweepRow], x: str, y: str, value: str) -> go.Figure:
    """value over two settings (the mean where several runs share a cell; blank: no run)."""
    xs = sorted({_label(r.settings.get(x)) for r in rows}, key=_order)
    ys = sorted({_label(r.settings.get(y)) for r in rows}, key=_order)
    cells: dict[tuple[str, str], list[float]] = {}
    runs: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        at = (_label(r.settings.get(x)), _label(r.settings.get(y)))
        v = r.value(value)
        if not math.isnan(v):
            cells.setdefault(at, []).append(v)
        runs.setdefault(at, []).append(escape_text(r.run, one_line=True))
    z = [[_mean(cells.get((a, b))) for a in xs] for b in ys]
    text = [[", ".join(runs.get((a, b), [])) for a in xs] for b in ys]
    fig = go.Figure(
        go.Heatmap(
            x=xs,
            y=ys,
            z=z,
            text=text,
            texttemplate="%{z:.3g}",
            colorscale="Viridis",
            hovertemplate="%{text}<br>%{z:.4g}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"{escape_text(value)} over {escape_text(x)} x {escape_text(y)}",
        xaxis={"title": escape_text(x), "type": "category"},
        yaxis={"title": escape_text(y), "type": "category"},
        **_LAYOUT,
    )
    return fig


def parallel(rows: Sequence[SweepRow], settings: Sequence[str], value: str) -> go.Figure:
    """Parallel coordinates: an axis per setting (text settings as numbered categories) and value."""
    dims = []
    for s in settings:
        raw = [r.settings.get(s) for r in rows]
        if _numeric(raw):
            dims.append({"label": escape_text(s), "values": raw})
        else:
            cats = sorted({_label(v) for v in raw}, key=_order)
            dims.append(
                {
                    "label": escape_text(s),
                    "values": [cats.index(_label(v)) for v in raw],
                    "tickvals": list(range(len(cats))),
                    "ticktext": cats,
                }
            )
    values = [r.value(value) for r in rows]
    dims.append({"label": escape_text(value), "values": values})
    fig = go.Figure(
        go.Parcoords(
            dimensions=dims,
            line={"color": values, "colorscale": "Viridis", "showscale": True},
        )
    )
    fig.update_layout(title=f"{escape_text(value)} across {len(settings)} settings", **_LAYOUT)
    return fig


def _mean(values: list[float] | None) -> float | None:
    return sum(values) / len(values) if values else None


def _order(label: str) -> tuple[int, float, str]:
    """Numbers in numeric order, before text."""
    try:
        return (0, float(label), "")
    except ValueError:
        return (1, 0.0, label)
