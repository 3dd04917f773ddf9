"""Labelling: the top-k chunks no qrels judge, across queries, in the order a label changes the
metrics most (rageval_core.evaluation.label_queue), graded with the drilldown's keys; progress
and Judged@k now; the agreement between annotators."""

from __future__ import annotations

import streamlit as st

from rageval_dashboard import actions, keys, sidebar, state
from rageval_dashboard.components import labels as lv
from rageval_dashboard.widgets.grid import grid
from rageval_dashboard.components.figures import queries as fq
from rageval_dashboard.components.highlight import chunk_card
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.keys import View
from rageval_dashboard.labeller import LabelItem, labeller
from rageval_dashboard.state import labelling as sl
from rageval_core.errors import RagevalError
from rageval_core.evaluation import label_queue as lq

#: queue items shown at a time (one page of the labeller)
WINDOW = 10

view = sidebar.require_view()
st.title("Labelling")
ss = st.session_state
k = view.settings.k
by_name = {r.name: r for r in state.runs()}
# with Compare's runs chosen, their differences come first
compared = [ss.get(keys.COMPARE_BASELINE), *(ss.get(keys.COMPARE_CANDIDATES) or [])]
runs = [view.run, *(by_name[n] for n in compared if n in by_name and n != view.run.name)]
runs = list({r.run_id: r for r in runs}.values())
items = sl.queue(runs, k)
done = sl.labelled()
labelled, to_go = sl.progress(runs, k)

st.caption(
    f"The top {k} chunks of **{escape_text(view.run.name, one_line=True)}**"
    + (
        f" and of the {len(runs) - 1} run(s) chosen on Compare (documents on which they differ "
        "first)"
        if len(runs) > 1
        else " (choose runs on Compare to put the documents on which they differ first)"
    )
    + " that the imported qrels do not judge, higher ranks first: a label there changes the "
    "metrics most."
)
try:
    judged = state.report(view, (f"Judged@{k}",)).metrics.get(f"Judged@{k}")
except RagevalError:
    judged = None
c1, c2, c3 = st.columns(3)
c1.metric("Labelled", f"{labelled:,}", help="queue items a person has graded (any annotator)")
c2.metric("To go", f"{to_go:,}")
c3.metric(
    f"Judged@{k} now",
    "—" if judged is None else f"{judged:.3f}",
    help="the share of the top k with a label, under the sidebar's labels setting"
    if judged is not None
    else "needs qrels (the run has none)",
)
if items:
    st.progress(labelled / len(items))
if "people" not in view.settings.labels.split(","):
    st.caption(
        f"The metrics read the labels **{escape_text(view.settings.labels, one_line=True)}**: "
        "people's grades count in them (Judged@k included) once the sidebar's Labels include "
        "people (imported,people: the run's qrels first, your grades where they say nothing)."
    )

if not items:
    st.success(f"Nothing to label: every chunk of the top {k} is judged by the imported qrels.")
