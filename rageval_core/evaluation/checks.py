"""What a report's numbers suggest checking, said beside them (Report.warnings)."""

from __future__ import annotations

import dataclasses

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from rageval_core.evaluation.relevance import coverage, id_labels
from rageval_core.evaluation.report import Floats, Settings
from rageval_core.metrics import registry
from rageval_core.rundata import RunData
from rageval_core.store import Store


#: EvidenceRecall@k this far above R@k (both over the queries that have qrels and gold spans)
#: makes lenient_threshold_warning speak
LENIENT_GAP = 0.25


#: the words of the Overview's counts caption (dashboard tables.counts_text) for the queries a
#: card of each relevance averages: a warning names its queries in the same words
SCORED_ON = {"ids": "scored on relevant ids", "evidence": "scored on gold evidence"}


def lenient_threshold_warning(
    store: Store,
    data: RunData,
    settings: Settings,
    shown: Mapping[str, float],
    known: Mapping[str, Floats] | None = None,
    known_weights: Mapping[str, Floats] | None = None,
    relevance: str | None = None,
) -> tuple[str, ...]:
    """A warning when EvidenceRecall@k is far above the id-based R@k on the same run (and the
    same queries): spans "covered" by chunks that are not the relevant documents, the sign of a
    fuzzy threshold that lets near-misses in. Only for a run whose qrels name retrieved chunks
    (ids mode is meaningful) and that has gold spans, and only beside the numbers it doubts
    (shown, the report's run values, holds EvidenceRecall@k or R@k); () otherwise.

    The two are compared on the queries that have both; a card among shown that averages other
    queries is named with its own value and queries, so the warning never contradicts a card.
    known / known_weights: the report's per-query columns and weights (NaN where a query is not
    scored), of relevance mode `relevance`; the two measures are read from them when there (and
    of the right mode), computed otherwise.
    """
    names = (f"EvidenceRecall@{settings.k}", f"R@{settings.k}")
    if not any(n in shown for n in names):
        return ()
    if not (data.run.has_qrels and data.run.has_evidence) or not bool((data.labels > 0).any()):
        return ()
    measures = registry.parse_all(names)
    evidence, e_weights = _column(names[0], known, known_weights)
    if evidence is None:
        cov = coverage(store, data, settings)
        evidence = _scatter(data, registry.compute([measures[0]], cov)[names[0]], cov.rows)
        w = registry.weights_of(measures[0], cov)
        e_weights = None if w is None else _scatter(data, w, cov.rows)
    ids, _ = _column(names[1], known, known_weights) if relevance == "ids" else (None, None)
    if ids is None:
        labels, rows = id_labels(data, dataclasses.replace(settings, relevance="ids"))
        ids = _scatter(data, registry.compute([measures[1]], labels)[names[1]], rows)
    both = ~np.isnan(evidence) & ~np.isnan(ids)
    if not both.any():
        return ()
    e_value = registry.aggregate(
        measures[0], evidence[both], None if e_weights is None else e_weights[both]
    )
    i_value = registry.aggregate(measures[1], ids[both], None)
    if not e_value - i_value >= LENIENT_GAP:
        return ()
    n_both = int(np.count_nonzero(both))
    cards = []
    for name, column, mode in ((names[0], evidence, "evidence"), (names[1], ids, "ids")):
        scored = ~np.isnan(column)
        # a card of the same measure (R@k: in ids mode) that averages more queries than these
        if name in shown and (mode == "evidence" or relevance == "ids") and (scored & ~both).any():
            n = int(np.count_nonzero(scored))
            cards.append(
                f"the reported {name}, {shown[name]:.3f}, is over all {n:,} {SCORED_ON[mode]}"
            )
    aside = f" ({'; '.join(cards)})" if cards else ""
    return (
        f"{names[0]} = {e_value:.3f} is far above the id-based {names[1]} = {i_value:.3f} on the "
        f"{n_both:,} queries {SCORED_ON['ids']} and on gold evidence{aside}: the fuzzy threshold "
        f"{settings.threshold:g} is likely too lenient (chunks that are not the relevant documents count "
        "as covering the spans); label borderline pairs on the Threshold page, or raise the "
        "threshold",
    )


def _column(
    name: str, known: Mapping[str, Floats] | None, weights: Mapping[str, Floats] | None
) -> tuple[Floats | None, Floats | None]:
    if known is None or name not in known:
        return None, None
    return known[name], None if weights is None else weights.get(name)


def _scatter(data: RunData, values: NDArray[np.float64], rows: NDArray[np.int64]) -> Floats:
    """values of the rows, NaN for every other query of the run."""
    full = np.full(data.n_queries, np.nan)
    full[rows] = values
    return full
