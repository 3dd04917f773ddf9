"""Run values as curves: every cut-off k = 1..depth, or many coverage thresholds, in one call.

Each point equals what evaluate() reports at that (k, threshold) (tests/core/metrics/test_curves.py
checks it); the curves read the same cached inputs instead of evaluating per point:
- over k, ranking metrics divide the prefix sums metrics/ranking.py keeps per RankedLabels
  (ranking.prefix_sums, shared with evaluate()) and evidence metrics read the Coverage's
  running maxima, every k at once;
- over the threshold, evidence metrics come from one threshold_sweep; ranking metrics in
  evidence mode relabel the top k chunks per threshold.
Names are measure names without a cut-off ("R", "nDCG", "EvidenceRecall").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rageval_core.errors import UsageError
from rageval_core.evaluation.evaluate import coverage, evidence_labels, id_labels, resolve_relevance
from rageval_core.evaluation.labels import labelled_data
from rageval_core.evaluation.report import EVIDENCE_DEFAULTS, RANKING_DEFAULTS, Relevance, Settings
from rageval_core.metrics import evidence as ev
from rageval_core.metrics import ranking as rk
from rageval_core.metrics import registry
from rageval_core.metrics.arrays import RankedLabels, ranked_labels_from_relevant
from rageval_core.rundata import RunData
from rageval_core.store import Store

Floats = NDArray[np.float64]

#: the evidence metrics threshold_sweep answers for many thresholds at once
SWEPT = ("EvidenceRecall", "PerQueryCoverage", "FullCoverageRate", "BestRank")
#: ranking metrics whose value at k reads only the top k labels, n_rel and the ideal top k:
#: over thresholds they are computed on labels cut to k columns (depth/k times cheaper)
THRESHOLD_RANKING = frozenset({"P", "R", "F1", "Hit", "RR", "AP", "nDCG"})
#: the evidence metrics _evidence_over_k gives at every k
_EVIDENCE_OVER_K = frozenset(
    {"EvidenceRecall", "PerQueryCoverage", "FullCoverageRate", "ContextCoverage", "BestRank"}
)


def curve_names(data: RunData, relevance: Relevance | None) -> list[str]:
    """The main metrics of a mode that vary with k: the report's defaults, cut-offs dropped.

    Rprec takes no cut-off and is left out; an evidence default the registry lacks is skipped.
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
    apply as in evaluate().
    """
    settings.check()
    depth = data.depth
    specs = {name: _spec(name) for name in names}
    out: dict[str, Floats] = {}
    labels: RankedLabels | None = None
    evidence: dict[str, Floats] | None = None
    for name, spec in specs.items():
        if spec.family == "ranking" and spec.allows_cutoff:
            if labels is None:
                labels = _ranking_labels(store, data, settings)
            out[name] = _ranking_over_k(labels, spec.name, depth)
        elif spec.family == "evidence" and spec.name in _EVIDENCE_OVER_K:
            if evidence is None:
                evidence = _evidence_over_k(coverage(store, data, settings), settings.threshold)
            out[name] = _fit(evidence[spec.name], depth)
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

    names default to SWEPT (the evidence metrics, from one threshold_sweep). Ranking metrics
    (THRESHOLD_RANKING) are accepted in evidence mode only, where a chunk is relevant when it
    covers a gold span at the threshold; they relabel the chunks once per threshold, so give
    them a coarser grid.
    """
    settings.check()
    ts = np.asarray(thresholds, dtype=np.float64)
    if ts.ndim != 1 or not np.all((ts >= 0.0) & (ts <= 1.0)):
        raise UsageError("thresholds must be a 1-D list of numbers between 0 and 1")
    out: dict[str, Floats] = {}
    swept: dict[str, Floats] | None = None
    tops: list[RankedLabels] | None = None
    for name in SWEPT if names is None else names:
        spec = _spec(name)
        if spec.family == "evidence" and spec.name in SWEPT:
            if swept is None:
                swept = ev.threshold_sweep(coverage(store, data, settings), ts, k=settings.k)
            out[name] = swept[spec.name]
        elif spec.name in THRESHOLD_RANKING:
            if (
                resolve_relevance(labelled_data(store, data, settings.labels), settings)
                != "evidence"
            ):
                raise UsageError(f"{name} depends on the threshold only in evidence mode")
            if tops is None:
                cov = coverage(store, data, settings)
                ids = tuple(data.query_ids[cov.rows])
                tops = [_evidence_top_k(cov, ids, float(t), settings.k) for t in ts]
            out[name] = np.array([_ranking_value(top, spec.name, settings.k) for top in tops])
        else:
            raise UsageError(f"measure {name} has no curve over the threshold")
    return out


# --- ranking ---------------------------------------------------------------------------------


def _ranking_labels(store: Store, data: RunData, settings: Settings) -> RankedLabels:
    data = labelled_data(store, data, settings.labels)  # the labels setting's qrels
    relevance = resolve_relevance(data, settings)
    if relevance is None:
        raise UsageError(f"run {data.run.name} has neither qrels nor gold evidence")
    return (
        id_labels(data, settings) if relevance == "ids" else evidence_labels(store, data, settings)
    )[0]


