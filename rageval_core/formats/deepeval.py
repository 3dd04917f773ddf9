"""DeepEval test cases and saved datasets: input, actual_output, expected_output,
retrieval_context, context (snake_case, or the camelCase of DeepEval's API payloads).

One record per query in a JSON array (EvaluationDataset.save_as(file_type="json")), JSON Lines,
or an object listing them under test_cases / testCases / goldens (a saved test run: its
metricsData scores become judge scores). retrieval_context (the retriever's chunk
texts, in rank order) carries no ids: chunks are named ctx1, ctx2 ... by rank, so evidence
metrics (context, the ideal chunks, matched against those texts) apply and id metrics do not.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import HEADER_KEY
from rageval_core.formats.jsonarray import describe, first_record, tag_text
from rageval_core.formats.rowjson import WRAPPERS, Fields, read_rows
from rageval_core.model import Chunk, ParsedRun, Query

FORMAT = "deepeval"
PRIMARY = "test_cases"
COMPANION: str | None = None
COMPANION_REQUIRED = False

_MARKERS = (
    "actual_output",
    "actualOutput",
    "retrieval_context",
    "retrievalContext",
    "expected_output",
    "expectedOutput",
)


def sniff(path: Path, head: bytes) -> str | None:
    """PRIMARY when the first record has input and one of DeepEval's output or context keys."""
    record = first_record(head)
    if not isinstance(record, Mapping) or HEADER_KEY in record:
        return None
    for key in WRAPPERS:
        inner = record.get(key)
        if isinstance(inner, list) and inner and isinstance(inner[0], Mapping):
            record = inner[0]
            break
    return PRIMARY if "input" in record and any(k in record for k in _MARKERS) else None


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    return read_rows(primary, log, FORMAT, _parse, "name")


def _parse(f: Fields, number: int) -> Query | None:
    query_id = f.query_id(number, "name", "id")
    question = f.text("input", required=True)
    answer = f.text("actual_output", "actualOutput")
    reference = f.text("expected_output", "expectedOutput")
    contexts = f.strings("retrieval_context", "retrievalContext") or []
    evidence = f.strings("context") or []
    tags: dict[str, str] = {}
    metadata = f.record.get("additional_metadata") or f.record.get("additionalMetadata")
    if isinstance(metadata, Mapping):
        for key, value in metadata.items():
            text = tag_text(value)
            if text is not None:
                tags[str(key)] = text
    judge = _metric_scores(f)
    if not f.ok:
        return None
    return Query(
        query_id=query_id,
        retrieved=tuple(Chunk(doc_id=f"ctx{i + 1}", text=t) for i, t in enumerate(contexts)),
        query=question,
        evidence=tuple(e for e in evidence if e.strip()),
        answer=answer,
        reference_answer=reference,
        tags=tags,
        judge=judge,
        line=f.line,
    )


def _metric_scores(f: Fields) -> dict[str, float]:
    """A saved test run's metricsData: [{"name": ..., "score": ..., ...}]. An entry without a
    name or whose score is not a finite number (null: the metric failed, its error is given) is
    warned about and left out."""
    judge: dict[str, float] = {}
    key = f.key("metricsData", "metrics_data")
    if key is None:
        return judge
    metrics = f.record[key]
    if not isinstance(metrics, list):
        f.ignored(key, f"expected a list of metric results, got {describe(metrics)}")
        return judge
    for i, metric in enumerate(metrics):
        where = f"{key}[{i}]"
        if not isinstance(metric, Mapping):
            f.ignored(where, f"expected an object, got {describe(metric)}", describe(metric))
            continue
        name = metric.get("name")
        if not isinstance(name, str) or not name.strip():
            shown = describe(name)
            f.ignored(f"{where}.name", f"expected a metric name, got {shown}", shown)
            continue
        score = metric.get("score")
        if score is None and metric.get("error"):
            error = str(metric["error"])
            what = "the metric failed: " + (error if len(error) <= 60 else error[:57] + "...")
            f.ignored(f"{where}.score", f"null ({what})", "failed")
            continue
        short = name if len(name) <= 40 else name[:37] + "..."
        number = f.score(f"{where}.score", score, f"the score of {short}")
        if number is not None:
            judge[name] = number
    return judge
