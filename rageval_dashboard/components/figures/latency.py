"""Latency & cost: figures (data -> plotly Figure) and tables (-> DataFrame); no Streamlit calls.

Plotly draws trace names, category labels and hover text through its own pseudo-HTML (it knows
<a href>, <b>, <br> ...) and decodes entities in plain text, so every user string (tag values,
query ids, stage names) goes through escape_text (components/text.py) here: it then
shows exactly as typed and never becomes markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import NDArray

from rageval_dashboard.components.text import escape_text
from rageval_core.metrics import latency_cost as ops
from rageval_core.latency.per_query import ScatterPoints, ecdf

STAT_COLUMNS = ("p50", "p90", "p95", "p99", "mean")
#: a colour per statistic, light to dark as the percentile rises; mean stands apart
STAT_COLOURS = {
    "p50": "#9ecae1",
    "p90": "#4292c6",
    "p95": "#2171b5",
    "p99": "#08306b",
    "mean": "#f28e2b",
}
#: above this many points the scatter draws with WebGL (SVG slows down past a few thousand)
WEBGL_POINTS = 2000
#: the scatter draws at most this many queries: a 100,000-query run would otherwise ship
#: 100,000 points (and hover ids) to the browser on every rerun, and build them for seconds
SCATTER_POINTS = 3000
#: histograms are binned here (numpy), not by plotly.js from every raw value
HISTOGRAM_BINS = 60
_LAYOUT: dict[str, Any] = {
    "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
    "height": 380,
    "legend": {"orientation": "h", "y": -0.18},
}


def _escape_all(values: Sequence[Any] | np.ndarray) -> list[str]:
    return [escape_text(str(v)) for v in values]


# --- tables -----------------------------------------------------------------------------


def percentile_frame(latency: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per stage: queries, p50, p90, p95, p99, mean (ms), from ops.latency_summary."""
    rows = [
        {
            "stage": ops.stage_label(stage, s),
            "queries": s.get("count"),
            **{c: s.get(c) for c in STAT_COLUMNS},
        }
        for stage, s in latency.items()
    ]
    return pd.DataFrame(rows, columns=["stage", "queries", *STAT_COLUMNS])


def ms_format(frame: pd.DataFrame) -> str:
    """A printf format for a table's latency columns (STAT_COLUMNS): the decimals that show
    its smallest value to about 3 significant digits (ops.ms_decimals): %.1f when every
    stage takes 10 ms or more, %.3f when one takes under a millisecond."""
    values = frame[list(STAT_COLUMNS)].to_numpy(dtype=np.float64, na_value=np.nan)
    return f"%.{ops.ms_decimals_of(values)}f"


def percentile_by_tag_frame(
    tag: str, groups: Mapping[str, Mapping[str, Mapping[str, Any]]], stage: str | None = None
) -> pd.DataFrame:
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
            rows.append(
                {
                    "tag": tag,
                    "value": value,
                    "stage": ops.stage_label(name, s),
                    "queries": s.get("count"),
                    **{c: s.get(c) for c in STAT_COLUMNS},
                }
            )
    return pd.DataFrame(rows, columns=columns)


