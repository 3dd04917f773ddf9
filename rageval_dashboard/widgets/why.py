"""The "Why do my numbers differ?" panel of a preset view: its script's numbers against rageval's
defaults, one rule at a time (rageval_core.evaluation.preset_parity.Explanation), as a table and a waterfall.

steps_frame and waterfall (components/figures/preset.py) build them; panel draws them on the page.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from rageval_dashboard import keys, state
from rageval_dashboard.widgets.downloads import csv_download
from rageval_dashboard.components.tables import file_stem
from rageval_dashboard.keys import View
from rageval_dashboard.widgets.grid import grid
from rageval_dashboard.components.figures.preset import steps_frame, waterfall
from rageval_core.settings.presets import get_preset
from rageval_core.settings.schema import BY_NAME, DEFAULTS


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
