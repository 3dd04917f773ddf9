"""Metrics never return NaN where a value is defined, nor values outside their documented range.

Random runs (hypothesis) with every awkward shape the docs name: empty rankings, queries
absent from the run, no relevant document, only negative labels, duplicate documents, chunks
without text, gold spans longer than every chunk, nothing retrieved. They go through the real
path (store -> arrays -> evaluate) with every registered metric at random k and threshold.
Then each zero-denominator case of docs/metrics.md, by hand.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.errors import ProblemLog
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.metrics import registry
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store

CASES: Counter[str] = Counter()
WORDS = ["tax", "rate", "vat", "filing", "deadline", "audit", "charity", "premium", ""]


def metric_names(k: int) -> list[str]:
    names = []
    for name, spec in registry.REGISTRY.items():
        if name in ("AQWV",):
            names.append(f"AQWV@{k}")
            names.append(f"AQWV(N=1000)@{k}")
        elif spec.needs_cutoff:
            names.append(f"{name}@{k}")
        elif spec.allows_cutoff and spec.family != "generation":
            names += [name, f"{name}@{k}"]
        else:
            names.append(name)
    return names


text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(" ".join)


@st.composite
def queries(draw: st.DrawFn) -> list[Query]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        docs = [f"d{j}" for j in range(6)]
        n_ret = draw(st.integers(0, 5))
        retrieved = tuple(
            Chunk(
                draw(st.sampled_from(docs)),
                draw(st.one_of(st.none(), text)),
                draw(st.one_of(st.none(), st.floats(-5, 5))),
            )
            for _ in range(n_ret)
        )
        absent = draw(st.integers(0, 6)) == 0
        relevance = draw(
            st.one_of(
                st.none(), st.dictionaries(st.sampled_from(docs), st.integers(-2, 3), max_size=4)
            )
        )
        if absent and relevance is None:
            relevance = {}
        evidence = tuple(
            s
            for s in draw(st.lists(st.one_of(text, st.just("tax rate " * 50)), max_size=3))
            if s.strip()
        )
        out.append(
            Query(
                query_id=f"q{i}",
                retrieved=None if absent else retrieved,
                relevance=relevance,
                evidence=evidence,
                query=draw(st.one_of(st.none(), text)),
                answer=draw(st.one_of(st.none(), text)),
                reference_answer=draw(st.one_of(st.none(), text)),
            )
        )
    return out


def store_with(qs: list[Query]) -> tuple[Store, Any]:
    store = Store(":memory:")
    result = store.import_run(
        ParsedRun(RunInfo(name="r"), qs, "native", ("r.jsonl",)), ProblemLog()
    )
    return store, load_run_data(store, result.run.run_id)


def check_report(report: Any, qs: list[Query], relevance: str | None) -> None:
    for name, values in report.per_query.items():
        spec = registry.REGISTRY[registry.parse(name).name]
        lo, hi = spec.range
        finite = values[~np.isnan(values)]
        assert not np.isinf(values).any(), name
        if lo is not None:
            assert (finite >= lo - 1e-12).all(), (name, finite.min())
        if hi is not None:
            assert (finite <= hi + 1e-12).all(), (name, finite.max())
        run_value = report.metrics[name]
        if not math.isnan(run_value):
            if lo is not None and spec.aggregate == "mean":
                assert run_value >= lo - 1e-12, name
            if hi is not None and spec.aggregate == "mean":
                assert run_value <= hi + 1e-12, name
        elif finite.size and spec.aggregate == "mean":
            raise AssertionError(f"{name}: queries scored but the run value is NaN")
        # where a query is scored, the definition gives a number: NaN only where not scored
        for q, value in zip(qs, values, strict=True):
            if not math.isnan(value):
                continue
            if spec.family == "ranking" and relevance == "ids":
                assert q.relevance is None or q.retrieved is None, (name, q.query_id)
            elif spec.family == "ranking" and relevance == "evidence":
                assert not q.evidence or q.retrieved is None, (name, q.query_id)
            elif spec.family == "evidence" and spec.name != "BestRank":
                assert not q.evidence, (name, q.query_id)


@pytest.mark.slow
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
)
@given(
    qs=queries(),
    k=st.integers(1, 7),
    threshold=st.sampled_from([0.0, 0.35, 0.7, 1.0]),
    complete=st.booleans(),
)
def test_every_metric_stays_in_its_range(
    qs: list[Query], k: int, threshold: float, complete: bool
) -> None:
    store, data = store_with(qs)
    with store:
        modes = [
            m for m, ok in (("ids", data.run.has_qrels), ("evidence", data.run.has_evidence)) if ok
        ]
        for mode in modes or [None]:
            s = Settings(k=k, threshold=threshold, relevance=mode, complete=complete)  # type: ignore[arg-type]
            names = [
                n
                for n in metric_names(k)
                if mode is not None or registry.REGISTRY[registry.parse(n).name].family != "ranking"
            ]
            # CrossEncoderSimilarity needs a model folder (tests/core/matching/test_onnx_scoring.py)
            names = [
                n
                for n in names
                if registry.REGISTRY[registry.parse(n).name].family != "cross_encoder"
            ]
            if not data.run.has_evidence:
                names = [
                    n
                    for n in names
                    if registry.REGISTRY[registry.parse(n).name].family != "evidence"
                ]
            if not data.run.has_answers:
                names = [
                    n
                    for n in names
                    if registry.REGISTRY[registry.parse(n).name].family != "generation"
                ]
            if not names:
                continue
            report = evaluate(data, names, store=store, settings=s)
            check_report(report, qs, mode)
            CASES["reports"] += 1
            CASES["values"] += sum(v.size for v in report.per_query.values())


@pytest.fixture(scope="module", autouse=True)
def report_cases() -> Any:
    """Print how many reports and values were checked (`pytest -s`; docs/reliability.md)."""
    yield
    print(f"\nnumbers: {dict(CASES)}")


def one(qs: list[Query], metric: str, **kw: Any) -> tuple[float, np.ndarray]:
    store, data = store_with(qs)
    with store:
        report = evaluate(data, [metric], store=store, settings=Settings(**kw))
    return report.metrics[metric], report.per_query[metric]


# docs/metrics.md, "zero denominator" column, each case by hand
NONE_RELEVANT = [Query("q", retrieved=(Chunk("d1"), Chunk("d2")), relevance={"d9": 0})]
ONLY_NEGATIVE = [Query("q", retrieved=(Chunk("d1"),), relevance={"d1": -1})]
EMPTY = [Query("q", retrieved=(), relevance={"d1": 1})]


@pytest.mark.parametrize(
    ("metric", "qs", "expected"),
    [
        ("R@5", NONE_RELEVANT, 0.0),
        ("AP", NONE_RELEVANT, 0.0),
        ("Rprec", NONE_RELEVANT, 0.0),
        ("nDCG", NONE_RELEVANT, 0.0),
        ("nDCG@5", ONLY_NEGATIVE, 0.0),
        ("RR", NONE_RELEVANT, 0.0),
        ("F1@5", NONE_RELEVANT, 0.0),
        ("SetP", EMPTY, 0.0),
        ("SetR", NONE_RELEVANT, 0.0),
        ("SetF", NONE_RELEVANT, 0.0),
        ("P@5", EMPTY, 0.0),
        ("Hit@5", EMPTY, 0.0),
        ("AP@5", ONLY_NEGATIVE, 0.0),
        ("RR@1", EMPTY, 0.0),
    ],
)
def test_zero_denominators_follow_the_docs(metric: str, qs: list[Query], expected: float) -> None:
    value, per_query = one(qs, metric, relevance="ids")
    assert value == expected and per_query.tolist() == [expected]


def test_aqwv_false_alarm_denominator_zero_is_zero() -> None:
    """Nothing retrieved: P_FA's denominator min(k, n_ret) is 0, P_FA = 0 (all missed: 0)."""
    qs = [Query("q", retrieved=(), relevance={"d1": 1})]
    value, _ = one(qs, "AQWV@1", relevance="ids")
    assert value == 0.0
    qs = [Query("q", retrieved=(Chunk("d1"),), relevance={"d1": 1})]
    value, _ = one(qs, "AQWV@1", relevance="ids")
    assert value == 1.0


