"""The failure diagnosis's figures and tables (pure: a Diagnosis -> plotly Figure / DataFrame;
no Streamlit): the reasons' bars, the two-stage split, the what-if table, the Queries page's
reason column and filter, and Compare's transition table."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import NDArray

from rageval_dashboard.components.text import escape_text
from rageval_core.diagnosis import NO_GOLD, PASSING, STAGE_KINDS, Diagnosis, Stages, Transitions
from rageval_core.diagnosis.model import EVIDENCE_REASONS, IDS_REASONS

#: the Queries page's reason filter: every query (the filter off)
ANY_REASON = "(any reason)"
#: the reason column's header in the Queries table
REASON = "reason"
#: the reasons table's share column (a percentage, one decimal)
SHARE = "% of failing"
#: what each reason says to a reader (the bars' hover and the page's legend)
MEANING = {
    "numbers_differ": "a top-k chunk reaches the threshold, but its figures differ",
    "ranked_below_k": "a retrieved chunk below k covers it",
    "split_across_chunks": "its two halves are in two different top-k chunks",
    "near_miss": "a top-k chunk scores just under the threshold",
    "not_retrieved": "the evidence is in no retrieved chunk",
    "relevant_below_k": "the first relevant document is ranked below k",
}
#: one colour per reason (fix ranking: blue; chunking: orange; matching: purple; index: red)
COLOURS = {
    "numbers_differ": "#9467bd",
    "ranked_below_k": "#1f77b4",
    "split_across_chunks": "#ff7f0e",
    "near_miss": "#bcbd22",
    "not_retrieved": "#d62728",
    "relevant_below_k": "#1f77b4",
}
STAGE_COLOURS = {
    "lost_at_retrieval": "#d62728",
    "lost_at_rerank": "#ff7f0e",
    "promoted_by_rerank": "#2ca02c",
    "kept": "#1f77b4",
}


def reasons_bar(d: Diagnosis) -> go.Figure:
    """Failing queries per primary reason, one bar each (every reason, 0 included); the bar's
    customdata is its reason, for a click to filter the Queries page."""
    queries, spans = d.query_counts(), d.span_counts()
    items = "missed spans" if d.relevance == "evidence" else "failing queries"
    fig = go.Figure(
        go.Bar(
            x=list(d.reasons),
            y=[queries[r] for r in d.reasons],
            customdata=list(d.reasons),
            marker_color=[COLOURS.get(r, "#7f7f7f") for r in d.reasons],
            text=[queries[r] for r in d.reasons],
            textposition="outside",
            hovertext=[f"{MEANING.get(r, r)}<br>{spans[r]} {items}" for r in d.reasons],
            hovertemplate="%{x}: %{y} queries<br>%{hovertext}<extra></extra>",
        )
    )
    top = max([queries[r] for r in d.reasons] + [1])
    fig.update_layout(
        title=f"Failing queries by reason ({d.n_failing} of {d.query_ids.size})",
        yaxis={"title": "failing queries", "range": [0, top * 1.18]},
        xaxis={"title": None},
        margin={"t": 50, "b": 40, "l": 50, "r": 10},
        height=360,
        clickmode="event+select",
        showlegend=False,
    )
    return fig


def reasons_frame(d: Diagnosis) -> pd.DataFrame:
    """One row per reason: missed items and failing queries, each with its share."""
    queries, spans = d.query_counts(), d.span_counts()
    n_failing = d.n_failing
    items = "missed spans" if d.relevance == "evidence" else "failing queries"
    return pd.DataFrame(
        {
            "reason": list(d.reasons),
            "meaning": [MEANING.get(r, "") for r in d.reasons],
            items: [spans[r] for r in d.reasons],
            "queries": [queries[r] for r in d.reasons],
            SHARE: [100 * queries[r] / n_failing if n_failing else math.nan for r in d.reasons],
            "examples": [", ".join(d.examples(r, 5)) for r in d.reasons],
        }
    )


def what_if_frame(d: Diagnosis) -> pd.DataFrame:
    """One row per suggested change: the reason it fixes and the failing queries it turns
    passing (computed, not estimated)."""
    return pd.DataFrame(
        {
            "reason": [w.reason for w in d.what_if],
            "change": [w.change for w in d.what_if],
            "fixes": [w.fixes for w in d.what_if],
            "of failing": [w.of for w in d.what_if],
            "note": [w.note for w in d.what_if],
        }
    )


def stages_bar(stages: Stages, k: int) -> go.Figure:
    """The two-stage split of the gold items as one stacked horizontal bar."""
    total = sum(stages.counts.values()) + stages.added
    fig = go.Figure()
    for kind in STAGE_KINDS:
        n = int(stages.counts[kind])
        fig.add_trace(
            go.Bar(
                y=["gold items"],
                x=[n],
                name=kind,
                orientation="h",
                marker_color=STAGE_COLOURS[kind],
                text=[f"{kind}: {n}"] if n else None,
                textposition="inside",
                hovertemplate=f"{kind}: {n} of {total}<extra></extra>",
            )
        )
    if stages.added:  # in the reranked top k, in no first-stage list: none of the four
        fig.add_trace(
            go.Bar(
                y=["gold items"],
                x=[stages.added],
                name="added_by_rerank",
                orientation="h",
                marker_color="#9e9e9e",
                text=[f"added_by_rerank: {stages.added}"],
                textposition="inside",
                hovertemplate=f"added_by_rerank: {stages.added} of {total}<extra></extra>",
            )
        )
    first = escape_text(stages.first_stage, one_line=True)
    fig.update_layout(
        barmode="stack",
        title=(
            f"Two stages (first stage {first}): ceiling {_pct(stages.ceiling)}, reranked top "
            f"{k} {_pct(stages.reranked)}, delivered {_pct(stages.delivered)}"
        ),
        height=200,
        margin={"t": 50, "b": 30, "l": 80, "r": 10},
        legend={"orientation": "h", "y": -0.3, "traceorder": "normal"},
        xaxis={"title": None},
    )
    return fig


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def reason_options(d: Diagnosis) -> list[str]:
    """The Queries page's reason filter: any, then every status a query can have."""
    return [ANY_REASON, *d.reasons, PASSING, NO_GOLD]