def _ranking_over_k(labels: RankedLabels, name: str, depth: int) -> Floats:
    """Run value at k = 1..depth from the prefix sums metrics/ranking.py caches per labels.

    Each line is the per-k function of ranking.py applied to every column at once (same
    zero-denominator rule, rk.ratio); any other measure is evaluated per k.
    """
    ks = np.arange(1, depth + 1)
    sums = rk.prefix_sums(labels)  # the cache evaluate() filled: reuse it
    rel_k = sums.rel_cum[:, 1 : depth + 1].astype(np.float64, order="C")
    n_rel = sums.n_rel[:, None]
    if name == "P":
        values = rel_k / ks
    elif name == "R":
        values = rk.ratio(rel_k, n_rel)
    elif name == "F1":
        p, r = rel_k / ks, rk.ratio(rel_k, n_rel)
        values = rk.ratio(2.0 * p * r, p + r)
    elif name == "Hit":
        values = (rel_k > 0).astype(np.float64)
    elif name == "RR":
        first = sums.first_rel[:, None]
        values = rk.ratio((first > 0) & (first <= ks), first)
    elif name == "AP":
        values = rk.ratio(_stack(sums.prec_sum, ks, labels.n_queries), n_rel)
    elif name == "nDCG":
        n = labels.n_queries
        values = rk.ratio(_stack(sums.dcg, ks, n), _stack(sums.idcg, ks, n))
    else:
        return np.array([_ranking_value(labels, name, int(k)) for k in ks])
    return _column_means(values)


def _stack(column: Callable[[int], Floats], ks: NDArray[np.int64], n: int) -> Floats:
    """(n queries, len(ks)): the per-query column of each cut-off."""
    out = np.empty((n, ks.size), dtype=np.float64)
    for i, k in enumerate(ks.tolist()):
        out[:, i] = column(k)
    return out


def _ranking_value(labels: RankedLabels, name: str, k: int) -> float:
    """One run value as evaluate() computes it (the registered function, then aggregate)."""
    measure = registry.Measure(name, k)
    values = measure.spec.fn(labels, k, measure.param_values())
    weight = measure.spec.weight
    return registry.aggregate(measure, values, None if weight is None else weight(labels))


def _evidence_top_k(
    cov: ev.Coverage, query_ids: tuple[str, ...], threshold: float, k: int
) -> RankedLabels:
    """relevance.evidence_labels at a threshold, cut to the top k ranks.

    A chunk is relevant when it covers a gold span; n_rel counts the covering chunks of the
    whole list, so recall-like values at k stay those of the full labels.
    """
    relevant = ev.covers(cov, threshold).T  # (depth, queries with spans), rank-major
    width = min(k, relevant.shape[0])
    n_rel = relevant.sum(axis=0, dtype=np.int64)
    n_ret = np.minimum(cov.n_ret, width)
    return ranked_labels_from_relevant(query_ids, relevant[:width], n_ret, n_rel)


# --- evidence --------------------------------------------------------------------------------


def _evidence_over_k(cov: ev.Coverage, threshold: float) -> dict[str, Floats]:
    """Every evidence run value at every k, aggregated as evaluate() does.

    EvidenceRecall pools spans (a span-weighted mean = all covered / all spans); BestRank is
    the mean over the queries where a chunk reaches the threshold; the others plain means.
    """
    covered, total = ev.evidence_recall(cov, threshold)  # (n, depth) counted once for three
    with np.errstate(invalid="ignore", divide="ignore"):
        share = covered / total[:, None]
    return {
        "EvidenceRecall": ev.pool_recall(covered, total),
        "PerQueryCoverage": _column_means(share),
        "FullCoverageRate": _column_means((covered == total[:, None]).astype(np.float64)),
        "ContextCoverage": _column_means(ev.context_coverage(cov)),
        "BestRank": ev.mean_found(ev.best_rank(cov, threshold)),
    }


# --- helpers ---------------------------------------------------------------------------------


def _base(name: str) -> str:
    return name.split("@", 1)[0]


def _spec(name: str) -> registry.MeasureSpec:
    if "@" in name or "(" in name:
        raise UsageError(f"give the measure without a cut-off or parameters, e.g. {_base(name)}")
    spec = registry.REGISTRY.get(registry.ALIASES.get(name, name))
    if spec is None:
        registry.parse(name)  # raises the registry's message, with its suggestions
        raise UsageError(f"unknown measure {name!r}")
    return spec


def _column_means(values: Floats) -> Floats:
    """Mean of each column (k) over the queries; NaN when none is scored, as aggregate()."""
    if values.shape[0] == 0:
        return np.full(values.shape[1:], np.nan)
    return np.asarray(values.mean(axis=0), dtype=np.float64)


def _fit(values: Floats, depth: int) -> Floats:
    """A Coverage of a run without chunks keeps one column: trim or pad (last value) to depth."""
    values = np.asarray(values, dtype=np.float64)
    if values.size >= depth:
        return values[:depth]
    pad = values[-1] if values.size else np.nan
    return np.concatenate((values, np.full(depth - values.size, pad)))
