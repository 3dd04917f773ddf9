"""Threshold tuning: the pairs near the threshold and the labels people gave them."""

from __future__ import annotations

from typing import Any

import streamlit as st

from rageval_dashboard.jobs.busy import calm
from rageval_dashboard.jobs.busy import signature
from rageval_dashboard.keys import View, settings_from_key, settings_key
from rageval_core.evaluation import tuning
from rageval_core.matching.keys import ScorerKey
from rageval_dashboard.state.storage import run_data, run_key, RunKey, store


#: borderline pairs fetched per setting (the Threshold page shows them a few at a time)
TUNING_LIMIT = 200


@st.cache_resource(show_spinner=False, max_entries=64)
def _borderline(
    run: RunKey,
    settings_key: tuple[Any, ...],
    band: float,
    limit: int,
) -> list[tuning.BorderlinePair]:
    return tuning.borderline_pairs(
        store(),
        run_data(*run),
        settings_from_key(settings_key),
        band=band,
        limit=limit,
    )


@calm
def borderline(view: View, band: float, limit: int = TUNING_LIMIT) -> list[tuning.BorderlinePair]:
    """The pairs near the view's threshold (cached per run, settings and band; labels are not)."""
    return _borderline(
        run_key(view.run),
        settings_key(view.settings),
        round(float(band), 4),
        limit,
    )


@st.cache_resource(show_spinner=False, max_entries=16)
def _pair_labels(
    run: RunKey,
    scorer: ScorerKey,
    signature: tuple[Any, ...],
) -> tuning.Labels:
    return tuning.labels(store(), run.run_id, scorer)


@calm
def pair_labels(view: View) -> tuning.Labels:
    """The run's labels for the view's scorer and normalisation.

    Keyed by the store files' signature: a label written here or by another process changes
    the files, so it is read again then, and not on every slider move.
    """
    return _pair_labels(
        run_key(view.run),
        view.settings.scorer_key,
        signature(store().path),
    )


#: cleared by state.clear_caches() after an import, rename or delete
CACHES = (_borderline, _pair_labels)
