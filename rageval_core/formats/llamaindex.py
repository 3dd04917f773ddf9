"""Serialised LlamaIndex RetrievalEvalResult lists: query, expected_ids, expected_texts,
retrieved_ids, retrieved_texts (and mode, metric_dict).

One record per query as RetrievalEvalResult.model_dump() (or .dict()) writes it, in a JSON array
or JSON Lines. expected_ids are the relevant ids (label 1), expected_texts the gold evidence;
retrieved_ids (with retrieved_texts when given, same length) are the ranking. metric_dict's
scores (hit_rate, mrr ...) become judge scores, for a side-by-side check with rageval's own.
RetrievalEvalResult has no query id: a record's query_id or id is used when present, else q1,
q2 ... by position.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import HEADER_KEY
from rageval_core.formats.jsonarray import describe, first_record
from rageval_core.formats.rowjson import Fields, read_rows
from rageval_core.model import Chunk, ParsedRun, Query

FORMAT = "llamaindex"
PRIMARY = "results"
COMPANION: str | None = None
COMPANION_REQUIRED = False


def sniff(path: Path, head: bytes) -> str | None:
    """PRIMARY when the first record has query, retrieved_ids and expected_ids."""
    record = first_record(head)
    if not isinstance(record, Mapping) or HEADER_KEY in record:
        return None
    return PRIMARY if {"query", "retrieved_ids", "expected_ids"} <= record.keys() else None


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    return read_rows(primary, log, FORMAT, _parse, "query_id")


def _parse(f: Fields, number: int) -> Query | None:
    query_id = f.query_id(number, "query_id", "id")
    question = f.text("query", required=True)
    expected = f.strings("expected_ids", ids=True)
    if expected is None and f.record.get("expected_ids") is None:
        f.error("expected_ids", "required")
    evidence = f.strings("expected_texts") or []
    ids = f.strings("retrieved_ids", ids=True)
    if ids is None and f.record.get("retrieved_ids") is None:
        f.error("retrieved_ids", "required")
    texts = f.strings("retrieved_texts")
    if ids is not None and texts is not None and len(texts) != len(ids):
        f.error("retrieved_texts", f"{len(texts)} texts for {len(ids)} retrieved_ids")
    if ids is not None and len(set(ids)) != len(ids):
        dup = next(d for d in ids if ids.count(d) > 1)
        f.error("retrieved_ids", f'"{dup}" appears more than once')
    judge = _metric_scores(f)
    tags = {"mode": f.record["mode"]} if isinstance(f.record.get("mode"), str) else {}
    if not f.ok or ids is None:
        return None
    return Query(
        query_id=query_id,
        retrieved=tuple(
            Chunk(doc_id=d, text=texts[i] if texts is not None else None) for i, d in enumerate(ids)
        ),
        query=question,
        relevance=dict.fromkeys(expected or (), 1),
        evidence=tuple(e for e in evidence if e.strip()),
        tags=tags,
        judge=judge,
        line=f.line,
    )


def _metric_scores(f: Fields) -> dict[str, float]:
    """metric_dict's scores: {name: {"score": number, "metadata": ...}} (RetrievalMetricResult);
    any other shape or a score that is not a finite number is warned about and left out."""
    judge: dict[str, float] = {}
    metrics = f.record.get("metric_dict")
    if metrics is None:
        return judge
    if not isinstance(metrics, Mapping):
        f.ignored("metric_dict", f"expected an object of metric results, got {describe(metrics)}")
        return judge
    for name, result in metrics.items():
        if not isinstance(result, Mapping):  # a bare number is not a RetrievalMetricResult
            shown = describe(result)
            f.ignored(f"metric_dict.{name}", f'expected {{"score": ...}}, got {shown}', shown)
            continue
        score = f.score(f"metric_dict.{name}.score", result.get("score"), "the metric's score")
        if score is not None:
            judge[str(name)] = score
    return judge
