"""Every st.cache_* of the dashboard lives in this package, one module per job; pages only call
the names it exports (`state.report(view)`, `state.query_table(view)`):

- storage.py: the store this server shows, its runs, each run's arrays, the judge signature
- reports.py: a run's report at a view's settings, the preset's why, built figures
- curves.py, queries.py, latency.py, threshold.py, judge.py, sweeps.py: each page's results
- compare.py: the Compare page's caches (`from rageval_dashboard.state import compare`)
- labelling.py: the grades signature, the grades and spans given in the app, the labelling queue
- diagnosis.py: the failure diagnosis (`from rageval_dashboard.state import diagnosis`)
- background.py: the registries of scorings and judge runs under way (rageval_dashboard.jobs)

Heavy objects (the Store, each run's arrays, reports) are cache_resource: they are shared
read-only and never pickled. Each result is keyed by the run (id and content hash), the store
file and the settings' cache key (keys.settings_key, from the settings schema).
"""

from __future__ import annotations

import streamlit as st

from rageval_dashboard.state import (
    compare,
    diagnosis,
    judge,
    labelling,
    latency,
    queries,
    reports,
    storage,
    threshold,
)
from rageval_dashboard.state.background import judge_jobs, scored_keys, scoring_jobs
from rageval_dashboard.state.curves import COARSE_GRID, THRESHOLD_GRID, curves_k, curves_t
from rageval_dashboard.state.judge import (
    calibration,
    human_labels,
    judge_sets,
    judge_verdicts,
    label_calibrations,
    metrics_by_labels,
    repeatability,
)
from rageval_dashboard.state.latency import latency_by_tag, query_ops
from rageval_dashboard.state.queries import (
    query_detail,
    query_table,
    query_texts_detail,
    search_all,
)
from rageval_dashboard.state.reports import data, explanation, figure, held_source, report
from rageval_dashboard.state.storage import (
    judge_signature,
    run_data,
    runs,
    runs_when_free,
    store,
    store_path,
    take_interrupted,
)
from rageval_dashboard.state.sweeps import sweep_rows
from rageval_dashboard.state.threshold import TUNING_LIMIT, borderline, pair_labels

__all__ = [
    "COARSE_GRID",
    "THRESHOLD_GRID",
    "TUNING_LIMIT",
    "borderline",
    "calibration",
    "clear_caches",
    "compare",
    "curves_k",
    "curves_t",
    "data",
    "diagnosis",
    "explanation",
    "figure",
    "held_source",
    "human_labels",
    "judge_jobs",
    "judge_sets",
    "judge_signature",
    "judge_verdicts",
    "label_calibrations",
    "latency_by_tag",
    "metrics_by_labels",
    "pair_labels",
    "query_detail",
    "query_ops",
    "query_table",
    "query_texts_detail",
    "repeatability",
    "report",
    "run_data",
    "runs",
    "runs_when_free",
    "scored_keys",
    "scoring_jobs",
    "search_all",
    "store",
    "store_path",
    "sweep_rows",
    "take_interrupted",
]


def clear_caches() -> None:
    """After an import, rename or delete: every derived result is recomputed (the Store stays)."""
    st.cache_data.clear()
    storage.clear_listing()
    compare.clear_caches()
    diagnosis.clear_caches()
    for module in (storage, reports, queries, latency, threshold, judge, labelling):
        for cached in module.CACHES:  # curves' and sweeps' are cache_data: cleared above
            cached.clear()
