"""The semantic scorer in the dashboard: the sidebar's threshold follows the scorer, and the
Threshold tuning page draws semantic scores (AppTest)."""

from __future__ import annotations

from collections.abc import Callable

from streamlit.testing.v1 import AppTest

from rageval_core.settings.schema import SEMANTIC_THRESHOLD
from tests.dashboard.conftest import wait_for_scores


def test_threshold_follows_the_scorer_until_moved(make_app: Callable[..., AppTest]) -> None:
    at = make_app(run="bm25")
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.slider(key="threshold").value == 0.7
    at.sidebar.selectbox(key="scorer").select("semantic").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.slider(key="threshold").value == SEMANTIC_THRESHOLD
    assert at.sidebar.selectbox(key="embedder").value == "wordllama"
    at.sidebar.slider(key="threshold").set_value(0.52).run()
    at.sidebar.selectbox(key="scorer").select("hybrid").run()
    assert at.sidebar.slider(key="threshold").value == 0.52  # a moved threshold stays
    at.sidebar.slider(key="threshold").set_value(SEMANTIC_THRESHOLD).run()
    at.sidebar.selectbox(key="scorer").select("partial").run()
    assert at.sidebar.slider(key="threshold").value == 0.7


def test_threshold_page_draws_semantic_scores(make_app: Callable[..., AppTest]) -> None:
    at = make_app("threshold.py", run="bm25", scorer="semantic", threshold=str(SEMANTIC_THRESHOLD))
    assert not at.exception, [e.value for e in at.exception]
    # new pair scores are computed in the background under a progress bar (jobs/rescoring.py)
    wait_for_scores(at)
    text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "semantic:wordllama" in text
    assert at.get("plotly_chart"), "the score histogram is drawn"
