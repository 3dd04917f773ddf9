"""rageval's core: load runs, validate them, keep them in DuckDB, score evidence, compute metrics.

Importable without streamlit or plotly (tests/core/test_import_isolation.py checks it). The
Python API for notebooks and harnesses is the `rageval` package (`import rageval as rv`;
rageval_core/api.py).
"""

from __future__ import annotations

from rageval_core.errors import InputError, NotFoundError, Problem, RagevalError, UsageError
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "InputError",
    "NotFoundError",
    "ParsedRun",
    "Problem",
    "Query",
    "RagevalError",
    "RunInfo",
    "UsageError",
    "__version__",
]
