"""Rank fusion's methods and RRF constant (rageval_core.compare.fusion), in a module of their
own, as the statistics' defaults are: `rageval fuse --help` shows them without importing the
comparison code (numpy, DuckDB, the store)."""

METHODS = ("rrf", "combsum", "combmnz")
DEFAULT_RRF_K = 60
