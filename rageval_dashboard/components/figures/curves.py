"""Overview figures: core results -> plotly Figures (pure: no Streamlit calls, no metric maths).

Their labels are metric names and numbers only; a figure drawing user text (a tag value, a
query id) escapes it with escape_text (components/text.py), as figures_ops does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

#: evidence measures are dashed, ranking measures solid: the two families read apart at a glance
EVIDENCE_NAMES = frozenset(
    {"EvidenceRecall", "PerQueryCoverage", "FullCoverageRate", "ContextCoverage", "BestRank"}
)
MARK = "#e6550d"
#: one colour per measure in every Overview figure, so R@k and R@3 read as the same measure
COLOURS = dict(
    zip(
        (
            "P",
            "R",
            "RR",
            "AP",
            "nDCG",
            "Hit",
            "EvidenceRecall",
            "PerQueryCoverage",
            "FullCoverageRate",
            "ContextCoverage",
            "BestRank",
        ),
        (
            "#4e79a7",
            "#f28e2b",
            "#e15759",
            "#76b7b2",
            "#59a14f",
            "#edc948",
            "#b07aa1",
            "#ff9da7",
            "#9c755f",
            "#bab0ac",
            "#17becf",
        ),
        strict=True,
    )
)
_LAYOUT: dict[str, Any] = {
    "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
    "height": 380,
    "legend": {"orientation": "h", "y": -0.22},
    "hovermode": "x unified",
}


def _line(name: str) -> dict[str, Any]:
    base = name.split("@", 1)[0]
    line: dict[str, Any] = {"dash": "dash" if base in EVIDENCE_NAMES else "solid"}
    if base in COLOURS:
        line["color"] = COLOURS[base]
    return line


def marker(
    x: float, text: str, colour: str = MARK, position: str = "right", dash: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(shape, annotation) of a vertical line at x with a label at its top, as layout dicts.

    What fig.add_vline draws, without its per-call layout pass (which costs more than the
    rest of a small figure): figures are rebuilt on every slider move.
    """
    line: dict[str, Any] = {"color": colour, "width": 2}
    if dash:
        line["dash"] = dash
    shape = {
        "type": "line",
        "layer": "below",  # the curves stay on top of the marker lines, never hidden by them
        "xref": "x",
        "yref": "paper",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "line": line,
    }
    note = {
        "x": x,
        "xref": "x",
        "y": 1,
        "yref": "paper",
        "text": text,
        "showarrow": False,
        "xanchor": "left" if position == "right" else "right",
        "yanchor": "top",
    }
    return shape, note


def figure(
    traces: Sequence[Any],
    layout: dict[str, Any],
    markers: Sequence[tuple[dict[str, Any], dict[str, Any]]] = (),
) -> go.Figure:
    """One Figure from its traces, layout and markers, built in one validation pass."""
    if markers:
        layout = {
            **layout,
            "shapes": [*layout.get("shapes", []), *(m[0] for m in markers)],
            "annotations": [*layout.get("annotations", []), *(m[1] for m in markers)],
        }
    return go.Figure(data=list(traces), layout=layout)


def curves_over_k(curves: Mapping[str, ArrayLike], title: str = "Metrics vs k") -> go.Figure:
    """One line per metric over k = 1..depth.

    Neither Overview curve marks the current setting: each figure then depends on its curves
    only, so a move that leaves them as they were (k for these, the threshold for those over
    the threshold) sends the browser the same chart and it keeps the one it drew; a changed
    chart is drawn anew, the costliest part of a slider move. The current k and threshold are
    on the sliders and the cards; Threshold tuning marks them on its own figures.
    """
    traces = []
    depth = 0
    for name, values in curves.items():
        y = np.asarray(values, dtype=np.float64)
        depth = max(depth, y.size)
        traces.append(
            go.Scatter(
                x=np.arange(1, y.size + 1),
                y=y,
                mode="lines+markers" if y.size <= 30 else "lines",
                name=f"{name}@k",
                line=_line(name),
                hovertemplate="%{y:.3f}",
            )
        )
    layout = {
        **_LAYOUT,
        "title": title,
        "xaxis": {
            "title": "k (cut-off)",
            "range": [0.5, max(depth, 1) + 0.5],
            "dtick": 1 if depth <= 20 else None,
        },
        "yaxis": {"title": "run value", "range": [0, 1.02]},
    }
    return figure(traces, layout)


def curves_over_threshold(
    fine: Mapping[str, ArrayLike],
    fine_x: ArrayLike,
    coarse: Mapping[str, ArrayLike] | None = None,
    coarse_x: ArrayLike | None = None,
    k: int | None = None,
) -> go.Figure:
    """Metrics over the coverage threshold (evidence on a fine grid, ranking on a coarse one),
    at k; unmarked, as curves_over_k says."""
    grids = [(fine, fine_x, "lines")]
    if coarse and coarse_x is not None:
        grids.append((coarse, coarse_x, "lines+markers"))  # markers: the few points computed
    traces = [
        go.Scatter(
            x=np.asarray(grid_x, dtype=np.float64),
            y=np.asarray(values, dtype=np.float64),
            mode=mode,
            name=_at(name, k),
            line=_line(name),
            hovertemplate="%{y:.3f}",
        )
        for curves, grid_x, mode in grids
        for name, values in curves.items()
    ]
    title = "Metrics vs threshold" + (f" (at k = {k})" if k is not None else "")
    layout = {
        **_LAYOUT,
        "title": title,
        "xaxis": {"title": "fuzzy match threshold", "range": [0, 1]},
        "yaxis": {"title": "run value", "range": [0, 1.02]},
    }
    return figure(traces, layout)


def _at(name: str, k: int | None) -> str:
    return name if k is None else f"{name}@{k}"
