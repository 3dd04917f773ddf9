"""Latency and cost of candidates against the baseline over paired queries: each stage's mean
and percentiles, cost per query and in total, with bootstrap intervals of the change."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core import ops
from rageval_core.compare.statistics import StatOptions, percentile_interval, resampled_rows
from rageval_core.rundata import RunData
from rageval_core.runops import query_costs
from rageval_core.store import Store

Floats = NDArray[np.float64]

LATENCY_STATS = ("mean", "p50", "p90", "p95", "p99")


@dataclass(frozen=True)
class OpsChange:
    """One statistic (latency of a stage, or cost) of baseline and candidate over paired queries."""

    target: str  # "latency.total.p95", "cost.per_query", "cost.total"
    candidate: str
    n: int
    baseline: float
    candidate_value: float
    ci_low: float  # bootstrap interval of the change, over resampled paired queries
    ci_high: float

    @property
    def change(self) -> float:
        return self.candidate_value - self.baseline

    @property
    def change_pct(self) -> float:
        return 100.0 * self.change / self.baseline if self.baseline else math.nan

    def to_json(self) -> dict[str, Any]:
        return ops.to_json_value(
            {  # type: ignore[no-any-return]
                "n": self.n,
                "baseline": self.baseline,
                "candidate": self.candidate_value,
                "change": self.change,
                "change_pct": self.change_pct,
                "ci": [self.ci_low, self.ci_high],
            }
        )


def _latency_stats(x: Floats) -> Floats:
    """(rows, n) -> (rows, 5): mean, p50, p90, p95, p99 of each row (numpy's linear percentile)."""
    pct = np.percentile(x, [50, 90, 95, 99], axis=1).T
    return np.concatenate([x.mean(axis=1)[:, None], pct], axis=1)


def _ops_changes(
    target: str,
    names: Sequence[str],
    candidate: str,
    base: Floats,
    cand: Floats,
    statistic: Callable[[Floats], Floats],
    options: StatOptions,
    resample: bool = True,
) -> list[OpsChange]:
    paired = np.isfinite(base) & np.isfinite(cand)
    b, c = base[paired], cand[paired]
    n = int(b.size)
    if n == 0:
        return []
    values_b = statistic(b[None, :])[0]
    values_c = statistic(c[None, :])[0]
    if n >= 2 and resample:
        samples = resampled_rows(
            n, options.n_bootstrap, options.seed, lambda idx: statistic(c[idx]) - statistic(b[idx])
        )
        lo, hi = percentile_interval(samples, options.level)
    else:
        lo = hi = np.full(len(names), np.nan)
    return [
        OpsChange(
            f"{target}.{name}",
            candidate,
            n,
            float(values_b[i]),
            float(values_c[i]),
            float(lo[i]),
            float(hi[i]),
        )
        for i, name in enumerate(names)
    ]


def stage_columns(data: RunData) -> dict[str, Floats]:
    """stage -> (n,) latency in ms per query, NaN where the stage is not recorded."""
    stages = ops._key_order(set(data.latency_stage.astype(str).tolist()), ops.STAGE_ORDER)
    out: dict[str, Floats] = {}
    for stage in stages:
        col = np.full(data.n_queries, np.nan)
        sel = data.latency_stage == stage
        col[data.latency_q[sel]] = data.latency_ms[sel]
        out[stage] = col
    return out


def _cost_stats(x: Floats) -> Floats:
    return np.stack([x.mean(axis=1), x.sum(axis=1)], axis=1)


def ops_changes(
    loaded: list[tuple[Store, RunData]],
    labels: list[str],
    aligned_rows: Sequence[NDArray[np.intp]],
    opts: StatOptions,
    resample: bool = True,
) -> tuple[list[OpsChange], list[OpsChange], str]:
    """Latency changes per stage and statistic, and cost per query / total, per candidate
    (resample=False: without their bootstrap intervals)."""
    stages = [stage_columns(d) for _, d in loaded]
    latency: list[OpsChange] = []
    cost: list[OpsChange] = []
    costs = [query_costs(d) for _, d in loaded]
    missing = [
        f"{label} has no price for {', '.join(c.price_missing)} tokens"
        for label, c in zip(labels, costs, strict=True)
        if c.price_missing
    ]
    no_tokens = [label for label, c in zip(labels, costs, strict=True) if not c.has_tokens.any()]
    note = "; ".join(
        missing + ([f"no token counts in {', '.join(no_tokens)}"] if no_tokens else [])
    )
    base_rows = aligned_rows[0]
    for i in range(1, len(labels)):
        rows = aligned_rows[i]
        for stage, col in stages[0].items():
            if stage in stages[i]:
                latency += _ops_changes(
                    f"latency.{stage}",
                    LATENCY_STATS,
                    labels[i],
                    col[base_rows],
                    stages[i][stage][rows],
                    _latency_stats,
                    opts,
                    resample,
                )
        if not note:
            cost += _ops_changes(
                "cost",
                ("per_query", "total"),
                labels[i],
                costs[0].cost_usd[base_rows],
                costs[i].cost_usd[rows],
                _cost_stats,
                opts,
                resample,
            )
    return latency, cost, note
