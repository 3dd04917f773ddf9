"""The run model every reader produces and every later step consumes (frozen dataclasses)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the annotation only: model stays importable without pyarrow
    from rageval_core.columns import ColumnBatch


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieved chunk; its rank is its 1-based position in Query.retrieved."""

    doc_id: str
    text: str | None = None
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


def label_value(value: float) -> int | float:
    """A stored relevance label as given: an int when whole (the store keeps labels as DOUBLE,
    so an integer label reads back as the int it was), else the real grade."""
    number = float(value)
    return int(number) if number.is_integer() else number


@dataclass(frozen=True, slots=True)
class Query:
    """One query of a run with what the retriever returned and whatever gold is known.

    retrieved is None for a query that is judged (in the qrels) but absent from the run:
    trec_eval skips such queries unless -c (rageval's --complete). An empty tuple is a query the
    retriever answered with nothing, which scores 0.
    relevance is None when the query has no qrels; {} when it is judged with nothing relevant.
    Its labels are ints (trec_eval's) or real grades (0.3: docs/metrics.md, "Fractional labels").
    """

    query_id: str
    retrieved: tuple[Chunk, ...] | None = ()
    query: str | None = None
    relevance: Mapping[str, float] | None = None
    evidence: tuple[str, ...] = ()
    answer: str | None = None
    reference_answer: str | None = None
    latency_ms: Mapping[str, float] = field(default_factory=dict)
    tokens: Mapping[str, int] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    #: judge scores that came with the run: a number, or a categorical label ("supported")
    judge: Mapping[str, float | str] = field(default_factory=dict)
    #: human labels (name -> label), what a judge is calibrated against
    labels: Mapping[str, str] = field(default_factory=dict)
    #: 1-based line (or row/element) of the source file; not part of the content.
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """Run-level facts: from a native header record or a sidecar FILE.run.json (docs/formats.md)."""

    name: str | None = None
    created_at: str | None = None  # ISO 8601, as given
    description: str | None = None
    #: retriever settings: top_k, score_threshold, prefetch_limit, rerank_top_n, model, ... (any JSON)
    settings: Mapping[str, Any] = field(default_factory=dict)
    price_prompt_per_1k: float | None = None  # USD per 1,000 prompt tokens
    price_completion_per_1k: float | None = None  # USD per 1,000 completion tokens


def info_to_json(info: RunInfo) -> dict[str, Any]:
    """The header record's object for info (inverse of parse_run_info; None fields omitted).

    Here, below both its users: the native writer writes it, the store's content hash hashes it.
    """
    out: dict[str, Any] = {}
    for key in ("name", "created_at", "description"):
        if getattr(info, key) is not None:
            out[key] = getattr(info, key)
    if info.settings:
        out["settings"] = dict(info.settings)
    prices = {}
    if info.price_prompt_per_1k is not None:
        prices["prompt"] = info.price_prompt_per_1k
    if info.price_completion_per_1k is not None:
        prices["completion"] = info.price_completion_per_1k
    if prices:
        out["prices_per_1k"] = prices
    return out


@dataclass(slots=True)
class ParsedRun:
    """What a reader returns: run facts plus the queries, possibly a lazy stream.

    Problems met while the stream is consumed go to the ProblemLog the reader was given; the
    consumer (the store) checks it once the stream is exhausted, before it commits.
    columns, when a reader offers it, is the same content as store-ready column batches (the
    fast route: no Query objects). It may raise columns.UseQueries at any point, before any
    problem is logged; the store then discards what it took and consumes queries instead.
    """

    info: RunInfo
    queries: Iterable[Query]
    format: str
    sources: tuple[str, ...]
    columns: Iterable[ColumnBatch] | None = None
    #: about how many queries the stream holds (e.g. the lines of a large JSONL file), for a
    #: progress bar's total; None when unknown. A hint only: nothing relies on it being exact.
    expected_queries: int | None = None
