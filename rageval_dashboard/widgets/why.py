"""The "Why do my numbers differ?" panel of a preset view: its script's numbers against rageval's
defaults, one rule at a time (rageval_core.parity.Explanation), as a table and a waterfall.

steps_frame and waterfall are pure (data -> DataFrame / Figure); panel draws them on the page.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from rageval_dashboard import keys, state
from rageval_dashboard.widgets.downloads import csv_download
from rageval_dashboard.components.tables import file_stem
from rageval_dashboard.keys import View
from rageval_dashboard.widgets.grid import grid
from rageval_core.parity import Explanation
from rageval_core.presets import get_preset
from rageval_core.settings import BY_NAME, DEFAULTS

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


def moved_settings(view: View) -> dict[str, Any]:
    """The sidebar settings the user moved away from the preset's values: held fixed at every
    step of the explanation, as flags given beside --explain-preset are."""
    assert view.settings.preset is not None
    preset = get_preset(view.settings.preset).values
    values = view.settings.values()
    return {
        name: values[name]
        for name in keys.PRESET_SETTINGS
        if values[name] != preset.get(name, DEFAULTS[name])
    }


def panel(view: View) -> None:
    """The panel: a waterfall for one metric and the table of every step."""
    preset = view.settings.preset
    assert preset is not None
    st.subheader("Why do my numbers differ?")
    moved = moved_settings(view)
    st.caption(
        f"The {preset} preset's metrics under rageval's default rules, then with one rule at a "
        f"time switched to {preset}'s: each step's change is that rule's share of the "
        "difference. The first row equals rageval's own metrics (P@5, AP, RR, Hit@10, "
        "EvidenceRecall@k ... on evidence relevance)."
        + (
            " Held fixed at every step (you moved them in the sidebar): "
            + ", ".join(f"{BY_NAME[n].label} = {v}" for n, v in moved.items())
            + "."
            if moved
            else ""
        )
    )
    with st.spinner("Evaluating the preset's metrics once per rule..."):
        explanation = state.explanation(view, moved)
    names = list(explanation.steps[0].metrics)
    key = "overview.why_metric"
    if st.session_state.get(key) not in names:
        st.session_state[key] = names[0]
    metric = st.selectbox("Metric", names, key=key)
    st.plotly_chart(waterfall(explanation, metric), key="overview.why_waterfall")
    frame = steps_frame(explanation)
    grid(
        frame,
        hide_index=True,
        width="stretch",
        column_config={n: st.column_config.NumberColumn(format="%.4f") for n in names},
    )
    csv_download(
        "Download the steps (CSV)",
        frame,
        f"{file_stem(view.run.name)}_why_{preset}.csv",
        "overview.why.csv",
    )
