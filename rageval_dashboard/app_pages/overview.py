"""Overview: the run's metrics at the current k and threshold, their curves, and a tag breakdown."""

from __future__ import annotations

from typing import Any

import streamlit as st

from rageval_dashboard import keys, sidebar, state
from rageval_dashboard.components import tables
from rageval_dashboard.components.figures import curves as figures
from rageval_dashboard.widgets import why
from rageval_dashboard.widgets.downloads import csv_download
from rageval_dashboard.widgets.text_tables import text_table
from rageval_dashboard.widgets.view_export import bands_notice, view_downloads
from rageval_core.compare.memo import digest
from rageval_core.evaluation.curves import THRESHOLD_RANKING, curve_names

#: a card's width (px) per character of its group's longest label (14 px Source Sans, with
#: room to spare), and what the help icon and the padding take: a row of equal cards that
#: wraps to the page's width and never cuts a label ("PerQueryCoverag…")
CARD_PX_PER_CHAR, CARD_PX_EXTRA, CARD_PX_MIN = 8, 64, 150


def card_width(names: list[str]) -> int:
    """The width of a group's cards: its longest label whole."""
    return max(CARD_PX_MIN, CARD_PX_PER_CHAR * max(map(len, names)) + CARD_PX_EXTRA)


def drawn_from(curves: dict[str, Any]) -> tuple[Any, ...]:
    """What a figure of curves is drawn from: their names and a digest of their values."""
    return (tuple(curves), digest(*curves.values()))


view = sidebar.require_view()
s = view.settings
st.title("Overview")

report = state.report(view)
metrics = dict(report.metrics)
if s.preset is None and report.relevance is not None and s.k != 1 and f"Hit@{s.k}" in metrics:
    # Hit@1 has a band of its own: whether the very first chunk is useful
    hit1 = state.report(view, metrics=("Hit@1",)).metrics["Hit@1"]
    metrics = tables.insert_after(metrics, f"Hit@{s.k}", "Hit@1", hit1)

st.caption(tables.counts_text(report))
view_downloads("overview", view, lambda: {"report": report.to_json(), "cards": metrics})
bands_notice()
for warning in report.warnings:  # our own text about numbers, no user text in it
    st.warning(warning[0].upper() + warning[1:] + ".", icon="⚠️")
if not metrics:
    st.info("Nothing to score: this run has no qrels, no gold evidence and no answers.")
for family, items in tables.metric_groups(metrics, s.preset).items():
    st.subheader(
        tables.preset_title(s.preset)
        if family == "preset" and s.preset
        else tables.FAMILY_TITLES.get(family, family)
    )
    if family == "judge":
        st.caption(tables.judge_source_text(report))
    width = card_width([name for name, _ in items])
    with st.container(horizontal=True):  # wraps: as many cards a row as the page holds
        for name, value in items:
            band = tables.band(name, value)
            st.metric(
                name,
                tables.format_value(name, value),
                delta=band,
                delta_color={"good": "green", "poor": "red"}.get(band or "", "off"),
                delta_arrow="off",
                help=tables.describe(name, s.preset),
                border=True,
                width=width,
            )
with st.expander("Metrics table"):
    frame = tables.metrics_frame(metrics, s.preset)
    text_table(
        frame,
        "overview.metrics",
        f"{tables.file_stem(view.run.name)}_metrics.csv",
        download_label="Download metrics (CSV)",
    )

if s.preset is not None:  # the curves are of rageval's own metrics: the why panel instead
    why.panel(view)
else:
    data = state.data(view)
    drawn = [n for n in curve_names(data, report.relevance) if n not in tables.OFF_SCALE]
    left, right = st.columns(2)
    with left:
        if not drawn:
            st.info("No curve over k: this run has neither qrels nor gold evidence.")
        else:
            over_k = state.curves_k(view, drawn)
            fig_k = state.figure(  # the same curves (a k move): the same figure, not rebuilt
                "overview.curves_k",
                view,
                drawn_from(over_k),
                lambda: figures.curves_over_k(over_k),
            )
            st.plotly_chart(fig_k, key="overview.curves_k")
            csv_download(
                "Download curves over k (CSV)",
                lambda: tables.curves_frame(over_k, "k", range(1, data.depth + 1)),
                f"{tables.file_stem(view.run.name)}_curves_k.csv",
                "overview.curves_k.csv",
            )
    with right:
        if not view.run.has_evidence:
            st.info(
                "No threshold curves: this run has no gold evidence spans, and only evidence "
                "coverage depends on the fuzzy threshold."
            )
        else:
            fine = {
                n: v
                for n, v in state.curves_t(view, state.THRESHOLD_GRID).items()
                if n not in tables.OFF_SCALE
            }
            coarse = None
            if report.relevance == "evidence":  # chunks are relevant when they cover a span
                coarse = state.curves_t(
                    view, state.COARSE_GRID, [n for n in drawn if n in THRESHOLD_RANKING]
                )
            fig_t = state.figure(  # the same curves (a threshold move): not rebuilt
                "overview.curves_t",
                view,
                (s.k, drawn_from(fine), None if coarse is None else drawn_from(coarse)),
                lambda: figures.curves_over_threshold(
                    fine, state.THRESHOLD_GRID, coarse, state.COARSE_GRID, k=s.k
                ),
            )
            st.plotly_chart(fig_t, key="overview.curves_t")
            csv_download(
                "Download curves over the threshold (CSV)",
                lambda: tables.curves_frame(fine, "threshold", state.THRESHOLD_GRID),
                f"{tables.file_stem(view.run.name)}_curves_threshold.csv",
                "overview.curves_t.csv",
            )

st.subheader("Breakdown by tag")
tag_keys = list(view.run.tag_keys)
if not tag_keys:
    st.info("This run has no tags, so there is nothing to break the metrics down by.")
else:
    if st.session_state.get(keys.OVERVIEW_TAG) not in tag_keys:
        st.session_state[keys.OVERVIEW_TAG] = tag_keys[0]
    tag = st.selectbox("Tag", tag_keys, key=keys.OVERVIEW_TAG, bind="query-params")
    by_report = state.report(view, by=tag)
    table = tables.breakdown_frame(by_report)
    # the main measures as bars in their cells (0..1, the value beside them), drawn by the
    # table itself: a plotly chart of the same numbers was drawn anew in the browser on every
    # slider move (a tenth of a second of each)
    main = tables.main_metrics(list(by_report.metrics))
    text_table(
        table,
        "overview.by_tag",
        f"{tables.file_stem(view.run.name)}_by_{tables.file_stem(tag)}.csv",
        column_config={
            # every measure with three decimals, as the cards; the main ones with their bar
            **{n: st.column_config.NumberColumn(n, format="%.3f") for n in by_report.metrics},
            **{
                n: st.column_config.ProgressColumn(n, format="%.3f", min_value=0.0, max_value=1.0)
                for n in main
            },
        },
        download_label="Download breakdown (CSV)",
    )
