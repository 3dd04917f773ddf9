"""Every st.cache_* and session-state key of the dashboard lives here."""

from __future__ import annotations

import os
from typing import Any

import streamlit as st

from rageval_core.store import RunRecord, Store


@st.cache_resource(show_spinner=False)
def store(path: str | None = None) -> Store:
    """One Store (one DuckDB connection) per store path for the whole server process."""
    return Store(path or os.environ.get("RAGEVAL_DB") or None)


def runs() -> list[RunRecord]:
    return store().runs()


def clear_caches() -> None:
    """After an import, rename or delete: derived results must be recomputed."""
    st.cache_data.clear()


def get(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)
