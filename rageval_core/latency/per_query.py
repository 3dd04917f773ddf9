"""Per-query latency, tokens and cost as dense arrays aligned with a Report, and ECDF points.

rageval_core.metrics.latency_cost summarises the long rows (one per query and stage); the Latency & cost page
also needs one value per query, in the same order as Report.query_ids / Report.per_query, to
plot cost and latency against quality. Everything here is numpy over the RunData arrays: no
loop over queries, so a 10,000-query run answers within a rerun.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rageval_core.metrics import latency_cost as ops
from rageval_core.latency.run_summary import query_costs
from rageval_core.rundata import RunData, total_latency

Floats = NDArray[np.float64]

#: ECDF curves are thinned to at most this many points: enough for a smooth curve on screen,
#: few enough that a 10,000-query run draws instantly.
ECDF_POINTS = 1000


@dataclass(frozen=True, slots=True)
class QueryOps:
    """One value per query (row q = query q of the run, file order); NaN where not recorded."""

    query_ids: NDArray[np.object_]
    #: stage -> (n,) ms, stages in pipeline order (RunData.latency_stages), total included
    stages: dict[str, Floats]
    #: (n,) the total stage, recorded or derived (ops.derive_total)
    total_ms: Floats
    #: (n,) True where the total is derived: the sum of the top-level stages (none recorded)
    total_derived: NDArray[np.bool_]
    #: token kind -> (n,) counts
    tokens: dict[str, Floats]
    #: (n,) USD; NaN without tokens or when a needed price is missing
    cost_usd: Floats
    #: token kinds used without a price in the run header
    price_missing: tuple[str, ...]

    @property
    def n_queries(self) -> int:
        return int(self.query_ids.size)

    @property
    def n_total_derived(self) -> int:
        return int(np.count_nonzero(self.total_derived))

    @property
    def has_latency(self) -> bool:
        return bool(self.stages)

    @property
    def has_tokens(self) -> bool:
        return bool(self.tokens)


@dataclass(frozen=True, slots=True)
class ScatterPoints:
    """Queries that have both a total latency and a metric value, with their group and id."""

    x_ms: Floats
    y: Floats
    group: NDArray[np.str_]
    query_id: NDArray[np.str_]
    #: queries left out: no total latency or not scored on the metric
    n_dropped: int


def query_ops(data: RunData) -> QueryOps:
    """Latency per stage, total latency, tokens and cost of every query of the run."""
    n = data.n_queries
    stages = long_to_columns(
        data.latency_q, data.latency_stage, data.latency_ms, n, data.latency_stages
    )
    tokens = long_to_columns(data.tokens_q, data.tokens_kind, data.tokens_n, n, ops.TOKEN_ORDER)
    costs = query_costs(data)
    total, derived = total_latency(data)
    return QueryOps(
        query_ids=data.query_ids,
        stages=stages,
        total_ms=total,
        total_derived=derived,
        tokens=tokens,
        cost_usd=costs.cost_usd,
        price_missing=costs.price_missing,
    )


def latency_by_tag(data: RunData, tag: str) -> dict[str, dict[str, ops.Summary]]:
    """{tag value: {stage: count, mean, p50 ... p99}}: ops.latency_summary inside each group.

    The same numbers as evaluate(..., by=tag).by["groups"][value]["latency_ms"], without
    evaluating any metric: latency does not depend on k or the threshold, so this is computed
    once per (run, tag) rather than on every slider move. A query without the tag is in
    ops.NO_TAG; an unknown tag is a KeyError.
    """
    labels = _labels(data.tags[tag])
    out = ops.latency_summary(
        data.latency_stage,
        data.latency_ms,
        labels[data.latency_q],
        data.latency_stages,
        data.latency_derived,
    )
    return out  # type: ignore[return-value]


def long_to_columns(
    q: ArrayLike, key: ArrayLike, value: ArrayLike, n: int, first: tuple[str, ...] = ()
) -> dict[str, Floats]:
    """Long rows (query index, key, value) -> {key: (n,) values}, NaN where a query lacks the key.

    Keys named in first come first, in that order; the others follow sorted by name. A repeated
    (query, key) row keeps the last value (the store's primary key makes that impossible).
    """
    rows = np.asarray(q, dtype=np.int64).reshape(-1)
    keys = np.asarray(key, dtype=object).reshape(-1).astype(str)
    values = np.asarray(value, dtype=np.float64).reshape(-1)
    if not (rows.size == keys.size == values.size):
        raise ValueError(f"{rows.size} query indices, {keys.size} keys and {values.size} values")
    present = set(np.unique(keys).tolist()) if keys.size else set()
    order = [k for k in first if k in present] + sorted(present.difference(first))
    out: dict[str, Floats] = {}
    for name in order:  # one pass per key (a handful), never per query
        col = np.full(n, np.nan)
        sel = keys == name
        col[rows[sel]] = values[sel]
        out[name] = col
    return out


def ecdf(values: ArrayLike, max_points: int = ECDF_POINTS) -> tuple[Floats, Floats]:
    """Points (x, F(x)) of the empirical CDF of the finite values: F = share of values <= x.

    x is sorted; with more than max_points values, evenly spaced ranks are kept (always the
    first and the last), so the curve keeps its shape while the plot stays light.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    v = np.sort(v[np.isfinite(v)])
    if v.size == 0:
        return np.empty(0), np.empty(0)
    # F at the last occurrence of each value: the step height after all its ties
    last = np.r_[v[1:] != v[:-1], True]
    idx = np.flatnonzero(last)
    if idx.size > max_points:
        pick = np.unique(np.linspace(0, idx.size - 1, max(max_points, 2)).round().astype(np.intp))
        idx = idx[pick]
    return v[idx], (idx + 1) / v.size


def scatter_points(
    total_ms: ArrayLike,
    metric: ArrayLike,
    groups: ArrayLike | None,
    query_ids: ArrayLike,
) -> ScatterPoints:
    """Latency against a per-query metric: the queries with both values, their tag and id.

    groups is the tag value per query (None -> ops.NO_TAG), or None for no colouring.
    """
    x = np.asarray(total_ms, dtype=np.float64).reshape(-1)
    y = np.asarray(metric, dtype=np.float64).reshape(-1)
    ids = np.asarray(query_ids, dtype=object).reshape(-1)
    if not (x.size == y.size == ids.size):
        raise ValueError(f"{x.size} latencies, {y.size} metric values and {ids.size} query ids")
    labels = np.full(x.size, "", dtype=object) if groups is None else _labels(groups)
    if labels.size != x.size:
        raise ValueError(f"{labels.size} tag values for {x.size} queries")
    keep = np.isfinite(x) & np.isfinite(y)
    return ScatterPoints(
        x_ms=x[keep],
        y=y[keep],
        group=labels[keep].astype(str),
        query_id=ids[keep].astype(str),
        n_dropped=int(keep.size - np.count_nonzero(keep)),
    )


def _labels(values: ArrayLike) -> NDArray[Any]:
    arr = np.asarray(values, dtype=object).reshape(-1)
    # None, or NaN (the one value unequal to itself): element-wise in C, no Python call per value
    missing = (arr == None) | (arr != arr)  # noqa: E711
    out = arr.copy()
    out[missing] = ops.NO_TAG
    return out.astype(str)
