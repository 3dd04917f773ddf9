"""Every download the app offers: one CSV rule, one Parquet rule and one JSON rule, one kind of
button. Every table is offered as CSV and Parquet side by side, with exactly its rows.

CSV: UTF-8, no index column, CRLF rows with every line break inside a cell quoted, and no cell a spreadsheet would run: run text is untrusted, and a
text cell opening with = + - @ (or a tab or CR before one) is a formula to Excel and LibreOffice
(=HYPERLINK(...) makes a link, =WEBSERVICE(...) a request), so such a cell gets a leading
apostrophe, as OWASP's CSV-injection advice says; numbers written as text are left as they are.
JSON: UTF-8 (not ASCII-escaped), NaN and infinities as null,
numpy numbers as plain numbers. A file may be given as a callable: it is then built only when
the button is clicked (100,000 rows should not slow every rerun). A click never reruns the page.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st
from rageval_dashboard.widgets.grid import grid

from rageval_core.metrics.latency_cost import to_json_value

ICON = ":material/download:"


#: what a spreadsheet reads as the start of a formula
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def inert_cell(value: Any) -> Any:
    """value, with a leading apostrophe if it is text a spreadsheet would take for a formula."""
    if not isinstance(value, str) or not value.startswith(FORMULA_START):
        return value
    try:
        float(value)  # "-0.25", "+1e-3": a number, not a formula
    except ValueError:
        return "'" + value
    return value


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """The CSV file of frame: UTF-8, without the index, text cells made inert for spreadsheets."""
    text = frame.select_dtypes(include=["object", "string"]).columns
    if len(text):
        frame = frame.copy()
        for column in text:
            frame[column] = frame[column].map(inert_cell)
    frame.columns = [inert_cell(str(c)) for c in frame.columns]
    # CRLF rows (RFC 4180): the writer then quotes any cell holding a CR or LF, so a lone CR in
    # a chunk's text cannot end a row early
    return frame.to_csv(index=False, lineterminator="\r\n").encode("utf-8")


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """The Parquet file of frame (pyarrow, no index): the values as they are, types kept (a
    Parquet reader never runs a cell, so no apostrophes)."""
    out = io.BytesIO()
    frame.to_parquet(out, index=False, engine="pyarrow")
    return out.getvalue()


def json_bytes(value: Any) -> bytes:
    """The JSON file of value: UTF-8, NaN as null, one item per line at the top levels."""
    return json.dumps(to_json_value(value), ensure_ascii=False, indent=1, allow_nan=False).encode(
        "utf-8"
    )


def csv_download(
    label: str, frame: pd.DataFrame | Callable[[], pd.DataFrame], file_name: str, key: str
) -> None:
    """Download buttons for frame (or for what the callable returns, built on click) as CSV and,
    beside it, as Parquet (key + ".parquet", the file name's .csv made .parquet)."""
    data = (lambda: csv_bytes(frame())) if callable(frame) else csv_bytes(frame)
    parquet = (lambda: parquet_bytes(frame())) if callable(frame) else parquet_bytes(frame)
    stem = file_name[: -len(".csv")] if file_name.endswith(".csv") else file_name
    with st.container(horizontal=True, width="content"):
        st.download_button(
            label, data, file_name=file_name, mime="text/csv", key=key, icon=ICON, on_click="ignore"
        )
        st.download_button(
            label.replace("CSV", "Parquet") if "CSV" in label else f"{label} (Parquet)",
            parquet,
            file_name=f"{stem}.parquet",
            mime="application/vnd.apache.parquet",
            key=f"{key}.parquet",
            icon=ICON,
            on_click="ignore",
        )


def table_with_csv(
    frame: pd.DataFrame, key: str, file_name: str, column_config: dict[str, Any] | None = None
) -> None:
    """frame as a full-width table (widget key), then its CSV download (key + ".csv"), built
    on click."""
    grid(frame, hide_index=True, width="stretch", key=key, column_config=column_config)
    csv_download("Download CSV", lambda: frame, file_name, f"{key}.csv")


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


def report_download(
    label: str, build: Callable[[], str], file_name: str, key: str, help: str
) -> None:
    """A download button for the HTML page build() returns, built on click."""
    st.download_button(
        label,
        lambda: build().encode("utf-8"),
        file_name=file_name,
        mime="text/html",
        key=key,
        icon=ICON,
        on_click="ignore",
        help=help,
    )
