"""Judge scores as metrics: `judge.<name>` (a numeric score's mean over judged queries) and
`judge.<name>.<label>` (the share of queries given that label).

Their values are read, not computed: they come with the run (the native `judge` object, RAGAS
result columns) or from an LLM judge's result set (rageval_core.judging). Any judge.* name
parses; a run without that score says so when it is evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import UsageError
from rageval_core.metrics.registry import MeasureSpec, add_prefix

PREFIX = "judge."
_NAME = re.compile(r"^judge\.[^\s=,()@]+$")
#: labels where a higher share is worse (the gate and compare read the direction from here)
WORSE_LABELS = frozenset({"contradicted", "insufficient", "unsupported", "incorrect", "fail"})


@dataclass(frozen=True)
class JudgeScores:
    """Per-query judge columns (NaN: not judged), every query of the run in file order."""

    columns: Mapping[str, NDArray[np.float64]]
    #: which judge result set the columns hold beside the imported scores (None: imported only)
    source: Mapping[str, Any] | None = None
    errors: int = 0  # judge errors of the set: counted, never scored


def _value(name: str) -> Any:
    def fn(data: JudgeScores, cutoff: int | None, params: Mapping[str, Any]) -> NDArray[np.float64]:
        column = data.columns.get(name)
        if column is None and name.count(".") >= 2:
            # a label nobody was given, on a name other labels were given on: a share of 0
            # wherever the query was judged on that name (so runs compare on the same labels)
            stem = name.rsplit(".", 1)[0] + "."
            siblings = [c for n, c in data.columns.items() if n.startswith(stem)]
            if siblings:
                judged = np.any(~np.isnan(np.vstack(siblings)), axis=0)
                column = np.where(judged, 0.0, np.nan)
        if column is None:
            known = ", ".join(sorted(data.columns)) or "none"
            raise UsageError(f"no judge score {name} in this run (judge scores: {known})")
        return np.array(column, dtype=np.float64)

    return fn


def judge_spec(name: str) -> MeasureSpec:
    """The spec of one judge.* name (UsageError when the name cannot be one)."""
    if not _NAME.match(name):
        raise UsageError(
            f"cannot read judge metric {name!r}: expected judge.<score> or judge.<name>.<label>"
        )
    parts = name.split(".")
    is_label = len(parts) > 2
    description = (
        f"share of judged queries the judge labelled {parts[-1]!r} on {parts[1]}"
        if is_label
        else f"mean judge score {'.'.join(parts[1:])} over judged queries"
    )
    if name == "judge.pass_rate":
        description = "share of judged queries whose retrieval_quality_score is >= 0.7"
    return MeasureSpec(
        name=name,
        family="judge",
        needs_cutoff=False,
        allows_cutoff=False,
        fn=_value(name),
        description=description,
        range=(None, None) if not is_label else (0.0, 1.0),
        input=JudgeScores,
        higher_is_better=not (is_label and parts[-1].lower() in WORSE_LABELS),
    )


add_prefix(PREFIX, judge_spec)
