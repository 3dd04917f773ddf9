"""Latency & cost: figures (data -> plotly Figure) and tables (-> DataFrame); no Streamlit calls.

Plotly draws trace names, category labels and hover text through its own pseudo-HTML (it knows
<a href>, <b>, <br> ...) and decodes entities in plain text, so every user string (tag values,
query ids) is html.escape'd here: it then shows exactly as typed and never becomes markup.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from rageval_core import ops
from rageval_core.opsview import ScatterPoints, ecdf

STAT_COLUMNS = ("p50", "p90", "p95", "p99", "mean")
#: a colour per statistic, light to dark as the percentile rises; mean stands apart
STAT_COLOURS = {"p50": "#9ecae1", "p90": "#4292c6", "p95": "#2171b5", "p99": "#08306b",
                "mean": "#f28e2b"}
#: above this many points the scatter draws with WebGL (SVG slows down past a few thousand)
WEBGL_POINTS = 2000
_LAYOUT: dict[str, Any] = {"margin": {"l": 10, "r": 10, "t": 40, "b": 10}, "height": 380,
                           "legend": {"orientation": "h", "y": -0.18}}


def _esc(values: Sequence[Any] | np.ndarray) -> list[str]:
    return [html.escape(str(v), quote=False) for v in values]


# --- tables -----------------------------------------------------------------------------


def percentile_frame(latency: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per stage: queries, p50, p90, p95, p99, mean (ms), from ops.latency_summary."""
    rows = [{"stage": stage, "queries": s.get("count"), **{c: s.get(c) for c in STAT_COLUMNS}}
            for stage, s in latency.items()]
    return pd.DataFrame(rows, columns=["stage", "queries", *STAT_COLUMNS])


def percentile_by_tag_frame(tag: str, groups: Mapping[str, Mapping[str, Mapping[str, Any]]],
                            stage: str | None = None) -> pd.DataFrame:
    """One row per (tag value, stage): the latency percentiles inside each group.

    groups is {value: {stage: stats}} (opsview.latency_by_tag); stage keeps only that stage's
    rows (None: every stage).
    """
    columns = ["tag", "value", "stage", "queries", *STAT_COLUMNS]
    rows = []
    for value, stages in groups.items():
        for name, s in stages.items():
            if stage is not None and name != stage:
                continue
            rows.append({"tag": tag, "value": value, "stage": name, "queries": s.get("count"),
                         **{c: s.get(c) for c in STAT_COLUMNS}})
    return pd.DataFrame(rows, columns=columns)


