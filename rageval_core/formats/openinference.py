"""OpenInference / Arize Phoenix span exports: one query per trace, one run per pipeline stage.

A file holds spans as JSON Lines or a JSON array, each in one of the shapes the tools write:
OpenTelemetry's span JSON (ReadableSpan.to_json: name, context.trace_id, start_time, attributes
with dotted keys), Phoenix's span records and the rows of px.Client().get_spans_dataframe()
saved with to_json (context.trace_id, span_kind, attributes.* columns, documents as lists of
objects), or OTLP JSON ({"resourceSpans": [...]}, attributes as [{key, value}]). Attribute
names are the OpenInference semantic conventions' (the openinference-semantic-conventions
package).

Per trace: the RETRIEVER span's retrieval.documents (in the order given) are the retriever
stage's ranking and its input.value the query; a RERANKER span's reranker.output_documents are
the reranker stage's ranking; LLM spans' llm.token_count.prompt / completion are summed into
the query's token counts. The two stages read as two runs, NAME and NAME@reranker, whose
settings carry stage and trace_group (formats/options.py); each has the whole trace's latency
(retrieve, rerank, llm in the order they started, and total: the trace's first start to its
last end) and token counts. The query id is metadata.query_id when the trace's spans carry one, else the
trace id. Span exports hold no relevance: judgements come from a qrels file given beside them
(TREC, BEIR TSV or ranx JSON), keyed by those query ids.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    RerankerAttributes,
    SpanAttributes,
)

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import display_path, finite_number, merge_info, read_sidecar
from rageval_core.formats.jsonarray import (
    KeyWarner,
    all_finite,
    describe,
    first_record,
    id_text,
    iter_records,
    read_text,
    times_text,
)
from rageval_core.formats.fields import shown_value
from rageval_core.formats.options import GROUP_KEY, STAGE_KEY
from rageval_core.formats.scored import Judgements, read_qrels
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo

FORMAT = "openinference"
PRIMARY = "spans"
COMPANION: str | None = "qrels"
COMPANION_REQUIRED = False
#: qrels in any shape another reader claims join the span export given beside them
ADOPTS = {("trec", "qrels"): COMPANION, ("ranx", "qrels"): COMPANION, ("beir", "qrels"): COMPANION}

_KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
_RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
_RERANKER = OpenInferenceSpanKindValues.RERANKER.value
_LLM = OpenInferenceSpanKindValues.LLM.value
#: (stage, span kind, documents attribute, run name suffix)
_STAGES = (
    ("retriever", _RETRIEVER, SpanAttributes.RETRIEVAL_DOCUMENTS, ""),
    ("reranker", _RERANKER, RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, "@reranker"),
)
#: (span kind, latency stage, every span of the kind summed or only the first): the stages
#: every run of a trace gets, whichever stage's ranking it holds
_LATENCY = (("retrieve", _RETRIEVER, False), ("rerank", _RERANKER, False), ("llm", _LLM, True))
_TOKENS = (
    ("prompt", SpanAttributes.LLM_TOKEN_COUNT_PROMPT),
    ("completion", SpanAttributes.LLM_TOKEN_COUNT_COMPLETION),
)
_DOC_ID, _DOC_CONTENT, _DOC_SCORE, _DOC_METADATA = (
    DocumentAttributes.DOCUMENT_ID,
    DocumentAttributes.DOCUMENT_CONTENT,
    DocumentAttributes.DOCUMENT_SCORE,
    DocumentAttributes.DOCUMENT_METADATA,
)
_QUERY_ID_KEY = "query_id"
_MAX_TOKENS = 2**53
#: span times are read from 1970 to the end of 9999 (ISO 8601's four-digit years), in ms
_LAST_MS = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp() * 1000.0


def sniff(path: Path, head: bytes) -> str | None:
    """PRIMARY when the first record is a span (or an OTLP export), None otherwise."""
    record = first_record(head)
    if not isinstance(record, Mapping):
        return None
    if "resourceSpans" in record:
        return PRIMARY
    has_trace = (
        isinstance(record.get("context"), Mapping)
        or "context.trace_id" in record
        or "traceId" in record
        or "trace_id" in record
    )
    has_attributes = "attributes" in record or any(
        isinstance(k, str) and k.startswith("attributes.") for k in record
    )
    return PRIMARY if "name" in record and has_trace and has_attributes else None


@dataclass(slots=True)
class _Span:
    line: int
    trace_id: str
    kind: str
    start_ms: float | None
    end_ms: float | None
    attributes: dict[str, Any]

    @property
    def duration_ms(self) -> float | None:
        if self.start_ms is None or self.end_ms is None or self.end_ms < self.start_ms:
            return None  # a span that ends before it starts (warned about) has no latency
        return self.end_ms - self.start_ms


@dataclass(slots=True)
class _Trace:
    line: int
    spans: list[_Span] = field(default_factory=list)


def read(primary: Path, companion: Path | None, log: ProblemLog) -> list[ParsedRun]:
    """One run per stage found in the export (retriever first), each joined with the qrels."""
    file = display_path(primary)
    sources = (file,) + (() if companion is None else (display_path(companion),))
    sidecar = read_sidecar(primary, log)
    base = (sidecar.name if sidecar is not None else None) or primary.stem
    traces = _read_traces(primary, file, log)
    qrels = read_qrels(companion, log) if companion is not None else None
    runs = []
    for stage, kind, docs_key, suffix in _STAGES:
        queries = _stage_queries(traces, file, log, kind, docs_key, qrels)
        if queries is None:
            continue
        info = merge_info(RunInfo(), sidecar)
        info = RunInfo(
            name=base + suffix,
            created_at=info.created_at,
            description=info.description,
            settings={**info.settings, STAGE_KEY: stage, GROUP_KEY: base},
            price_prompt_per_1k=info.price_prompt_per_1k,
            price_completion_per_1k=info.price_completion_per_1k,
        )
        runs.append(ParsedRun(info, queries, FORMAT, sources))
    if not runs and not log.errors:
        log.error(file, 0, "file", f"no {_RETRIEVER} or {_RERANKER} spans")
    if not runs:
        runs.append(ParsedRun(RunInfo(name=base), [], FORMAT, sources))
    return runs


def _read_traces(path: Path, file: str, log: ProblemLog) -> dict[str, _Trace]:
    text = read_text(path, file, log)
    traces: dict[str, _Trace] = {}
    if text is None:
        return traces
    warner = KeyWarner(file, log)
    for line, record in iter_records(text, file, log):
        if not isinstance(record, Mapping):
            log.error(file, line, "span", f"expected an object, got {describe(record)}")
            continue
        for span in _spans(record, line, file, log, warner):
            traces.setdefault(span.trace_id, _Trace(line)).spans.append(span)
    return traces


def _spans(
    record: Mapping[str, Any], line: int, file: str, log: ProblemLog, warner: KeyWarner
) -> Iterator[_Span]:
    """The spans of one record: itself, or every span of an OTLP export."""
    if "resourceSpans" not in record:
        span = _span(record, line, file, log, warner)
        if span is not None:
            yield span
        return
    for r, resource in enumerate(_list(record.get("resourceSpans"))):
        for s, scope in enumerate(
            _list(resource.get("scopeSpans") if isinstance(resource, Mapping) else None)
        ):
            spans = scope.get("spans") if isinstance(scope, Mapping) else None
            for i, raw in enumerate(_list(spans)):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                if not isinstance(raw, Mapping):
                    log.error(file, line, where, f"expected an object, got {describe(raw)}")
                    continue
                span = _span(raw, line, file, log, warner, where)
                if span is not None:
                    yield span


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _span(
    record: Mapping[str, Any],
    line: int,
    file: str,
    log: ProblemLog,
    warner: KeyWarner,
    where: str = "",
) -> _Span | None:
    prefix = f"{where}." if where else ""
    attributes: dict[str, Any] = {}
    raw = record.get("attributes")
    if isinstance(raw, list):  # OTLP: [{"key": k, "value": {"stringValue": v}}]
        for item in raw:
            if isinstance(item, Mapping) and isinstance(item.get("key"), str):
                _flatten(item["key"], _otlp_value(item.get("value")), attributes)
    elif isinstance(raw, Mapping):
        _flatten("", raw, attributes)
    elif raw is not None:
        log.error(file, line, f"{prefix}attributes", f"expected an object, got {describe(raw)}")
        return None
    for key, value in record.items():  # a spans dataframe's columns: attributes.input.value ...
        if isinstance(key, str) and key.startswith("attributes.") and value is not None:
            _flatten(key.removeprefix("attributes."), value, attributes)
    context = record.get("context")
    trace = (
        (context.get("trace_id") if isinstance(context, Mapping) else None)
        or record.get("context.trace_id")
        or record.get("traceId")
        or record.get("trace_id")
    )
    trace_id = id_text(trace)
    if trace_id is None:
        log.error(
            file, line, f"{prefix}context.trace_id", f"expected a trace id, got {describe(trace)}"
        )
        return None
    kind = attributes.get(_KIND) or record.get("span_kind") or ""
    if not isinstance(kind, str):
        log.error(
            file, line, f"{prefix}attributes.{_KIND}", f"expected a string, got {describe(kind)}"
        )
        return None
    times: list[float | None] = []
    fields: list[str] = []
    for keys in (("start_time", "startTimeUnixNano"), ("end_time", "endTimeUnixNano")):
        found = next((k for k in keys if record.get(k) is not None), keys[0])
        fields.append(f"{prefix}{found}")
        if record.get(found) is None:
            times.append(None)
            continue
        ms = _time_ms(record[found], nanos=found.endswith("Nano"))
        if ms is None:
            log.error(
                file, line, fields[-1], f"expected a timestamp, got {describe(record[found])}"
            )
            return None
        if not 0.0 <= ms <= _LAST_MS:
            problem = f"{shown_value(record[found])} is not a time from 1970 to 9999"
            _no_latency(warner, line, fields[-1], problem, "range")
            ms = None
        times.append(ms)
    start, end = times
    if start is not None and end is not None and end < start:
        problem = f"the span ends before it starts (by {start - end:g} ms)"
        _no_latency(warner, line, fields[-1], problem, "order")
    return _Span(line, trace_id, kind.upper(), start, end, attributes)


def _no_latency(warner: KeyWarner, line: int, field: str, problem: str, kind: str) -> None:
    """Warn (once per field and kind, counted) that a span's times give it no latency."""
    warner.repeated(
        line,
        field,
        lambda times: f"{problem}; the span's latency is not recorded{times_text(times)}",
        kind,
    )


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Nested attributes as OpenInference's flat names: retrieval.documents.0.document.id."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for i, inner in enumerate(value):
            _flatten(f"{prefix}.{i}", inner, out)
    else:
        out[prefix] = value


