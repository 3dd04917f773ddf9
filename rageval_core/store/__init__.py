"""The DuckDB store: Store owns the connection; runs are imported in one transaction each."""

from rageval_core.store.store import ImportResult, RunRecord, Store, default_path

__all__ = ["ImportResult", "RunRecord", "Store", "default_path"]
