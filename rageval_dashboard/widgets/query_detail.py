"""One run's view of one query, as Compare shows two of them side by side: the run's name with
its role, and the query's coverage, retrieved count and top-k chunks with the matched windows."""

from __future__ import annotations

from typing import Any

import streamlit as st

from rageval_dashboard.components.figures import queries as fq
from rageval_dashboard.components.highlight import chunk_card
from rageval_dashboard.components.text import escape_text
from rageval_core.evaluation import drilldown as dd


def role_label(text: str, role: str) -> str:
    return (
        f'<div style="font-weight:600;font-size:1.1rem;margin:0.2rem 0 0.4rem 0">'
        f'{escape_text(text)} <span style="opacity:0.6;font-weight:400">({role})</span></div>'
    )


def show_detail(detail: dd.QueryDetail, row: Any) -> None:
    k = detail.k
    row.metric(
        f"Spans covered in top {k}",
        f"{detail.n_covered} / {len(detail.spans)}" if detail.spans else "—",
        width="content",
    )
    row.metric("Chunks retrieved", len(detail.chunks), width="content")
    if detail.has_qrels and detail.missed_relevant:
        st.caption(
            f"{len(detail.missed_relevant)} relevant document(s) by the qrels not in the top {k}."
        )
    if not detail.in_run or not detail.chunks:
        st.info("Nothing was retrieved for this query in this run.")
        return

    def card(ch: dd.ChunkDetail) -> str:
        header = fq.chunk_header(ch)
        return chunk_card(
            header, ch.text, ch.match_start, ch.match_end, ch.covers, odd=ch.odd_numbers
        )

    st.caption(f"Top {k} chunks, rank order; the matched gold-span window is highlighted.")
    with st.container(height=720):  # both lists scroll side by side, the page stays short
        st.markdown(
            "".join(card(ch) for ch in detail.chunks if ch.in_top_k), unsafe_allow_html=True
        )
