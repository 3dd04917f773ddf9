"""Threshold tuning: figures (data -> plotly Figure), pair HTML and tables; no Streamlit calls.

The pair cards are HTML built here from escaped pieces only (the page renders them with
st.markdown(..., unsafe_allow_html=True)): chunk and gold-span texts are user text and must never
become markup: each piece goes through escape_text (components/text.py, the one rule
for user text), which also keeps a card one HTML block whatever the line endings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from rageval_dashboard.components.figures.curves import figure, marker
from rageval_dashboard.components.highlight import word_window
from rageval_dashboard.components.text import escape_text
from rageval_core.evaluation.tuning import Agreement, BorderlinePair, Labels

COVERED, UNCOVERED = "#2171b5", "#bdbdbd"
MATCH, NO_MATCH = "#2ca02c", "#d62728"
CURVE_COLOURS = {
    "balanced accuracy": "#08306b",
    "MCC": "#41ab5d",
    "F1": "#9ecae1",
    "accuracy": "#f28e2b",
    "precision": "#6baed6",
    "recall": "#9467bd",
}
_LAYOUT: dict[str, Any] = {
    "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
    "height": 360,
    "legend": {"orientation": "h", "y": -0.2},
}


# --- figures -------------------------------------------------------------------------------


def span_histogram(
    best: ArrayLike, threshold: float, delta: float = 0.05, bin_width: float = 0.02
) -> go.Figure:
    """Each gold span's best score, stacked covered / not covered, the threshold as a line.

    Binned with numpy (bars, not a raw-value histogram: the browser gets ~50 numbers, not one
    per span). Spans with no chunk in the top k (-inf) are counted in the title.
    """
    values = np.asarray(best, dtype=np.float32)
    finite = values[np.isfinite(values)]
    edges = np.linspace(0.0, 1.0, round(1.0 / bin_width) + 1)
    covered = finite >= np.float32(threshold)
    centres = (edges[:-1] + edges[1:]) / 2
    traces = []
    for mask, name, colour in ((~covered, "not covered", UNCOVERED), (covered, "covered", COVERED)):
        counts, _ = np.histogram(np.clip(finite[mask], 0.0, 1.0), bins=edges)
        traces.append(
            go.Bar(
                x=centres,
                y=counts,
                width=bin_width,
                name=name,
                marker_color=colour,
                customdata=np.stack([edges[:-1], edges[1:]], axis=1),
                hovertemplate="best score %{customdata[0]:.2f} to "
                "%{customdata[1]:.2f}: %{y} spans<extra>" + name + "</extra>",
            )
        )
    lo, hi = max(round(threshold - delta, 6), 0.0), min(round(threshold + delta, 6), 1.0)
    band = {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": lo,
        "x1": hi,
        "y0": 0,
        "y1": 1,
        "fillcolor": "#fdd0a2",
        "opacity": 0.35,
        "line": {"width": 0},
        "layer": "below",
    }
    missing = int(values.size - finite.size)
    title = f"Best score of each gold span ({finite.size:,} spans"
    title += f"; {missing:,} with no chunk in the top k)" if missing else ")"
    layout = {
        **_LAYOUT,
        "barmode": "stack",
        "bargap": 0.05,
        "title": title,
        "shapes": [band],
        "xaxis": {"title": "best match score in the top k", "range": [0, 1.0]},
        "yaxis": {"title": "gold spans"},
    }
    return figure(
        traces,
        layout,
        [marker(threshold, f"threshold {threshold:.2f}", "#e6550d", position="left")],
    )


#: the smallest gap (in threshold units on the zoomed axis, as a share of its width) between two
#: marker labels before the second one moves below the first
LABEL_GAP = 0.12
#: room left either side of the labelled scores on the zoomed axis
ZOOM_MARGIN = 0.05


def zoomed_range(scores: ArrayLike, *xs: float | None) -> list[float]:
    """The x range around the labelled scores and the marked thresholds, with a margin; the whole
    0..1 when there is nothing to zoom on (or the region is almost all of it)."""
    values = [float(v) for v in np.asarray(scores, dtype=np.float64) if np.isfinite(v)]
    values += [x for x in xs if x is not None]
    if not values:
        return [0.0, 1.0]
    lo, hi = max(min(values) - ZOOM_MARGIN, 0.0), min(max(values) + ZOOM_MARGIN, 1.0)
    if hi - lo < 0.1:  # one score: a window of 0.1 around it, not a needle
        mid = (lo + hi) / 2
        lo, hi = max(mid - 0.05, 0.0), min(mid + 0.05, 1.0)
    return [round(lo, 3), round(hi, 3)]


def agreement_figure(
    curve: Agreement,
    current: float,
    suggested: float | None,
    label_scores: ArrayLike = (),
    label_values: ArrayLike = (),
) -> go.Figure:
    """Balanced accuracy (what the suggestion maximises), MCC, F1, precision and recall of each
    threshold against the labels, as lines, on an axis zoomed to the labelled scores.

    The labelled pairs sit as ticks along the top (match) and bottom (no match) edges. The
    current and suggested thresholds' labels sit on either side of their lines, and one drops
    below the other when the lines are close, so they never overlap.
    """
    traces = []
    series = {
        "balanced accuracy": curve.balanced_accuracy,
        "MCC": curve.mcc,
        "F1": curve.f1,
        "precision": curve.precision,
        "recall": curve.recall,
    }
    for name, values in series.items():
        traces.append(
            go.Scatter(
                x=curve.thresholds,
                y=values,
                mode="lines",
                name=name,
                line={
                    "color": CURVE_COLOURS[name],
                    "width": 3 if name == "balanced accuracy" else 1.5,
                    "dash": "dot" if name in ("precision", "recall") else None,
                },
                hovertemplate="threshold %{x:.2f}: %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    scores = np.asarray(label_scores, dtype=np.float64)
    values = np.asarray(label_values, dtype=bool)
    for sel, y, name, colour in (
        (values, 1.08, "labelled match", MATCH),
        (~values, -1.08, "labelled no match", NO_MATCH),
    ):
        if np.any(sel):
            traces.append(
                go.Scatter(
                    x=scores[sel],
                    y=np.full(int(sel.sum()), y),
                    mode="markers",
                    name=name,
                    marker={"symbol": "line-ns-open", "size": 12, "color": colour},
                    hovertemplate="score %{x:.3f}<extra>" + name + "</extra>",
                )
            )
    x_range = zoomed_range(scores, current, suggested)
    if suggested is not None and round(suggested, 2) == round(current, 2):
        markers = [marker(current, f"current = suggested {current:.2f}", MATCH)]
    else:
        markers = [
            marker(current, f"current {current:.2f}", "#e6550d", position="left", dash="dash")
        ]
        if suggested is not None:
            # the suggestion's label goes on the side away from the current line; when the two
            # lines are closer than a label's width it also drops a line lower
            side = "right" if suggested >= current else "left"
            markers[0] = marker(
                current,
                f"current {current:.2f}",
                "#e6550d",
                position="left" if side == "right" else "right",
                dash="dash",
            )
            shape, note = marker(suggested, f"suggested {suggested:.2f}", MATCH, position=side)
            if abs(suggested - current) < LABEL_GAP * (x_range[1] - x_range[0]):
                note = {**note, "y": 0.9}
            markers.append((shape, note))
    layout = {
        **_LAYOUT,
        "title": "Agreement of each threshold with your labels",
        "xaxis": {"title": "threshold (zoomed to the labelled scores)", "range": x_range},
        # MCC runs from -1 (every verdict the labels' opposite) to 1: the axis shows it whole
        "yaxis": {"range": [-1.15, 1.3], "tickvals": [-1, -0.5, 0, 0.5, 1]},
    }
    return figure(traces, layout, markers)


# --- pair cards ----------------------------------------------------------------------------

_BOX = (
    "border:1px solid rgba(128,128,128,0.35);border-radius:0.4rem;padding:0.5rem 0.7rem;"
    "word-break:break-word;font-size:0.9rem;line-height:1.45"
)
_MARK = "background:#ffe08a;color:#1f2937;padding:0 1px;border-radius:2px"


def pair_header_html(pair: BorderlinePair, label: bool | None) -> str:
    """One line naming the pair: query id, rank, document, score, current label (escaped)."""
    rank = f"rank {pair.rank}"
    if pair.cut_rank != pair.rank:
        rank += f" (rank {pair.cut_rank} after the score cut)"
    verdict = {
        True: f'<b style="color:{MATCH}">labelled: match</b>',
        False: f'<b style="color:{NO_MATCH}">labelled: no match</b>',
        None: '<span style="opacity:0.6">not labelled</span>',
    }[label]
    parts = [
        f"<b>{escape_text(pair.query_id)}</b>",
        escape_text(rank),
        f"<code>{escape_text(pair.doc_id)}</code>",
        f"span {pair.eidx + 1}",
        f"score <b>{pair.score:.3f}</b>",
        verdict,
    ]
    query = f'<div style="opacity:0.75">{escape_text(pair.query)}</div>' if pair.query else ""
    return f"<div>{' · '.join(parts)}</div>{query}"


def evidence_html(pair: BorderlinePair) -> str:
    """The gold span in a box (escaped)."""
    return (
        f'<div style="font-size:0.8rem;opacity:0.7">gold span</div>'
        f'<div style="{_BOX}">{escape_text(pair.evidence)}</div>'
    )


def window_html(pair: BorderlinePair) -> str:
    """The chunk's matched window, <mark>ed from a word's start to a word's end (as the
    drilldown marks it), with its context (each piece escaped first)."""
    text = pair.before + pair.window + pair.after
    lo, hi = len(pair.before), len(pair.before) + len(pair.window)
    if pair.window:
        lo, hi = word_window(text, lo, hi)
    before = ("…" if pair.clipped_before else "") + escape_text(text[:lo])
    after = escape_text(text[hi:]) + ("…" if pair.clipped_after else "")
    mark = f'<mark style="{_MARK}">{escape_text(text[lo:hi])}</mark>' if pair.window else ""
    caption = "matched window in the chunk" if pair.window else "chunk (no window located)"
    return (
        f'<div style="font-size:0.8rem;opacity:0.7">{caption}</div>'
        f'<div style="{_BOX}">{before}{mark}{after}</div>'
    )


# --- tables ---------------------------------------------------------------------------------


def _verdict(label: bool | None) -> str:
    return "" if label is None else ("match" if label else "no match")


def borderline_frame(
    pairs: Sequence[BorderlinePair], lookup: Mapping[tuple[int, int, int], bool]
) -> pd.DataFrame:
    """One row per borderline pair, closest to the threshold first, with its label if any."""
    columns = [
        "query_id",
        "rank",
        "doc_id",
        "span",
        "score",
        "distance",
        "label",
        "evidence",
        "window",
    ]
    rows = [
        {
            "query_id": p.query_id,
            "rank": p.rank,
            "doc_id": p.doc_id,
            "span": p.eidx + 1,
            "score": p.score,
            "distance": p.distance,
            "label": _verdict(lookup.get(p.key)),
            "evidence": p.evidence,
            "window": p.window,
        }
        for p in pairs
    ]
    return pd.DataFrame(rows, columns=columns)


def conflicts_frame(labels: Labels, match: ArrayLike, no_match: ArrayLike) -> pd.DataFrame:
    """One row per conflicting pair of labels (tuning.conflicts): the match, the no match
    scoring at least as high, and the gap between their scores."""
    i, j = np.asarray(match, dtype=np.int64), np.asarray(no_match, dtype=np.int64)
    score = labels.score.astype(np.float64)
    return pd.DataFrame(
        {
            "match: query_id": labels.query_id[i],
            "match: rank": labels.rank[i],
            "match: span": labels.eidx[i] + 1,
            "match: score": score[i],
            "no match: query_id": labels.query_id[j],
            "no match: rank": labels.rank[j],
            "no match: span": labels.eidx[j] + 1,
            "no match: score": score[j],
            "gap": score[j] - score[i],
        }
    )


def labels_frame(labels: Labels) -> pd.DataFrame:
    """One row per labelled pair: where it is, its score and the person's verdict."""
    return pd.DataFrame(
        {
            "query_id": labels.query_id,
            "rank": labels.rank,
            "doc_id": labels.doc_id,
            "span": labels.eidx + 1,
            "score": labels.score.astype(np.float64),
            "label": [_verdict(bool(v)) for v in labels.label],
            "evidence": labels.evidence,
            "labelled_at": labels.labelled_at,
        }
    )