def token_frame(tokens: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per token kind: queries with a count, mean and total tokens."""
    rows = [{"kind": kind, "queries": s.get("count"), "mean": s.get("mean"), "total": s.get("total")}
            for kind, s in tokens.items()]
    return pd.DataFrame(rows, columns=["kind", "queries", "mean", "total"])


def per_query_frame(
    query_ids: np.ndarray, total_ms: np.ndarray, stages: Mapping[str, np.ndarray],
    tokens: Mapping[str, np.ndarray], cost_usd: np.ndarray,
) -> pd.DataFrame:
    """One row per query: total and stage latencies, token counts and cost (empty cell = unknown)."""
    cols: dict[str, Any] = {"query_id": query_ids.astype(str), "total_ms": total_ms}
    cols.update({f"{name}_ms": col for name, col in stages.items() if name != "total"})
    cols.update({f"{name}_tokens": col for name, col in tokens.items()})
    cols["cost_usd"] = cost_usd
    return pd.DataFrame(cols)


# --- figures ----------------------------------------------------------------------------


def percentile_bars(frame: pd.DataFrame, log_y: bool = False) -> go.Figure:
    """Grouped bars: for each stage, p50, p90, p95, p99 and mean latency in ms."""
    fig = go.Figure()
    stages = _esc(frame["stage"])
    for stat in STAT_COLUMNS:
        fig.add_bar(
            name=stat, x=stages, y=frame[stat].astype(float), marker_color=STAT_COLOURS[stat],
            hovertemplate=f"%{{x}}<br>{stat}: %{{y:,.1f}} ms<extra></extra>",
        )
    fig.update_layout(barmode="group", title="Latency per stage", **_LAYOUT)
    fig.update_yaxes(type="log" if log_y else "linear", title="ms" + (" (log)" if log_y else ""))
    return fig


def stage_distribution(stages: Mapping[str, np.ndarray], log_x: bool = False,
                       kind: str = "ecdf") -> go.Figure:
    """Per-stage latency distribution: ECDF step lines (kind="ecdf") or overlaid histograms."""
    fig = go.Figure()
    for name, col in stages.items():
        label = html.escape(name, quote=False)
        if kind == "ecdf":
            x, y = ecdf(col)
            fig.add_scatter(
                x=x, y=y, mode="lines", line_shape="hv", name=label,
                hovertemplate=f"{label}<br>%{{y:.1%}} of queries ≤ %{{x:,.1f}} ms<extra></extra>",
            )
        else:
            v = col[np.isfinite(col)]
            if log_x:
                v = v[v > 0]
            fig.add_histogram(x=np.log10(v) if log_x else v, name=label, opacity=0.6,
                              hovertemplate=f"{label}<br>%{{y}} queries<extra></extra>")
    if kind == "ecdf":
        fig.update_layout(yaxis_title="share of queries", yaxis_tickformat=".0%")
        fig.update_xaxes(type="log" if log_x else "linear", title="ms" + (" (log)" if log_x else ""))
    else:
        # plotly bins on a log axis poorly: bin log10(ms) instead and label the axis as such
        fig.update_layout(barmode="overlay", yaxis_title="queries")
        fig.update_xaxes(title="log10(ms)" if log_x else "ms")
    fig.update_layout(title="Latency distribution per stage", **_LAYOUT)
    return fig


def cost_histogram(cost_usd: np.ndarray) -> go.Figure:
    """Histogram of the cost of each query in USD (queries with a known cost)."""
    v = cost_usd[np.isfinite(cost_usd)]
    fig = go.Figure()
    fig.add_histogram(x=v, marker_color="#59a14f",
                      hovertemplate="$%{x}<br>%{y} queries<extra></extra>")
    fig.update_layout(title="Cost per query", xaxis_title="USD", yaxis_title="queries",
                      xaxis_tickformat="$.5f", bargap=0.05, **_LAYOUT)
    return fig


def latency_quality_scatter(points: ScatterPoints, metric: str, tag: str | None) -> go.Figure:
    """Total latency (x) against a per-query metric (y), one trace per tag value, hover = query id."""
    fig = go.Figure()
    groups = [""] if tag is None else _group_order(points.group)
    trace = go.Scattergl if points.x_ms.size > WEBGL_POINTS else go.Scatter
    for g in groups:
        sel = points.group == g
        name = html.escape(g, quote=False) if tag else "queries"
        fig.add_trace(trace(
            x=points.x_ms[sel], y=points.y[sel], mode="markers", name=name,
            customdata=_esc(points.query_id[sel]), marker={"size": 7, "opacity": 0.7},
            hovertemplate=(f"%{{customdata}}<br>{html.escape(metric, quote=False)}: %{{y:.3f}}"
                           f"<br>total: %{{x:,.1f}} ms<extra>{name}</extra>"),
        ))
    fig.update_layout(
        title=f"Latency against {html.escape(metric, quote=False)}", xaxis_title="total latency (ms)",
        yaxis_title=html.escape(metric, quote=False), showlegend=tag is not None,
        legend_title_text=html.escape(tag, quote=False) if tag else None, **_LAYOUT,
    )
    return fig


def _group_order(groups: np.ndarray) -> list[str]:
    present = set(np.unique(groups).tolist())
    names = sorted(present - {ops.NO_TAG})
    return [*names, ops.NO_TAG] if ops.NO_TAG in present else names