def test_evidence_edge_cases() -> None:
    qs = [
        Query("spans, nothing retrieved", retrieved=(), evidence=("tax rate",)),
        Query("no spans", retrieved=(Chunk("d1", "tax rate"),)),
        Query(
            "span longer than every chunk",
            retrieved=(Chunk("d1", "tax"),),
            evidence=("tax rate " * 40,),
        ),
    ]
    store, data = store_with(qs)
    with store:
        report = evaluate(
            data,
            ["EvidenceRecall@5", "PerQueryCoverage@5", "ContextCoverage", "BestRank"],
            store=store,
            settings=Settings(k=5),
        )
    recall = report.per_query["EvidenceRecall@5"]
    assert recall[0] == 0.0 and math.isnan(recall[1])
    # docs/metrics.md: a span longer than the chunk is aligned the other way round (the chunk
    # inside the span), so a chunk that is part of the span scores 1 with `partial`
    assert recall[2] == 1.0 and report.per_query["ContextCoverage"][2] == 1.0
    assert math.isnan(report.per_query["BestRank"][0])  # not found: left out, never 0
    assert report.metrics["EvidenceRecall@5"] == 0.5  # pooled: 1 of the 2 spans


def test_empty_answer_and_reference_follow_squad() -> None:
    qs = [
        Query("both empty", retrieved=(Chunk("d1", "x"),), answer="", reference_answer=""),
        Query("answer empty", retrieved=(Chunk("d1", "x"),), answer="", reference_answer="yes"),
        Query("no answer", retrieved=(Chunk("d1", "x"),), reference_answer="yes"),
    ]
    store, data = store_with(qs)
    with store:
        report = evaluate(data, ["EM", "TokenF1", "ROUGE-L"], store=store)
    for name in ("EM", "TokenF1", "ROUGE-L"):
        values = report.per_query[name]
        assert values[0] == 1.0 and values[1] == 0.0 and math.isnan(values[2]), name
