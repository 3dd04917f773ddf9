"""overview page (placeholder until its issue lands)."""

import streamlit as st

from dashboard import state

view = state.require_view()
st.title("overview")
report = state.report(view)
st.write({k: v for k, v in report.metrics.items()})
