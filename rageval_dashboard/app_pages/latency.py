"""Latency & cost: per-stage percentiles and distributions, tokens, cost, latency against quality."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from rageval_dashboard import keys, sidebar, state
from rageval_dashboard.components.figures import latency as fo
from rageval_dashboard.widgets.downloads import csv_download, json_download, table_with_csv
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.widgets.choices import follow_k, keep_choice, page_picker
from rageval_dashboard.widgets.grid import grid
from rageval_core.metrics import latency_cost as ops
from rageval_core.compare.memo import digest
from rageval_core.errors import RagevalError
from rageval_core.latency.per_query import scatter_points

NO_TAG_CHOICE = "(no colour)"
ALL_STAGES = "(all stages)"


def ms_columns(frame: pd.DataFrame) -> dict[str, Any]:
    """The table's latency columns, at the decimals its smallest value needs (fo.ms_format)."""
    column = st.column_config.NumberColumn(format=fo.ms_format(frame))
    return {c: column for c in fo.STAT_COLUMNS}


st.title("Latency & cost")
view = sidebar.require_view()
run = view.run
qops = state.query_ops(view)
try:
    report = state.report(view)
except RagevalError as e:
    st.error(escape_text(f"This run cannot be evaluated at these settings: {e}", one_line=True))
    st.stop()
file_stem = f"run{run.run_id}"  # never the run name in a file name: it is user text

# --- latency per stage ---
st.header("Latency per stage", divider="gray")
latency = report.ops["latency_ms"]
if not qops.has_latency:
    st.info(
        "This run has no latency: its queries carry no `latency_ms` "
        '(e.g. `{"retrieval": 12.5, "total": 480.0}`), so there are no percentiles to show.'
    )
else:
    table = fo.percentile_frame(latency)
    # stages differ by orders of magnitude (retrieval ms, generation s): log by default
    log_scale = st.toggle(
        "Log scale",
        value=True,
        key=keys.LATENCY_LOG_X,
        help="the bars' ms axis and the distribution's ms axis",
    )
    bars = state.figure(
        "latency.bars", view, (log_scale,), lambda: fo.percentile_bars(table, log_y=log_scale)
    )
    st.plotly_chart(bars, width="stretch", key="latency.bars")
    derived = latency.get(ops.TOTAL, {}).get("derived") or 0
    st.caption(
        "Milliseconds, over the queries that recorded each stage, in the order the run's "
        "records list them; percentiles are numpy.percentile's (linear)."
        + (
            f" **total (derived)**: {derived} of {latency[ops.TOTAL]['count']} queries record no "
            "`total`, so theirs is the sum of their top-level stages."
            if derived
            else ""
        )
    )
    table_with_csv(
        table, "latency.table", f"{file_stem}_latency_percentiles.csv", ms_columns(table)
    )

    st.subheader("Distribution")
    kind = st.radio("Show as", ["ECDF", "Histogram"], key=keys.LATENCY_DIST, horizontal=True)
    dist = state.figure(
        "latency.dist",
        view,
        (log_scale, kind),
        lambda: fo.stage_distribution(qops.stages, log_x=log_scale, kind=kind.lower()),
    )
    st.plotly_chart(dist, width="stretch", key="latency.dist.chart")

# --- tokens and cost ---
st.header("Tokens and cost", divider="gray")
if not qops.has_tokens:
    st.info(
        "This run has no token counts: its queries carry no `tokens` "
        '(e.g. `{"prompt": 1600, "completion": 40}`), so cost cannot be computed.'
    )
else:
    tokens = report.ops["tokens"]
    cost = report.ops["cost_usd"]
    cols = st.columns(4)
    cols[0].metric("Total cost", "—" if cost["total"] is None else f"${cost['total']:,.4f}")
    cols[1].metric(
        "Cost per query (mean)", "—" if cost["per_query"] is None else f"${cost['per_query']:,.6f}"
    )
    for col, kind_name in zip(cols[2:], ("prompt", "completion"), strict=True):
        t = tokens.get(kind_name)
        col.metric(
            f"{kind_name.capitalize()} tokens (mean)",
            "—" if t is None or t["mean"] is None else f"{t['mean']:,.1f}",
            help=None if t is None else f"total {t['total']:,.0f} over {t['count']} queries",
        )
    if cost["price_missing"]:
        kinds = " and ".join(cost["price_missing"])
        st.info(
            f"No price for {kinds} tokens: the run header has no `prices_per_1k` for them, "
            "so cost is not computed (token counts are still shown)."
        )
    elif not np.isfinite(qops.cost_usd).any():
        st.info("No query has a known cost.")
    else:
        cost_chart = state.figure(
            "latency.cost", view, (), lambda: fo.cost_histogram(qops.cost_usd)
        )
        st.plotly_chart(cost_chart, width="stretch", key="latency.cost")
        st.caption(
            f"{cost['n_queries_with_tokens']} queries with token counts; prices per 1K "
            f"tokens: prompt ${run.price_prompt_per_1k}, completion "
            f"${run.price_completion_per_1k}."
        )
    token_table = fo.token_frame(tokens)
    table_with_csv(
        token_table,
        "latency.tokens",
        f"{file_stem}_tokens.csv",
        {"mean": st.column_config.NumberColumn(format="%.1f")},
    )

