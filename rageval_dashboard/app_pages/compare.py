"""Compare: a baseline against up to four candidates, query by query, with paired tests."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from rageval_dashboard import keys, sidebar, state
from rageval_dashboard.state import compare as sc
from rageval_dashboard.state import diagnosis as sd
from rageval_dashboard.components.figures import compare as fc
from rageval_dashboard.components.figures import diagnosis as fd
from rageval_dashboard.components.figures import trends as ft
from rageval_dashboard.widgets.downloads import csv_download, table_with_csv
from rageval_dashboard.components.highlight import text_block
from rageval_dashboard.components import tables
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.widgets.view_export import view_downloads
from rageval_dashboard.widgets.choices import at_k, keep_choice, linked_item, mirror_item
from rageval_dashboard.widgets.grid import grid
from rageval_dashboard.widgets.query_detail import role_label, show_detail
from rageval_core.evaluation import drilldown as dd
from rageval_core.metrics import latency_cost as ops
from rageval_core.compare import BY_STEM, Comparison, group_keys, higher_is_better
from rageval_core.outputs.compare_text import unpaired_lines
from rageval_core.errors import RagevalError
from rageval_core.store import RunRecord

NO_QUERY = "(pick a regressed query)"
#: the select's empty choice while a query that is not among the regressed ones is open
OTHER_QUERY = "(the open query is not among these)"
NO_TAG = "(pick a tag)"
NUM = st.column_config.NumberColumn(format="%.4f")
DELTAS = {"baseline": NUM, "candidate": NUM, "delta": NUM}
#: narrow columns of the metrics table (it should fit beside the sidebar without scrolling)
SMALL = ("n", "delta", "p (t-test)", "p (Holm)", "effect d_z")
ss = st.session_state


st.title("Compare")
view = sidebar.require_view()
all_runs = state.runs()
if len(all_runs) < 2:
    st.info(
        "Comparing needs at least two runs, and this store holds one. Import another run on "
        "the **Runs** page or with `rageval import FILE`, then come back."
    )
    st.stop()
by_name = {r.name: r for r in all_runs}
settings = view.settings

# --- which runs: the baseline follows the sidebar's run; candidates default to the newest runs
# that share queries with it (a run that shares none is listed, never compared) -------------------
if (
    ss.get(keys.COMPARE_SIDEBAR_RUN) != view.run.name
    or ss.get(keys.COMPARE_BASELINE) not in by_name
):
    ss[keys.COMPARE_SIDEBAR_RUN] = view.run.name
    ss[keys.COMPARE_BASELINE] = view.run.name
c1, c2 = st.columns([1, 3])
baseline_name = c1.selectbox(
    "Baseline",
    list(by_name),
    key=keys.COMPARE_BASELINE,
    help="defaults to the sidebar's run",
    bind="query-params",
)
baseline = by_name[baseline_name]
others = [n for n in by_name if n != baseline_name]
shared = sc.shared_counts(baseline, [by_name[n] for n in others])
# newest first (the store lists runs oldest first)
comparable = [n for n in reversed(others) if shared[n] > 0]
previous = ss.get(keys.COMPARE_PREV_BASELINE)
chosen = ss.get(keys.COMPARE_CANDIDATES)
if chosen is None:  # the newest that share queries, shown in the store's order
    newest = set(comparable[: keys.COMPARE_MAX_CANDIDATES])
    chosen = [n for n in others if n in newest]
else:  # a new baseline that was a candidate swaps places with the old baseline
    chosen = [previous if c == baseline_name else c for c in chosen]
ss[keys.COMPARE_CANDIDATES] = list(dict.fromkeys(c for c in chosen if c in others))[
    : keys.COMPARE_MAX_CANDIDATES
]
ss[keys.COMPARE_PREV_BASELINE] = baseline_name
candidate_names = c2.multiselect(
    "Candidates",
    others,
    key=keys.COMPARE_CANDIDATES,
    bind="query-params",
    max_selections=keys.COMPARE_MAX_CANDIDATES,
    placeholder="pick up to four runs",
    format_func=lambda n: n if shared[n] else f"{n} (shares no query)",
    help="each is compared with the baseline on the queries the two of them share (its own "
    "pair); the newest runs that share queries with the baseline come first",
)
cannot = [n for n in candidate_names if not shared[n]]
if cannot:
    st.warning(
        escape_text(
            f"Left out: {', '.join(cannot)} share{'s' if len(cannot) == 1 else ''} no query_id "
            f"with the baseline {baseline_name}, so there is nothing to pair.",
            one_line=True,
        )
    )
candidates = [by_name[n] for n in candidate_names if shared[n]]
if candidates:
    st.caption(
        escape_text(
            "Queries each candidate shares with the baseline ("
            + f"{baseline.n_queries:,} queries): "
            + ", ".join(f"{r.name} {shared[r.name]:,}" for r in candidates)
            + ".",
            one_line=True,
        )
    )


def run_view(record: RunRecord) -> keys.View:
    return keys.View(run=record, settings=settings)


def show_comparison(c: Comparison, pending: bool) -> None:
    """The comparison; pending: its intervals and randomisation p-values are still being
    computed (a thread; the page reruns when they are in), so only the deltas are shown."""
    s = c.settings
    stem = "compare_run" + "_".join(str(r.run_id) for r in (baseline, *candidates))
    if pending:
        wait_for_tests(c)
    else:
        st.markdown(fc.summary_html(c), unsafe_allow_html=True)
    st.caption(
        f"Settings from the sidebar: k = {s['k']}, relevance = {s['relevance'] or 'none'}, "
        f"fuzzy threshold = {s['threshold']}, scorer = {s['scorer']}"
        f"{tables.labels_text(s)}. Significant = "
        f"randomisation-test p < {c.options.alpha:g} after Holm's correction over all "
        f"{len(c.tests)} (candidate, metric) tests."
    )
    show_pairs(c)
    if st.query_params.get(keys.COMPARE_QUERY) and keys.COMPARE_SECTION not in st.query_params:
        ss[keys.COMPARE_SECTION] = "Per query"  # a link to a query opens it side by side
    # one section at a time: only the open tab runs and reaches the browser, so a slider move
    # redraws one section's tables and charts, not the whole comparison's
    tabs = st.tabs(
        keys.COMPARE_SECTIONS, key=keys.COMPARE_SECTION, on_change="rerun", bind="query-params"
    )
    sections = {
        "Metrics": lambda: show_metrics(c, stem),
        "Per query": lambda: show_per_query_section(c, stem),
        "Why failing": lambda: show_reasons(c),
        "Segments": lambda: show_segments(c, stem),
        "Latency & cost": lambda: show_ops(c, stem),
        "Trends": lambda: show_trends(c),
    }
    for name, tab in zip(keys.COMPARE_SECTIONS, tabs, strict=True):
        if tab.open:
            with tab:
                sections[name]()


def show_per_query_section(c: Comparison, stem: str) -> None:
    if not c.metrics:
        st.info("No metric to compare per query.")
        return
    # won/tied/lost of every metric here, not under the metrics table (which has them as
    # W / T / L): a chart redraws in the browser on every slider move
    st.plotly_chart(fc.wtl_bars(c), width="stretch", key="compare.wtl")
    show_per_query(c, stem)


def show_metrics(c: Comparison, stem: str) -> None:
    """The metrics table (deltas, intervals, tests), how to read it, won/tied/lost per metric."""
    if not c.metrics:
        st.info(
            "These runs share no metric at these settings (latency and cost are compared below)."
        )
    else:
        frame = fc.metrics_frame(c)
        lower = [m for m in c.metrics if not higher_is_better(m)]
        direction = (
            (
                f"{', '.join(lower)} {'is' if len(lower) == 1 else 'are'} better when lower; "
                "every other metric when higher"
            )
            if lower
            else "every metric is better when higher"
        )
        grid(
            fc.metrics_display(frame, c.options.level),
            hide_index=True,
            width="stretch",
            key="compare.metrics",
            height=min(38 + 35 * len(frame), 600),
            column_config={
                **{name: st.column_config.Column(width="small") for name in SMALL},
                **{
                    name: st.column_config.NumberColumn(
                        name.removesuffix(" mean"),
                        format=fmt,
                        width="small" if name in SMALL or name.endswith(" mean") else None,
                    )
                    for name, fmt in fc.METRIC_FORMATS.items()
                },
                "significant": st.column_config.MultiselectColumn(
                    options=list(fc.MARK_COLOURS), color=list(fc.MARK_COLOURS.values())
                ),
                "candidate": st.column_config.TextColumn("run", pinned=True),
                "metric": st.column_config.TextColumn(pinned=True, help=direction),
            },
        )
        unpaired = unpaired_lines(c)
        if unpaired:
            st.caption(
                escape_text(
                    "Scored in one run only (left out of n, the means and the tests): "
                    + "; ".join(unpaired)
                    + ".",
                    one_line=True,
                )
            )
        csv_download("Download CSV", lambda: frame, f"{stem}_metrics.csv", "compare.metrics.csv")
        with st.expander("How to read this table"):
            st.markdown(
                "- **delta** = candidate mean - baseline mean, both over the queries both runs "
                "score (`n`, the pairs); **CI** is its {100 * c.options.level:g}% percentile bootstrap interval "
                f"({c.options.n_bootstrap:,} resamples of the query pairs).\n"
                "- **p (t-test)**: paired t-test; **p (Holm)**: the paired randomisation test "
                f"({c.options.n_permutations:,} random sign flips) after Holm's correction over "
                "every (candidate, metric) test, so more runs and more metrics demand more "
                "evidence (the CSV also holds the uncorrected p).\n"
                "- **effect d_z** = mean / sd of the per-query differences (0.2 small, 0.5 "
                "medium, 0.8 large).\n"
                "- **W / T / L** (wins / ties / losses) count queries in the metric's good "
                f"direction: {direction} (a negative delta of a lower-is-better metric is an "
                "improvement).\n"
                f"- **significant**: ▲ improved (green) or ▼ regressed (red) when "
                f"p (Holm) < {c.options.alpha:g}."
            )


def show_ops(c: Comparison, stem: str) -> None:
    """Latency per stage and cost, candidate against baseline, with bootstrap intervals."""
    lat = fc.latency_frame(c)
    if lat.empty:
        st.info("No latency stage is recorded in both the baseline and a candidate.")
    else:
        st.caption(
            "Milliseconds, over the queries where both runs recorded the stage; a stage "
            "only one run records is *added* or *removed*, at 0 ms in the other run. The "
            f"interval is a {100 * c.options.level:g}% bootstrap interval of the change. "
            "Red: significantly slower; green: significantly faster."
        )
        grid(
            fc.ops_display(lat),
            hide_index=True,
            width="stretch",
            key="compare.latency",
            height=min(38 + 35 * len(lat), 600),
            column_config=ops_columns(
                ops.ms_decimals_of(lat[["baseline", "candidate value"]].to_numpy(dtype=float))
            ),
        )
        csv_download("Download CSV", lambda: lat, f"{stem}_latency.csv", "compare.latency.csv")
    cost = fc.cost_frame(c)
    if cost.empty:
        st.info(
            escape_text(
                "Cost is not compared: "
                + (c.cost_note or "no query has a known cost in both runs")
                + ".",
                one_line=True,
            )
        )
    else:
        st.caption(
            "Cost in USD per query (mean) and in total over the shared queries whose cost "
            "both runs know."
        )
        grid(
            fc.ops_display(cost),
            hide_index=True,
            width="stretch",
            key="compare.cost",
            column_config=ops_columns(6),
        )
        csv_download("Download CSV", lambda: cost, f"{stem}_cost.csv", "compare.cost.csv")


def ops_columns(digits: int) -> dict[str, Any]:
    """The latency or cost table's column_config: numbers with digits decimals, the
    significance a coloured label (no Styler: it is rebuilt and sent cell by cell each run)."""
    return {
        **{
            name: st.column_config.NumberColumn(format=fmt)
            for name, fmt in fc.ops_formats(digits).items()
        },
        "significant": st.column_config.MultiselectColumn(
            options=list(fc.OPS_COLOURS), color=list(fc.OPS_COLOURS.values()), width="medium"
        ),
    }


def show_pairs(c: Comparison) -> None:
    """How many queries each pair holds and leaves out (a warning when some are left out)."""
    text = escape_text(fc.pairs_caption(c), one_line=True)
    if any(p.n_baseline_only or p.n_candidate_only for p in c.alignment.pairs):
        st.warning(text)
    else:
        st.caption(text)
    for run, notes in c.warnings.items():  # evaluate's depth note, as the Overview shows it
        for note in notes:
            st.warning(escape_text(f"{run}: {note}.", one_line=True), icon="⚠️")


def wait_for_tests(c: Comparison) -> None:
    """A note while the intervals and p-values are computed; reruns the page once they are in.

    The computation starts from the note's first poll, half a second after the page's run, not
    in the run itself: the browser draws the deltas first without the resampling taking the
    cores from it (two cores: the thread would slow every slider move by its drawing time).
    """
    token = (baseline.run_id, tuple(r.run_id for r in candidates), repr(c.settings))

    @st.fragment(run_every=0.5)
    def poll() -> None:
        with st.container(key="compare-pending"):
            st.info(
                "Computing p-values ... the bootstrap intervals and randomisation tests "
                f"({c.options.n_permutations:,} sign flips over {len(c.tests)} tests) fill in "
                "when ready; the deltas and t-tests below are final."
            )
        start = ss.get(keys.COMPARE_POLLED) == token  # polled before: this is a later run
        ss[keys.COMPARE_POLLED] = token
        if sc.tested_comparison(baseline, candidates, settings, start=start) is not None:
            st.rerun()

    poll()


def show_per_query(c: Comparison, stem: str) -> None:
    keep_choice(keys.COMPARE_FOCUS, list(c.candidates), c.candidates[0])
    keep_choice(keys.COMPARE_METRIC, c.metrics, fc.headline_metric(c) or c.metrics[0])
    p1, p2, _ = st.columns([1, 1, 2])
    focus = p1.selectbox(
        "Candidate", list(c.candidates), key=keys.COMPARE_FOCUS, bind="query-params"
    )
    metric = p2.selectbox("Metric", c.metrics, key=keys.COMPARE_METRIC, bind="query-params")
    focus_run = by_name[focus]
    base_report = state.report(run_view(baseline))
    cand_report = state.report(run_view(focus_run))
    test = c.test(focus, metric)
    pairs = fc.paired_frame(
        c, focus, metric, base_report.per_query[metric], cand_report.per_query[metric]
    )
    left, right = st.columns([3, 2])
    with left:
        event = st.plotly_chart(
            fc.scatter(pairs, metric, test.higher_is_better, c.baseline, focus),
            width="stretch",
            key=keys.COMPARE_SCATTER,
            on_select="rerun",
            selection_mode="points",
        )
        st.caption(
            f"{len(pairs)} queries scored in both runs; points on the dashed diagonal "
            "are ties. Click a point to open that query below."
        )
    points = list(event.selection.points) if event is not None else []
    seen = [p.get("customdata") for p in points]
    if seen != ss.get(keys.COMPARE_SEEN_POINTS, []):  # a new click, not one left from before
        ss[keys.COMPARE_SEEN_POINTS] = seen
        if seen:
            picked = seen[0][0] if isinstance(seen[0], list) else seen[0]
            ss[keys.COMPARE_QUERY] = str(picked)
    # a link opens its query side by side
    selected = linked_item(keys.COMPARE_QUERY, keys.COMPARE_QUERY, keys.COMPARE_QUERY_MIRRORED)
    with right:
        worst = fc.worst_frame(c, focus, metric)
        st.markdown(f"**Most regressed queries on {metric}**")
        if worst.empty:
            st.info("No query got worse on this metric.")
        else:
            table_with_csv(worst, "compare.worst", f"{stem}_regressed_{metric}.csv", DELTAS)
        options = [NO_QUERY, *worst["query_id"].tolist()]
        # the select shows the open query (however it was opened) when it is a regressed one
        ss[keys.COMPARE_REGRESSED] = selected if selected in options else NO_QUERY

        def _pick() -> None:
            if ss[keys.COMPARE_REGRESSED] != NO_QUERY:
                ss[keys.COMPARE_QUERY] = ss[keys.COMPARE_REGRESSED]

        st.selectbox(
            "Open a regressed query",
            options,
            key=keys.COMPARE_REGRESSED,
            on_change=_pick,
            format_func=lambda q: q if q != NO_QUERY or selected is None else OTHER_QUERY,
        )
    if not mirror_item(
        selected,
        keys.COMPARE_QUERY,
        keys.COMPARE_QUERY_MIRRORED,
        "Click a point of the scatter or pick a regressed query to see that query's "
        "retrieved chunks in both runs side by side.",
    ):
        return
    show_side_by_side(
        c, focus_run, metric, str(selected), base_report.per_query, cand_report.per_query
    )


def show_side_by_side(
    c: Comparison,
    focus_run: RunRecord,
    metric: str,
    query_id: str,
    base_values: dict[str, Any],
    cand_values: dict[str, Any],
) -> None:
    st.subheader("Side by side")
    base_view, cand_view = run_view(baseline), run_view(focus_run)
    rows = [dd.qidx_of(state.data(v), query_id) for v in (base_view, cand_view)]
    if rows[0] is None or rows[1] is None:
        st.info(escape_text(f"Query {query_id} is not in both runs.", one_line=True))
        return
    details = [state.query_detail(base_view, rows[0]), state.query_detail(cand_view, rows[1])]
    st.markdown(text_block(f"Query {query_id}", details[0].query), unsafe_allow_html=True)
    values = fc.query_metrics_frame(c.metrics, base_values, cand_values, rows[0], rows[1])
    with st.expander("This query's metrics in both runs"):
        grid(
            values,
            hide_index=True,
            width="stretch",
            key="compare.query_metrics",
            column_config=DELTAS,
        )
    own = values.set_index("metric").loc[metric]
    direction = "normal" if higher_is_better(metric) else "inverse"
    shown = (("baseline", own["baseline"], None), ("candidate", own["candidate"], own["delta"]))
    delta_text = None if pd.isna(own["delta"]) else f"{own['delta']:+.3f}"
    # a change that rounds to nothing gets no arrow and no colour (Streamlit reads a text delta
    # as a change: "+0.000" came green and up)
    flat = delta_text is not None and float(delta_text) == 0
    for col, record, (role, value, delta), detail in zip(
        st.columns(2), (baseline, focus_run), shown, details, strict=True
    ):
        with col, st.container(key=f"compare-detail-{role}"):
            st.markdown(role_label(record.name, role), unsafe_allow_html=True)
            # a row as wide as its labels, wrapping: three columns of half the page cut them
            row = st.container(horizontal=True)
            row.metric(
                metric,
                "—" if pd.isna(value) else f"{value:.3f}",
                delta=None if delta is None else delta_text,
                delta_color="off" if flat else direction,
                delta_arrow="off" if flat else "auto",
                width="content",
            )
            show_detail(detail, row)


def show_segments(c: Comparison, stem: str) -> None:
    tags = list(baseline.tag_keys)
    if not tags or not c.metrics:
        st.info(
            "The baseline has no tags, so there are no segments to compare."
            if not tags
            else "No metric to compare by segment."
        )
        return
    # on request only: a segment comparison re-runs every test inside every value of the tag
    keep_choice(keys.COMPARE_TAG, [NO_TAG, *tags], NO_TAG)
    tag = st.selectbox(
        "Tag",
        [NO_TAG, *tags],
        key=keys.COMPARE_TAG,
        bind="query-params",
        help="the baseline's tag values; queries without the tag form (none)",
    )
    if tag == NO_TAG:
        st.caption(
            "Pick a tag to compare the runs inside each of its values (e.g. per query "
            "type): the deltas, their significance and the number of queries per value."
        )
        return
    with st.spinner("Comparing inside every value of the tag ..."):
        try:
            seg = sc.comparison(baseline, candidates, settings, tag)
        except RagevalError as e:
            st.error(escape_text(f"The segments cannot be compared: {e}", one_line=True))
            return
    long = fc.segment_frame(seg, tag)
    st.caption(
        "Delta (candidate - baseline) of each metric inside each value of the tag, with "
        "the number of queries; green / red: significant after Holm's correction within "
        "the value; None: no query of the value is scored on that metric in both runs."
    )
    grid(
        fc.segment_table(long, seg.metrics),
        hide_index=True,
        width="stretch",
        key="compare.segments",
    )
    csv_download("Download CSV", lambda: long, f"{stem}_segments.csv", "compare.segments.csv")


def show_trends(c: Comparison | None) -> None:
    """Every stored run's metrics and p95 latency over time, one line per group."""
    try:
        options = (
            list(c.metrics)
            if c is not None and c.metrics
            else list(state.report(run_view(baseline)).metrics)
        )
    except RagevalError:
        options = []
    if not options:
        st.info("No metric to follow at these settings.")
        return
    defaults = [
        m
        for m in (f"nDCG@{settings.k}", f"R@{settings.k}", f"EvidenceRecall@{settings.k}")
        if m in options
    ] or options[:2]
    if keys.COMPARE_TREND_METRICS not in ss:
        ss[keys.COMPARE_TREND_METRICS] = defaults
    # an @k metric follows k, so a move keeps the lines drawn instead of emptying the picker
    moved = (at_k(m, options, settings.k) for m in ss[keys.COMPARE_TREND_METRICS])
    ss[keys.COMPARE_TREND_METRICS] = list(dict.fromkeys(m for m in moved if m in options))
    metrics = st.multiselect(
        "Metrics", options, key=keys.COMPARE_TREND_METRICS, bind="query-params"
    )
    with st.spinner("Evaluating every run ..."):
        rows = sc.trend_rows(settings, metrics)
    groupings = group_keys(rows)
    keep_choice(
        keys.COMPARE_TREND_BY, groupings, "experiment" if "experiment" in groupings else BY_STEM
    )
    by = st.selectbox(
        "One line per",
        groupings,
        key=keys.COMPARE_TREND_BY,
        bind="query-params",
        help="runs of one group (a run tag's value, e.g. experiment, or the run name without "
        "its version tail: bm25-k3 -> bm25) form one line; unrelated runs are never joined",
    )
    stages = ft.trend_stages(rows)
    stage = None
    if stages:
        keep_choice(keys.COMPARE_TREND_STAGE, stages, "total" if "total" in stages else stages[0])
        stage = st.selectbox(
            "p95 latency of stage", stages, key=keys.COMPARE_TREND_STAGE, bind="query-params"
        )
    st.plotly_chart(
        ft.trends_figure(rows, metrics, stage, by), width="stretch", key="compare.trends"
    )
    frame = ft.trends_frame(rows, metrics, by)
    undated = sum(r.dated_from != "created_at" for r in rows)
    st.caption(
        "Every stored run, dated by its created_at"
        + (
            f"; {undated} run(s) have none and are dated by their import time (hollow "
            "markers, 'dated from' = imported_at; the Runs page can attach a date)"
            if undated
            else ""
        )
        + ". A dash: the run cannot be scored on that metric, or does not record that stage."
    )
    ms = st.column_config.NumberColumn(format="%.1f")
    grid(
        frame,  # grid() draws a missing value as a dash, never "None"
        hide_index=True,
        width="stretch",
        key="compare.trends_table",
        column_config={
            **{m: NUM for m in metrics},
            **{c: ms for c in frame.columns if str(c).startswith("p95 ")},
        },
    )
    csv_download("Download CSV", lambda: frame, "trends.csv", "compare.trends.csv")


