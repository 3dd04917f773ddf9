"""A report's values inside each value of one tag (report.by): every metric and the ops summary."""

from __future__ import annotations
import functools
from collections.abc import Callable
from typing import Any
from numpy.typing import NDArray
from rageval_core.errors import UsageError
from rageval_core.metrics import registry
from rageval_core.evaluation.report import (
    Floats,
)
from rageval_core.rundata import (
    RunData,
    memo,
)
from rageval_core.latency.run_summary import Deferred, group_ops, groups_of, ops_rows


def _aggregate(
    name: str, values: Floats, weights: Floats | None, rows: NDArray[Any] | None = None
) -> float:
    """The run value of a per-query column (over the rows of a mask or an index, when given)."""
    if rows is not None:
        values = values[rows]
        weights = None if weights is None else weights[rows]
    return registry.aggregate(name, values, weights)


def breakdown(
    data: RunData,
    per_query: dict[str, Floats],
    weights: dict[str, Floats],
    tag: str,
    aggregate: Callable[[str, Floats, Floats | None], float] | None = None,
) -> dict[str, Any]:
    """Every metric and ops summary inside each value of one tag, with counts (the ops part,
    independent of the settings, is computed once per run and tag). aggregate(name, values,
    weights): a run value other than the registry's (a preset's metrics)."""
    if tag not in data.tags:
        known = ", ".join(sorted(data.tags)) or "none"
        raise UsageError(f"run {data.run.name} has no tag {tag!r} (tags: {known})")
    groups: dict[str, Any] = {}
    labels, found = memo(data, ("groups", tag), lambda: groups_of(data, tag))
    rows_ops = ops_rows(data)
    for group, rows in found:
        metrics = {
            name: _aggregate(name, col, weights.get(name), rows)
            if aggregate is None
            else aggregate(name, col[rows], None if name not in weights else weights[name][rows])
            for name, col in per_query.items()
        }
        # the ops part is read lazily (Deferred): the grouped percentiles are computed, once per
        # run and tag, by the first view that shows them
        groups[group] = Deferred(
            functools.partial(group_ops, rows_ops, tag, labels, group),
            eager={"n": int(rows.size), "metrics": metrics},
        )
    return {"tag": tag, "groups": groups}
