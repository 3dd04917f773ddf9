"""The DuckDB store: Store owns the connection and all SQL; runs are imported in one transaction
each. What other modules may use is exported here (the dashboard imports nothing deeper)."""

from rageval_core.store.lease import LeasedStore
from rageval_core.store.locking import StoreBusyError
from rageval_core.store.store import ImportResult, RunRecord, RunRef, Store, default_path

__all__ = [
    "ImportResult",
    "LeasedStore",
    "RunRecord",
    "RunRef",
    "Store",
    "StoreBusyError",
    "default_path",
]