def token_frame(tokens: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per token kind: queries with a count, mean and total tokens."""
    rows = [
        {"kind": kind, "queries": s.get("count"), "mean": s.get("mean"), "total": s.get("total")}
        for kind, s in tokens.items()
    ]
    return pd.DataFrame(rows, columns=["kind", "queries", "mean", "total"])


def per_query_frame(
    query_ids: np.ndarray,
    total_ms: np.ndarray,
    stages: Mapping[str, np.ndarray],
    tokens: Mapping[str, np.ndarray],
    cost_usd: np.ndarray,
    total_derived: np.ndarray | None = None,
) -> pd.DataFrame:
    """One row per query: total and stage latencies, token counts and cost (empty cell = unknown);
    total_derived marks the totals that are the sum of the query's stages (none recorded)."""
    cols: dict[str, Any] = {"query_id": query_ids.astype(str), "total_ms": total_ms}
    if total_derived is not None:
        cols["total_derived"] = total_derived
    cols.update({f"{name}_ms": col for name, col in stages.items() if name != ops.TOTAL})
    cols.update({f"{name}_tokens": col for name, col in tokens.items()})
    cols["cost_usd"] = cost_usd
    return pd.DataFrame(cols)


# --- figures ----------------------------------------------------------------------------


def percentile_bars(frame: pd.DataFrame, log_y: bool = False) -> go.Figure:
    """Grouped bars: for each stage, p50, p90, p95, p99 and mean latency in ms."""
    stages = _escape_all(frame["stage"])
    traces = [
        go.Bar(
            name=stat,
            x=stages,
            y=frame[stat].astype(float),
            marker_color=STAT_COLOURS[stat],
            hovertemplate=f"%{{x}}<br>{stat}: %{{y:,.1f}} ms<extra></extra>",
        )
        for stat in STAT_COLUMNS
    ]
    return go.Figure(
        data=traces,
        layout={
            **_LAYOUT,
            "barmode": "group",
            "title": "Latency per stage",
            "yaxis": {
                "type": "log" if log_y else "linear",
                "title": "ms" + (" (log)" if log_y else ""),
            },
        },
    )


def binned(
    values: np.ndarray, bins: int = HISTOGRAM_BINS, edges: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(bin edges, counts) of the finite values: what a histogram draws, a few numbers long."""
    v = values[np.isfinite(values)]
    if edges is None:
        edges = np.histogram_bin_edges(v, bins=bins) if v.size else np.array([0.0, 1.0])
    counts, _ = np.histogram(v, bins=edges)
    return edges, counts


def _bars(edges: np.ndarray, counts: np.ndarray, **kwargs: Any) -> go.Bar:
    """A histogram as bars: one bar per bin, centred, as wide as the bin."""
    return go.Bar(
        x=(edges[:-1] + edges[1:]) / 2,
        y=counts,
        width=np.diff(edges),
        customdata=np.stack([edges[:-1], edges[1:]], axis=1),
        **kwargs,
    )


#: the ECDF lines' styles: the last drawn line is ECDF_WIDTH_PX wide, each earlier one wider
ECDF_WIDTH_PX = 1.5
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def stage_distribution(
    stages: Mapping[str, np.ndarray], log_x: bool = False, kind: str = "ecdf"
) -> go.Figure:
    """Per-stage latency distribution: ECDF step lines (kind="ecdf") or overlaid histograms."""
    traces = []
    if kind == "ecdf":
        last = len(stages) - 1
        for i, (name, col) in enumerate(stages.items()):
            label = escape_text(name)
            x, y = ecdf(col)
            traces.append(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    line_shape="hv",
                    # stages can coincide (total = generation + a fraction of a ms): each line
                    # is narrower than those drawn before it, and dashed, so none hides another
                    line={"width": ECDF_WIDTH_PX * (1 + last - i), "dash": DASHES[i % len(DASHES)]},
                    name=label,
                    hovertemplate=f"{label}<br>%{{y:.1%}} of queries ≤ %{{x:,.1f}} ms<extra></extra>",
                )
            )
        layout = {
            "yaxis": {"title": "share of queries", "tickformat": ".0%"},
            "xaxis": {
                "type": "log" if log_x else "linear",
                "title": "ms" + (" (log)" if log_x else ""),
            },
        }
    else:
        # plotly bins on a log axis poorly: bin log10(ms) instead and label the axis as such;
        # every stage on the same edges, so the overlaid bars line up
        cols = {}
        for name, col in stages.items():
            v = col[np.isfinite(col)]
            if log_x:
                v = np.log10(v[v > 0])
            cols[name] = v
        every = np.concatenate(list(cols.values())) if cols else np.zeros(0)
        edges, _ = binned(every)
        unit = "log10(ms)" if log_x else "ms"
        for name, v in cols.items():
            label = escape_text(name)
            traces.append(
                _bars(
                    *binned(v, edges=edges),
                    name=label,
                    opacity=0.6,
                    hovertemplate=f"{label}<br>{unit} %{{customdata[0]:,.2f}} to "
                    f"%{{customdata[1]:,.2f}}: %{{y}} queries"
                    "<extra></extra>",
                )
            )
        layout = {
            "barmode": "overlay",
            "bargap": 0,
            "yaxis": {"title": "queries"},
            "xaxis": {"title": unit},
        }
    return go.Figure(
        data=traces, layout={**layout, "title": "Latency distribution per stage", **_LAYOUT}
    )


def cost_histogram(cost_usd: np.ndarray) -> go.Figure:
    """Histogram of the cost of each query in USD (queries with a known cost), binned here."""
    bars = _bars(
        *binned(cost_usd),
        marker_color="#59a14f",
        hovertemplate="$%{customdata[0]:.5f} to $%{customdata[1]:.5f}<br>%{y} queries"
        "<extra></extra>",
    )
    return go.Figure(
        data=[bars],
        layout={
            "title": "Cost per query",
            "xaxis": {"title": "USD", "tickformat": "$.5f"},
            "yaxis": {"title": "queries"},
            "bargap": 0.05,
            **_LAYOUT,
        },
    )


def thinned(points: ScatterPoints, max_points: int = SCATTER_POINTS) -> NDArray[np.intp]:
    """Indices of at most max_points points, evenly spaced in latency order (fastest and
    slowest kept), so the drawn cloud keeps the latency distribution and its extremes."""
    n = points.x_ms.size
    if n <= max_points:
        return np.arange(n)
    order = np.argsort(points.x_ms, kind="stable")
    return np.sort(order[np.unique(np.linspace(0, n - 1, max_points).round().astype(np.intp))])


def latency_quality_scatter(
    points: ScatterPoints, metric: str, tag: str | None, max_points: int = SCATTER_POINTS
) -> go.Figure:
    """Total latency (x) against a per-query metric (y), one trace per tag value, hover = query id.

    More than max_points queries are thinned (thinned()); the title says how many are drawn.
    """
    keep = thinned(points, max_points)
    x, y, group, ids = (
        points.x_ms[keep],
        points.y[keep],
        points.group[keep],
        points.query_id[keep],
    )
    groups = [""] if tag is None else _group_order(points.group)
    trace = go.Scattergl if x.size > WEBGL_POINTS else go.Scatter
    metric_text = escape_text(metric)
    traces = []
    for g in groups:
        sel = group == g if tag else np.ones(x.size, dtype=bool)
        name = escape_text(g) if tag else "queries"
        traces.append(
            trace(
                x=x[sel],
                y=y[sel],
                mode="markers",
                name=name,
                customdata=_escape_all(ids[sel]),
                marker={"size": 7, "opacity": 0.7},
                hovertemplate=(
                    f"%{{customdata}}<br>{metric_text}: %{{y:.3f}}"
                    f"<br>total: %{{x:,.1f}} ms<extra>{name}</extra>"
                ),
            )
        )
    title = f"Latency against {metric_text}"
    if keep.size < points.x_ms.size:
        title += f" ({keep.size:,} of {points.x_ms.size:,} queries drawn, evenly spaced by latency)"
    return go.Figure(
        data=traces,
        layout={
            "title": title,
            "xaxis": {"title": "total latency (ms)"},
            "yaxis": {"title": metric_text},
            "showlegend": tag is not None,
            "legend": {
                **_LAYOUT["legend"],
                **({"title": {"text": escape_text(tag)}} if tag else {}),
            },
            **{k: v for k, v in _LAYOUT.items() if k != "legend"},
        },
    )


def _group_order(groups: np.ndarray) -> list[str]:
    present = set(np.unique(groups).tolist())
    names = sorted(present - {ops.NO_TAG})
    return [*names, ops.NO_TAG] if ops.NO_TAG in present else names
