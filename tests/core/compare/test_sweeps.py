"""Sweeps: runs with retriever settings lined up; the swept settings; the best under a budget."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from rageval_core.compare.sweeps import COST, LATENCY, best_under, sweep, swept_settings
from rageval_core.errors import ProblemLog
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.formats import read_inputs
from rageval_core.rundata import load_run_data
from rageval_core.store import Store

REPO = Path(__file__).resolve().parents[3]
SWEEP = sorted((REPO / "tests" / "data" / "sweep").glob("*.jsonl"))
OTHER = REPO / "tests" / "data" / "good" / "native_full.jsonl"


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    s = Store(":memory:")
    for path in [*SWEEP, OTHER]:
        log = ProblemLog()
        s.import_run(read_inputs([path], None, log)[0], log)
    yield s
    s.close()


def test_the_sweep_lines_up_runs_with_settings(store: Store) -> None:
    rows = sweep(store, metrics=["R@5", "RR"])
    names = {r.run for r in rows}
    assert {"sweep-k3-sim", "sweep-k5-sim", "sweep-k5-mmr", "sweep-k8-mmr"} <= names
    assert swept_settings([r for r in rows if r.run.startswith("sweep-")]) == [
        "top_k",
        "score_threshold",
        "search_type",
    ]
    for r in rows:  # the metrics are evaluate()'s, run by run
        report = evaluate(load_run_data(store, store.run(r.run).run_id), ["R@5", "RR"], store=store)
        assert r.metrics["R@5"] == pytest.approx(report.metrics["R@5"])


def test_the_best_under_a_budget(store: Store) -> None:
    rows = [r for r in sweep(store, metrics=["RR"]) if r.run.startswith("sweep-")]
    # RR grows with top_k here (the gold doc sits deeper in later queries), and so do latency
    # and cost: the budget decides
    free = best_under(rows, "RR")
    assert free is not None and free.run == "sweep-k8-mmr"
    fast = best_under(rows, "RR", LATENCY, 70.0)
    assert fast is not None and fast.run == "sweep-k5-sim"  # same RR as k5-mmr, within budget
    assert all(r.value(LATENCY) <= 70.0 for r in rows if r.run == fast.run)
    cheap = best_under(rows, "RR", COST, min(r.value(COST) for r in rows))
    assert cheap is not None and cheap.run == "sweep-k3-sim"
    assert best_under(rows, "RR", LATENCY, 1.0) is None
    # latency and cost themselves: lower is better
    quickest = best_under(rows, LATENCY)
    assert quickest is not None and quickest.value(LATENCY) == min(r.value(LATENCY) for r in rows)
    assert not any(math.isnan(r.value(COST)) for r in rows)


def test_a_source_of_held_reports_gives_the_same_rows_without_evaluating(store: Store) -> None:
    """source (the dashboard's cache): its reports are used as they are when they hold every
    metric asked for; the rows are the ones evaluated here, field by field."""
    from rageval_core.latency.run_summary import ops_summary

    asked: list[str] = []

    def source(record):  # type: ignore[no-untyped-def]
        asked.append(record.name)
        data = load_run_data(store, record.run_id)
        report = evaluate(data, ["R@5", "RR", "P@5"], store=store)
        return data, dataclasses.replace(report, ops=ops_summary(data))

    plain = sweep(store, metrics=["R@5", "RR"])
    held = sweep(store, metrics=["R@5", "RR"], source=source)
    assert set(asked) == {r.run for r in plain}
    assert [r.run for r in held] == [r.run for r in plain]
    for a, b in zip(plain, held, strict=True):
        assert a.settings == b.settings and a.metrics == pytest.approx(b.metrics)
        assert (a.latency_p95_ms, a.cost_per_query_usd) == pytest.approx(
            (b.latency_p95_ms, b.cost_per_query_usd), nan_ok=True
        )
    # the held report's extra metric is not added; no metrics asked: all of the report's
    assert all(set(r.metrics) == {"R@5", "RR"} for r in held)
    assert all("P@5" in r.metrics for r in sweep(store, source=source))
