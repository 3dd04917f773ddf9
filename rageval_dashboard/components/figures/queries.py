"""Queries page figures and tables (pure: core results -> plotly Figure / pandas DataFrame)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import NDArray

from rageval_core.evaluation.drilldown import TAG_PREFIX, ChunkDetail, QueryDetail, QueryTable

#: colour scales: dimmed greys below the threshold, greens at or above it
BELOW_SCALE = [[0.0, "#f7f7f7"], [1.0, "#d2d2d2"]]
ABOVE_SCALE = [[0.0, "#a7dcb5"], [1.0, "#1b7a3a"]]


def table_frame(table: QueryTable, rows: NDArray[np.int64]) -> pd.DataFrame:
    """The given rows of the query table, columns in display order; tags as categories (a few
    values repeated: each sent once, not once per row)."""
    return pd.DataFrame(
        {
            name: pd.Categorical(values[rows]) if name.startswith(TAG_PREFIX) else values[rows]
            for name, values in table.columns().items()
        }
    )


def table_document(
    table: QueryTable, rows: NDArray[np.int64], meta: dict[str, object]
) -> dict[str, object]:
    """The rows' per-query results for the JSON download: {run, settings, ..., queries: [...]}."""
    return {**meta, "queries": table.records(rows)}


def spans_frame(detail: QueryDetail) -> pd.DataFrame:
    """One row per gold span: covered or not in the top k, the first covering rank, best score,
    and where it comes from (imported with the run, or added in rageval by whom)."""
    rows = []
    for s in detail.spans:
        if s.covered:
            status = f"covered at rank {s.first_rank}"
        elif s.first_rank is not None:
            status = f"not in top {s.k} (first covered at rank {s.first_rank})"
        else:
            status = f"not covered in top {s.k}"
        rows.append(
            {
                "span": s.eidx + 1,
                "covered": s.covered,
                "status": status,
                "first_rank": s.first_rank,
                "best_score@k": s.best_score,
                "best_rank@k": s.best_rank,
                "evidence": s.text,
                "source": "imported" if s.added_by is None else f"added by {s.added_by}",
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "span",
            "covered",
            "status",
            "first_rank",
            "best_score@k",
            "best_rank@k",
            "evidence",
            "source",
        ],
    )


def chunk_header(ch: ChunkDetail) -> str:
    """The plain-text line above a chunk (escaped by the caller's HTML helper)."""
    rank = ch.rank
    was = f" (was #{ch.original_rank})" if ch.original_rank != rank else ""
    parts = [f"#{rank}{was}", ch.doc_id]
    parts.append("no retriever score" if ch.score is None else f"score {ch.score:.4g}")
    if ch.relevant is not None:
        parts.append(
            ("relevant" if ch.relevant else "not relevant")
            + ("" if ch.label is None else f" (qrels {ch.label})")
        )
    if ch.match_eidx >= 0 and ch.match_score is not None:
        verdict = "covers" if ch.covers else "below threshold"  # covers: what the metrics count
        if ch.numbers_differ:  # a fuzzy match with another figure (refused with the guard on)
            verdict = "numbers differ" + ("" if ch.covers else ", not counted")
        parts.append(f"best match: span {ch.match_eidx + 1} ({ch.match_score:.2f}, {verdict})")
    return " · ".join(parts)


def evidence_heatmap(
    scores: NDArray[np.float32], threshold: float, k: int, chunk_ranks: Sequence[int] | None = None
) -> go.Figure:
    """Gold span x chunk match scores; cells below the threshold dimmed, the k boundary marked.

    Axis labels are span numbers and ranks only (never user text); hover shows the score.
    """
    scores = np.asarray(scores, dtype=np.float32)
    n_spans, n_chunks = scores.shape
    ranks = list(chunk_ranks) if chunk_ranks is not None else list(range(1, n_chunks + 1))
    x = [f"#{r}" for r in ranks]
    y = [f"span {i + 1}" for i in range(n_spans)]
    above = scores >= np.float32(threshold)
    values = scores.astype(np.float64)
    hover = "%{y}, chunk %{x}<br>score %{customdata:.3f}<extra></extra>"
    fig = go.Figure()
    for mask, scale, zmin, zmax in (
        (~above, BELOW_SCALE, 0.0, max(threshold, 1e-9)),
        (above, ABOVE_SCALE, threshold, 1.0),
    ):
        z = np.where(mask, values, np.nan)
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=x,
                y=y,
                customdata=values,
                colorscale=scale,
                zmin=zmin,
                zmax=zmax,
                showscale=False,
                hovertemplate=hover,
                xgap=2,
                ygap=2,
                text=np.where(mask, np.char.mod("%.2f", values), ""),
                texttemplate="%{text}",
                textfont={"size": 11},
            )
        )
    if 0 < k < n_chunks:
        fig.add_vline(
            x=k - 0.5,
            line={"color": "#d62728", "dash": "dash", "width": 2},
            annotation_text=f"k = {k}",
            annotation_position="top",
        )
    fig.update_layout(
        height=max(180, 60 + 44 * n_spans),
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": "chunk rank", "type": "category", "side": "bottom"},
        yaxis={"type": "category", "autorange": "reversed"},
        plot_bgcolor="rgba(0,0,0,0)",
    )
    return fig
