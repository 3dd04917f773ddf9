"""Run values as curves: every cut-off k = 1..depth, or many coverage thresholds, in one call.

Each point equals what evaluate() reports at that (k, threshold); the curves read the same
cached inputs (RankedLabels prefix sums, the Coverage running maxima) instead of evaluating
per point. Names are measure names without a cut-off ("R", "nDCG", "EvidenceRecall").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rageval_core.errors import UsageError
from rageval_core.evaluate import (
    RANKING_DEFAULTS,
    EVIDENCE_DEFAULTS,
    Relevance,
    Settings,
    coverage,
    evidence_labels,
    id_labels,
    resolve_relevance,
)
from rageval_core.metrics import evidence as ev
from rageval_core.metrics import registry
from rageval_core.metrics.arrays import RankedLabels
from rageval_core.rundata import RunData
from rageval_core.store import Store

Floats = NDArray[np.float64]

#: evidence metric -> its run value at every k (columns) from a Coverage at a threshold; the
#: aggregation of each is the one evaluate() applies (registry.aggregate on the per-query values)
_EVIDENCE_OVER_K: dict[str, Callable[[ev.Coverage, float], Floats]] = {
    "EvidenceRecall": lambda cov, t: ev.pool_recall(*ev.evidence_recall(cov, t)),
    "PerQueryCoverage": lambda cov, t: _column_means(ev.per_query_coverage(cov, t)),
    "FullCoverageRate": lambda cov, t: _column_means(ev.full_coverage(cov, t)),
    "ContextCoverage": lambda cov, t: _column_means(ev.context_coverage(cov)),
    "BestRank": lambda cov, t: ev.mean_found(ev.best_rank(cov, t)),
}
#: the evidence metrics threshold_sweep answers for many thresholds at once
SWEPT = ("EvidenceRecall", "PerQueryCoverage", "FullCoverageRate", "BestRank")
#: ranking metrics whose value at k reads only the top k labels (plus n_rel and the ideal
#: top k): over thresholds they are computed on labels cut to k columns, depth/k times cheaper
THRESHOLD_RANKING = frozenset({"P", "R", "F1", "Hit", "RR", "AP", "nDCG"})


def curve_names(data: RunData, relevance: Relevance | None) -> list[str]:
    """The main metrics of a mode that vary with k: the report's defaults, cut-offs dropped.

    Rprec takes no cut-off and is left out; BestRank only when the registry knows it.
    """
    names: list[str] = []
    if relevance is not None:
        names += [_base(m) for m in RANKING_DEFAULTS if registry.REGISTRY[_base(m)].allows_cutoff]
    if data.run.has_evidence:
        names += [_base(m) for m in EVIDENCE_DEFAULTS if _base(m) in registry.REGISTRY]
    return names


def curves_over_k(
    store: Store, data: RunData, settings: Settings, names: Sequence[str]
) -> dict[str, Floats]:
    """Run value of each metric at k = 1..depth: name -> (depth,) array, entry i is k = i+1.

    settings.k is ignored; the threshold, scorer, normalisation, score cut and relevance mode
    apply as in evaluate(). Ranking metrics read the cached prefix sums (one column per k);
    evidence metrics come from the Coverage's running maxima for all k at once.
    """
    settings.check()
    depth = data.depth
    out: dict[str, Floats] = {}
    labels: RankedLabels | None = None
    cov: ev.Coverage | None = None
    for name in names:
        spec = _spec(name)
        if spec.family == "ranking" and spec.allows_cutoff:
            if labels is None:
                labels = _ranking_labels(store, data, settings)
            out[name] = np.array([_ranking_value(labels, name, k) for k in range(1, depth + 1)])
        elif spec.family == "evidence" and name in _EVIDENCE_OVER_K:
            if cov is None:
                cov = coverage(store, data, settings)
            values = _EVIDENCE_OVER_K[name](cov, settings.threshold)
            out[name] = _fit(values, depth)
        else:
            raise UsageError(f"measure {name} has no curve over k")
    return out


def curves_over_threshold(
    store: Store,
    data: RunData,
    settings: Settings,
    thresholds: ArrayLike,
    names: Sequence[str] | None = None,
) -> dict[str, Floats]:
    """Run value of each metric at settings.k for every threshold: name -> (len(thresholds),).

    Evidence metrics (default: SWEPT) come from one threshold_sweep. Ranking metrics (P, R, F1,
    Hit, RR, AP, nDCG; only in evidence mode, where relevance depends on the threshold) relabel
    the chunks once per threshold: give them a coarser grid.
    """
    settings.check()
    ts = np.asarray(thresholds, dtype=np.float64)
    if ts.ndim != 1 or not np.all((ts >= 0.0) & (ts <= 1.0)):
        raise UsageError("thresholds must be a 1-D list of numbers between 0 and 1")
    wanted = list(SWEPT if names is None else names)
    out: dict[str, Floats] = {}
    swept: dict[str, Floats] | None = None
    tops: list[RankedLabels] | None = None
    for name in wanted:
        spec = _spec(name)
        if spec.family == "evidence" and name in SWEPT:
            if swept is None:
                swept = ev.threshold_sweep(coverage(store, data, settings), ts, k=settings.k)
            out[name] = swept[name]
        elif spec.name in THRESHOLD_RANKING:
            if resolve_relevance(data, settings) != "evidence":
                raise UsageError(f"{name} depends on the threshold only in evidence mode")
            if tops is None:
                tops = [_top_k(evidence_labels(store, data, dataclasses.replace(
                    settings, threshold=float(t)))[0], settings.k) for t in ts]
            out[name] = np.array([_ranking_value(top, name, settings.k) for top in tops])
        else:
            raise UsageError(f"measure {name} has no curve over the threshold")
    return out


def _base(name: str) -> str:
    return name.split("@", 1)[0]


def _spec(name: str) -> registry.MeasureSpec:
    if "@" in name or "(" in name:
        raise UsageError(f"give the measure without a cut-off or parameters, e.g. {_base(name)}")
    spec = registry.REGISTRY.get(registry.ALIASES.get(name, name))
    if spec is None:
        registry.parse(name)  # raises the registry's message (with its suggestions)
        raise UsageError(f"unknown measure {name!r}")
    return spec


def _ranking_labels(store: Store, data: RunData, s: Settings) -> RankedLabels:
    relevance = resolve_relevance(data, s)
    if relevance is None:
        raise UsageError(f"run {data.run.name} has neither qrels nor gold evidence")
    return (id_labels(data, s) if relevance == "ids" else evidence_labels(store, data, s))[0]


def _ranking_value(labels: RankedLabels, name: str, k: int) -> float:
    # one column of the cached prefix sums per call: O(queries), no rescoring
    measure = registry.Measure(registry.ALIASES.get(name, name), k)
    values = measure.spec.fn(labels, k, measure.param_values())
    weight = measure.spec.weight
    return registry.aggregate(measure, values, None if weight is None else weight(labels))


def _top_k(labels: RankedLabels, k: int) -> RankedLabels:
    """The labels of the top k ranks only; n_rel (every relevant chunk) is kept whole."""
    return RankedLabels(
        query_ids=labels.query_ids,
        labels=labels.labels[:, :k],
        n_ret=np.minimum(labels.n_ret, k),
        n_rel=labels.n_rel,
        ideal=labels.ideal[:, :k],
        rel_level=labels.rel_level,
    )


def _column_means(values: Floats) -> Floats:
    """Mean of each column (k), NaN when no query is scored: registry.aggregate's mean."""
    if values.shape[0] == 0:
        return np.full(values.shape[1:], np.nan)
    return values.mean(axis=0)  # type: ignore[no-any-return]


def _fit(values: Floats, depth: int) -> Floats:
    """A Coverage of an empty run keeps one column: trim or pad (the deepest value) to depth."""
    values = np.asarray(values, dtype=np.float64)
    if values.size >= depth:
        return values[:depth]
    pad = values[-1] if values.size else np.nan
    return np.concatenate((values, np.full(depth - values.size, pad)))
