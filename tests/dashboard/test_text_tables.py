"""Long text in tables can be read whole (rageval_dashboard/widgets/text_tables.py): which columns
count as long, the escaped full-text block under a table, and the table's own downloads."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard.components.text import LINE_BREAK
from rageval_dashboard.widgets.text_tables import (
    FULL_TEXT_CLASS,
    LONG_TEXT,
    full_text_html,
    long_columns,
)
from tests.dashboard.test_escaping import ATTACKS, BARE_LINK, render, tags, visible

LONG = "the whole of a long evidence span " * 4


def test_long_columns_are_the_text_columns_with_a_long_value() -> None:
    frame = pd.DataFrame(
        {
            "query_id": ["q1", "q2"],
            "score": [0.5, np.nan],
            "evidence": ["short", LONG],
            "edge": ["x" * LONG_TEXT, None],  # exactly the limit: not cut
            "window": pd.array(["y" * (LONG_TEXT + 1), None], dtype="string"),
        }
    )
    assert long_columns(frame) == ["evidence", "window"]
    assert long_columns(frame.iloc[:0]) == []


@pytest.mark.parametrize(("payload", "brk"), ATTACKS)
def test_the_full_text_block_reads_nothing_and_loses_nothing(payload: str, brk: str) -> None:
    text = f"{LONG}{brk}{payload}{brk}end"
    out = full_text_html({"evidence": text, f"col{brk}<b>x</b>": payload}, ["evidence"])
    rendered = render(out)
    assert tags(rendered) <= {"div", "/div", "span", "/span", "br"}, rendered
    assert not BARE_LINK.search(re.sub(r"<[^>]+>", "", rendered).replace("&#", ""))
    assert f'class="{FULL_TEXT_CLASS}"' in out
    # the column's name, then its text as written (each line break one newline)
    assert visible(rendered) == "evidence\n" + LINE_BREAK.sub("\n", text).strip()


def test_a_missing_text_shows_a_dash() -> None:
    assert visible(render(full_text_html({"a": None, "b": float("nan")}, ["a", "b"]))) == (
        "a\n—b\n—"
    )


def _page() -> None:
    import pandas as pd
    import streamlit as st

    from rageval_dashboard.widgets.text_tables import text_table

    frame = pd.DataFrame(st.session_state["frame"])
    text_table(frame, "t.table", "table.csv", column_config=None)


def _app(frame: pd.DataFrame) -> AppTest:
    at = AppTest.from_function(_page, default_timeout=30)
    at.session_state["frame"] = frame.to_dict(orient="list")
    return at.run()


def test_a_table_with_long_text_says_how_to_read_it_and_downloads_it_whole() -> None:
    frame = pd.DataFrame({"query_id": ["q1", "q2"], "evidence": [LONG, "<b>short</b>"]})
    at = _app(frame)
    assert not at.exception
    assert len(at.dataframe) == 1
    pd.testing.assert_frame_equal(at.dataframe[0].value, frame)
    hint = [c.value for c in at.caption]
    assert hint == ["Long texts are cut in the table (evidence): click a row to read them whole."]
    assert sorted(b.key for b in at.get("download_button")) == [
        "t.table.csv",
        "t.table.csv.parquet",
    ]


def test_a_table_of_short_text_is_a_plain_table() -> None:
    frame = pd.DataFrame({"query_id": ["q1", "q2"], "score": [0.1, 0.2]})
    at = _app(frame)
    assert not at.exception
    assert len(at.dataframe) == 1
    assert [c.value for c in at.caption] == []


def test_the_download_is_the_frame_itself() -> None:
    """What the CSV and Parquet buttons hold: every row, every text whole."""
    from rageval_dashboard.widgets.downloads import csv_bytes, parquet_bytes

    frame = pd.DataFrame({"query_id": ["q1", "q2"], "evidence": [LONG + "\nmore", "b"]})
    back = pd.read_csv(io.BytesIO(csv_bytes(frame)))
    assert back["evidence"].tolist() == frame["evidence"].tolist()
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(parquet_bytes(frame))), frame)
