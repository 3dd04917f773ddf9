"""Tables whose long text can be read whole: the one mechanism every page's tables use.

The grid (st.dataframe, a canvas) cuts a cell at its column's width and cannot wrap it. A table
holding text longer than LONG_TEXT characters therefore lets the user pick a row (a click on
it); the row's long texts then show in full below the table, escaped with escape_text (run text
is untrusted: HTML and Markdown in it stay text, every line break form a line break). The
downloads beside the table hold the frame itself: every row shown, every text whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from rageval_dashboard.widgets.downloads import csv_download
from rageval_dashboard.components.highlight import text_block
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.widgets.grid import grid

#: a text cell longer than this is cut by a "large" (400 px) column of the grid
LONG_TEXT = 60
#: the class of the block under a table that shows a picked row's texts whole
FULL_TEXT_CLASS = "rageval-fulltext"
PICK_HINT = "long texts are cut in the table: click a row to read them whole below it"


def long_columns(frame: pd.DataFrame, limit: int = LONG_TEXT) -> list[str]:
    """The text columns of frame holding at least one value longer than limit characters."""
    out = []
    for name in frame.columns:
        column = frame[name]
        if column.dtype != object and not isinstance(column.dtype, pd.StringDtype):
            continue
        if any(isinstance(v, str) and len(v) > limit for v in column):
            out.append(str(name))
    return out


def text_column(label: str | None = None, help: str = PICK_HINT) -> Any:
    """The column config of a long-text column: wide, with the hint on its header."""
    return st.column_config.TextColumn(label, width="large", help=help)


def full_text_html(row: Mapping[str, Any], columns: Sequence[str]) -> str:
    """A picked row's long texts, each under its column's name, escaped (an em dash for none)."""
    blocks = []
    for name in columns:
        value = row.get(name)
        text = None if value is None or (isinstance(value, float) and value != value) else value
        blocks.append(text_block(name, None if text is None else str(text)))
    return f'<div class="{FULL_TEXT_CLASS}">{"".join(blocks)}</div>'


def picked_row(event: Any, n_rows: int) -> int | None:
    """The row a table's selection event names, if it is still one of the table's rows."""
    rows = list(event.selection.rows) if event is not None else []
    return rows[0] if rows and 0 <= rows[0] < n_rows else None


def text_table(
    frame: pd.DataFrame,
    key: str,
    file_name: str | None,
    *,
    display: Any = None,
    column_config: Mapping[str, Any] | None = None,
    download_label: str = "Download CSV",
    height: int | None = None,
) -> None:
    """frame as a full-width table (widget key); a row's long texts whole below it when picked;
    then its CSV and Parquet downloads (key + ".csv"), unless file_name is None.

    display: what the grid shows instead of frame (a pandas Styler formatting its numbers);
    the downloads and the full texts always come from frame.
    """
    long = long_columns(frame)
    config = {name: text_column() for name in long}
    config.update(column_config or {})
    shown = frame if display is None else display
    if long:
        event = grid(
            shown,
            hide_index=True,
            width="stretch",
            key=key,
            column_config=config,
            on_select="rerun",
            selection_mode="single-row",
            **({"height": height} if height else {}),
        )
        row = picked_row(event, len(frame))
        if row is None:
            names = escape_text(", ".join(long), one_line=True)  # a tag key is run text
            st.caption(
                f"Long texts are cut in the table ({names}): click a row to read them whole."
            )
        else:
            with st.container(border=True):
                st.markdown(full_text_html(frame.iloc[row].to_dict(), long), unsafe_allow_html=True)
    else:
        grid(
            shown,
            hide_index=True,
            width="stretch",
            key=key,
            column_config=config,
            **({"height": height} if height else {}),
        )
    if file_name is not None:
        csv_download(download_label, lambda: frame, file_name, f"{key}.csv")  # built on click
