"""Curves over k and over the threshold equal evaluate() at every point they are checked at."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rageval_core.evaluation.curves import SWEPT, curve_names, curves_over_k, curves_over_threshold
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.formats import read_inputs
from rageval_core.rundata import RunData, load_run_data
from rageval_core.store import Store
from tests.core.test_evaluate import make_run
from tests.paths import REPO

SAMPLE = REPO / "sample_runs" / "bm25.jsonl"


@pytest.fixture(scope="module")
def sample() -> tuple[Store, RunData]:
    """The bm25 sample run (360 queries, qrels and evidence) in a scratch store."""
    store = Store(":memory:")
    log = ProblemLog()
    store.import_run(read_inputs([SAMPLE], None, log)[0], log)
    return store, load_run_data(store, store.runs()[0].run_id)


@pytest.fixture()
def tiny() -> tuple[Store, RunData]:
    store = Store(":memory:")
    store.import_run(make_run(), ProblemLog())
    return store, load_run_data(store, "tiny")


def _same(curve_value: float, report_value: float) -> bool:
    if math.isnan(report_value):
        return math.isnan(curve_value)
    return curve_value == pytest.approx(report_value, abs=1e-12)


@pytest.mark.parametrize("relevance", ["ids", "evidence"])
@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.93])
def test_curves_over_k_equal_evaluate(
    sample: tuple[Store, RunData], relevance: str, threshold: float
) -> None:
    store, data = sample
    s = Settings(threshold=threshold, relevance=relevance)  # type: ignore[arg-type]
    names = curve_names(data, relevance)  # type: ignore[arg-type]
    assert {"P", "R", "nDCG", "Hit", "RR", "AP", "EvidenceRecall", "ContextCoverage"} <= set(names)
    curves = curves_over_k(store, data, s, names)
    assert set(curves) == set(names)
    assert all(c.shape == (data.depth,) for c in curves.values())
    for k in (1, 3, data.depth):
        report = evaluate(data, [f"{n}@{k}" for n in names], store=store, settings=s)
        for name in names:
            assert _same(curves[name][k - 1], report.metrics[f"{name}@{k}"]), (name, k)


def test_other_ranking_measures_and_aliases(sample: tuple[Store, RunData]) -> None:
    """F1 (vectorised), AQWV (evaluated per k) and an alias give evaluate()'s values too."""
    store, data = sample
    s = Settings(relevance="ids", rel_level=2)  # graded qrels: a stricter relevance level
    curves = curves_over_k(store, data, s, ["F1", "AQWV", "MRR", "nDCG"])
    assert set(curves) == {"F1", "AQWV", "MRR", "nDCG"}
    for k in (1, 5, data.depth):
        report = evaluate(
            data, [f"F1@{k}", f"AQWV@{k}", f"RR@{k}", f"nDCG@{k}"], store=store, settings=s
        )
        assert _same(curves["F1"][k - 1], report.metrics[f"F1@{k}"])
        assert _same(curves["AQWV"][k - 1], report.metrics[f"AQWV@{k}"])
        assert _same(curves["MRR"][k - 1], report.metrics[f"RR@{k}"])
        assert _same(curves["nDCG"][k - 1], report.metrics[f"nDCG@{k}"])


def test_recall_like_curves_never_fall(sample: tuple[Store, RunData]) -> None:
    store, data = sample
    curves = curves_over_k(
        store, data, Settings(), ["R", "Hit", "EvidenceRecall", "FullCoverageRate"]
    )
    for name, values in curves.items():
        assert np.all(np.diff(values) >= -1e-12), name
    assert curves["R"][-1] > curves["R"][0]  # a real curve, not a constant


