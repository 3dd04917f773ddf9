"""Data -> plotly figures and pandas frames, one module per page; never Streamlit (an
import-linter contract checks it)."""
