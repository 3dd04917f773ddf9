"""Trends: every stored run in time order, with its metrics and p95 latency per stage."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rageval_core import ops
from rageval_core.errors import RagevalError, UsageError
from rageval_core.evaluate import Report, Settings, evaluate
from rageval_core.runops import ops_summary
from rageval_core.metrics import registry
from rageval_core.rundata import RunData, load_run_data
from rageval_core.store import Store


@dataclass(frozen=True)
class TrendRow:
    """One run in time order: its metric values and p95 latency per stage."""

    run: str
    created_at: str | None
    imported_at: str
    n_queries: int
    metrics: dict[str, float]  # NaN: the run does not support the metric
    latency_p95_ms: dict[str, float | None]

    def to_json(self) -> dict[str, Any]:
        return ops.to_json_value(dataclasses.asdict(self))  # type: ignore[no-any-return]


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
    store: Store, settings: Settings | None = None, metrics: Sequence[str] | None = None
) -> list[TrendRow]:
    """Every stored run ordered by created_at (then imported_at), with metrics and p95 latency.

    Runs without a readable created_at come last, by imported_at. A metric a run cannot be
    scored on is NaN for that run (metrics None: each run's default metrics).
    """
    s = settings or Settings()
    s.check()
    records = store.runs()
    far = datetime.max.replace(tzinfo=UTC)

    def key(r: Any) -> tuple[datetime, datetime, int]:
        return (_when(r.created_at) or far, _when(str(r.imported_at)) or far, r.run_id)

    rows = []
    for record in sorted(records, key=key):
        data = load_run_data(store, record.run_id)
        values, report = _trend_values(store, data, s, metrics)
        latency = report.ops.get("latency_ms", {}) if report else ops_summary(data)["latency_ms"]
        rows.append(
            TrendRow(
                run=record.name,
                created_at=record.created_at,
                imported_at=str(record.imported_at),
                n_queries=record.n_queries,
                metrics=values,
                latency_p95_ms={stage: st.get("p95") for stage, st in latency.items()},
            )
        )
    return rows


def _trend_values(
    store: Store, data: RunData, s: Settings, metrics: Sequence[str] | None
) -> tuple[dict[str, float], Report | None]:
    try:
        report = evaluate(data, metrics, store=store, settings=s)
        return dict(report.metrics), report
    except RagevalError:
        if not metrics:
            return {}, None
    values = {}
    for m in registry.parse_all(metrics):
        try:
            values[str(m)] = evaluate(data, [str(m)], store=store, settings=s).metrics[str(m)]
        except UsageError:
            values[str(m)] = math.nan
    return values, None