def test_curves_over_k_with_a_score_cut(sample: tuple[Store, RunData]) -> None:
    store, data = sample
    cut = float(np.nanmedian(data.chunk_score))  # drops about half the chunks
    s = Settings(score_threshold=cut, relevance="ids")
    curves = curves_over_k(store, data, s, ["R", "nDCG", "PerQueryCoverage"])
    for k in (2, 7):
        report = evaluate(
            data, [f"R@{k}", f"nDCG@{k}", f"PerQueryCoverage@{k}"], store=store, settings=s
        )
        assert _same(curves["R"][k - 1], report.metrics[f"R@{k}"])
        assert _same(curves["nDCG"][k - 1], report.metrics[f"nDCG@{k}"])
        assert _same(curves["PerQueryCoverage"][k - 1], report.metrics[f"PerQueryCoverage@{k}"])
    uncut = curves_over_k(store, data, dataclasses.replace(s, score_threshold=None), ["R"])
    assert not np.allclose(uncut["R"], curves["R"])  # the cut changes something


@pytest.mark.parametrize("k", [1, 4, 10])
def test_curves_over_threshold_equal_evaluate(sample: tuple[Store, RunData], k: int) -> None:
    store, data = sample
    grid = np.round(np.arange(0.0, 1.0001, 0.01), 2)
    s = Settings(k=k, relevance="evidence")
    curves = curves_over_threshold(store, data, s, grid)
    assert set(curves) == set(SWEPT)
    ranking = curves_over_threshold(store, data, s, grid[::10], names=["R", "nDCG", "RR"])
    for t in (0.0, 0.3, 0.7, 0.85, 1.0):
        i = round(t * 100)
        report = evaluate(
            data,
            [
                f"EvidenceRecall@{k}",
                f"PerQueryCoverage@{k}",
                f"FullCoverageRate@{k}",
                f"R@{k}",
                f"nDCG@{k}",
                f"RR@{k}",
            ],
            store=store,
            settings=dataclasses.replace(s, threshold=t),
        )
        for name in ("EvidenceRecall", "PerQueryCoverage", "FullCoverageRate"):
            assert _same(curves[name][i], report.metrics[f"{name}@{k}"]), (name, t)
        if i % 10 == 0:
            for name in ("R", "nDCG", "RR"):
                assert _same(ranking[name][i // 10], report.metrics[f"{name}@{k}"]), (name, t)
    assert np.all(np.diff(curves["EvidenceRecall"]) <= 1e-12)  # stricter never covers more


def test_tiny_run_by_hand(tiny: tuple[Store, RunData]) -> None:
    store, data = tiny
    curves = curves_over_k(store, data, Settings(), ["EvidenceRecall", "FullCoverageRate", "P"])
    # query a: its spans at ranks 2 and 3; query b: its one span at rank 1 (3 spans in all)
    assert curves["EvidenceRecall"].tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert curves["FullCoverageRate"].tolist() == pytest.approx([1 / 2, 1 / 2, 1.0])
    # evidence mode: covering chunks are relevant; a: ranks 2, 3; b: rank 1 (list of 1)
    assert curves["P"].tolist() == pytest.approx(
        [(0 + 1) / 2, (1 / 2 + 1 / 2) / 2, (2 / 3 + 1 / 3) / 2]
    )


def test_ranking_over_threshold_needs_evidence_mode(sample: tuple[Store, RunData]) -> None:
    store, data = sample
    with pytest.raises(UsageError, match="evidence mode"):
        curves_over_threshold(store, data, Settings(relevance="ids"), [0.5], names=["R"])


def test_names_and_modes_are_checked(tiny: tuple[Store, RunData]) -> None:
    store, data = tiny
    with pytest.raises(UsageError, match="without a cut-off"):
        curves_over_k(store, data, Settings(), ["R@5"])
    with pytest.raises(UsageError, match="no curve"):
        curves_over_k(store, data, Settings(), ["Rprec"])
    with pytest.raises(UsageError):
        curves_over_threshold(store, data, Settings(), [0.2, 1.5])
    with pytest.raises(UsageError, match="no curve"):
        curves_over_threshold(store, data, Settings(), [0.5], names=["AQWV"])
    with pytest.raises(UsageError, match="no curve"):
        curves_over_threshold(store, data, Settings(), [0.5], names=["ContextCoverage"])
    assert "Rprec" not in curve_names(data, "evidence")
