"""Overview's and Threshold tuning's curves: metrics over k and over the threshold."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import streamlit as st

from rageval_dashboard.jobs.busy import calm
from rageval_dashboard.keys import View, settings_from_key, settings_key
from rageval_core.evaluation import curves
from rageval_core.metrics import registry
from rageval_dashboard.state.storage import run_data, run_key, RunKey, store


#: evidence metrics over the threshold come from one sweep (fine grid); ranking metrics in
#: evidence mode relabel the chunks per threshold, so they get the coarse grid
THRESHOLD_GRID = tuple(round(i / 100, 2) for i in range(101))
COARSE_GRID = tuple(round(i / 20, 2) for i in range(21))


@st.cache_data(show_spinner=False, max_entries=64)
def _curves_k(run: RunKey, key: tuple[Any, ...], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return curves.curves_over_k(store(), run_data(*run), settings_from_key(key), list(names))


@calm
def curves_k(view: View, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Run values at k = 1..depth (cached; keyed without k: moving k reuses them).

    With relevance from the qrels (ids), ranking curves do not depend on the threshold: they
    are keyed without it, so a threshold move recomputes only the evidence curves.
    """
    s = view.settings
    key = settings_key(dataclasses.replace(s, k=1))
    run = run_key(view.run)
    if s.relevance != "ids":
        return _curves_k(run, key, tuple(names))
    ranking = tuple(
        n for n in names if registry.REGISTRY[registry.ALIASES.get(n, n)].family == "ranking"
    )
    other = tuple(n for n in names if n not in ranking)
    found: dict[str, np.ndarray] = {}
    if ranking:
        found.update(
            _curves_k(run, settings_key(dataclasses.replace(s, k=1, threshold=0.0)), ranking)
        )
    if other:
        found.update(_curves_k(run, key, other))
    return {n: found[n] for n in names}


@st.cache_data(show_spinner=False, max_entries=64)
def _curves_t(
    run: RunKey,
    key: tuple[Any, ...],
    grid: tuple[float, ...],
    names: tuple[str, ...] | None,
) -> dict[str, np.ndarray]:
    return curves.curves_over_threshold(
        store(), run_data(*run), settings_from_key(key), grid, names
    )


@calm
def curves_t(
    view: View, grid: Sequence[float], names: Sequence[str] | None = None
) -> dict[str, np.ndarray]:
    """Run values at k over the thresholds of grid (cached; keyed without the threshold)."""
    key = settings_key(dataclasses.replace(view.settings, threshold=0.0))
    return _curves_t(
        run_key(view.run),
        key,
        tuple(grid),
        None if names is None else tuple(names),
    )
