"""The "Why do my numbers differ?" panel's data: a preset's numbers against rageval's defaults,
one rule at a time (rageval_core.evaluation.preset_parity.Explanation), as a table and a waterfall
(widgets/why.py draws them)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from rageval_core.evaluation.preset_parity import Explanation
from rageval_core.settings.schema import BY_NAME

UP, DOWN, TOTAL = "#2ca02c", "#d62728", "#2171b5"


def step_label(setting: str, value: Any) -> str:
    """A step's name: rageval's defaults, then "+ <setting label> = <value>"."""
    if setting == "defaults":
        return "rageval defaults"
    shown = "on" if value is True else "off" if value is False else str(value)
    return f"+ {BY_NAME[setting].label} = {shown}"


def steps_frame(explanation: Explanation) -> pd.DataFrame:
    """One row per step (the metrics after switching that setting too), then the whole change."""
    names = list(explanation.steps[0].metrics)
    rows = [
        {"step": step_label(st_.setting, st_.value), **st_.metrics} for st_ in explanation.steps
    ]
    first, last = explanation.steps[0].metrics, explanation.steps[-1].metrics
    rows.append({"step": "preset - defaults", **{n: last[n] - first[n] for n in names}})
    return pd.DataFrame(rows, columns=["step", *names])


def waterfall(explanation: Explanation, metric: str) -> go.Figure:
    """rageval's default value of metric, each rule's change, and the preset's value."""
    steps = explanation.steps
    values = [s.metrics[metric] for s in steps]
    x = [step_label(s.setting, s.value) for s in steps] + [f"{explanation.preset}'s number"]
    y = [values[0], *(b - a for a, b in itertools.pairwise(values)), values[-1]]
    y = [0.0 if isinstance(v, float) and math.isnan(v) else v for v in y]
    fig = go.Figure(
        go.Waterfall(
            x=x,
            y=y,
            measure=["absolute", *["relative"] * (len(steps) - 1), "total"],
            increasing={"marker": {"color": UP}},
            decreasing={"marker": {"color": DOWN}},
            totals={"marker": {"color": TOTAL}},
            connector={"line": {"color": "rgba(128,128,128,0.5)"}},
            text=[f"{v:+.3f}" if 0 < i < len(y) - 1 else f"{v:.3f}" for i, v in enumerate(y)],
            textposition="outside",
            hovertemplate="%{x}: %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"{metric}: from rageval's defaults to {explanation.preset}'s number, rule by rule",
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        height=420,
        showlegend=False,
        yaxis={"title": metric},
    )
    return fig
