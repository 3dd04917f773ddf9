"""Nothing a reader leaves out goes unsaid (issue 28, point 13): LlamaIndex metric_dict and
DeepEval metricsData entries whose score is not a finite number or whose name is missing,
OpenInference document indexes that are not positions 0, 1, 2 ..., and span times that cannot be
(before 1970, after 9999, an end before its start) are each a `file:line: field: problem`:
a warning with a count when the rest of the file is good, an error when the ranking is unknown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rageval_core.errors import Problem, ProblemLog
from rageval_core.formats import read_inputs
from rageval_core.model import Query


def read(path: Path, fmt: str) -> tuple[list[Query], list[Problem]]:
    log = ProblemLog()
    queries = [q for run in read_inputs([path], fmt, log) for q in run.queries]
    return queries, log.problems


def lines(path: Path, records: list[Any]) -> Path:
    # json.dumps writes NaN and Infinity as Python's json module reads them (the files' literals)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def warnings_by_field(problems: list[Problem]) -> dict[str, Problem]:
    assert all(p.severity == "warning" for p in problems), [str(p) for p in problems]
    return {p.field: p for p in problems}


# --- LlamaIndex ------------------------------------------------------------------------------


def llama(i: int, metric_dict: Any) -> dict[str, Any]:
    return {
        "query": f"question {i}",
        "expected_ids": ["d1"],
        "retrieved_ids": ["d1", "d2"],
        "metric_dict": metric_dict,
    }


def test_llamaindex_scores_that_are_not_numbers_are_warned_about_with_counts(
    tmp_path: Path,
) -> None:
    bad = {
        "hit_rate": {"score": float("inf")},
        "mrr": {"score": None},
        "precision": {"score": "0.5"},
        "ndcg": {"score": float("nan")},
        "recall": 0.5,  # a bare number is not a RetrievalMetricResult
        "ap": {"score": 0.25, "metadata": {}},
    }
    path = lines(tmp_path / "results.jsonl", [llama(i, bad) for i in range(3)])
    queries, problems = read(path, "llamaindex")
    assert [q.judge for q in queries] == [{"ap": 0.25}] * 3  # the good score of each record
    warned = warnings_by_field(problems)
    assert set(warned) == {
        "metric_dict.hit_rate.score",
        "metric_dict.mrr.score",
        "metric_dict.precision.score",
        "metric_dict.ndcg.score",
        "metric_dict.recall",
    }
    for p in warned.values():
        assert p.file.endswith("results.jsonl") and p.line == 1
        assert p.problem.endswith("ignored (3 times)"), p
    assert "got Infinity" in warned["metric_dict.hit_rate.score"].problem
    assert "got null" in warned["metric_dict.mrr.score"].problem
    assert "got a string" in warned["metric_dict.precision.score"].problem
    assert "got NaN" in warned["metric_dict.ndcg.score"].problem
    assert 'expected {"score": ...}, got 0.5' in warned["metric_dict.recall"].problem


# --- DeepEval --------------------------------------------------------------------------------


def deepeval_case(i: int, metrics: list[Any]) -> dict[str, Any]:
    return {
        "input": f"question {i}",
        "actual_output": "an answer",
        "retrieval_context": ["a chunk"],
        "metricsData": metrics,
    }


def test_deepeval_metrics_without_a_name_or_a_finite_score_are_warned_about(
    tmp_path: Path,
) -> None:
    metrics = [
        {"name": None, "score": 0.5},
        {"name": "Faithfulness", "score": float("nan")},
        {"name": "Relevancy", "score": None, "error": "the judge timed out"},
        {"name": "Recall", "score": float("-inf")},
        {"name": "Precision", "score": "high"},
        {"name": "Contextual", "score": None},
        {"name": "Ok", "score": 0.9},
    ]
    path = tmp_path / "run.json"
    path.write_text(
        json.dumps({"test_cases": [deepeval_case(i, metrics) for i in range(2)]}), encoding="utf-8"
    )
    queries, problems = read(path, "deepeval")
    assert [q.judge for q in queries] == [{"Ok": 0.9}] * 2
    warned = warnings_by_field(problems)
    assert set(warned) == {f"metricsData[{i}].{f}" for i, f in enumerate(["name"] + ["score"] * 5)}
    assert all(p.problem.endswith("ignored (2 times)") for p in warned.values()), problems
    assert "the metric failed: the judge timed out" in warned["metricsData[2].score"].problem
    assert "got null" in warned["metricsData[0].name"].problem
    assert "got NaN" in warned["metricsData[1].score"].problem
    assert "got -Infinity" in warned["metricsData[3].score"].problem
    assert "got a string" in warned["metricsData[4].score"].problem
    assert "got null" in warned["metricsData[5].score"].problem


# --- OpenInference ---------------------------------------------------------------------------


def span(
    trace: str,
    documents: dict[str, str],
    start: Any = "2024-05-01T10:00:00Z",
    end: Any = "2024-05-01T10:00:00.120000Z",
) -> dict[str, Any]:
    attributes: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": "q?"}
    for index, doc_id in documents.items():
        attributes[f"retrieval.documents.{index}.document.id"] = doc_id
    return {
        "name": "retriever",
        "context": {"trace_id": trace, "span_id": "s"},
        "start_time": start,
        "end_time": end,
        "attributes": attributes,
    }


@pytest.mark.parametrize(
    ("index", "problem"),
    [
        ("-1", "'-1' is not a document position (0, 1, 2 ...)"),
        ("99999999999999999999999", "document 99999999999999999999999 after a gap"),
        ("5", "document 5 after a gap (document 2 missing)"),
        ("x", "'x' is not a document position"),
    ],
)
def test_openinference_document_indexes_that_are_not_positions_are_errors(
    tmp_path: Path, index: str, problem: str
) -> None:
    path = lines(
        tmp_path / "spans.jsonl",
        [span("t1", {"0": "d1", "1": "d2", index: "d9"}), span("t2", {"0": "d1"})],
    )
    _, problems = read(path, "openinference")
    errors = [p for p in problems if p.severity == "error"]
    assert len(errors) == 1, [str(p) for p in problems]
    assert errors[0].line == 1
    assert errors[0].field == f"attributes.retrieval.documents.{index}"
    assert problem in errors[0].problem


def test_openinference_documents_that_are_not_objects_are_an_error(tmp_path: Path) -> None:
    record = span("t1", {})
    record["attributes"]["retrieval.documents"] = [{"document.id": "d1"}, None]
    _, problems = read(lines(tmp_path / "spans.jsonl", [record]), "openinference")
    assert [(p.line, p.field, p.severity) for p in problems] == [
        (1, "attributes.retrieval.documents", "error")
    ]


@pytest.mark.parametrize(
    ("start", "end", "field", "problem"),
    [
        # ends 120 ms before it starts: was read as a latency of 0
        (
            "2024-05-01T10:00:00.120000Z",
            "2024-05-01T10:00:00Z",
            "end_time",
            "the span ends before it starts (by 120 ms)",
        ),
        ("1900-01-01T00:00:00Z", "2024-05-01T10:00:00Z", "start_time", "from 1970 to 9999"),
        (1e300, 2.0, "start_time", "1e+300 is not a time from 1970 to 9999"),
        (-5.0, 7.0, "start_time", "-5.0 is not a time from 1970 to 9999"),
    ],
)
def test_impossible_span_times_give_no_latency_and_a_warning(
    tmp_path: Path, start: Any, end: Any, field: str, problem: str
) -> None:
    good = span("t2", {"0": "d1"})
    path = lines(
        tmp_path / "spans.jsonl",
        [span("t1", {"0": "d1"}, start, end), span("t3", {"0": "d1"}, start, end), good],
    )
    queries, problems = read(path, "openinference")
    by_id = {q.query_id: q for q in queries}
    assert by_id["t1"].latency_ms == by_id["t3"].latency_ms == {}  # never a made-up 0
    assert by_id["t2"].latency_ms == {"retrieve": 120.0, "total": 120.0}
    warned = warnings_by_field(problems)
    assert set(warned) == {field}
    assert warned[field].line == 1
    assert problem in warned[field].problem
    assert warned[field].problem.endswith("the span's latency is not recorded (2 times)")
