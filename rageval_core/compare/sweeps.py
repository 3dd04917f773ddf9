"""Sweeps: every run that carries retriever settings in its run facts (top_k, score_threshold,
search_type, rerank_top_n ... whatever the runs hold), lined up with its metrics, p95 latency
and cost per query, and the best configuration under a latency or cost budget."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rageval_core.compare.comparison import higher_is_better
from rageval_core.compare.trends import run_values
from rageval_core.evaluation.report import Report, Settings
from rageval_core.rundata import RunData
from rageval_core.latency.run_summary import ops_summary
from rageval_core.store import RunRecord, Store

#: run settings that name a run's place in a trace or its tags, not a retriever setting
NOT_SETTINGS = frozenset({"stage", "trace_group", "tags"})
#: what can be plotted besides the metrics, and what a budget can be put on
LATENCY, COST = "p95 latency (ms)", "cost per query (USD)"
#: the quantity each of them is, as a comparison names it (for its direction)
_TARGETS = {LATENCY: "latency.total.p95", COST: "cost.per_query"}


@dataclass(frozen=True)
class SweepRow:
    """One run of a sweep: its scalar settings, metric values, p95 latency and cost."""

    run: str
    settings: dict[str, Any]
    metrics: dict[str, float]  # NaN: the run cannot be scored on the metric
    latency_p95_ms: float  # NaN: no latency recorded (the "total" stage, else the first one)
    cost_per_query_usd: float  # NaN: no tokens or no prices

    def value(self, name: str) -> float:
        """A metric's value, or LATENCY / COST."""
        if name == LATENCY:
            return self.latency_p95_ms
        if name == COST:
            return self.cost_per_query_usd
        return self.metrics.get(name, math.nan)


def _scalars(settings: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in settings.items()
        if k not in NOT_SETTINGS and (v is None or isinstance(v, str | int | float))
    }


def sweep(
    store: Store,
    settings: Settings | None = None,
    metrics: Sequence[str] | None = None,
    source: Callable[[RunRecord], tuple[RunData, Report | None]] | None = None,
) -> list[SweepRow]:
    """Every stored run with at least one scalar run setting, in the store's order.

    source(record): the run's arrays and, if the caller holds it, its Report at these settings
    with its ops summary (a dashboard's cache), as trends() takes it.
    """
    s = settings or Settings()
    s.check()
    rows = []
    for record in store.runs():
        own = _scalars(record.settings or {})
        if not own:
            continue
        data, values, report = run_values(store, record, s, metrics, source)
        summary = report.ops if report else ops_summary(data)
        latency = summary.get("latency_ms", {})
        stage = "total" if "total" in latency else next(iter(latency), None)
        p95 = latency[stage].get("p95") if stage else None
        cost = (summary.get("cost_usd") or {}).get("per_query")
        rows.append(
            SweepRow(
                run=record.name,
                settings=own,
                metrics=values,
                latency_p95_ms=math.nan if p95 is None else float(p95),
                cost_per_query_usd=math.nan if cost is None else float(cost),
            )
        )
    return rows


def swept_settings(rows: Sequence[SweepRow]) -> list[str]:
    """The settings that take two or more values across the rows (the ones a sweep varied)."""
    names = list(dict.fromkeys(k for r in rows for k in r.settings))
    return [n for n in names if len({repr(r.settings.get(n)) for r in rows}) > 1]


def best_under(
    rows: Sequence[SweepRow], metric: str, budget_on: str | None = None, budget: float | None = None
) -> SweepRow | None:
    """The row with the best value of metric (its good direction) among the rows whose
    budget_on (LATENCY or COST) is at most budget; a row with no value there is out of budget.
    None when no row qualifies. Ties go to the cheaper row (lower budget_on), then the first."""
    higher = higher_is_better(_TARGETS.get(metric, metric))
    ok = [
        r
        for r in rows
        if not math.isnan(r.value(metric))
        and (budget_on is None or budget is None or r.value(budget_on) <= budget)
    ]
    if not ok:
        return None

    def key(r: SweepRow) -> tuple[float, float]:
        v = r.value(metric)
        spend = r.value(budget_on) if budget_on else 0.0
        return (-v if higher else v, 0.0 if math.isnan(spend) else spend)

    return min(ok, key=key)
