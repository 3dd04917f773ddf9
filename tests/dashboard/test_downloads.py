"""Every download goes through components/downloads.py: one CSV rule, one JSON rule, one button."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from rageval_dashboard.widgets.downloads import ICON, csv_bytes, json_bytes
from tests.paths import REPO


def test_csv_is_utf8_without_index() -> None:
    frame = pd.DataFrame(
        {"query": ["café", "日本", "=1+1"], "score": [0.5, np.nan, 1.0]}, index=[7, 8, 9]
    )
    text = csv_bytes(frame).decode("utf-8")
    assert text.splitlines() == ["query,score", "café,0.5", "日本,", "'=1+1,1.0"]


def test_no_cell_of_run_text_is_a_spreadsheet_formula() -> None:
    """CSV injection: text a spreadsheet would run gets a leading apostrophe; numbers, numbers
    written as text, and ordinary text stay as they were; the frame itself is not changed."""
    hostile = [
        '=HYPERLINK("http://127.0.0.1:9/x","click")',
        "+cmd|' /C calc'!A0",
        "-2+3",
        "@SUM(A1)",
        "\t=1",
        "\r=1",
    ]
    kept = ["-0.25", "+1e-3", "plain", "a=b", "", "café", "one\rtwo", "three\nfour"]
    frame = pd.DataFrame({"text": hostile + kept, "delta": [-0.5] * 14})
    frame["=evil"] = "x"
    before = frame.copy()
    header, *rows = csv.reader(io.StringIO(csv_bytes(frame).decode("utf-8"), newline=""))
    assert header == ["text", "delta", "'=evil"]
    assert [row[0] for row in rows] == ["'" + h for h in hostile] + kept
    assert {row[1] for row in rows} == {"-0.5"}  # numeric columns untouched
    pd.testing.assert_frame_equal(frame, before)


def test_json_is_utf8_with_null_for_nan() -> None:
    value = {"run": "café", "queries": [{"n": np.int64(3), "x": np.float32(0.5), "y": np.nan}]}
    raw = json_bytes(value)
    assert "café".encode() in raw  # not escaped to \\u00e9
    assert json.loads(raw) == {"run": "café", "queries": [{"n": 3, "x": 0.5, "y": None}]}
    assert b"NaN" not in raw


def page() -> None:
    import pandas as pd
    import streamlit as st

    from rageval_dashboard.widgets.downloads import csv_download, json_download

    def later() -> pd.DataFrame:
        st.session_state["built"] = True
        return pd.DataFrame({"a": [1]})

    csv_download("Now (CSV)", pd.DataFrame({"a": [1]}), "now.csv", "t.now")
    csv_download("Later (CSV)", later, "later.csv", "t.later")
    json_download("Later (JSON)", lambda: later().to_dict(orient="records"), "later.json", "t.json")


def test_buttons_never_rerun_and_callables_wait_for_the_click() -> None:
    at = AppTest.from_function(page, default_timeout=30).run()
    assert not at.exception
    buttons = {b.key: b.proto for b in at.get("download_button")}
    # every table: CSV and Parquet side by side
    assert set(buttons) == {"t.now", "t.now.parquet", "t.later", "t.later.parquet", "t.json"}
    assert all(b.ignore_rerun and b.icon == ICON for b in buttons.values())
    assert buttons["t.now"].url and not buttons["t.now"].deferred_file_id
    assert buttons["t.now.parquet"].url and buttons["t.now.parquet"].label == "Now (Parquet)"
    assert buttons["t.later"].deferred_file_id and buttons["t.json"].deferred_file_id
    assert buttons["t.later.parquet"].deferred_file_id
    assert "built" not in at.session_state  # nothing was built on render


def test_parquet_holds_the_frame_exactly() -> None:
    import io

    import pandas as pd
    import pyarrow.parquet as pq

    from rageval_dashboard.widgets.downloads import parquet_bytes

    frame = pd.DataFrame(
        {"query": ["=HYPERLINK(1)", None, "a\r\nb"], "value": [0.25, float("nan"), 1.0]}
    )
    back = pq.read_table(io.BytesIO(parquet_bytes(frame))).to_pandas()
    pd.testing.assert_frame_equal(back, frame)  # no apostrophes, no lost NaN, no index column


def test_every_download_in_the_app_uses_the_helper() -> None:
    helper = REPO / "rageval_dashboard" / "widgets" / "downloads.py"
    for path in sorted((REPO / "rageval_dashboard").rglob("*.py")):
        if path == helper:
            continue
        text = path.read_text(encoding="utf-8")
        assert "download_button(" not in text, f"{path}: use components/downloads.py"
        assert not re.search(r"\.to_csv\(|json\.dumps\(", text), f"{path}: use downloads.py"
