"""Threshold tuning: where the gold spans' best scores sit, the close calls, and human labels."""

from __future__ import annotations

import streamlit as st

from rageval_dashboard import actions, keys, sidebar, state
from rageval_dashboard.components.figures import threshold as ft
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.widgets.text_tables import text_table
from rageval_core.evaluation import tuning
from rageval_core.errors import RagevalError
from rageval_core.evaluation.evaluate import coverage

DELTA = 0.05  # how far the threshold is nudged for the flip share
PER_PAGE = 8  # pair cards per page: each carries buttons, so keep reruns light


st.title("Threshold tuning")
view = sidebar.require_view()
run, settings = view.run, view.settings
t = settings.threshold
file_stem = f"run{run.run_id}"  # never the run name in a file name: it is user text
if not run.has_evidence:
    st.info(
        "This run has no gold evidence: its queries carry no `evidence` spans, so there is "
        "no match threshold to tune. Import a run with evidence (e.g. the sample runs) to use "
        "this page."
    )
    st.stop()
try:
    cov = coverage(state.store(), state.data(view), settings)
except RagevalError as e:
    st.error(
        escape_text(
            f"The evidence of this run cannot be scored at these settings: {e}", one_line=True
        )
    )
    st.stop()

# --- best score of each gold span ---
st.header("Best score of each gold span", divider="gray")
best = tuning.span_best_scores(cov, k=settings.k)
flip = tuning.flip_share(best, t, DELTA)
cols = st.columns(4)
cols[0].metric(
    "Gold spans", f"{flip.n_spans:,}", help=f"over {cov.n_queries:,} queries with evidence"
)
cols[1].metric(
    f"Covered at {t:.2f}",
    f"{flip.covered / max(flip.n_spans, 1):.1%}",
    help=f"{flip.covered:,} spans have a chunk in the top {settings.k} scoring at least {t:.2f}",
)
cols[2].metric(
    f"Flip at ±{DELTA:.2f}",
    f"{flip.share:.1%}",
    help="share of gold spans whose covered / uncovered state changes when the "
    f"threshold moves to {t - DELTA:.2f} or {t + DELTA:.2f}",
)
cols[3].metric(
    f"Lost at {t + DELTA:.2f} / gained at {t - DELTA:.2f}",
    f"-{flip.lost:,} / +{flip.gained:,}",
    help="spans covered now but not at the higher threshold / not covered now but "
    "covered at the lower one",
)
st.plotly_chart(ft.span_histogram(best, t, DELTA), width="stretch", key="threshold.histogram")
guard = (
    " Numbers must match is on: a chunk whose figures differ from the span's scores 0 here, as "
    "the metrics count it (turn it off under Matching and cut-off to see its text score)."
    if settings.numbers_must_match
    else ""
)
st.caption(
    f"Top {settings.k}, scorer `{settings.scorer_key.stored}`. The shaded band is ±{DELTA:.2f} around "
    "the threshold: a tall band means many spans hang on the exact value chosen." + guard
)

# --- borderline pairs ---
st.header("Borderline pairs", divider="gray")
left, middle, right = st.columns([3, 1, 1], vertical_alignment="center")
with left:
    band = st.slider(
        "Band around the threshold",
        0.01,
        0.3,
        0.1,
        0.01,
        key=keys.TUNING_BAND,
        help="pairs whose score lies within ± this of the threshold",
    )
with right:
    hide = st.toggle("Hide labelled pairs", key=keys.TUNING_HIDE)
pairs = state.borderline(view, band)
labels = tuning.as_scored(state.pair_labels(view), state.store(), state.data(view), settings)
lookup = labels.lookup()
shown = [p for p in pairs if not (hide and p.key in lookup)]
if not pairs:
    st.info(
        f"No (gold span, chunk) pair in the top {settings.k} scores within ±{band:.2f} of "
        f"{t:.2f}. Widen the band to see more."
    )
elif not shown:
    st.info("Every pair in this band is labelled. Widen the band or show labelled pairs.")
