"""Reading aids: whole-word highlights, marker lines under the curves, bands from a file, and
the per-view downloads (this view as JSON with its link, the HTML report)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard.components import tables
from rageval_dashboard.components.figures import curves as figures
from rageval_dashboard.components.bands import read_bands
from rageval_dashboard.components.highlight import highlight, word_window
from rageval_dashboard.components.tables import BANDS


@pytest.mark.parametrize(
    ("text", "start", "end", "want"),
    [
        ("total revenue grew by 5%", 8, 13, "revenue"),  # "venue" -> the whole word
        ("total revenue grew by 5%", 6, 18, "revenue grew"),  # already whole words
        ("total revenue grew by 5%", 10, 16, "revenue grew"),  # ends mid-word too
        ("a-b c", 2, 3, "b"),  # punctuation is a boundary
    ],
)
def test_windows_are_widened_to_whole_words(text: str, start: int, end: int, want: str) -> None:
    a, b = word_window(text, start, end)
    assert text[a:b] == want
    marked = re.search(r"<mark[^>]*>(.*?)</mark>", highlight(text, start, end))
    assert marked is not None and marked.group(1) == want


def test_marker_lines_sit_below_the_curves() -> None:
    shape, _ = figures.marker(5, "k = 5")
    assert shape["layer"] == "below"


def test_bands_from_a_file_override_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "bands.toml"
    path.write_text(
        '[R]\npoor = 0.3\ngood = 0.9\n["Hit@1"]\ngood = 0.6\n[nDCG]\npoor = 0.4\ngood = 0.7\n'
    )
    bands, problem = read_bands(BANDS, path)
    assert problem is None
    assert bands["R"] == (0.3, 0.9)
    assert bands["Hit@1"] == (BANDS["Hit@1"][0], 0.6)  # a bound left out keeps the default
    assert bands["nDCG"] == (0.4, 0.7)
    assert bands["RR"] == BANDS["RR"]  # the source documents' MRR band: > 0.7 / < 0.3
    assert BANDS["RR"] == (0.3, 0.7) and BANDS["R"] == (0.5, 0.8)


@pytest.mark.parametrize(
    ("text", "field"),
    [("[R]\npoor = 0.9\ngood = 0.1\n", "R"), ("R = 3\n", "R"), ("[R\n", "TOML")],
)
def test_a_bad_bands_file_is_reported_and_the_defaults_kept(
    tmp_path: Path, text: str, field: str
) -> None:
    path = tmp_path / "bands.toml"
    path.write_text(text)
    bands, problem = read_bands(BANDS, path)
    assert bands == BANDS
    assert problem is not None and field in problem and str(path) in problem


def test_the_cards_follow_the_bands_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert tables.band("R@10", 0.85) == "good"
    path = tmp_path / "bands.toml"
    path.write_text("[R]\npoor = 0.5\ngood = 0.9\n")
    monkeypatch.setenv("RAGEVAL_BANDS", str(path))
    assert tables.band("R@10", 0.85) is None
    assert tables.band("R@10", 0.95) == "good"


def test_a_lower_is_better_band_reads_its_direction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BestRank: a small rank is good. Its band is good below 2 and poor above 5 (main refused
    the file: it wanted poor <= good, which would have called a rank of 6 good)."""
    path = tmp_path / "bands.toml"
    path.write_text("[BestRank]\ngood = 2\npoor = 5\n")
    bands, problem = read_bands(BANDS, path)
    assert problem is None and bands["BestRank"] == (5.0, 2.0)
    monkeypatch.setenv("RAGEVAL_BANDS", str(path))
    assert tables.band("BestRank", 1.5) == "good"
    assert tables.band("BestRank@10", 6.0) == "poor"
    assert tables.band("BestRank", 3.0) is None
    # the honest negative: the higher-is-better order given for a lower-is-better metric
    path.write_text("[BestRank]\ngood = 5\npoor = 2\n")
    bands, problem = read_bands(BANDS, path)
    assert bands == BANDS and problem is not None and "good <= poor" in problem
    assert tables.band("BestRank", 6.0) is None and tables.band("R@10", 0.85) == "good"


def _view_page() -> None:
    import streamlit as st

    from rageval_dashboard.widgets.view_export import view_document
    from rageval_dashboard.keys import View
    from rageval_core.evaluation.report import Settings

    st.query_params["run"] = "bm25"
    st.query_params["compare.candidates"] = ["a", "b c"]
    run = type("R", (), {"name": "bm25"})()
    doc = view_document("overview", View(run=run, settings=Settings()), {"x": 1})  # type: ignore[arg-type]
    st.session_state["doc"] = doc


def test_the_view_document_holds_its_link_settings_and_numbers() -> None:
    at = AppTest.from_function(_view_page, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    doc = at.session_state["doc"]
    json.dumps(doc)
    assert doc["page"] == "overview" and doc["run"] == "bm25" and doc["numbers"] == {"x": 1}
    assert doc["url"].endswith("?run=bm25&compare.candidates=a&compare.candidates=b+c")
    assert doc["settings"]["k"] == 10


def test_overview_and_compare_offer_the_view_and_the_report(
    make_app: Callable[..., AppTest],
) -> None:
    for page, prefix in (("overview.py", "overview"), ("compare.py", "compare")):
        at = make_app(page)
        assert not at.exception
        keys = {b.key for b in at.get("download_button")}
        assert {f"{prefix}.view_json", f"{prefix}.report_html"} <= keys, keys
