"""Queries: the per-query table with filters and downloads, and one query's drilldown below it."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import streamlit as st

from rageval_dashboard import annotations, keys, sidebar, state
from rageval_dashboard.labeller import LabelItem, labeller
from rageval_dashboard.components.figures import diagnosis as fd
from rageval_dashboard.components.figures import queries as fq
from rageval_dashboard.components.figures import judge as jv
from rageval_dashboard.widgets.downloads import csv_download, json_download
from rageval_dashboard.components.highlight import chunk_card, text_block
from rageval_dashboard.components.tables import file_stem
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.widgets.text_tables import text_column, text_table
from rageval_dashboard.widgets.choices import linked_item, mirror_item, page_picker, url_multiselect
from rageval_dashboard.widgets.grid import grid
from rageval_dashboard.state import diagnosis as sd
from rageval_core.evaluation import drilldown as dd
from rageval_core.evaluation import label_queue as lq
from rageval_core.metrics import latency_cost as ops
from rageval_core.errors import RagevalError

ANY_TAG = "(any tag)"

view = sidebar.require_view()
st.title("Queries")
try:
    table = state.query_table(view)
except RagevalError as e:
    st.info(
        escape_text(
            f"The per-query table cannot be computed for this run and settings: {e}", one_line=True
        )
    )
    st.stop()
data = state.data(view)
k = view.settings.k
try:  # each query's reason (the Why failing page's, which checks the splits of a large run)
    diagnosis = sd.best(view)
except RagevalError:  # under a preset: no reasons (the diagnosis reads rageval's own coverage)
    diagnosis = None

# --- filters -------------------------------------------------------------------------------
ss = st.session_state
tag_keys = sorted(table.tags)
if ss.get(keys.QUERIES_TAG) not in [ANY_TAG, *tag_keys]:
    ss[keys.QUERIES_TAG] = ANY_TAG
sorts = dd.sort_options(table)
if ss.get(keys.QUERIES_SORT) not in sorts:  # k moved: the metric names changed with it
    ss[keys.QUERIES_SORT] = dd.WORST_FIRST

c1, c2, c3, c4, c5 = st.columns([1.5, 1.2, 1.8, 2, 1.5], vertical_alignment="bottom")
failing_only = c1.toggle(
    "Failing only",
    key=keys.QUERIES_FAILING,
    bind="query-params",
    help=f"not every gold span covered in the top {k}, or (ids mode) nothing "
    f"relevant in the top {k}",
)
no_gold_only = c1.toggle(
    "No gold only",
    key=keys.QUERIES_NO_GOLD,
    bind="query-params",
    help="queries with nothing to find (no relevant document judged, no gold span): "
    "unanswerable by design or not labelled; never failing, not in the worst-first order",
)
tag = c2.selectbox(
    "Tag",
    [ANY_TAG, *tag_keys],
    key=keys.QUERIES_TAG,
    bind="query-params",
    on_change=lambda: ss.pop(keys.QUERIES_TAG_VALUES, None),
)
values: list[str] = []
if tag != ANY_TAG:
    values = url_multiselect(
        c3, "Values", dd.tag_values(table, tag), keys.QUERIES_TAG_VALUES, placeholder="all values"
    )
else:
    c3.multiselect("Values", [], disabled=True, placeholder="pick a tag first")
search = c4.text_input(
    "Search",
    key=keys.QUERIES_SEARCH,
    bind="query-params",
    placeholder="plain text, case-insensitive",
    help="in the query ids and texts; with 'all texts', also in the answers, the retrieved "
    "chunks and the gold evidence",
)
search_all = c4.toggle("all texts", key=keys.QUERIES_SEARCH_ALL, bind="query-params")
#: the drilldown outlines the search term in every text it shows (a search of all texts)
found_term = (search or "").strip() if search_all else ""
sort_by = c5.selectbox("Sort by", sorts, key=keys.QUERIES_SORT, bind="query-params")
reason = fd.ANY_REASON
if diagnosis is not None:
    reasons = fd.reason_options(diagnosis)
    if ss.get(keys.QUERIES_REASON) not in reasons:
        ss[keys.QUERIES_REASON] = fd.ANY_REASON
    reason = c5.selectbox(
        "Reason",
        reasons,
        key=keys.QUERIES_REASON,
        bind="query-params",
        help="why a query fails (the Why failing page): its missed spans' most frequent reason. "
        "On a large run, split_across_chunks shows once Why failing has checked the splits "
        "(in the background); until then such spans count as near misses or not retrieved",
    )

mask = dd.filter_rows(
    table,
    failing_only=failing_only,
    no_gold_only=no_gold_only,
    tag=None if tag == ANY_TAG else tag,
    tag_values=values,
    text=search or "",
    text_hits=state.search_all(view, search) if search_all and (search or "").strip() else None,
)
if diagnosis is not None:
    mask &= fd.reason_mask(diagnosis, reason)
order = dd.sort_rows(table, mask, sort_by)
# one page of rows goes to the browser; the filters, the sort and the downloads see every row
page, n_pages = page_picker(order.size, keys.QUERIES_PAGE_ROWS, keys.QUERIES_PAGE, "rows each")
first = page.start
page_rows = order[page]
frame = fq.table_frame(table, page_rows)
if diagnosis is not None:
    frame = fd.with_reason(frame, diagnosis, page_rows)
shown = (
    f"{order.size} of {table.n_queries} queries shown"
    if n_pages == 1
    else f"{order.size:,} of {table.n_queries:,} queries match (rows {first + 1:,}-"
    f"{first + page_rows.size:,} shown)"
)
n_no_gold = int(table.no_gold.sum())
left_out = int(np.count_nonzero(mask)) - order.size  # no-gold rows the worst-first order skips
st.caption(
    f"{shown} · {int(table.failing.sum()):,} failing at k = {k}"
    + (f" · {n_no_gold:,} without gold" if n_no_gold else "")
    + (
        f" ({left_out:,} left out of the worst-first order: 'No gold only' lists them)"
        if left_out
        else ""
    )
    + " · click a row to open it below"
)

# --- which query is open: a table click, prev/next, or a link with ?q=<query_id> -------------
clicked = ss.get(keys.QUERIES_TABLE)  # the table's selection as the browser sent it
rows = list(clicked["selection"]["rows"]) if clicked else []
if rows != ss.get(keys.QUERIES_SEEN_ROWS, []):  # a new click (not a selection left from before)
    ss[keys.QUERIES_SEEN_ROWS] = rows
    if rows and rows[0] < page_rows.size:
        ss[keys.SELECTED_QUERY] = str(table.query_ids[page_rows[rows[0]]])
selected = linked_item(keys.QUERY_PARAM, keys.SELECTED_QUERY, keys.QUERIES_MIRRORED)
# the open query's row is ticked in the table, however it was opened (a link, prev/next)
open_qidx = dd.qidx_of(data, selected) if selected is not None else None
ticked = [] if open_qidx is None else [int(i) for i in np.flatnonzero(page_rows == open_qidx)[:1]]
if ticked != rows:
    ss[keys.QUERIES_TABLE] = {"selection": {"rows": ticked, "columns": []}}
    ss[keys.QUERIES_SEEN_ROWS] = ticked

# --- the table -------------------------------------------------------------------------------
metric_cols = {name: st.column_config.NumberColumn(name, format="%.3f") for name in table.metrics}
grid(
    # the frame itself, not a pandas Styler: a Styler sends every cell twice (value and text)
    # and renders each row in Python; the metric columns' format and grid's dash do its work
    frame,
    key=keys.QUERIES_TABLE,
    on_select="rerun",
    selection_mode="single-row",
    hide_index=True,
    width="stretch",
    height=360,
    column_config={
        **metric_cols,
        dd.QUERY: text_column(
            "query", help="a long text is cut here: click the row to read it whole below"
        ),
        dd.LATENCY: st.column_config.NumberColumn("total ms", format="%.1f"),
        dd.FAILING: st.column_config.CheckboxColumn("failing"),
        dd.NO_GOLD: st.column_config.CheckboxColumn("no gold"),
    },
)

meta = {"run": view.run.name, "settings": state.report(view).settings}
# built on click only (callables), from every filtered row (not only the page shown)
with st.container(horizontal=True):
    csv_download(
        "Download CSV",
        lambda: fq.table_frame(table, order),
        f"{file_stem(view.run.name)}_queries.csv",
        "queries.csv",
    )
    json_download(
        "Download JSON",
        lambda: fq.table_document(table, order, meta),
        f"{file_stem(view.run.name)}_queries.json",
        "queries.json",
    )

if not mirror_item(
    selected,
    keys.QUERY_PARAM,
    keys.QUERIES_MIRRORED,
    "Select a row of the table to open that query: its gold spans, its ranked chunks "
    "with the matched text highlighted, and the evidence x chunk scores.",
):
    st.stop()
qidx = dd.qidx_of(data, selected)
st.divider()
if qidx is None:
    st.info("The selected query is not in this run. Pick another row.")
    st.stop()


def _open(query_id: str) -> None:
    ss[keys.SELECTED_QUERY] = query_id


# --- the drilldown ---------------------------------------------------------------------------
detail = state.query_detail(view, qidx)
prev, nxt = dd.neighbours(table.failing, qidx)
h1, h2, h3 = st.columns([4, 1, 1], vertical_alignment="bottom")
h1.subheader("Drilldown")
for col, text, name, target in (
    (h2, "◀ Previous failing", "prev", prev),
    (h3, "Next failing ▶", "next", nxt),
):
    col.button(
        text,
        key=f"queries.{name}",
        disabled=target is None,
        width="stretch",
        on_click=_open,
        args=(str(table.query_ids[target]) if target is not None else "",),
    )
st.markdown(
    text_block(f"Query {detail.query_id}", detail.query, found_term), unsafe_allow_html=True
)

status = []
if table.fail_coverage[qidx]:
    status.append(f"not every gold span is covered in the top {k}")
if table.fail_hit[qidx]:
    status.append(f"nothing relevant in the top {k}")
m1, m2, m3, m4 = st.columns(4)
m1.metric("Status", "failing" if status else "ok", help="; ".join(status) or None)
m2.metric(
    f"Spans covered in top {k}",
    f"{detail.n_covered} / {len(detail.spans)}" if detail.spans else "—",
)
m3.metric(
    "Chunks retrieved",
    len(detail.chunks),
    help=f"{detail.n_dropped} dropped by the score cut-off" if detail.n_dropped else None,
)
m4.metric(
    "Total latency (ms)",
    "—" if math.isnan(table.total_ms[qidx]) else ops.format_ms(table.total_ms[qidx]),
    help="derived: the query records no `total`, so this is the sum of its stages"
    if table.total_derived[qidx]
    else None,
)
if diagnosis is not None and diagnosis.failing[qidx]:  # why it fails: a sentence a missed span
    st.markdown(
        f"**Why it fails** ({escape_text(str(diagnosis.status[qidx]), one_line=True)})\n\n"
        + "\n".join("- " + escape_text(line, one_line=True) for line in diagnosis.sentences(qidx))
    )
    below = fd.covering_below_k(diagnosis, qidx)
    covering = [c for c in detail.chunks if c.rank in below]
    if covering:
        with st.expander(f"The chunk(s) below k = {k} that cover a missed span"):
            st.markdown(
                "".join(
                    chunk_card(
                        fq.chunk_header(c),
                        c.text,
                        c.match_start,
                        c.match_end,
                        c.covers,
                        dimmed=True,
                        find=found_term,
                    )
                    for c in covering
                ),
                unsafe_allow_html=True,
            )
# --- a note on this query, kept with the run ---------------------------------------------------
note_box = annotations.note_key(view.run.run_id, detail.query_id)
if note_box not in ss:
    ss[note_box] = annotations.notes(view.run).get(detail.query_id, "")
with st.expander("Note" + (" (1)" if ss[note_box].strip() else ""), expanded=bool(ss[note_box])):
    st.text_area(
        "Note on this query (kept with the run)",
        key=note_box,
        height=80,
        placeholder="e.g. the gold span is wrong; the answer is in the table of chunk 3",
    )
    st.button(
        "Save note",
        key="queries.save_note",
        on_click=annotations.save_note,
        args=(view.run.run_id, detail.query_id),
    )
    if ss.get(keys.QUERIES_NOTE_ERROR):
        st.error("The note was not saved:")
        st.code(ss[keys.QUERIES_NOTE_ERROR], language=None)

if detail.answer is not None or detail.reference_answer is not None:
    with st.expander(
        "Answer and reference answer", key=keys.QUERIES_ANSWER_OPEN, bind="query-params"
    ):
        st.markdown(
            text_block("Answer", detail.answer, found_term)
            + text_block("Reference answer", detail.reference_answer, found_term),
            unsafe_allow_html=True,
        )

verdicts = state.judge_verdicts(view, qidx)
if verdicts:
    repeats = max(r.rep for r in verdicts) + 1
    st.markdown(
        f"**Judge verdicts** ({len(verdicts)}; the chunks the judge cited are outlined below)"
    )
    st.markdown("".join(jv.verdict_block(r, repeats) for r in verdicts), unsafe_allow_html=True)
numbers = jv.context_numbers(detail.chunks)
judge_cited = jv.cited(verdicts)

st.markdown("**Gold evidence spans**")
if not data.run.has_evidence:
    st.info("This run has no gold evidence spans: coverage and highlights need them.")
elif not detail.spans:
    st.info("This query has no gold evidence spans.")
else:
    text_table(
        fq.spans_frame(detail),
        "queries.spans",
        f"{file_stem(view.run.name)}_{file_stem(detail.query_id)}_spans.csv",
        column_config={"best_score@k": st.column_config.NumberColumn(format="%.3f")},
    )
    if detail.chunks:
        st.markdown(
            "**Evidence x chunk scores** (green: covers, at or above the threshold "
            f"{detail.threshold:.2f}; grey: below)"
        )
        st.plotly_chart(
            fq.evidence_heatmap(
                detail.scores, detail.threshold, k, [c.rank for c in detail.chunks]
            ),
            width="stretch",
            key="queries.heatmap",
        )
if detail.has_qrels and detail.missed_relevant:
    st.caption(
        f"{len(detail.missed_relevant)} relevant document(s) by the qrels are not in the top {k}:"
    )
    grid(
        {
            "doc_id": list(detail.missed_relevant),
            "qrels": [detail.relevance[d] for d in detail.missed_relevant],
        },
        hide_index=True,
    )

st.markdown(f"**Retrieved chunks** (top {k}, rank order; matched span highlighted; grade each one)")
if not detail.in_run:
    st.info("This query is judged in the qrels but absent from the run: nothing was retrieved.")
elif not detail.chunks:
    st.info(
        "Nothing was retrieved for this query"
        + (" (every chunk is below the score cut-off)." if detail.n_dropped else ".")
    )
else:
    if detail.n_dropped:
        st.caption(
            f"{detail.n_dropped} chunk(s) dropped by the retriever-score cut-off; ranks are "
            'after the cut (the original rank is shown as "was #").'
        )

    def _card(c: dd.ChunkDetail) -> str:
        header = fq.chunk_header(c)
        card = chunk_card(
            header,
            c.text,
            c.match_start,
            c.match_end,
            c.covers,
            dimmed=not c.in_top_k,
            odd=c.odd_numbers,
            find=found_term,
        )
        number = numbers.get(c.original_rank)
        return jv.cited_card(card, number) if number in judge_cited else card

    top = [c for c in detail.chunks if c.in_top_k]
    rest = [c for c in detail.chunks if not c.in_top_k]
    # next / previous query: the table's order, or the run's when the open query is not in it
    # (filtered out, or a query without gold that the worst-first order leaves out)
    walk = order if np.any(order == qidx) else np.arange(table.n_queries)
    at = int(np.flatnonzero(walk == qidx)[0])

    def _step(by: int) -> Callable[[], None] | None:
        """Open the query by rows away in that order (None at either end)."""
        to = at + by
        if not 0 <= to < walk.size:
            return None
        target = str(table.query_ids[walk[to]])
        return lambda: _open(target)

    labeller(
        [
            # the run's own qrels label: c.label is the one the labels setting counts
            LabelItem(
                detail.query_id,
                c.doc_id,
                _card(c),
                lq.imported_label(data, qidx, c.original_rank),
                c.text,
            )
            for c in top
        ],
        f"queries:{view.run.run_id}:{detail.query_id}",
        on_query=(_step(-1), _step(1)),
    )
    if rest:
        with st.expander(f"{len(rest)} more chunk(s) below k = {k}"):
            st.markdown("".join(_card(c) for c in rest), unsafe_allow_html=True)
