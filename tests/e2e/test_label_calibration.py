"""The Judge calibration page's LLM relevance section in a browser: grades from the fake
OpenAI-compatible server on 127.0.0.1 (tests/fakellm.py) beside a person's, the kappa shown equal
to the core's, the confusion drawn as a heatmap; and the honest empty case."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import import_runs, serve
from tests.e2e.harness import screenshot, wait_idle
from tests.fakellm import FakeServer

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
JUDGED = REPO / "tests" / "data" / "judge" / "judged_run.jsonl"
#: what the fake LLM replies, by passage; and what a person said of the same documents
LLM = {
    "The standard rate of VAT is 20%.": 3,
    "Reduced rates apply to fuel.": 0,
    "The Charity Commission registers charities.": 1,
    "Independent examiners review small charity accounts.": 2,
    "VAT returns are due one month and seven days after the period ends.": 2,
}
PERSON = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d7", 0), ("q2", "d8", 2), ("q3", "d3", 1)]


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    from rageval_core.evaluation.agreement import calibrate_labels
    from rageval_core.judging import JudgeConfig, run_judge
    from rageval_core.store import Store
    from rageval_core.store import ground_truth as gt

    db = tmp_path_factory.mktemp("labels") / "labels.duckdb"
    import_runs(db, [JUDGED])
    with Store(db) as store:
        with FakeServer() as server:
            server.state.relevance = dict(LLM)
            config = JudgeConfig(base_url=server.base_url, model="fake-llm", metrics=("relevance",))
            assert run_judge(store, "judged", config, api_key="").relevance_labels == 7
        # the person labels after the LLM (an LLM grades only what nobody labelled before it)
        gt.set_grades(store, PERSON, annotator="alice")
        cal = calibrate_labels(store, None, "llm:fake-llm")
        assert cal.pair.n == 5 and cal.pair.kappa is not None
        expected = {"kappa": f"{cal.pair.kappa:.3f}", "weighted": f"{cal.pair.weighted_kappa:.3f}"}
    with serve(db) as url:
        yield url, expected


def _cards(page: Any) -> dict[str, str]:
    out = {}
    for card in page.locator("[data-testid='stMetric']").all():
        label = card.locator("[data-testid='stMetricLabel']").inner_text().strip()
        out[label] = card.locator("[data-testid='stMetricValue']").inner_text().strip()
    return out


def test_calibration_shows_the_llm_labels_kappa_and_heatmap(
    labelled: tuple[str, dict[str, str]], page: Any
) -> None:
    url, expected = labelled
    page.goto(f"{url}/calibration?run=judged")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    page.get_by_role("heading", name="LLM relevance labels against people").wait_for()
    page.get_by_text("llm:fake-llm", exact=False).first.wait_for()
    cards = _cards(page)
    assert cards["Cohen's kappa (grades)"] == expected["kappa"]
    assert cards["Weighted kappa (grades)"] == expected["weighted"]
    assert cards["Both graded"] == "5"
    heatmap = page.locator(".js-plotly-plot").filter(has_text="llm:fake-llm")
    assert heatmap.count() == 1
    screenshot(page, "label_calibration")


def test_no_llm_labels_says_so(judged_empty: str, page: Any) -> None:
    page.goto(f"{judged_empty}/calibration?run=judged")
    wait_idle(page)
    page.get_by_text("No LLM relevance labels yet").wait_for()
    assert "Cohen's kappa (grades)" not in _cards(page)


@pytest.fixture(scope="module")
def judged_empty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("empty") / "empty.duckdb"
    import_runs(db, [JUDGED])
    with serve(db) as url:
        yield url
