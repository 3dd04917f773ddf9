"""Trends: every stored run in time order, with its metrics and p95 latency per stage, and what
groups runs into one line (a run tag such as `experiment`, or the run name's stem)."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rageval_core.metrics import latency_cost as ops
from rageval_core.errors import RagevalError, UsageError
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Report, Settings
from rageval_core.latency.run_summary import ops_summary
from rageval_core.metrics import registry
from rageval_core.rundata import RunData, load_run_data
from rageval_core.store import RunRecord, Store


@dataclass(frozen=True)
class TrendRow:
    """One run in time order: its metric values and p95 latency per stage."""

    run: str
    created_at: str | None
    imported_at: str
    n_queries: int
    metrics: dict[str, float]  # NaN: the run does not support the metric
    latency_p95_ms: dict[str, float | None]
    #: the run's own tags and its scalar run settings (retriever, top_k ...), as text
    tags: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def dated_from(self) -> str:
        """ "created_at", or "imported_at" when the run has no readable created_at."""
        return "created_at" if _when(self.created_at) is not None else "imported_at"

    @property
    def when(self) -> str:
        """The run's date as ISO 8601: its created_at, else its import time (dated_from says)."""
        return str(self.created_at if self.dated_from == "created_at" else self.imported_at)

    @property
    def stem(self) -> str:
        return name_stem(self.run)

    def to_json(self) -> dict[str, Any]:
        return ops.to_json_value(dataclasses.asdict(self))  # type: ignore[no-any-return]


#: a name's last part that holds a digit ("-k3", "_v2", "@2026-05-01"): a version, not a kind
_VERSION_TAIL = re.compile(r"[-_.@][^-_.@]*\d[^-_.@]*$")
#: group trends by the run name's stem (the default), not by a tag
BY_STEM = "name stem"


def name_stem(name: str) -> str:
    """The run name without its version-like tails: "bm25-k3" -> "bm25", "exp_v2_2" -> "exp"."""
    stem = name
    while True:
        cut = _VERSION_TAIL.sub("", stem)
        if cut == stem or not cut:
            return stem
        stem = cut


def trend_group(row: TrendRow, by: str = BY_STEM) -> str:
    """The line row belongs to: its value of the tag by, or its name's stem (by = BY_STEM)."""
    if by == BY_STEM:
        return row.stem
    return row.tags.get(by, f"(no {by})")


def group_keys(rows: Sequence[TrendRow]) -> list[str]:
    """What trends can be grouped by: the name's stem, then every tag a run carries."""
    return [BY_STEM, *sorted({k for r in rows for k in r.tags})]


def _run_tags(settings: dict[str, Any]) -> dict[str, str]:
    """The run's tags ({"tags": {...}} in its settings) over its scalar settings, as text."""
    out = {str(k): str(v) for k, v in settings.items() if isinstance(v, str | int | float)}
    own = settings.get("tags")
    if isinstance(own, dict):
        out.update({str(k): str(v) for k, v in own.items()})
    return out


def _when(text: str | None) -> datetime | None:
    """An ISO 8601 time as an aware datetime (naive = UTC); None when absent or unreadable."""
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def trends(
    store: Store,
    settings: Settings | None = None,
    metrics: Sequence[str] | None = None,
    source: Callable[[RunRecord], tuple[RunData, Report | None]] | None = None,
) -> list[TrendRow]:
    """Every stored run ordered by created_at (then imported_at), with metrics and p95 latency.

    Runs without a readable created_at come last, by imported_at. A metric a run cannot be
    scored on is NaN for that run (metrics None: each run's default metrics).
    source(record): the run's arrays and, if the caller holds it, its Report at these settings
    (a dashboard's cache); a report that holds every metric asked for is used as it is.
    """
    s = settings or Settings()
    s.check()
    records = store.runs()
    far = datetime.max.replace(tzinfo=UTC)

    def key(r: Any) -> tuple[datetime, datetime, int]:
        return (_when(r.created_at) or far, _when(str(r.imported_at)) or far, r.run_id)

    rows = []
    for record in sorted(records, key=key):
        data, values, report = run_values(store, record, s, metrics, source)
        latency = report.ops.get("latency_ms", {}) if report else ops_summary(data)["latency_ms"]
        rows.append(
            TrendRow(
                run=record.name,
                created_at=record.created_at,
                imported_at=str(record.imported_at),
                n_queries=record.n_queries,
                metrics=values,
                latency_p95_ms={stage: st.get("p95") for stage, st in latency.items()},
                tags=_run_tags(record.settings or {}),
            )
        )
    return rows


def run_values(
    store: Store,
    record: RunRecord,
    settings: Settings,
    metrics: Sequence[str] | None,
    source: Callable[[RunRecord], tuple[RunData, Report | None]] | None,
) -> tuple[RunData, dict[str, float], Report | None]:
    """A run's arrays, its values of metrics and its report (None when it cannot be scored on
    all of them): from source's report when that holds every metric, else evaluated here."""
    data, held = source(record) if source else (load_run_data(store, record.run_id), None)
    if held is not None and all(m in held.metrics for m in metrics or ()):
        # no metrics (None or empty): the run's default metrics, as evaluate() takes them
        values = {m: held.metrics[m] for m in metrics} if metrics else dict(held.metrics)
        return data, values, held
    values, report = _trend_values(store, data, settings, metrics)
    return data, values, report


def _trend_values(
    store: Store, data: RunData, settings: Settings, metrics: Sequence[str] | None
) -> tuple[dict[str, float], Report | None]:
    try:
        report = evaluate(data, metrics, store=store, settings=settings)
        return dict(report.metrics), report
    except RagevalError:
        if not metrics:
            return {}, None
    values = {}
    for m in registry.parse_all(metrics):
        try:
            values[str(m)] = evaluate(data, [str(m)], store=store, settings=settings).metrics[
                str(m)
            ]
        except UsageError:
            values[str(m)] = math.nan
    return values, None
