"""rageval dashboard: page config, navigation and the shared sidebar."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

PAGES = Path(__file__).parent / "app_pages"

st.set_page_config(page_title="rageval", page_icon=":material/troubleshoot:", layout="wide")

page = st.navigation(
    [
        st.Page(PAGES / "runs.py", title="Runs", icon=":material/folder_open:", default=True),
    ]
)
page.run()