else:
    if ss.get(keys.QUEUE_POS) is None:
        ss[keys.QUEUE_POS] = min(lq.first_to_go(items, done), len(items) - 1)
    pos = max(0, min(int(ss[keys.QUEUE_POS]), len(items) - 1))
    list_id = f"queue:{k}:{','.join(str(r.run_id) for r in runs)}:{pos}"
    if ss.get(keys.LABEL_LIST) == list_id and ss.get(keys.LABEL_FOCUS, 0) >= WINDOW:
        pos = min(pos + WINDOW, len(items) - 1)  # graded the last one shown: the next ones
        list_id = f"queue:{k}:{','.join(str(r.run_id) for r in runs)}:{pos}"
    ss[keys.QUEUE_POS] = pos
    window = items[pos : pos + WINDOW]

    def _to(at: int) -> None:
        ss[keys.QUEUE_POS] = at

    def _query_step(by: int) -> int | None:
        """The first item of the next (by=1) or previous (by=-1) query from the window's focus."""
        focus = pos + max(0, min(int(ss.get(keys.LABEL_FOCUS, 0)), len(window) - 1))
        here = items[focus].query_id
        i = focus
        while 0 <= i < len(items) and items[i].query_id == here:
            i += by
        if not 0 <= i < len(items):
            return None
        if by < 0:  # back to the first item of that query's stretch
            there = items[i].query_id
            while i > 0 and items[i - 1].query_id == there:
                i -= 1
        return i

    records = {r.run_id: r for r in runs}
    prev_q, next_q = _query_step(-1), _query_step(1)
    with st.container(horizontal=True):
        st.caption(f"Items {pos + 1:,}-{pos + len(window):,} of {len(items):,}")
        st.button(
            "First to label",
            key="labelling.first",
            on_click=_to,
            args=(lq.first_to_go(items, done),),
        )
        st.button(
            "Back",
            key="labelling.back",
            disabled=pos == 0,
            on_click=_to,
            args=(max(0, pos - WINDOW),),
        )
        st.button(
            "More",
            key="labelling.more",
            disabled=pos + WINDOW >= len(items),
            on_click=_to,
            args=(pos + WINDOW,),
        )

    def _item(it: lq.QueueItem) -> LabelItem | None:
        shown = View(run=records[it.run_id], settings=view.settings)
        detail = state.query_texts_detail(shown, it.qidx)
        chunk = next((c for c in detail.chunks if c.original_rank == it.rank), None)
        if chunk is None:
            return None
        header = (
            f"query {it.query_id}: {detail.query or ''} · "
            + ("runs differ · " if it.differs else "")
            + fq.chunk_header(chunk)
        )
        card = chunk_card(header, chunk.text, chunk.match_start, chunk.match_end, chunk.covers)
        # the imported qrels judge no queue item (the queue leaves them out)
        return LabelItem(it.query_id, it.doc_id, card, None, chunk.text)

    shown_items = [x for x in map(_item, window) if x is not None]
    labeller(
        shown_items,
        list_id,
        on_query=(
            None if prev_q is None else (lambda: _to(prev_q)),
            None if next_q is None else (lambda: _to(next_q)),
        ),
    )

# --- agreement between annotators (issue 31, point 5) ----------------------------------------
st.divider()
st.subheader("Agreement between annotators")
# computed when asked for: its bootstrap would otherwise run again after every grade given
if not st.toggle("Show the agreement", key="labelling.agreement", bind="query-params"):
    st.stop()
found = sl.run_agreement(view.run)
st.caption(
    "Every person who graded this run's queries, pair by pair: Cohen's kappa, and weighted "
    "(quadratic) for grades; Krippendorff's alpha (ordinal) over all of them with a bootstrap "
    "interval. Kappa and alpha are withheld, with the reason, where they cannot be computed."
)
if not found.pairs:
    st.info(escape_text(found.reason or "agreement needs two annotators", one_line=True))
else:
    st.markdown(escape_text(lv.alpha_line(found), one_line=True))
    grid(lv.pairs_rows(found), hide_index=True, key="labelling.pairs")
    names = [f"{p.a} with {p.b}" for p in found.pairs]
    chosen = st.selectbox("Confusion of the pair", names, key="labelling.pair")
    pair = found.pairs[names.index(chosen)]
    grid(lv.confusion_rows(pair), hide_index=True, key="labelling.confusion")
    st.markdown(f"**Items they disagree on** ({len(found.disagreements):,})")
    if found.disagreements:
        grid(lv.disagreement_rows(found), hide_index=True, key="labelling.disagreements")
        items_ = [f"{d.query_id} · {d.doc_id}" for d in found.disagreements]
        a1, a2, a3 = st.columns([4, 2, 1], vertical_alignment="bottom")
        item = a1.selectbox("Adjudicate", items_, key="labelling.adjudicate")
        picked = found.disagreements[items_.index(item)]
        a2.selectbox(
            "Final grade", list(lv.GRADES), format_func=lv.grade_name, key="labelling.final"
        )
        a3.button(
            "Keep as final",
            key="labelling.keep_final",
            disabled=not actions.annotator(),
            on_click=actions.adjudicate,
            args=(picked.query_id, picked.doc_id, "labelling.final"),
            help="the final grade is kept apart from the annotators' own ('adjudicated' in the "
            "labels setting)",
        )
