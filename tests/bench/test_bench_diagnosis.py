"""The diagnosis scenario at a tiny size: it runs, reports its row, and diagnoses the synthetic
run as evaluate scores it (timings are never asserted)."""

from __future__ import annotations

import numpy as np

from bench import diagnosis_speed
from bench.recompute import make_run_data, make_tensor
from bench.report import headline
from rageval_core.diagnosis import diagnose
from rageval_core.evaluate import evaluate
from rageval_core.store import Store


def test_the_scenario_reports_its_row() -> None:
    result = diagnosis_speed.run(n_queries=300, repeats=1, sample=False)
    assert result.key == "diagnosis" and result.data["n_queries"] == 300
    (row,) = headline([result]).rows
    assert row[0] == "failure diagnosis of 300 queries from kept scores"


def test_the_synthetic_run_fails_where_evaluate_says() -> None:
    data = make_run_data(*make_tensor(300))
    with Store(":memory:") as store:
        d = diagnose(store, data, relevance="evidence", check_splits=False)
        full = evaluate(data, ["FullCoverageRate@10"], store=store, relevance="evidence")
    assert np.array_equal(d.failing, full.per_query["FullCoverageRate@10"] == 0)
    assert d.span_counts()["ranked_below_k"] > 0 and d.span_counts()["near_miss"] > 0
