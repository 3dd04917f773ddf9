"""Compare two to five runs on their shared queries, and gate a deploy on the comparison.

One module per job: statistics.py (paired t-test, effect size, sign-flip test, bootstrap CI,
Holm; numpy only; and how a p-value prints), comparison.py (alignment, the paired tests per
metric, `compare`), latency_change.py (latency and cost changes), gate.py (rules and `gate`),
trends.py (runs over time), sweeps.py (runs by their retriever settings) and memo.py. The text
tables the CLI prints are rageval_core/outputs/compare_text.py. The names below are the ones
callers use.
"""

from __future__ import annotations

from rageval_core.compare.comparison import (
    Comparison,
    PairedTest,
    compare,
    compare_ops,
    higher_is_better,
    shared_query_counts,
)
from rageval_core.compare.latency_change import OpsChange
from rageval_core.compare.gate import GateResult, Rule, RuleResult, gate, metrics_of, parse_rules
from rageval_core.compare.statistics import (
    DEFAULT_ALPHA,
    DEFAULT_BOOTSTRAP,
    DEFAULT_PERMUTATIONS,
    DEFAULT_SEED,
    StatOptions,
)
from rageval_core.compare.trends import (
    BY_STEM,
    TrendRow,
    group_keys,
    name_stem,
    trend_group,
    trends,
)

__all__ = [
    "BY_STEM",
    "DEFAULT_ALPHA",
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_PERMUTATIONS",
    "DEFAULT_SEED",
    "Comparison",
    "GateResult",
    "OpsChange",
    "PairedTest",
    "Rule",
    "RuleResult",
    "StatOptions",
    "TrendRow",
    "compare",
    "compare_ops",
    "gate",
    "group_keys",
    "higher_is_better",
    "metrics_of",
    "name_stem",
    "parse_rules",
    "shared_query_counts",
    "trend_group",
    "trends",
]
