"""rageval's Streamlit dashboard (pages under app_pages/, caching in state/)."""
