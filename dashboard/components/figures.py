"""Overview figures: core results -> plotly Figures (pure: no Streamlit calls, no metric maths).

Plotly reads a few HTML tags in labels (<b>, <a href>...): tag keys and values, which are user
text, go through html.escape before they become axis ticks or titles.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import ArrayLike

#: evidence measures are dashed, ranking measures solid: the two families read apart at a glance
EVIDENCE_NAMES = frozenset({"EvidenceRecall", "PerQueryCoverage", "FullCoverageRate",
                            "ContextCoverage", "BestRank"})
MARK = "#e6550d"
#: one colour per measure in every Overview figure, so R@k and R@3 read as the same measure
COLOURS = dict(zip(("P", "R", "RR", "AP", "nDCG", "Hit", "EvidenceRecall", "PerQueryCoverage",
                    "FullCoverageRate", "ContextCoverage", "BestRank"),
                   ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
                    "#ff9da7", "#9c755f", "#bab0ac", "#17becf"), strict=True))
_LAYOUT: dict[str, Any] = {"margin": {"l": 10, "r": 10, "t": 40, "b": 10}, "height": 380,
                           "legend": {"orientation": "h", "y": -0.22}, "hovermode": "x unified"}


def _line(name: str) -> dict[str, Any]:
    base = name.split("@", 1)[0]
    line: dict[str, Any] = {"dash": "dash" if base in EVIDENCE_NAMES else "solid"}
    if base in COLOURS:
        line["color"] = COLOURS[base]
    return line


def curves_over_k(curves: Mapping[str, ArrayLike], k: int, title: str = "Metrics vs k") -> go.Figure:
    """One line per metric over k = 1..depth, the current k marked by a vertical line."""
    fig = go.Figure()
    depth = 0
    for name, values in curves.items():
        y = np.asarray(values, dtype=np.float64)
        depth = max(depth, y.size)
        fig.add_scatter(x=np.arange(1, y.size + 1), y=y, mode="lines+markers" if y.size <= 30 else "lines",
                        name=f"{name}@k", line=_line(name),
                        hovertemplate="%{y:.3f}")
    fig.add_vline(x=k, line_color=MARK, line_width=2, annotation_text=f"k = {k}",
                  annotation_position="top right")
    fig.update_layout(**_LAYOUT, title=title,
                      xaxis={"title": "k (cut-off)", "range": [0.5, max(depth, 1) + 0.5],
                             "dtick": 1 if depth <= 20 else None},
                      yaxis={"title": "run value", "range": [0, 1.02]})
    return fig


def curves_over_threshold(
    fine: Mapping[str, ArrayLike],
    fine_x: ArrayLike,
    threshold: float,
    coarse: Mapping[str, ArrayLike] | None = None,
    coarse_x: ArrayLike | None = None,
    k: int | None = None,
) -> go.Figure:
    """Metrics over the coverage threshold (evidence on a fine grid, ranking on a coarse one)."""
    fig = go.Figure()
    x = np.asarray(fine_x, dtype=np.float64)
    for name, values in fine.items():
        fig.add_scatter(x=x, y=np.asarray(values, dtype=np.float64), mode="lines", name=_at(name, k),
                        line=_line(name), hovertemplate="%{y:.3f}")
    if coarse and coarse_x is not None:
        cx = np.asarray(coarse_x, dtype=np.float64)
        for name, values in coarse.items():
            fig.add_scatter(x=cx, y=np.asarray(values, dtype=np.float64), mode="lines+markers",
                            name=_at(name, k), line=_line(name), hovertemplate="%{y:.3f}")
    fig.add_vline(x=threshold, line_color=MARK, line_width=2,
                  annotation_text=f"threshold {threshold:.2f}", annotation_position="top right")
    title = "Metrics vs threshold" + (f" (at k = {k})" if k is not None else "")
    fig.update_layout(**_LAYOUT, title=title,
                      xaxis={"title": "fuzzy match threshold", "range": [0, 1]},
                      yaxis={"title": "run value", "range": [0, 1.02]})
    return fig


def breakdown_bars(frame: pd.DataFrame, tag: str, names: Sequence[str]) -> go.Figure:
    """Grouped bars: one group per tag value, one bar per metric (a breakdown_frame)."""
    fig = go.Figure()
    labels = (frame[tag].astype(str) if tag in frame else pd.Series(dtype=str)).map(html.escape)
    counts = frame["queries"] if "queries" in frame else pd.Series(dtype=int)
    for name in names:
        if name not in frame:
            continue
        fig.add_bar(x=labels, y=frame[name], name=name, customdata=counts,
                    marker_color=COLOURS.get(name.split("@", 1)[0]),
                    hovertemplate="%{x}: %{y:.3f} (%{customdata} queries)<extra>" + name + "</extra>")
    fig.update_layout(**{**_LAYOUT, "hovermode": "closest"}, barmode="group",
                      title="Metrics by tag value",
                      xaxis={"title": html.escape(tag), "type": "category"},
                      yaxis={"title": "run value", "range": [0, 1.02]})
    return fig


def _at(name: str, k: int | None) -> str:
    return name if k is None else f"{name}@{k}"