else:
    n_pages = (len(shown) + PER_PAGE - 1) // PER_PAGE
    if st.session_state.get(keys.TUNING_PAGE, 1) > n_pages:  # the band or labels shrank the list
        st.session_state[keys.TUNING_PAGE] = n_pages
    # no value=: the default is min_value, so setting the key above never conflicts with it
    page_no = int(middle.number_input(f"Page (of {n_pages})", 1, n_pages, key=keys.TUNING_PAGE))
    lo = (page_no - 1) * PER_PAGE
    more = " (the closest 200)" if len(pairs) >= state.TUNING_LIMIT else ""
    st.caption(
        f"Pairs {lo + 1}-{min(lo + PER_PAGE, len(shown))} of {len(shown)}{more}, closest "
        "to the threshold first. Is the gold span really in the chunk? Your answers "
        "below suggest a threshold."
    )
    for pair in shown[lo : lo + PER_PAGE]:
        label = lookup.get(pair.key)
        qidx, rank, eidx = pair.key
        with st.container(border=True):
            st.markdown(ft.pair_header_html(pair, label), unsafe_allow_html=True)
            gold, chunk, buttons = st.columns([5, 5, 1.6])
            gold.markdown(ft.evidence_html(pair), unsafe_allow_html=True)
            chunk.markdown(ft.window_html(pair), unsafe_allow_html=True)
            with buttons:
                for text, name, value, icon in (
                    ("match", "match", True, ":material/check:"),
                    ("no match", "nomatch", False, ":material/close:"),
                ):
                    st.button(
                        text,
                        key=f"threshold.{name}.{qidx}.{rank}.{eidx}",
                        type="primary" if label is value else "secondary",
                        width="stretch",
                        icon=icon,
                        on_click=actions.label_pair,
                        args=(view, pair.key, value),
                    )
                if label is not None:
                    st.button(
                        "clear",
                        key=f"threshold.clear.{qidx}.{rank}.{eidx}",
                        type="tertiary",
                        width="stretch",
                        on_click=actions.label_pair,
                        args=(view, pair.key, None),
                    )
if pairs:
    with st.expander(f"All {len(pairs)} borderline pairs as a table"):
        table = ft.borderline_frame(pairs, lookup)
        text_table(table, "threshold.pairs", f"{file_stem}_borderline_pairs.csv")

# --- agreement with the labels ---
st.header("Agreement with your labels", divider="gray")
cols = st.columns(3)
cols[0].metric("Labelled pairs", f"{labels.n:,}")
cols[1].metric("Match", f"{labels.n_match:,}")
cols[2].metric("No match", f"{labels.n_no_match:,}")
if labels.n == 0:
    st.info(
        "No labels yet: mark some borderline pairs above as **match** or **no match**. "
        f"With at least {tuning.MIN_LABELS_EACH} of each, this section suggests the threshold "
        "that agrees best with you."
    )
else:
    curve = tuning.agreement_curve(labels.label, labels.score, tuning.THRESHOLD_GRID)
    suggestion = tuning.suggest_threshold(labels.label, labels.score, t)
    st.plotly_chart(
        ft.agreement_figure(curve, t, suggestion.threshold, labels.score, labels.label),
        width="stretch",
        key="threshold.agreement",
    )
    if suggestion.best is None:  # too few labels of a kind
        st.info(suggestion.message[0].upper() + suggestion.message[1:] + ".")
    elif suggestion.threshold is None:  # enough labels, but no threshold beats chance
        st.warning(suggestion.message[0].upper() + suggestion.message[1:] + ".")
        match, no_match = tuning.conflicts(labels.label, labels.score)
        guard = (
            ""
            if settings.numbers_must_match
            else "**Numbers must match** in the sidebar, when they differ in a figure; "
        )
        st.markdown(
            f"**{match.size:,} pairs of labels conflict**: a match scoring at or below a no "
            f"match, which no threshold can put on their right sides. What can separate them: "
            f"{guard}the **semantic** scorer, when they share words but not meaning (or meaning "
            "but not words); a different normalisation (**strip punctuation**, **strip "
            "articles**), when they differ in formatting only."
        )
        text_table(
            ft.conflicts_frame(labels, match, no_match),
            "threshold.conflicts",
            f"{file_stem}_conflicts.csv",
        )
    else:
        sug_col, use_col = st.columns([1, 3], vertical_alignment="bottom")
        same = suggestion.threshold == t
        sug_col.metric(
            "Suggested threshold",
            f"{suggestion.threshold:.2f}",
            delta=None if same else f"{suggestion.threshold - t:+.2f} from {t:.2f}",
            delta_color="off",
            help="the current threshold already" if same else None,
        )
        use_col.button(
            "use it",
            key="threshold.use",
            type="primary",
            disabled=suggestion.threshold == t,
            on_click=actions.use_threshold,
            args=(suggestion.threshold,),
            help="set the sidebar's fuzzy threshold to the suggested value",
        )
        st.caption(
            f"Best balanced accuracy against your labels: {suggestion.message}; ties go to "
            "the threshold closest to the current one. Balanced accuracy, not F1: F1 ignores "
            "correct no-match verdicts, so it favours lenient thresholds when most labels are "
            "matches."
        )
    st.caption(
        f"A threshold is suggested when there are at least {tuning.MIN_LABELS_EACH} labels of "
        f"each kind and the {tuning.CONFIDENCE:.0%} bootstrap interval of its balanced accuracy "
        "lies above 0.5 (a coin toss, or one verdict for every pair); otherwise none is."
    )
    table = ft.labels_frame(labels)
    text_table(table, "threshold.labels", f"{file_stem}_labels.csv")
st.caption(
    f"Labels are kept in the store per run, scorer and normalisation (here `{settings.scorer_key.stored}`, "
    f"`{settings.norm.key}`) and are deleted with the run."
)
