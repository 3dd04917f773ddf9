"""Every download the app offers: one CSV rule and one JSON rule, one kind of button.

CSV: UTF-8, no index column. JSON: UTF-8 (not ASCII-escaped), NaN and infinities as null,
numpy numbers as plain numbers. A file may be given as a callable: it is then built only when
the button is clicked (100,000 rows should not slow every rerun). A click never reruns the page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from rageval_core.ops import to_json_value

ICON = ":material/download:"


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """The CSV file of frame: UTF-8, without the index."""
    return frame.to_csv(index=False).encode("utf-8")


def json_bytes(value: Any) -> bytes:
    """The JSON file of value: UTF-8, NaN as null, one item per line at the top levels."""
    return json.dumps(to_json_value(value), ensure_ascii=False, indent=1).encode("utf-8")


def csv_download(
    label: str, frame: pd.DataFrame | Callable[[], pd.DataFrame], file_name: str, key: str
) -> None:
    """A download button for frame (or for what the callable returns, built on click) as CSV."""
    data = (lambda: csv_bytes(frame())) if callable(frame) else csv_bytes(frame)
    st.download_button(
        label, data, file_name=file_name, mime="text/csv", key=key, icon=ICON, on_click="ignore"
    )


def table_with_csv(
    frame: pd.DataFrame, key: str, file_name: str, column_config: dict[str, Any] | None = None
) -> None:
    """frame as a full-width table (widget key), then its CSV download (key + ".csv")."""
    st.dataframe(frame, hide_index=True, width="stretch", key=key, column_config=column_config)
    csv_download("Download CSV", frame, file_name, f"{key}.csv")


def json_download(label: str, value: Any, file_name: str, key: str) -> None:
    """A download button for value (or for what a callable returns, built on click) as JSON."""
    data = (lambda: json_bytes(value())) if callable(value) else json_bytes(value)
    st.download_button(
        label,
        data,
        file_name=file_name,
        mime="application/json",
        key=key,
        icon=ICON,
        on_click="ignore",
    )
