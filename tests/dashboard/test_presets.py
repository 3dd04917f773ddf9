"""The sidebar's "Metrics as" (a seed-parity preset, in the URL) and the "why do my numbers
differ?" panel: the page shows the preset's numbers under its names, equal to the core's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard.components.tables import format_value
from rageval_dashboard.components.text import escape_text
from rageval_core import api
from rageval_core.settings.presets import PRESETS
from rageval_core.store import Store
from tests.dashboard.conftest import wait_for_scores


def cards(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.parametrize("preset", list(PRESETS))
def test_a_link_with_a_preset_shows_its_numbers_under_its_names(
    make_app: Callable[..., AppTest], app_db: Path, preset: str
) -> None:
    at = make_app(run="bm25", preset=preset)
    assert not at.exception, [e.value for e in at.exception]
    # a preset's scorer may need new pair scores (rageval_dashboard/jobs/rescoring.py)
    wait_for_scores(at)
    values = PRESETS[preset].values
    # the widgets the link did not set take the preset's values
    assert at.sidebar.selectbox(key="preset").value == preset
    assert at.sidebar.slider(key="threshold").value == values["threshold"]
    assert at.sidebar.selectbox(key="scorer").value == values["scorer"]
    assert at.sidebar.checkbox(key="cut_on").value is ("score_threshold" in values)
    with Store(app_db) as store, api.load("bm25", store=store) as run:
        expected = api.evaluate(run, preset=preset)
        why = api.explain_preset(run, preset)
    shown = cards(at)
    assert list(shown) == list(PRESETS[preset].metrics)
    assert shown == {n: format_value(n, v) for n, v in expected.metrics.items()}
    # the why panel: one table row per step and the whole change, first and last as the core's
    (table,) = [d.value for d in at.dataframe if "step" in d.value.columns]
    assert table["step"].iloc[0] == "rageval defaults"
    assert len(table) == len(why.steps) + 1
    for name in PRESETS[preset].metrics:
        assert table[name].iloc[0] == pytest.approx(why.steps[0].metrics[name], nan_ok=True)
        assert table[name].iloc[-2] == pytest.approx(expected.metrics[name], nan_ok=True)


def test_choosing_a_preset_sets_the_widgets_and_the_url(
    make_app: Callable[..., AppTest],
) -> None:
    at = make_app(run="bm25")
    assert at.sidebar.selectbox(key="preset").value == "rageval"  # rageval's own
    assert "Precision@5" not in cards(at)
    at.sidebar.selectbox(key="preset").select("eggai").run()
    wait_for_scores(at)  # eggai's scorer (difflib) may need new pair scores first
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.slider(key="threshold").value == 0.5
    assert at.sidebar.selectbox(key="scorer").value == "difflib"
    # (the URL's preset=eggai: AppTest does not update the URL here, a browser does, and
    # tests/e2e/test_pages.py checks it there)
    assert "recall_score" in cards(at)
    # a widget moved under a preset overrides it, and the panel holds it fixed at every step
    at.sidebar.slider(key="threshold").set_value(0.6).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Fuzzy threshold = 0.6" in c.value for c in at.caption)
    # back to rageval's own: the widgets return to rageval's defaults
    at.sidebar.selectbox(key="preset").select("rageval").run()
    assert at.sidebar.slider(key="threshold").value == 0.7
    assert at.sidebar.selectbox(key="scorer").value == "partial"
    assert "recall_score" not in cards(at) and "P@10" in cards(at)


def test_a_link_value_beside_a_preset_wins(make_app: Callable[..., AppTest]) -> None:
    at = make_app(run="bm25", preset="tat-rag", threshold="0.55")
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.slider(key="threshold").value == 0.55
    assert at.sidebar.selectbox(key="scorer").value == "difflib"  # not in the link: the preset's


def test_queries_page_under_a_preset(make_app: Callable[..., AppTest]) -> None:
    at = make_app("queries.py", run="bm25", preset="eggai")
    assert not at.exception, [e.value for e in at.exception]
    wait_for_scores(at)
    table = at.dataframe[0].value
    assert {"recall_score", "context_coverage"} <= set(table.columns)
    # failing under EggAI's rules: recall_score 0
    assert list(table["failing"]) == [v == 0 for v in table["recall_score"]]


def test_a_link_to_an_unknown_run_says_so(make_app: Callable[..., AppTest]) -> None:
    at = make_app(run="no_such_<b>run</b>")
    assert not at.exception, [e.value for e in at.exception]
    (notice,) = [w.value for w in at.warning if "The link names the run" in w.value]
    assert escape_text("no_such_<b>run</b>", one_line=True) in notice
    assert "<b>" not in notice  # the name is escaped for HTML and Markdown
    shown = at.sidebar.selectbox(key="run").value
    assert f"showing **{shown}** instead" in notice


def test_rageval_s_own_metrics_that_share_a_preset_s_names_stay_in_their_groups(
    make_app: Callable[..., AppTest],
) -> None:
    """EvidenceRecall@10 is rageval's name and TAT-RAG's: without a preset it is an evidence
    metric with rageval's definition, not a preset card."""
    at = make_app(run="bm25")
    assert not at.exception, [e.value for e in at.exception]
    headings = [h.value for h in at.subheader]
    assert "Evidence coverage" in headings and not any("tat-rag" in h for h in headings)
    assert "Preset" not in headings
    from rageval_dashboard.components import tables
    from rageval_core.settings.presets import METRIC_HELP

    groups = tables.metric_groups({"EvidenceRecall@10": 0.5, "P@10": 0.1})
    assert list(groups) == ["ranking", "evidence"]
    assert tables.definition("EvidenceRecall@10") != METRIC_HELP["EvidenceRecall@10"]
    assert tables.kind("EvidenceRecall@10") == "evidence"
    assert tables.definition("EvidenceRecall@10", "tat-rag") == METRIC_HELP["EvidenceRecall@10"]
    assert tables.kind("EvidenceRecall@10", "tat-rag") == "preset"
    under_preset = make_app(run="bm25", preset="tat-rag")
    assert any(h.startswith("tat-rag: ") for h in (x.value for x in under_preset.subheader))
