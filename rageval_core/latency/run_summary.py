"""A run's latency, tokens and cost as a report shows them: summaries over all queries, over a
mask, or per value of a tag, computed from the run's long rows on first read and kept (a large
run's percentiles take longer than every metric of a view, and only the views that show latency
or cost read them)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.metrics import latency_cost as ops
from rageval_core.rundata import RunData, memo

Floats = NDArray[np.float64]


def ops_summary(data: RunData, rows: NDArray[np.bool_] | None = None) -> dict[str, Any]:
    """Latency percentiles per stage, tokens, and cost, for all queries or a subset (mask)."""
    return ops_rows(data).summary(rows)


#: the keys of an ops summary (ops_summary), also present in every by-tag group
OPS_KEYS = ("latency_ms", "tokens", "cost_usd")


@dataclass(frozen=True, eq=False)
class OpsRows:
    """What every ops summary of a run reads: its long latency and token rows, per-query costs.

    A Report keeps this (not its RunData) until its ops are first read, and the summaries
    computed from it are kept here, so every report of a run shares them.
    """

    latency_q: NDArray[np.int64]
    latency_stage: NDArray[np.str_]
    latency_ms: Floats
    latency_derived: NDArray[np.bool_]
    latency_stages: tuple[str, ...]
    tokens_q: NDArray[np.int64]
    tokens_kind: NDArray[np.str_]
    tokens_n: NDArray[np.int64]
    costs: ops.QueryCosts
    _kept: dict[Any, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def summary(self, rows: NDArray[np.bool_] | None = None) -> dict[str, Any]:
        """ops_summary over every query (kept) or over a mask of them."""
        if rows is None:
            return self._keep(None, lambda: self._summary(None))  # type: ignore[no-any-return]
        return self._summary(rows)

    def by_group(self, tag: str, labels: NDArray[np.str_]) -> dict[str, dict[str, Any]]:
        """{tag value: ops summary of its queries}, every group in one grouped call (kept)."""

        def make() -> dict[str, dict[str, Any]]:
            latency = ops.latency_summary(
                self.latency_stage,
                self.latency_ms,
                labels[self.latency_q],
                self.latency_stages,
                self.latency_derived,
            )
            tokens = ops.token_summary(self.tokens_kind, self.tokens_n, labels[self.tokens_q])
            out = {}
            for group in set(labels.tolist()):
                mask = labels == group
                costs = ops.QueryCosts(
                    self.costs.cost_usd[mask], self.costs.has_tokens[mask], self.costs.price_missing
                )
                out[group] = {
                    "latency_ms": latency.get(group, {}),
                    "tokens": tokens.get(group, {}),
                    "cost_usd": ops.cost_summary(costs),
                }
            return out

        return self._keep(("by", tag), make)  # type: ignore[no-any-return]

    def _keep(self, key: Any, make: Callable[[], Any]) -> Any:
        with self._lock:  # reports are shared between the dashboard's sessions (threads)
            if key not in self._kept:
                self._kept[key] = make()
            return self._kept[key]

    def _summary(self, rows: NDArray[np.bool_] | None) -> dict[str, Any]:
        lat_sel = slice(None) if rows is None else rows[self.latency_q]
        tok_sel = slice(None) if rows is None else rows[self.tokens_q]
        latency = ops.latency_summary(
            self.latency_stage[lat_sel],
            self.latency_ms[lat_sel],
            order=self.latency_stages,
            derived=self.latency_derived[lat_sel],
        )
        tokens = ops.token_summary(self.tokens_kind[tok_sel], self.tokens_n[tok_sel])
        costs = self.costs
        if rows is not None:
            costs = ops.QueryCosts(
                costs.cost_usd[rows], costs.has_tokens[rows], costs.price_missing
            )
        return {"latency_ms": latency, "tokens": tokens, "cost_usd": ops.cost_summary(costs)}


def ops_rows(data: RunData) -> OpsRows:
    return memo(
        data,
        ("ops_rows",),
        lambda: OpsRows(  # type: ignore[no-any-return]
            data.latency_q,
            data.latency_stage,
            data.latency_ms,
            data.latency_derived,
            data.latency_stages,
            data.tokens_q,
            data.tokens_kind,
            data.tokens_n,
            query_costs(data),
        ),
    )


class Deferred(Mapping[str, Any]):
    """A read-only mapping computed on its first read, then kept (thread-safe).

    Report.ops and the ops part of each by-tag group: sorting a large run's latency rows into
    percentiles takes longer than every metric of a view, and only the views that show
    latency or cost read them. Known keys are listed without computing anything; a copy or a
    pickle is a plain dict.
    """

    def __init__(
        self,
        make: Callable[[], Mapping[str, Any]],
        keys: Sequence[str] = OPS_KEYS,
        eager: Mapping[str, Any] | None = None,
    ) -> None:
        self._make: Callable[[], Mapping[str, Any]] | None = make
        self._value: Mapping[str, Any] = {}
        self._keys = tuple(keys)
        self._eager = dict(eager or {})
        self._lock = threading.Lock()

    def _computed(self) -> Mapping[str, Any]:
        if self._make is not None:
            with self._lock:
                if self._make is not None:
                    self._value, self._make = self._make(), None
        return self._value

    def __getitem__(self, key: str) -> Any:
        if key in self._eager:
            return self._eager[key]
        if key not in self._keys:
            raise KeyError(key)
        return self._computed()[key]

    def __contains__(self, key: object) -> bool:  # without computing anything
        return key in self._eager or key in self._keys

    def __iter__(self) -> Iterator[str]:
        yield from self._eager
        yield from self._keys

    def __len__(self) -> int:
        return len(self._eager) + len(self._keys)

    def __repr__(self) -> str:
        return repr(dict(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


def query_costs(data: RunData) -> ops.QueryCosts:
    """USD per query from its prompt/completion tokens and the run's prices (per 1K tokens)."""

    def make() -> ops.QueryCosts:
        per_kind = {}
        for kind in ("prompt", "completion"):
            col = np.full(data.n_queries, np.nan)
            sel = data.tokens_kind == kind
            col[data.tokens_q[sel]] = data.tokens_n[sel]
            per_kind[kind] = col
        return ops.cost_per_query(
            per_kind["prompt"],
            per_kind["completion"],
            data.run.price_prompt_per_1k,
            data.run.price_completion_per_1k,
        )

    return memo(data, ("costs",), make)  # type: ignore[no-any-return]


def group_ops(rows_ops: OpsRows, tag: str, labels: NDArray[np.str_], group: str) -> dict[str, Any]:
    return rows_ops.by_group(tag, labels)[group]


def groups_of(
    data: RunData, tag: str
) -> tuple[NDArray[np.str_], list[tuple[str, NDArray[np.int64]]]]:
    """(each query's value of the tag, [(value, its queries' row numbers)]), NO_TAG last."""
    values = data.tags[tag]
    labels = np.where(values == None, ops.NO_TAG, values).astype(str)  # noqa: E711
    order = sorted(set(labels.tolist()), key=lambda g: (g == ops.NO_TAG, g))
    return labels, [(group, np.flatnonzero(labels == group)) for group in order]