def show_reasons(c: Comparison) -> None:
    """The transition table: each shared query's reason in the baseline (rows) against its
    reason in the candidate (columns); a cell opens its queries side by side."""
    keep_choice(keys.COMPARE_FOCUS, list(c.candidates), c.candidates[0])
    focus = st.selectbox(
        "Candidate", list(c.candidates), key=keys.COMPARE_FOCUS, bind="query-params"
    )
    focus_run = by_name[focus]
    try:
        table = sd.transition_table(run_view(baseline), run_view(focus_run), start=False)
    except RagevalError as e:
        st.info(escape_text(f"No diagnosis for these runs: {e}", one_line=True))
        return
    if table is None:
        wait_for_transitions(focus_run)
        return
    st.caption(
        f"{table.n_shared:,} shared queries: each run's status (passing, no_gold, or the "
        "reason why it fails, as on the Why failing page) in the baseline (rows) and the "
        "candidate (columns). Off the diagonal: fixed (a reason to passing), broken (passing "
        "to a reason), changed (one reason to another)."
    )
    grid(fd.transitions_frame(table), width="stretch", key="compare.transitions")
    cells = {fd.cell_label(cell): cell for cell in table.cells}
    keep_choice(keys.COMPARE_CELL, list(cells), next(iter(cells)))
    label = st.selectbox("Open a cell", list(cells), key=keys.COMPARE_CELL, bind="query-params")
    cell = cells[label]
    qid = st.selectbox(
        f"Its queries ({len(cell.query_ids):,})", cell.query_ids, key=keys.COMPARE_CELL_QUERY
    )
    if qid is None:
        return
    metric = fc.headline_metric(c) or (c.metrics[0] if c.metrics else None)
    if metric is None:
        return
    base_view, cand_view = run_view(baseline), run_view(focus_run)
    # why it fails in each run (the side by side below shows both runs' chunks)
    for col, v, role in zip(
        st.columns(2), (base_view, cand_view), ("baseline", "candidate"), strict=True
    ):
        d = sd.best(v)
        q = dd.qidx_of(state.data(v), qid)
        if q is not None:
            lines = d.sentences(q) or [str(d.status[q])]
            col.markdown(
                f"**Why, in the {role}**\n\n"
                + "\n".join("- " + escape_text(x, one_line=True) for x in lines)
            )
    show_side_by_side(
        c,
        focus_run,
        metric,
        qid,
        state.report(base_view).per_query,
        state.report(cand_view).per_query,
    )


