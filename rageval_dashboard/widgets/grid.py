"""The one way the dashboard draws a table: st.dataframe with a missing value shown as a dash.

Streamlit draws a missing cell as the word "None" (and a column_config number format overrides
a pandas Styler's na_rep), which reads as a value; every table goes through grid() so that an
unscored metric, an unrecorded stage or an absent price is a dash everywhere.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

#: what a missing value looks like in every table
MISSING = "—"


def grid(data: Any, **kwargs: Any) -> Any:
    """st.dataframe(data, **kwargs) with missing values drawn as MISSING; returns its event."""
    return st.dataframe(data, placeholder=MISSING, **kwargs)
