"""rageval dashboard: page config, navigation and the shared sidebar."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from PIL import Image

from rageval_dashboard import keys, sidebar

PAGES = Path(__file__).parent / "app_pages"

# the favicon is drawn here: a `:material/...:` page icon is fetched from a third-party font
# server by the browser (no request may leave the app's own origin)
st.set_page_config(
    page_title="rageval", page_icon=Image.new("RGB", (32, 32), "#2563eb"), layout="wide"
)

page = st.navigation(
    [
        st.Page(PAGES / "overview.py", title="Overview", icon=":material/dashboard:", default=True),
        st.Page(PAGES / "queries.py", title="Queries", icon=":material/manage_search:"),
        st.Page(PAGES / "threshold.py", title="Threshold tuning", icon=":material/tune:"),
        st.Page(PAGES / "compare.py", title="Compare", icon=":material/compare_arrows:"),
        st.Page(PAGES / "latency.py", title="Latency & cost", icon=":material/speed:"),
        st.Page(PAGES / "judge.py", title="Judge", icon=":material/gavel:"),
        st.Page(PAGES / "calibration.py", title="Judge calibration", icon=":material/balance:"),
        st.Page(PAGES / "sweeps.py", title="Sweeps", icon=":material/stacked_line_chart:"),
        st.Page(PAGES / "runs.py", title="Runs", icon=":material/folder_open:"),
    ]
)
st.session_state[keys.VIEW] = sidebar.sidebar()
page.run()
