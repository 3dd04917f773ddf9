"""Which retrieved items count as relevant under a run's settings: the id labels (qrels, after the
retriever-score cut), the evidence coverage (pair scores against the threshold, the numbers
guard) and the relevance a run is judged by. Cached on the RunData; checks.py and evaluate.py
read them."""

from __future__ import annotations
import numpy as np
from numpy.typing import NDArray
from rageval_core.errors import UsageError
from rageval_core.evaluation.report import (
    Relevance,
    Settings,
)
from rageval_core.metrics.arrays import (
    RankedLabels,
    judged_only,
    ranked_labels_from_relevant,
    ranked_labels_from_rows,
)
from rageval_core.metrics.evidence import Coverage, covers, prepare_coverage
from rageval_core.rundata import (
    RunData,
    evidence_tensor,
    memo,
    numbers_guard,
)
from rageval_core.store import Store


def _cut_order(
    data: RunData, score_threshold: float | None
) -> tuple[NDArray[np.int64] | None, NDArray[np.int64]]:
    """(order, n_ret) after dropping chunks scored below the cut (None order: nothing dropped).

    Surviving chunks keep their order and move up; a chunk without a retriever score is kept.
    """
    if score_threshold is None:
        return None, data.n_ret

    def make() -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        exists = np.arange(data.depth)[None, :] < data.n_ret[:, None]
        with np.errstate(invalid="ignore"):
            keep = exists & ~(data.chunk_score < score_threshold)
        order = np.argsort(~keep, axis=1, kind="stable").astype(np.int64)
        return order, keep.sum(axis=1).astype(np.int64)

    return memo(data, ("cut", score_threshold), make)  # type: ignore[no-any-return]


def id_labels(data: RunData, settings: Settings) -> tuple[RankedLabels, NDArray[np.int64]]:
    """RankedLabels of the queries trec_eval would score, and their row numbers in data."""

    def make() -> tuple[RankedLabels, NDArray[np.int64]]:
        rows = np.flatnonzero(data.has_qrels & (data.in_run | settings.complete)).astype(np.int64)
        full = memo(
            data,
            ("ideal", settings.rel_level),
            lambda: ranked_labels_from_rows(
                list(data.query_ids),
                np.zeros(0, np.int64),
                np.ones(0, np.int64),
                np.zeros(0, np.int32),
                data.judged_q,
                data.judged_label,
                rel_level=settings.rel_level,
            ),
        )
        order, n_ret = _cut_order(data, settings.score_threshold)
        labels = data.labels if order is None else np.take_along_axis(data.labels, order, axis=1)
        inside = np.arange(data.depth)[None, :] < n_ret[:, None]
        labels = np.where(inside, labels, 0)
        judged = None
        if data.judged is not None:
            judged = data.judged if order is None else np.take_along_axis(data.judged, order, 1)
            judged = np.where(inside, judged, 0).astype(np.int8)[rows]
        arrays = RankedLabels(
            query_ids=tuple(data.query_ids[rows]),
            labels=labels[rows],  # int32, or float64 for real grades
            n_ret=n_ret[rows],
            n_rel=full.n_rel[rows],
            ideal=full.ideal[rows],
            rel_level=settings.rel_level,
            judged=judged,
            n_judged=None if full.n_judged is None else full.n_judged[rows],
        )
        # trec_eval -J: the unjudged documents leave the ranking before any measure reads it
        return (judged_only(arrays) if settings.judged_only else arrays), rows

    key = (
        "ids",
        settings.rel_level,
        settings.complete,
        settings.score_threshold,
        settings.judged_only,
    )
    return memo(data, key, make)  # type: ignore[no-any-return]


def coverage(store: Store, data: RunData, settings: Settings) -> Coverage:
    """The evidence running maxima for (scorer, normalisation, cut), at the threshold s.threshold."""

    def make() -> Coverage:
        tensor = evidence_tensor(store, data, settings.scorer_key)
        if settings.numbers_must_match:  # a span whose number the chunk lacks is not covered by it
            tensor = np.where(numbers_guard(store, data), tensor, np.float32(0.0))
        return prepare_coverage(
            tensor,
            data.n_spans,
            data.n_ret,
            retriever_scores=data.chunk_score,
            score_cut=settings.score_threshold,
        )

    key = (
        "coverage",
        settings.scorer_key,
        settings.score_threshold,
        settings.numbers_must_match,
    )
    cov: Coverage = memo(data, key, make)
    return cov.with_threshold(settings.threshold)


def evidence_labels(
    store: Store, data: RunData, settings: Settings
) -> tuple[RankedLabels, NDArray[np.int64]]:
    """Evidence-mode relevance: a chunk is relevant when it covers at least one gold span.

    The qrels are derived from the run itself at the threshold: every covering chunk in the
    list is relevant (label 1), so n_rel counts the covering chunks of the whole list. The
    labels of the latest threshold are kept, so a new k reuses them and the prefix sums
    metrics/ranking.py caches on them.
    """
    cov = coverage(store, data, settings)
    source = (
        settings.scorer_key,
        settings.score_threshold,
        settings.numbers_must_match,
    )
    key = (*source, cov.threshold)
    kept = data._cache.get(("evidence_labels",))
    if kept is not None and kept[0] == key:
        return kept[1]
    ids = memo(data, ("evidence_ids", *source), lambda: tuple(data.query_ids[cov.rows]))
    arrays = ranked_labels_from_relevant(ids, covers(cov).T, cov.n_ret)  # covers(cov).T: rank-major
    data._cache[("evidence_labels",)] = (key, (arrays, cov.rows))
    return arrays, cov.rows


def _under_labels(settings: Settings) -> str:
    """ " under --labels people" when the labels setting is not the run's own qrels alone."""
    return "" if settings.labels == "imported" else f" under --labels {settings.labels}"


def resolve_relevance(data: RunData, settings: Settings) -> Relevance | None:
    """ids when asked or when the run has qrels that a retrieved chunk is in (or no gold spans);
    evidence when asked or it has gold spans."""
    if settings.relevance == "ids" and not data.run.has_qrels:
        raise UsageError(
            f"run {data.run.name} has no qrels (relevant ids){_under_labels(settings)}: "
            "use --relevance evidence"
        )
    if settings.relevance == "evidence" and not data.run.has_evidence:
        raise UsageError(f"run {data.run.name} has no gold evidence: use --relevance ids")
    if settings.relevance is not None:
        return settings.relevance
    # qrels that no retrieved chunk is in (TAT-RAG's FILE gold against chunk ids) would score
    # every query 0: a run that also has gold spans is judged by them instead
    if data.run.has_qrels and (not data.run.has_evidence or bool((data.labels > 0).any())):
        return "ids"
    return "evidence" if data.run.has_evidence else None
