"""Why each query fails, and what would fix it (issue 30; docs/diagnosis.md).

    diagnosis = diagnose(store, data, settings)          # a Diagnosis at one setting
    diagnosis.status                                     # per query: passing, no_gold or a reason
    diagnosis.missed                                     # per missed gold item: reason, rank, score
    diagnosis.span_counts(), diagnosis.query_counts()    # aggregates
    diagnosis.what_if                                    # each fix and the queries it would fix
    transitions(baseline_diagnosis, candidate_diagnosis) # Compare's table

numpy over the kept arrays and pair scores; only the split check reads texts (splits.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from rageval_core.diagnosis.model import (
    EVIDENCE_REASONS,
    IDS_REASONS,
    NO_GOLD,
    PASSING,
    STAGE_KINDS,
    Diagnosis,
    Missed,
    Stages,
    WhatIf,
)
from rageval_core.diagnosis.reasons import (
    evidence_arrays,
    evidence_reasons,
    ids_arrays,
    ids_reasons,
)
from rageval_core.diagnosis.splits import split_check as _split_check
from rageval_core.diagnosis.stages import evidence_stages, ids_stages
from rageval_core.diagnosis.transitions import Transition, Transitions, transitions
from rageval_core.diagnosis.whatif import evidence_what_if, ids_what_if
from rageval_core.errors import UsageError
from rageval_core.evaluation.evaluate import resolve_relevance
from rageval_core.evaluation.labels import labelled_data
from rageval_core.evaluation.report import Settings
from rageval_core.rundata import RunData
from rageval_core.latency.run_summary import groups_of
from rageval_core.store import Store

__all__ = [
    "EVIDENCE_REASONS",
    "IDS_REASONS",
    "NO_GOLD",
    "PASSING",
    "STAGE_KINDS",
    "Diagnosis",
    "Missed",
    "Stages",
    "Transition",
    "Transitions",
    "WhatIf",
    "diagnose",
    "transitions",
]


def diagnose(
    store: Store,
    data: RunData,
    settings: Settings | None = None,
    *,
    first_stage: tuple[Store, RunData] | None = None,
    by: str | None = None,
    check_splits: bool = True,
    **overrides: Any,
) -> Diagnosis:
    """The diagnosis of a stored run at settings (keywords override its fields).

    first_stage: the (store, run) the run reranks: adds the two-stage split. by: a tag whose
    values each get their counts. check_splits False: no span is checked for a split (no text
    is read; such spans are near misses or not retrieved).
    """
    s = dataclasses.replace(settings or Settings(), **overrides)
    s.check()
    if s.preset is not None:  # its rules change what covers; the diagnosis reads rageval's own
        raise UsageError(
            "the diagnosis reads rageval's own coverage and relevance: --preset does not apply"
        )
    data = labelled_data(store, data, s.labels)  # the qrels of the labels setting
    relevance = resolve_relevance(data, s)
    n = data.n_queries
    settings_json = {
        **s.to_json(relevance),
        "near_miss_band": s.near_miss_band,
        "split_min_chars": s.split_min_chars,
    }
    if first_stage is not None:
        settings_json["first_stage"] = first_stage[1].run.name
    unjudged = None
    stages = None
    reasons: tuple[str, ...] = EVIDENCE_REASONS
    if relevance == "evidence":
        arrays = evidence_arrays(store, data, s)
        check = _split_check(store, data, arrays, s) if check_splits else None
        status, missed = evidence_reasons(arrays, s, check)
        failing = (status != PASSING) & (status != NO_GOLD)
        what_if = evidence_what_if(arrays, s, failing, missed)
        if first_stage is not None:
            first_store, first = first_stage
            if not first.run.has_evidence:
                raise UsageError(f"first stage {first.run.name} has no gold evidence")
            stages = evidence_stages(
                (data, arrays), (first, evidence_arrays(first_store, first, s)), s
            )
    elif relevance == "ids":
        ids = ids_arrays(data, s)
        status, missed, unjudged = ids_reasons(ids, n, s)
        failing_rows = (ids.n_rel > 0) & ~ids.passing(s.k)
        what_if = ids_what_if(ids, s, failing_rows, missed)
        reasons = IDS_REASONS
        if first_stage is not None:
            first_store, first = first_stage
            first = labelled_data(first_store, first, s.labels)
            if not first.run.has_qrels:
                raise UsageError(f"first stage {first.run.name} has no qrels (relevant ids)")
            stages = ids_stages(store, data, first, first_store, s)
    else:  # neither qrels nor gold spans: nothing to find anywhere
        status = np.full(n, NO_GOLD, dtype=object)
        empty = np.zeros(0, dtype=np.int64)
        missed = Missed(empty, empty, empty, empty, empty, np.zeros(0), empty, np.zeros(0))
        what_if = ()
    out = Diagnosis(
        run=data.run.name,
        settings=settings_json,
        relevance=relevance,
        reasons=reasons,
        query_ids=data.query_ids,
        status=status,
        missed=missed,
        what_if=what_if,
        unjudged=unjudged,
        stages=stages,
    )
    return dataclasses.replace(out, by=_by_tag(data, out, by)) if by else out


def _by_tag(data: RunData, diagnosis: Diagnosis, tag: str) -> dict[str, Any]:
    if tag not in data.tags:
        known = ", ".join(sorted(data.tags)) or "none"
        raise UsageError(f"run {data.run.name} has no tag {tag!r} (tags: {known})")
    _, found = groups_of(data, tag)
    return {
        "tag": tag,
        "groups": {
            group: {
                "n": int(rows.size),
                "failing": int(np.count_nonzero(diagnosis.failing[rows])),
                "spans": diagnosis.span_counts(rows),
                "queries": diagnosis.query_counts(rows),
            }
            for group, rows in found
        },
    }
