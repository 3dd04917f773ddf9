"""What the pages draw with Streamlit: downloads, tables of long text, view exports, the
preset's why-panel, choice helpers."""