@st.fragment(run_every=0.5)
def wait_for_transitions(focus_run: RunRecord) -> None:
    # the split checks start from the note's second run, after the page is drawn
    token = (baseline.run_id, focus_run.run_id, repr(settings))
    start = ss.get("compare.why_polled") == token
    ss["compare.why_polled"] = token
    if sd.transition_table(run_view(baseline), run_view(focus_run), start=start) is not None:
        st.rerun(scope="app")
    st.caption(
        "Checking the runs' spans for splits across two chunks in the background: the "
        "transition table shows when both runs' reasons are in."
    )


comparison: Comparison | None = None
if not candidates and others and not comparable:
    st.info(
        escape_text(
            f"No other stored run shares a query_id with the baseline {baseline_name} "
            f"({baseline.n_queries:,} queries): {', '.join(others)} share none, so there is "
            "nothing to pair. Pick another baseline, or import runs over the same queries.",
            one_line=True,
        )
    )
elif not candidates:
    st.info("Pick at least one candidate run to compare with the baseline.")
else:
    # deltas first: the means, deltas and t-tests take a fraction of the resampling's time;
    # a large comparison's intervals and randomisation tests are computed in a thread
    tested: Comparison | None = None
    try:
        comparison = sc.comparison(baseline, candidates, settings, resample=False)
        tested = sc.tested_comparison(baseline, candidates, settings, start=False)
    except RagevalError as e:
        st.error(escape_text(f"These runs cannot be compared: {e}", one_line=True))
    if comparison is not None:
        done = tested or comparison
        if tested is not None:
            view_downloads("compare", view, tested.to_json, [baseline, *candidates])
        show_comparison(done, pending=tested is None)
if comparison is None:  # no comparison to hold the tabs: the trends of every stored run
    st.header("Trends", divider="gray")
    show_trends(None)
