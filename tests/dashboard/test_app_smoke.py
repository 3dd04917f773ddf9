"""Every page renders on every sample run without an exception."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard.widgets.grid import MISSING
from tests.paths import REPO

DASHBOARD = REPO / "rageval_dashboard"

PAGES = ["overview.py", "queries.py", "threshold.py", "compare.py", "latency.py", "runs.py"]
RUNS = ["bm25", "tfidf_char", "hybrid_rerank"]


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("page", PAGES)
def test_page_renders(make_app: Callable[..., AppTest], page: str, run: str) -> None:
    at = make_app(page, run=run)
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.selectbox(key="run").value == run
    # every table draws a missing value as a dash, never the word "None" (components/grid.py)
    assert at.dataframe, page
    assert {d.proto.placeholder for d in at.dataframe} == {MISSING}


def test_no_table_is_drawn_around_grid() -> None:
    """st.dataframe is called in one place (grid), so no table can forget the dash."""
    calls = [
        str(p.relative_to(DASHBOARD))
        for p in DASHBOARD.rglob("*.py")
        if "st.dataframe(" in p.read_text() and p.name != "grid.py"
    ]
    assert calls == []


def test_empty_store_shows_a_message(make_app: Callable[..., AppTest], tmp_path) -> None:  # type: ignore[no-untyped-def]
    at = make_app(db=tmp_path / "empty.duckdb")
    assert not at.exception
    assert any("No runs yet" in i.value for i in at.info)
