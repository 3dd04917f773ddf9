"""The statistics' defaults (rageval_core.compare.statistics), in a module of their own: the CLI
shows them in --help without importing the comparison code (numpy, DuckDB, the store)."""

DEFAULT_PERMUTATIONS = 10_000
DEFAULT_BOOTSTRAP = 2_000
DEFAULT_SEED = 0
DEFAULT_ALPHA = 0.05
