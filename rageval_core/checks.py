"""What a report's numbers suggest checking, said beside them (Report.warnings)."""

from __future__ import annotations

import dataclasses

import numpy as np

from rageval_core.evaluate import Settings, coverage, id_labels
from rageval_core.metrics import registry
from rageval_core.rundata import RunData
from rageval_core.store import Store


#: EvidenceRecall@k this far above R@k (both over the queries that have qrels and gold spans)
#: makes lenient_threshold_warning speak
LENIENT_GAP = 0.25


def lenient_threshold_warning(store: Store, data: RunData, s: Settings) -> tuple[str, ...]:
    """A warning when EvidenceRecall@k is far above the id-based R@k on the same run (and the
    same queries): spans "covered" by chunks that are not the relevant documents, the sign of a
    fuzzy threshold that lets near-misses in. Only for a run whose qrels name retrieved chunks
    (ids mode is meaningful) and that has gold spans; () otherwise."""
    if not (data.run.has_qrels and data.run.has_evidence) or not bool((data.labels > 0).any()):
        return ()
    cov = coverage(store, data, s)
    labels, rows = id_labels(data, dataclasses.replace(s, relevance="ids"))
    both = np.intersect1d(cov.rows, rows)
    if both.size == 0:
        return ()
    names = (f"EvidenceRecall@{s.k}", f"R@{s.k}")
    measures = registry.parse_all(names)
    evidence = registry.compute([measures[0]], cov)[names[0]]
    ids = registry.compute([measures[1]], labels)[names[1]]
    keep_e, keep_i = np.isin(cov.rows, both), np.isin(rows, both)
    w = registry.weights_of(measures[0], cov)
    e_value = registry.aggregate(measures[0], evidence[keep_e], None if w is None else w[keep_e])
    i_value = registry.aggregate(measures[1], ids[keep_i], None)
    if not e_value - i_value >= LENIENT_GAP:
        return ()
    return (
        f"{names[0]} = {e_value:.3f} is far above the id-based {names[1]} = {i_value:.3f} on the "
        f"same {both.size} queries: the fuzzy threshold {s.threshold:g} is likely too lenient "
        "(chunks that are not the relevant documents count as covering the spans); label "
        "borderline pairs on the Threshold page, or raise the threshold",
    )
