"""rageval's Python API, for notebooks and test harnesses (the README's "Python API"):

    import rageval as rv

    with rv.load("sample_runs/bm25.jsonl") as bm25, rv.load("sample_runs/hybrid_rerank.jsonl") as hybrid:
        print(rv.evaluate(bm25, k=5).metrics["nDCG@5"])
        comparison = rv.compare([bm25, hybrid], metrics=["nDCG@10", "RR"])
        print(rv.gate(comparison, max_drop={"nDCG@10": 0.01}).passed)

Everything here is rageval_core.api's; the CLI's evaluate, compare and gate call the same functions.
"""

from rageval_core.api import (
    Agreement,
    Comparison,
    Diagnosis,
    GateResult,
    LoadedRun,
    Report,
    Settings,
    agreement,
    compare,
    diagnose,
    evaluate,
    explain_preset,
    gate,
    load,
)
from rageval_core import __version__ as _core_version
from rageval_core.errors import InputError, RagevalError, UsageError

__version__ = _core_version

__all__ = [
    "Agreement",
    "Comparison",
    "Diagnosis",
    "GateResult",
    "InputError",
    "LoadedRun",
    "RagevalError",
    "Report",
    "Settings",
    "UsageError",
    "__version__",
    "agreement",
    "compare",
    "diagnose",
    "evaluate",
    "explain_preset",
    "gate",
    "load",
]
