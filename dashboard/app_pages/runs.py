"""Runs: the stored runs with their facts; import, rename, delete."""

from __future__ import annotations

import streamlit as st

from dashboard import state
from dashboard.components import tables

st.title("Runs")
runs = state.runs()
if not runs:
    st.info("No runs yet. Import one with `rageval import FILE`, or run `make run` to import the sample runs.")
else:
    st.caption(f"{len(runs)} runs in the store")
    st.dataframe(tables.runs_frame(runs), hide_index=True, width="stretch")