def _otlp_value(value: Any) -> Any:
    """An OTLP AnyValue ({"stringValue": ...}, {"intValue": "3"}, {"arrayValue": ...}) as Python."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value and isinstance(value["arrayValue"], Mapping):
        return [_otlp_value(v) for v in _list(value["arrayValue"].get("values"))]
    return None


def _time_ms(value: Any, nanos: bool) -> float | None:
    """Milliseconds since the epoch of an ISO 8601 time, a number of nanoseconds (OTLP) or of
    milliseconds (pandas' to_json default)."""
    if isinstance(value, str):
        if nanos and value.isdigit():
            return int(value) / 1e6
        try:
            return datetime.fromisoformat(value).timestamp() * 1000.0
        except ValueError:
            return None
    number = finite_number(value)
    if number is None:
        return None
    return number / 1e6 if nanos else number


def _stage_queries(
    traces: Mapping[str, _Trace],
    file: str,
    log: ProblemLog,
    kind: str,
    docs_key: str,
    qrels: Judgements | None,
) -> list[Query] | None:
    """The queries of one stage (None when no trace has a span of that kind)."""
    queries: list[Query] = []
    seen: dict[str, int] = {}
    found = False
    for trace_id, trace in traces.items():
        spans = sorted(
            (s for s in trace.spans if s.kind == kind),
            key=lambda s: math.inf if s.start_ms is None else s.start_ms,
        )
        if not spans:
            continue
        found = True
        span = spans[0]
        chunks = _documents(span, docs_key, file, log)
        if chunks is None:
            continue
        query_id = _query_id(trace) or trace_id
        if query_id in seen:
            log.error(
                file,
                span.line,
                "metadata.query_id",
                f'duplicate query "{query_id}" (first on line {seen[query_id]})',
            )
            continue
        seen[query_id] = span.line
        text = span.attributes.get(SpanAttributes.INPUT_VALUE)
        if kind == _RERANKER:
            text = span.attributes.get(RerankerAttributes.RERANKER_QUERY, text)
        queries.append(
            Query(
                query_id=query_id,
                retrieved=chunks,
                query=text if isinstance(text, str) else None,
                relevance=qrels.labels.get(query_id) if qrels is not None else None,
                latency_ms=_latency(trace),
                tokens=_tokens(trace, file, log),
                line=span.line,
            )
        )
    if not found:
        return None
    if qrels is not None:
        from rageval_core.formats.trec import warn_missing

        missing = [q for q in qrels.labels if q not in seen]
        if missing:
            warn_missing(log, qrels.file, qrels.first_line[missing[0]], missing)
        for q in missing:
            queries.append(
                Query(
                    query_id=q, retrieved=None, relevance=qrels.labels[q], line=qrels.first_line[q]
                )
            )
    return queries


def _documents(span: _Span, key: str, file: str, log: ProblemLog) -> tuple[Chunk, ...] | None:
    """The span's documents in the order given; None when one is invalid (each reported)."""
    chunks: list[Chunk] = []
    ok = True
    # the documents' indices present (0, 1, 2 ...), read up to the first gap
    prefix = f"{key}."
    present = {k[len(prefix) :].split(".", 1)[0] for k in span.attributes if k.startswith(prefix)}
    if isinstance(span.attributes.get(key), list):  # documents not all objects: not flattened
        value = span.attributes[key]
        bad = next((d for d in value if not isinstance(d, Mapping)), None)
        log.error(
            file, span.line, f"attributes.{key}", f"expected document objects, got {describe(bad)}"
        )
        return None
    i = 0
    while str(i) in present:
        where = f"attributes.{key}.{i}"
        doc_id = id_text(span.attributes.get(f"{key}.{i}.{_DOC_ID}"))
        content = span.attributes.get(f"{key}.{i}.{_DOC_CONTENT}")
        raw_score = span.attributes.get(f"{key}.{i}.{_DOC_SCORE}")
        score = None if raw_score is None else finite_number(raw_score)
        metadata = span.attributes.get(f"{key}.{i}.{_DOC_METADATA}")
        if doc_id is None:
            value = span.attributes.get(f"{key}.{i}.{_DOC_ID}")
            log.error(
                file,
                span.line,
                f"{where}.{_DOC_ID}",
                "required"
                if value is None
                else f"expected a non-empty string or an integer, got {describe(value)}",
            )
            ok = False
        elif content is not None and not isinstance(content, str):
            log.error(
                file,
                span.line,
                f"{where}.{_DOC_CONTENT}",
                f"expected a string, got {describe(content)}",
            )
            ok = False
        elif raw_score is not None and score is None:
            log.error(
                file,
                span.line,
                f"{where}.{_DOC_SCORE}",
                f"expected a finite number, got {describe(raw_score)}",
            )
            ok = False
        else:
            chunks.append(
                Chunk(doc_id=doc_id, text=content, score=score, metadata=_metadata(metadata))
            )
        i += 1
    for index in sorted(present - {str(j) for j in range(i)}, key=_index_order):
        log.error(
            file,
            span.line,
            f"attributes.{key}.{index}",
            f"document {index} after a gap (document {i} missing)"
            if index.isdigit()
            else f"{index!r} is not a document position (0, 1, 2 ...)",
        )
        ok = False
    return tuple(chunks) if ok else None


def _index_order(index: str) -> tuple[int, int, str]:
    """Positions in number order, anything else after them."""
    return (0, int(index), "") if index.isdigit() and len(index) < 20 else (1, 0, index)


def _metadata(value: Any) -> dict[str, Any]:
    """document.metadata: an object, or the JSON text of one (as OpenInference writes it)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return {}
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if all_finite(v)}


def _query_id(trace: _Trace) -> str | None:
    """metadata.query_id of the first span of the trace that carries one."""
    for span in trace.spans:
        value = span.attributes.get(f"{SpanAttributes.METADATA}.{_QUERY_ID_KEY}")
        if value is None and isinstance(span.attributes.get(SpanAttributes.METADATA), str):
            meta = _metadata(span.attributes[SpanAttributes.METADATA])
            value = meta.get(_QUERY_ID_KEY)
        query_id = id_text(value)
        if query_id is not None:
            return query_id
    return None


def _latency(trace: _Trace) -> dict[str, float]:
    """The whole trace's stages in the order they started: its first RETRIEVER and RERANKER
    span, its LLM spans summed, and the total, from the trace's first start to its last end."""
    found: list[tuple[float, str, float]] = []
    for stage, kind, summed in _LATENCY:
        spans = sorted(
            (s for s in trace.spans if s.kind == kind and s.duration_ms is not None),
            key=lambda s: s.start_ms or 0.0,
        )
        if spans:
            ms = sum(s.duration_ms or 0.0 for s in spans) if summed else spans[0].duration_ms
            found.append((spans[0].start_ms or 0.0, stage, ms or 0.0))
    timed = [s for s in trace.spans if s.duration_ms is not None]
    out = {stage: ms for _, stage, ms in sorted(found)}
    if timed:
        end = max(s.end_ms or 0.0 for s in timed)
        out["total"] = max(0.0, end - min(s.start_ms or 0.0 for s in timed))
    return out


def _tokens(trace: _Trace, file: str, log: ProblemLog) -> dict[str, int]:
    """Token counts summed over the trace's LLM spans."""
    out: dict[str, int] = {}
    for span in trace.spans:
        if span.kind != _LLM:
            continue
        for name, key in _TOKENS:
            value = span.attributes.get(key)
            if value is None:
                continue
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 0 <= value <= _MAX_TOKENS
            ):
                log.warn(
                    file,
                    span.line,
                    f"attributes.{key}",
                    f"expected an integer >= 0, got {describe(value)}; ignored",
                )
                continue
            out[name] = out.get(name, 0) + value
    return out
