"""Judge calibration: the judge's labels against people's (confusion matrix, Cohen's kappa,
TPR/TNR per label), labels given here, and the fuzzy coverage decision against the judge's
verdict across thresholds (rageval_core.evaluation.calibration)."""

from __future__ import annotations

import math

import streamlit as st

from rageval_dashboard import actions, keys, sidebar, state
from rageval_dashboard.components.figures import judge as jv
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.widgets.text_tables import text_table
from rageval_dashboard.widgets.grid import grid
from rageval_core.errors import RagevalError
from rageval_core.judging.prompts import FAITHFULNESS_LABELS

view = sidebar.require_view()
ss = st.session_state
st.title("Judge calibration")
st.caption(
    "A judge is only as good as its agreement with people. Human labels come from the run "
    "file (a `labels` object per query) or are given below; the judge's from the sidebar's "
    "judge result set (or the judge scores imported with the run)."
)

people = state.human_labels(view.run)
names = sorted({n for labels in people.values() for n in labels} | {"faithfulness"})
if ss.get(keys.CALIBRATION_LABEL) not in names:
    ss[keys.CALIBRATION_LABEL] = "faithfulness"
label = st.selectbox("Label", names, key=keys.CALIBRATION_LABEL)

try:
    c = state.calibration(view, label)
except RagevalError as e:
    st.info(escape_text(str(e), one_line=True))
    c = None


def _num(x: float | None) -> str:
    return "—" if x is None or math.isnan(x) else f"{x:.3f}"


if c is not None:
    source = c.judge
    st.caption(
        escape_text(
            "judge: "
            + (
                f"result set #{source['judge_id']} {source['name']} ({source['model']})"
                if source
                else "labels imported with the run"
            ),
            one_line=True,
        )
    )
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Paired queries", f"{c.n:,}", help="queries with a human and a judge label")
    m2.metric("Human labels", f"{c.n_human:,}")
    m3.metric("Observed agreement", _num(c.agreement), help="share of paired queries that agree")
    m4.metric(
        "Cohen's kappa",
        _num(c.kappa),
        help="(p_o - p_e) / (1 - p_e): 1 perfect, 0 chance, below 0 worse than chance; "
        "undefined when both gave one and the same label to everything",
    )
    left, right = st.columns(2)
    with left:
        st.markdown("**Confusion matrix** (rows: people, columns: judge)")
        st.plotly_chart(jv.confusion_figure(c.labels, c.confusion), key="calibration.confusion")
    with right:
        st.markdown("**Per label, one against the rest**")
        grid(
            jv.rates_frame(c),
            hide_index=True,
            column_config={
                "TPR": st.column_config.NumberColumn(format="%.3f"),
                "TNR": st.column_config.NumberColumn(format="%.3f"),
            },
        )
        with st.expander(f"The {c.n} paired queries"):
            text_table(jv.pairs_frame(c), "calibration.pairs", "calibration_pairs.csv")

    st.subheader("The coverage threshold against the judge")
    if not c.thresholds:
        st.info(
            "No sweep: it needs gold evidence spans and a judge verdict on retrieval "
            "(retrieval_quality) or faithfulness."
        )
    else:
        best = c.best_threshold
        st.caption(
            f'At each threshold, does "every gold span covered in the top {view.settings.k}" '
            f"(FullCoverageRate@{view.settings.k}) agree with the judge's verdict "
            f"({escape_text(str(c.threshold_basis), one_line=True)})?"
            + (f" Best kappa at {best.threshold:.2f}." if best else "")
        )
        top = c.best_agreeing
        if best is None and top is not None:
            lo, hi = top.interval
            st.info(
                "No threshold agrees with the judge better than chance with confidence: the "
                f"best, {top.threshold:.2f} (kappa {top.kappa:.3f}), has a 95% bootstrap "
                f"interval of balanced accuracy {lo:.3f}-{hi:.3f}, which reaches 0.5. More "
                "judged queries narrow it."
            )
        st.plotly_chart(
            jv.threshold_figure(c, view.settings.threshold), key="calibration.thresholds"
        )
        if best is not None:
            st.button(
                f"Use threshold {best.threshold:.2f}",
                key="calibration.use_threshold",
                on_click=actions.use_threshold,
                args=(best.threshold,),
            )

st.subheader("LLM relevance labels against people")
calibrations = state.label_calibrations(view)
if not calibrations:
    st.info(
        "No LLM relevance labels yet: `rageval judge RUN --metrics relevance` grades the chunks "
        "nobody labelled (0-3, UMBRELA) and keeps them as llm:MODEL labels; their agreement "
        "with the people's grades shows here."
    )
for cal in calibrations:
    pair = cal.pair
    st.markdown(f"**{escape_text(cal.llm, one_line=True)}** against the people's grades")
    a1, a2, a3, a4 = st.columns(4)
    a1.metric("Both graded", f"{pair.n:,}", help="documents with a person's and the LLM's grade")
    a2.metric("LLM graded", f"{cal.n_llm:,}")
    a3.metric(
        "Cohen's kappa (grades)",
        _num(pair.kappa),
        help="(p_o - p_e) / (1 - p_e): 1 perfect, 0 chance; withheld (—) when it cannot be "
        "computed: " + (pair.reason or "fewer than two documents or one grade only"),
    )
    a4.metric("Weighted kappa (grades)", _num(pair.weighted_kappa), help="quadratic weights")
    if pair.reason:
        st.caption(escape_text(f"kappa withheld: {pair.reason}", one_line=True))
    if pair.n:
        left, right = st.columns(2)
        with left:
            st.plotly_chart(jv.grade_figure(cal), key=f"calibration.grades.{cal.llm}")
        with right:
            grid(
                jv.grade_precision_frame(cal),
                hide_index=True,
                column_config={"people gave it too": st.column_config.NumberColumn(format="%.3f")},
            )
if calibrations:
    k = view.settings.k
    side = state.metrics_by_labels(view, (f"P@{k}", f"nDCG@{k}", f"Judged@{k}"))
    st.markdown(
        "**The metrics by whose labels count** (the `labels` setting, relevance by document "
        "ids): people only, people with the LLM's filling the holes, the LLM's only"
    )
    grid(jv.labels_frame(side), hide_index=True, key="calibration.labels_side_by_side")

st.subheader("Give labels")
data = state.data(view)
ids = [str(q) for q in data.query_ids]
g1, g2, g3 = st.columns([3, 2, 1], vertical_alignment="bottom")
chosen = g1.selectbox("Query", ids, key="calibration.query")
qidx = ids.index(chosen)
allowed = list(FAITHFULNESS_LABELS) if label == "faithfulness" else None
current = people.get(qidx, {}).get(label)
if allowed is not None:
    given = g2.selectbox(
        f"{label} label",
        allowed,
        index=allowed.index(current) if current in allowed else 0,
        key=f"calibration.give.{qidx}",
    )
else:
    given = g2.text_input(f"{label} label", value=current or "", key=f"calibration.give.{qidx}")
g3.button(
    "Save label",
    key="calibration.save",
    on_click=actions.give_label,
    args=(view, qidx, label, (given or "").strip() or None),
)
st.caption(
    escape_text(
        f"{chosen}: " + (f"labelled {current}" if current else "no human label yet"),
        one_line=True,
    )
)
texts = state.query_detail(view, qidx)
if texts.query:
    st.markdown(f"**Query:** {escape_text(texts.query)}")
if texts.answer:
    st.markdown(f"**Answer:** {escape_text(texts.answer)}")
