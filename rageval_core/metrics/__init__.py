"""Metrics: a registry of measure names over per-query functions on numpy arrays.

Importing this package registers the built-in families (ranking, evidence, generation; a new
family adds its module to the imports below). Typical use::

    arrays, selection = ranked_labels_from_queries(parsed.queries, rel_level=1, complete=False)
    per_query = compute(["nDCG@10", "AP", "P@5"], arrays)
"""

from __future__ import annotations

# each family module registers its measures when imported
from rageval_core.metrics import evidence, generation, judge, ranking  # noqa: F401
from rageval_core.metrics.arrays import (
    QuerySelection,
    RankedLabels,
    ranked_labels_from_queries,
    ranked_labels_from_rows,
)
from rageval_core.metrics.registry import (
    REGISTRY,
    Measure,
    MeasureSpec,
    Param,
    aggregate,
    compute,
    higher_is_better,
    known_names,
    parse,
    parse_all,
    register,
)

__all__ = [
    "REGISTRY",
    "Measure",
    "MeasureSpec",
    "Param",
    "QuerySelection",
    "RankedLabels",
    "aggregate",
    "compute",
    "higher_is_better",
    "known_names",
    "parse",
    "parse_all",
    "ranked_labels_from_queries",
    "ranked_labels_from_rows",
    "register",
]