if qops.has_latency or qops.has_tokens:
    with st.expander("Per-query latency, tokens and cost"):
        # one page of rows goes to the browser; the downloads hold every query (built on click)
        rows, _ = page_picker(
            qops.n_queries, keys.LATENCY_PAGE_ROWS, keys.LATENCY_PAGE, "queries each, query order"
        )

        def per_query(rows: slice = slice(None)) -> pd.DataFrame:
            return fo.per_query_frame(
                qops.query_ids[rows],
                qops.total_ms[rows],
                {k: v[rows] for k, v in qops.stages.items()},
                {k: v[rows] for k, v in qops.tokens.items()},
                qops.cost_usd[rows],
                qops.total_derived[rows] if qops.n_total_derived else None,
            )

        grid(per_query(rows), hide_index=True, width="stretch", key="latency.per_query")
        # built on click only (callables): 100,000 rows of JSON should not slow every rerun
        with st.container(horizontal=True):
            csv_download(
                "Download CSV", per_query, f"{file_stem}_per_query_ops.csv", "latency.per_query.csv"
            )
            json_download(
                "Download JSON",
                lambda: per_query().to_dict(orient="records"),
                f"{file_stem}_per_query_ops.json",
                "latency.per_query.json",
            )

# --- latency against quality ---
st.header("Latency against quality", divider="gray")
metric_names = list(report.per_query)
tag_keys = list(run.tag_keys)  # in the order the run first used them
if not qops.has_latency:
    st.info("No latency recorded: there is nothing to plot against quality.")
elif not metric_names:
    st.info("No per-query metric: the run has no qrels, gold evidence or answers to score.")
else:
    # the default is a measure without a cut-off (AP, RR ...): a k move then leaves the
    # scatter as it is, where redrawing its thousands of points was most of the move's time
    uncut = [m for m in metric_names if "@" not in m]
    preferred = next((m for m in ("AP", "RR", *uncut) if m in metric_names), metric_names[0])
    follow_k(keys.LATENCY_METRIC, metric_names, view.settings.k)
    keep_choice(keys.LATENCY_METRIC, metric_names, preferred)
    colour_options = [NO_TAG_CHOICE, *tag_keys]
    keep_choice(keys.LATENCY_TAG, colour_options, tag_keys[0] if tag_keys else NO_TAG_CHOICE)
    c1, c2 = st.columns(2)
    metric = c1.selectbox("Metric (y)", metric_names, key=keys.LATENCY_METRIC)
    colour = c2.selectbox("Colour by tag", colour_options, key=keys.LATENCY_TAG)
    tag = None if colour == NO_TAG_CHOICE else colour
    points = scatter_points(
        qops.total_ms,
        report.per_query[metric],
        None if tag is None else state.data(view).tags.get(tag),
        report.query_ids,
    )
    # keyed by the metric's values: a k move that leaves them as they were reuses the figure
    scatter = state.figure(
        "latency.scatter",
        view,
        (metric, tag, digest(report.per_query[metric])),
        lambda: fo.latency_quality_scatter(points, metric, tag),
    )
    st.plotly_chart(scatter, width="stretch", key="latency.scatter")
    notes = [f"{points.x_ms.size} queries at k = {view.settings.k}"]
    if points.n_dropped:
        notes.append(f"{points.n_dropped} left out (no latency, or not scored on {metric})")
    if qops.n_total_derived:
        notes.append(f"{qops.n_total_derived} without a `total` stage: their stages are summed")
    st.caption("; ".join(notes) + ".")

# --- percentiles by tag ---
st.header("Latency by tag", divider="gray")
if not qops.has_latency:
    st.info("No latency recorded: there are no percentiles to break down.")
elif not tag_keys:
    st.info("This run's queries have no tags to break the latency down by.")
else:
    stage_options = [ALL_STAGES, *qops.stages]
    keep_choice(keys.LATENCY_BY, tag_keys, tag_keys[0])
    # the total first (recorded or derived): it comes last in pipeline order
    keep_choice(
        keys.LATENCY_BY_STAGE,
        stage_options,
        ops.TOTAL if ops.TOTAL in qops.stages else next(iter(qops.stages)),
    )
    c1, c2 = st.columns(2)
    by_tag = c1.selectbox("Tag", tag_keys, key=keys.LATENCY_BY)
    by_stage = c2.selectbox("Stage", stage_options, key=keys.LATENCY_BY_STAGE)
    by_frame = fo.percentile_by_tag_frame(
        by_tag, state.latency_by_tag(view, by_tag), None if by_stage == ALL_STAGES else by_stage
    )
    table_with_csv(
        by_frame, "latency.by_tag", f"{file_stem}_latency_by_tag.csv", ms_columns(by_frame)
    )
