"""Sweeps: the runs of a parameter sweep (each setting a run), a metric, latency or cost against
any setting, the best configuration under a budget marked; a click opens that run."""

from __future__ import annotations

import math

import streamlit as st

from rageval_dashboard import actions, keys, sidebar, state
from rageval_dashboard.components.figures import sweeps as fs
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.widgets.text_tables import text_table
from rageval_dashboard.widgets.choices import clicked_point, keep_choice, url_multiselect
from rageval_core.compare.sweeps import COST, LATENCY, best_under, swept_settings

NO_BUDGET = "no budget"
ss = st.session_state

st.title("Sweeps")
view = sidebar.require_view()
with st.spinner("Evaluating every run with retriever settings ..."):
    rows = state.sweep_rows(view.settings, ())
swept = swept_settings(rows)
if len(rows) < 2 or not swept:
    st.info(
        "No sweep to show: this page lines up runs whose run facts carry retriever settings "
        "(top_k, score_threshold, search_type, rerank_top_n ...) that differ between runs. "
        'Import one run per configuration, each with its settings ({"rageval_run": {"settings": '
        '{"top_k": 5, ...}}} in the native format, or a FILE.run.json beside the run).'
    )
    st.stop()

metrics = list(dict.fromkeys(m for r in rows for m in r.metrics))
values = [*metrics, LATENCY, COST]
c1, c2 = st.columns([1, 2])
default_y = next(
    (m for m in (f"R@{view.settings.k}", f"nDCG@{view.settings.k}") if m in values), values[0]
)
keep_choice(keys.SWEEP_Y, values, default_y)
y = c1.selectbox("Plot", values, key=keys.SWEEP_Y, bind="query-params")
chosen = url_multiselect(
    c2,
    "Against",
    swept,
    keys.SWEEP_SETTINGS,
    default=swept[:1],
    help="one setting: a scatter; two: a heat map; more: parallel coordinates",
)
b1, b2, _ = st.columns([1, 1, 2])
budget_on = b1.selectbox(
    "Budget on", [NO_BUDGET, LATENCY, COST], key=keys.SWEEP_BUDGET_ON, bind="query-params"
)
budget = None
if budget_on != NO_BUDGET:
    spent = [r.value(budget_on) for r in rows if not math.isnan(r.value(budget_on))]
    if not spent:
        st.info(escape_text(f"No run records {budget_on}: no budget can be put on it."))
    else:
        if keys.SWEEP_BUDGET not in ss:
            ss[keys.SWEEP_BUDGET] = float(sorted(spent)[len(spent) // 2])
        budget = b2.number_input(
            "at most", min_value=0.0, key=keys.SWEEP_BUDGET, bind="query-params", format="%.6g"
        )
best = best_under(rows, y, None if budget is None else budget_on, budget)
if best is None:
    st.warning(
        escape_text(
            f"No run has a value of {y}"
            + (" within the budget" if budget is not None else "")
            + ".",
            one_line=True,
        )
    )
else:
    within = f" with {budget_on} at most {budget:g}" if budget is not None else ""
    st.success(
        escape_text(
            f"Best {y}{within}: {best.run} ({best.value(y):.4g}; "
            + ", ".join(f"{k}={v}" for k, v in best.settings.items() if k in swept)
            + ")",
            one_line=True,
        )
    )

if not chosen:
    st.info("Pick at least one setting to plot against.")
elif len(chosen) == 1:
    picked = clicked_point(fs.against_setting(rows, chosen[0], y, best), keys.SWEEP_CHART)
    if picked is not None:
        ss[keys.SWEEP_PICKED] = picked
    st.caption("Click a point to pick its run; the star is the best run under the budget.")
elif len(chosen) == 2:
    st.plotly_chart(fs.heat_map(rows, chosen[0], chosen[1], y), width="stretch", key="sweep.heat")
else:
    st.plotly_chart(fs.parallel(rows, chosen, y), width="stretch", key="sweep.parallel")


# st.switch_page would clear the URL, which the bound widgets own: the run opens in the
# sidebar (every page shows it), and a link leads to its Overview
picked = ss.get(keys.SWEEP_PICKED)
if picked in {r.run for r in rows}:
    label = escape_text(picked, one_line=True)  # a label is Markdown; a run's name is user text
    with st.container(horizontal=True, vertical_alignment="center"):
        st.button(f"Open {label}", key="sweep.open", on_click=actions.open_run, args=(picked,))
        if view.run.name == picked:
            st.page_link("app_pages/overview.py", label=f"{label} on the Overview", icon="➡️")

frame = fs.sweep_frame(rows, swept, metrics)
text_table(
    frame,
    "sweep",
    "sweep.csv",
    # a setting a run does not carry, or a value it has not, shows as a dash (never "None")
    display=frame.style.format(fs.setting_text, subset=swept)
    .format("{:.4f}", subset=metrics, na_rep="—")
    .format("{:.1f}", subset=[LATENCY], na_rep="—")
    .format("{:.6f}", subset=[COST], na_rep="—"),
)