def reason_mask(d: Diagnosis, reason: str) -> NDArray[np.bool_]:
    """Rows whose status is reason (every row for ANY_REASON)."""
    if reason == ANY_REASON:
        return np.ones(d.status.size, dtype=bool)
    return np.asarray(d.status == reason, dtype=bool)


def with_reason(frame: pd.DataFrame, d: Diagnosis, rows: NDArray[np.int64]) -> pd.DataFrame:
    """frame (the Queries table's rows) with the reason column after its first (the query id)."""
    out = frame.copy()
    out.insert(min(1, len(out.columns)), REASON, pd.Categorical(d.status[rows].astype(str)))
    return out


def transitions_frame(t: Transitions) -> pd.DataFrame:
    """The transition table as a matrix: baseline status (rows) x candidate status (columns),
    each cell the number of shared queries that moved so."""
    order: list[str] = []
    for c in t.cells:
        for name in (c.before, c.after):
            if name not in order:
                order.append(name)
    rank = {n: i for i, n in enumerate([PASSING, *_reasons_of(t), NO_GOLD])}
    order.sort(key=lambda n: rank.get(n, len(rank)))
    counts = {(c.before, c.after): len(c.query_ids) for c in t.cells}
    frame = pd.DataFrame(
        [[counts.get((b, a), 0) for a in order] for b in order],
        index=pd.Index(order, name="baseline \\ candidate"),
        columns=order,
    )
    return frame


def _reasons_of(t: Transitions) -> list[str]:
    return [*EVIDENCE_REASONS, *(r for r in IDS_REASONS if r not in EVIDENCE_REASONS)]


def transition_cells(t: Transitions) -> pd.DataFrame:
    """One row per non-empty cell: from, to, kind (fixed, broken, changed, same), queries."""
    return pd.DataFrame(
        [
            {
                "from": c.before,
                "to": c.after,
                "kind": c.kind,
                "queries": len(c.query_ids),
                "query ids": ", ".join(c.query_ids[:8]) + (" ..." if len(c.query_ids) > 8 else ""),
            }
            for c in t.cells
        ],
        columns=["from", "to", "kind", "queries", "query ids"],
    )


def cell_label(cell: Any) -> str:
    """A select box's text for a transition cell (shown as typed: status names only)."""
    return f"{cell.before} -> {cell.after} ({cell.kind}, {len(cell.query_ids)})"


def covering_below_k(d: Diagnosis, qidx: int) -> set[int]:
    """The ranks (after a cut) of the chunks below k that cover a missed span of query qidx."""
    m = d.missed_of(qidx)
    below = d.reasons.index("ranked_below_k") if "ranked_below_k" in d.reasons else -1
    return {int(r) for r, why in zip(m.rank, m.reason, strict=True) if why == below and r > 0}
