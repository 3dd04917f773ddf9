"""evaluate(): the whole path file -> store -> arrays -> metrics -> report, against references."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.evaluate import evaluate, open_file_in_scratch_store
from rageval_core.evaluation.report import Settings
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from rageval_core.store.scores import ensure_scored
from tests.core.metrics.test_ranking_conformance import CASES, COUNTS, oracle, ours, read_out


@pytest.mark.oracle
@pytest.mark.parametrize("case", sorted(CASES))
def test_store_path_matches_trec_eval(case: str) -> None:
    """The DuckDB-fed arrays give trec_eval's numbers, per query and mean, like the reader path."""
    qrels, run, out, rel_level, complete = CASES[case]
    expected, _ = read_out(oracle() / out)
    measures = {name: ours(name) for name in expected if ours(name) and ours(name) not in COUNTS}
    assert len(measures) >= 4
    with open_file_in_scratch_store([oracle() / run, oracle() / qrels]) as store:
        data = load_run_data(store, store.runs()[0].run_id)
        report = evaluate(
            data, list(measures.values()), store=store, rel_level=rel_level, complete=complete
        )
    index = {qid: i for i, qid in enumerate(report.query_ids)}
    checked = 0
    for trec_name, name in measures.items():
        for qid, text in expected[trec_name].items():
            value = report.metrics[name] if qid == "all" else report.per_query[name][index[qid]]
            assert f"{value:.4f}" == text, (trec_name, qid)
            checked += 1
    assert checked >= len(measures)  # every measure compared at least on its mean


def make_run() -> ParsedRun:
    """Three queries with evidence; chunk texts chosen so coverage is known by hand."""
    queries = [
        Query(
            query_id="a",
            query="rider benefit",
            retrieved=(
                Chunk("d1", "Nothing relevant here at all.", 0.9),
                Chunk(
                    "d2", "An Accidental Death Benefit Rider may be attached to the policy.", 0.8
                ),
                Chunk("d3", "The waiting period is 90 days.", 0.2),
            ),
            evidence=(
                "accidental death benefit rider may be attached",
                "waiting period is 90 days",
            ),
            latency_ms={"total": 100.0, "retrieval": 10.0},
            tokens={"prompt": 1000, "completion": 100},
            tags={"query_type": "definition"},
        ),
        Query(
            query_id="b",
            query="deductible",
            retrieved=(Chunk("d4", "The deductible is $500 per claim.", 0.7),),
            evidence=("the deductible is $500 per claim",),
            latency_ms={"total": 300.0, "retrieval": 30.0},
            tokens={"prompt": 2000, "completion": 200},
            tags={"query_type": "numeric"},
        ),
        Query(
            query_id="c", query="no gold", retrieved=(), evidence=(), tags={"query_type": "numeric"}
        ),
    ]
    info = RunInfo(name="tiny", price_prompt_per_1k=0.001, price_completion_per_1k=0.002)
    return ParsedRun(info, queries, "native", ("tiny.jsonl",))


@pytest.fixture()
def tiny() -> tuple[Store, object]:
    store = Store(":memory:")
    store.import_run(make_run(), ProblemLog())
    return store, load_run_data(store, "tiny")


def test_evidence_metrics_hand_computed(tiny: tuple[Store, object]) -> None:
    store, data = tiny
    r = evaluate(data, store=store, k=2)
    assert r.relevance == "evidence"
    # query a: span 1 at rank 2, span 2 at rank 3; query b: its span at rank 1
    assert r.metrics["EvidenceRecall@2"] == pytest.approx(2 / 3)  # pooled: 2 of 3 spans
    assert r.metrics["PerQueryCoverage@2"] == pytest.approx((1 / 2 + 1) / 2)
    assert r.metrics["FullCoverageRate@2"] == pytest.approx(1 / 2)
    assert r.metrics["RR"] == pytest.approx((1 / 2 + 1) / 2)
    assert r.metrics["P@2"] == pytest.approx((1 / 2 + 1 / 2) / 2)  # P@k divides by k
    assert r.counts["scored_evidence"] == 2 and r.counts["no_evidence"] == 1
    assert math.isnan(r.per_query["EvidenceRecall@2"][2])  # no gold: not scored
    r3 = evaluate(data, store=store, k=3)
    assert r3.metrics["EvidenceRecall@3"] == pytest.approx(1.0)


def test_score_cut_and_threshold_reuse_kept_scores(tiny: tuple[Store, object]) -> None:
    store, data = tiny
    evaluate(data, store=store, k=3)
    assert ensure_scored(store, "tiny").cached
    n_rows = store.table_counts()["pair_scores"]
    # dropping chunks scored below 0.5 removes a's rank-3 chunk: its second span is lost
    cut = evaluate(data, store=store, k=3, score_threshold=0.5)
    assert cut.metrics["EvidenceRecall@3"] == pytest.approx(2 / 3)
    strict = evaluate(data, store=store, k=3, threshold=1.0)
    assert strict.metrics["EvidenceRecall@3"] <= 1.0
    assert store.table_counts()["pair_scores"] == n_rows  # nothing rescored


def test_ops_and_breakdown(tiny: tuple[Store, object]) -> None:
    store, data = tiny
    r = evaluate(data, store=store, by="query_type")
    total = r.ops["latency_ms"]["total"]
    assert total["count"] == 2 and total["mean"] == pytest.approx(200.0)
    assert total["p50"] == pytest.approx(float(np.percentile([100.0, 300.0], 50)))
    # cost = tokens/1000 * price: (1*0.001 + 0.1*0.002) and (2*0.001 + 0.2*0.002)
    assert r.ops["cost_usd"]["total"] == pytest.approx(0.0012 + 0.0024)
    groups = r.by["groups"]
    assert groups["numeric"]["n"] == 2 and groups["definition"]["n"] == 1
    assert groups["numeric"]["metrics"]["EvidenceRecall@10"] == pytest.approx(1.0)
    assert groups["definition"]["metrics"]["EvidenceRecall@10"] == pytest.approx(1.0)
    with pytest.raises(UsageError, match="no tag"):
        evaluate(data, store=store, by="nope")


def test_json_shape(tiny: tuple[Store, object]) -> None:
    store, data = tiny
    out = evaluate(data, store=store).to_json(per_query=True)
    text = json.dumps(out, allow_nan=False)  # NaN never reaches JSON
    back = json.loads(text)
    assert set(back) >= {"run", "n_queries", "settings", "metrics", "per_query", "ops"}
    assert back["per_query"]["c"]["EvidenceRecall@10"] is None
    assert back["settings"]["scorer"] == "partial"


def test_bad_settings_are_usage_errors(tiny: tuple[Store, object]) -> None:
    store, data = tiny
    for bad in ({"k": 0}, {"threshold": 1.5}, {"scorer": "nope"}, {"relevance": "ids"}):
        with pytest.raises(UsageError):
            evaluate(data, store=store, **bad)
    with pytest.raises(UsageError):
        evaluate(data, ["NoSuchMetric@3"], store=store)


def test_settings_defaults() -> None:
    s = Settings()
    assert (s.k, s.threshold, s.scorer) == (10, 0.7, "partial")


def test_evaluate_a_file_directly(tmp_path: Path) -> None:
    from rageval_core.formats.native import write_native

    path = tmp_path / "run.jsonl"
    parsed = make_run()
    write_native(parsed.info, parsed.queries, path)
    r = evaluate(path, k=3)
    assert r.run == "tiny" and r.metrics["EvidenceRecall@3"] == pytest.approx(1.0)
