"""Pure helpers: core results -> pandas DataFrames for st.dataframe (no Streamlit calls)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd


def runs_frame(runs: Sequence[Any]) -> pd.DataFrame:
    """One row per run: the facts a user scans to pick a run."""
    rows = []
    for r in runs:
        settings = r.settings or {}
        rows.append(
            {
                "name": r.name,
                "format": r.format,
                "queries": r.n_queries,
                "depth": r.max_depth,
                "created": r.created_at or "",
                "imported": str(r.imported_at)[:19],
                "top_k": settings.get("top_k"),
                "retriever": settings.get("retriever") or settings.get("model") or "",
                "qrels": r.has_qrels,
                "evidence": r.has_evidence,
                "latency": r.has_latency,
                "tags": ", ".join(r.tag_keys),
            }
        )
    return pd.DataFrame(rows)
