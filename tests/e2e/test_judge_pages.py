"""A judged run in the browser: the Judge cards, a drilldown's verdicts (notes escaped, cited
chunks outlined) and the calibration page, on a store left as `rageval judge` leaves it
(recorded replies served by the fake endpoint of tests/fakellm.py; no network)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import import_runs, serve
from tests.e2e.harness import screenshot, wait_idle
from tests.fakellm import judge_from_recording

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
JUDGED = REPO / "tests" / "data" / "judge" / "judged_run.jsonl"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Any]]]:
    """(server URL, what the pages must show, computed with the core before the server opens
    the store)."""
    from rageval_core.evaluation.calibration import calibrate
    from rageval_core.evaluation.evaluate import evaluate
    from rageval_core.rundata import load_run_data
    from rageval_core.store import Store

    db = tmp_path_factory.mktemp("judged") / "judged.duckdb"
    import_runs(db, [JUDGED])
    judge_from_recording(db)
    with Store(db) as store:
        report = evaluate(load_run_data(store, "judged"), store=store)
        c = calibrate(store, "judged")
        expected = {
            "cards": {n: f"{v:.3f}" for n, v in report.metrics.items() if n.startswith("judge.")},
            "kappa": f"{c.kappa:.3f}",
            "agreement": f"{c.agreement:.3f}",
        }
    with serve(db) as url:
        yield url, expected


def test_overview_shows_the_judge_cards(judged: tuple[str, dict[str, Any]], page: Any) -> None:
    url, expected = judged
    page.goto(f"{url}/?run=judged")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    page.get_by_role("heading", name="Judge").first.wait_for()
    assert expected["cards"], "the recorded judge left no judge.* metric"
    shown = {}
    for card in page.locator("[data-testid='stMetric']").all():
        label = card.locator("[data-testid='stMetricLabel']").inner_text().strip()
        if label.startswith("judge."):
            shown[label] = card.locator("[data-testid='stMetricValue']").inner_text().strip()
    assert shown == expected["cards"]
    screenshot(page, "judge_overview")


def test_drilldown_shows_the_verdict_escaped(judged: tuple[str, dict[str, Any]], page: Any) -> None:
    url, _ = judged
    page.goto(f"{url}/queries?run=judged&q=q4")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    verdict = page.locator(".rageval-verdict[data-prompt='faithfulness']")
    verdict.first.wait_for()
    text = verdict.first.inner_text()
    assert "faithfulness: contradicted" in text
    assert "cited contexts: [1]" in text
    # the judge's notes hold markup: shown as typed, never rendered
    assert "<b>not bold</b>" in text
    assert verdict.first.locator("b").count() == 0
    cited = page.locator(".rageval-cited")
    assert cited.count() == 1
    assert cited.first.get_attribute("data-context") == "1"
    screenshot(page, "judge_drilldown")


def test_calibration_page_computes_kappa(judged: tuple[str, dict[str, Any]], page: Any) -> None:
    url, expected = judged
    page.goto(f"{url}/calibration?run=judged")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    values = {}
    for card in page.locator("[data-testid='stMetric']").all():
        label = card.locator("[data-testid='stMetricLabel']").inner_text().strip()
        values[label] = card.locator("[data-testid='stMetricValue']").inner_text().strip()
    assert values["Cohen's kappa"] == expected["kappa"]
    assert values["Observed agreement"] == expected["agreement"]
    assert page.locator(".js-plotly-plot").count() >= 2  # the matrix and the threshold sweep
    screenshot(page, "judge_calibration")


def test_judge_page_lists_the_result_set(judged: tuple[str, dict[str, Any]], page: Any) -> None:
    url, _ = judged
    page.goto(f"{url}/judge?run=judged")
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    page.get_by_text("Result sets of this run").wait_for()
    assert page.get_by_role("button", name="Estimate (dry run)").count() == 1
    screenshot(page, "judge_page")
