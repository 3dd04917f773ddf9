"""Why failing: each failing query's reason as bars (a click opens Queries filtered to that
reason), the what-if lines, and the two-stage split when the run has a first stage."""

from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitAPIException

from rageval_dashboard import keys, sidebar, state
from rageval_dashboard.components.figures import diagnosis as fd
from rageval_dashboard.widgets.grid import grid
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.widgets.choices import clicked_point
from rageval_dashboard.state import diagnosis as sd
from rageval_core.errors import RagevalError

#: the first-stage select's "no first stage"
NO_FIRST = "(none)"

view = sidebar.require_view()
ss = st.session_state
st.title("Why failing")

# --- the first stage: the trace export's retriever stage by default, any other run on request
listed = state.runs()
others = [r.name for r in listed if r.run_id != view.run.run_id]
traced = sd.trace_first_stage(view.run, listed)
if ss.get(keys.WHY_FIRST_STAGE) not in [NO_FIRST, *others]:
    ss[keys.WHY_FIRST_STAGE] = traced.name if traced is not None else NO_FIRST
picked = st.selectbox(
    "First stage",
    [NO_FIRST, *others],
    key=keys.WHY_FIRST_STAGE,
    bind="query-params",
    help="the run this run reranks (its retriever): adds the two-stage split of the gold "
    "items (lost at retrieval, lost at rerank, promoted by the rerank, kept)",
)
first = next((r for r in listed if r.name == picked), None)

try:
    quick = sd.quick(view, first)
    found = sd.whole(view, first, start=False)  # the note's poll starts the split check
except RagevalError as e:
    st.info(escape_text(f"No diagnosis for this run and settings: {e}", one_line=True))
    st.stop()
d = quick if found is None else found

if d.relevance is None:
    st.info(
        "This run has nothing to find (no qrels judging a document relevant, no gold evidence "
        "spans): no query can fail, so none has a reason."
    )
    st.stop()

s = d.settings
st.caption(
    f"{d.n_failing:,} of {d.query_ids.size:,} queries fail ({d.relevance} mode, k = {s['k']}, "
    f"threshold {s['threshold']:g}, scorer {escape_text(str(s['scorer']), one_line=True)}, "
    f"near-miss band {s['near_miss_band']:g}); {d.query_counts()['no_gold']:,} have nothing to "
    "find. Each missed gold span gets the first reason that holds, in the order of the bars; a "
    "query's reason is its missed spans' most frequent one. Click a bar to list its queries."
)


#: the note's poll starts the split check from its second run (the first is in the page's run):
#: the thread then does not compete with drawing the page
POLLED = "why.polled"


@st.fragment(run_every=0.5)
def _wait_for_splits() -> None:
    token = (view.run.run_id, keys.settings_key(view.settings), picked)
    start = ss.get(POLLED) == token  # polled before: this is a later run
    ss[POLLED] = token
    if sd.whole(view, first, start=start) is not None:
        st.rerun(scope="app")  # the split check is in: the page draws the whole diagnosis
    st.caption(
        f"Checking {sd.undecided(quick):,} spans for splits across two chunks in the "
        "background (about 12 ms each): until then such spans count as near misses or not "
        "retrieved."
    )


#: the runs whose long split check the user asked for (this session): later moves check too
ASKED = "why.splits_asked"
asked: set[int] = ss.setdefault(ASKED, set())
if found is None:
    n_spans = sd.undecided(quick)
    if n_spans <= sd.SPLIT_AUTO_SPANS or view.run.run_id in asked:
        _wait_for_splits()
    else:
        c1, c2 = st.columns([4, 1], vertical_alignment="center")
        c1.caption(
            f"{n_spans:,} missed spans could be split across two chunks: checking them reads "
            f"their texts (about {n_spans * sd.SPLIT_S_PER_SPAN:,.0f} s, in the background; "
            "slider moves are slower meanwhile). Until then they count as near misses or not "
            "retrieved."
        )
        if c2.button("Check for splits", key="why.check_splits"):
            asked.add(view.run.run_id)
            sd.whole(view, first, start=True)
            st.rerun()

reason = clicked_point(fd.reasons_bar(d), keys.WHY_CHART)
if reason in d.reasons:
    # the filter goes in the session and in the URL (a link then opens the same list); the
    # sidebar's bound widgets keep their values and put them back in the URL. A mapping,
    # never None: None clears the URL by a call that refuses widget-bound keys
    ss[keys.QUERIES_REASON] = str(reason)
    try:
        st.switch_page("app_pages/queries.py", query_params={keys.QUERIES_REASON: reason})
    except StreamlitAPIException:  # the key is still bound from a visit to Queries
        st.switch_page("app_pages/queries.py", query_params={})

grid(
    fd.reasons_frame(d),
    hide_index=True,
    width="stretch",
    column_config={fd.SHARE: st.column_config.NumberColumn(format="%.1f")},
)
if d.unjudged is not None:
    st.caption(
        f"Unjudged documents in the failing queries' top {s['k']}: "
        f"{int(d.unjudged[d.failing].sum()):,} (a possible label hole, not a reason)."
    )

st.subheader("What would fix them")
if not d.what_if:
    st.info(
        "No setting fixes these failures: the evidence is in no retrieved chunk (the index, "
        "the chunking or the query is at fault)."
        if d.n_failing
        else "No query fails at these settings."
    )
else:
    for w in d.what_if:
        st.markdown("- " + escape_text(w.text(), one_line=True))
    st.caption(
        "Each count is computed at the changed setting, not estimated. A lower threshold also "
        "counts pairs that are not the evidence: check them on Threshold tuning first."
    )

if d.stages is not None:
    st.subheader("Two stages")
    st.plotly_chart(fd.stages_bar(d.stages, int(s["k"])), width="stretch", key="why.stages")
    if d.stages.added:
        st.caption(
            f"{d.stages.added:,} gold items are in the reranked top {s['k']} but in no list of "
            f"{escape_text(d.stages.first_stage, one_line=True)}: it does not look like this "
            "run's first stage."
        )
