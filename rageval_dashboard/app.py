"""rageval dashboard: page config, navigation and the shared sidebar."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from PIL import Image

from rageval_dashboard import keys, sidebar

FOLDER = Path(__file__).parent / "app_pages"

# the favicon is drawn here: a `:material/...:` page icon is fetched from a third-party font
# server by the browser (no request may leave the app's own origin)
st.set_page_config(
    page_title="rageval", page_icon=Image.new("RGB", (32, 32), "#2563eb"), layout="wide"
)

page = st.navigation(
    [
        st.Page(FOLDER / p.file, title=p.title, icon=p.icon, url_path=p.url_path, default=i == 0)
        for i, p in enumerate(keys.PAGES)
    ]
)
st.session_state[keys.VIEW] = sidebar.sidebar()
page.run()
