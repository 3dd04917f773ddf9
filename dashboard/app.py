"""rageval dashboard: page config, navigation and the shared sidebar."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard import state

PAGES = Path(__file__).parent / "app_pages"

st.set_page_config(page_title="rageval", page_icon=":material/troubleshoot:", layout="wide")

page = st.navigation(
    [
        st.Page(PAGES / "overview.py", title="Overview", icon=":material/dashboard:", default=True),
        st.Page(PAGES / "queries.py", title="Queries", icon=":material/manage_search:"),
        st.Page(PAGES / "threshold.py", title="Threshold tuning", icon=":material/tune:"),
        st.Page(PAGES / "compare.py", title="Compare", icon=":material/compare_arrows:"),
        st.Page(PAGES / "latency.py", title="Latency & cost", icon=":material/speed:"),
        st.Page(PAGES / "runs.py", title="Runs", icon=":material/folder_open:"),
    ]
)
st.session_state[state.VIEW] = state.sidebar()
page.run()
