"""The Judge calibration page's LLM relevance section (AppTest): the kappa cards equal the core's,
the metrics side by side under people's, filled and LLM labels equal evaluate's, a grade given
afterwards changes them at once; without LLM labels the page says so and shows no figure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.evaluation.agreement import calibrate_labels
from rageval_core.store import Store
from rageval_core.store import ground_truth as gt
from tests.cli import import_files
from tests.paths import REPO

JUDGED = REPO / "tests" / "data" / "judge" / "judged_run.jsonl"
PERSON = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d7", 0)]
LLM = [("q1", "d1", 3), ("q1", "d2", 1), ("q2", "d7", 1), ("q2", "d8", 2), ("q3", "d3", 2)]


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "labels.duckdb"
    import_files(path, JUDGED)
    return path


def _frame(at: AppTest) -> dict[str, dict[str, float]]:
    """The side-by-side table: metric -> {label set: value}."""
    df = next(d.value for d in at.dataframe if "people only" in d.value.columns)
    return {
        row["metric"]: {c: row[c] for c in df.columns if c != "metric"} for _, row in df.iterrows()
    }


def test_llm_labels_against_people_and_the_metrics_side_by_side(
    make_app: Callable[..., AppTest], db: Path
) -> None:
    with Store(db) as store:
        gt.set_grades(store, PERSON, annotator="alice")
        gt.set_grades(store, LLM, annotator="m", source="llm:m")
        cal = calibrate_labels(store, None, "llm:m")
    at = make_app("calibration.py", db=db, run="judged", k="2")
    assert not at.exception
    cards = {m.label: m.value for m in at.metric}
    assert cards["Cohen's kappa (grades)"] == f"{cal.pair.kappa:.3f}"
    assert cards["Weighted kappa (grades)"] == f"{cal.pair.weighted_kappa:.3f}"
    assert cards["Both graded"] == "3" and cards["LLM graded"] == "5"
    charts = [el.proto.id for el in at.get("plotly_chart")]
    assert any(i.endswith("calibration.grades.llm:m") for i in charts)
    side = _frame(at)
    # by hand (tests/core/test_label_agreement.py has the same case)
    assert side["P@2"] == pytest.approx(
        {"people only": 0.25, "people, the LLM filling the holes": 0.5, "LLM only": 5 / 6}
    )
    assert side["Judged@2"]["people only"] == pytest.approx(0.75)
    # a person grades q2's d8 not relevant: filled by people now, the middle column moves
    from rageval_dashboard import state

    leased = state.store()
    with leased.hold():  # type: ignore[attr-defined]
        gt.set_grade(leased, "q2", "d8", 0, annotator="alice")
    at.run()
    side = _frame(at)
    assert side["P@2"]["people, the LLM filling the holes"] == pytest.approx((0.5 + 0 + 0.5) / 3)


def test_without_llm_labels_the_section_says_so(make_app: Callable[..., AppTest], db: Path) -> None:
    at = make_app("calibration.py", db=db, run="judged")
    assert not at.exception
    assert any("No LLM relevance labels yet" in i.value for i in at.info)
    assert "Cohen's kappa (grades)" not in {m.label for m in at.metric}
