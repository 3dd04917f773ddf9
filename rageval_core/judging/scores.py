"""Judge scores per query, for evaluate and the pages: imported ones and a judge result set.

Columns are named as metrics: judge.<score> (a number per judged query) and
judge.<name>.<label> (1 where the query got that label, 0 where it got another; with repeats,
the share of repeats that gave it). A query not judged on a score is NaN there; a judge error is
never a score (NaN too), only counted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import NotFoundError
from rageval_core.judging.prompts import PASS_AT, PROMPTS
from rageval_core.metrics.judge import JudgeScores
from rageval_core.store import Store
from rageval_core.store import judgements as jstore
from rageval_core.store.judgements import JudgeResult, JudgeSet
from rageval_core.store.store import RunRef

Floats = NDArray[np.float64]
#: Settings.judge value that leaves every judge result set out (imported scores only)
NO_JUDGE = "none"


def pick_judge(store: Store, ref: RunRef, which: str | None) -> JudgeSet | None:
    """The result set evaluate reads: which (id or name), else the newest; None when the run has
    none or which is "none"."""
    if which == NO_JUDGE:
        return None
    try:
        return jstore.judge_set(store, ref, which)
    except NotFoundError:
        if which is not None:
            raise
        return None


def imported_columns(rows: Iterable[tuple[int, Mapping[str, Any]]], n: int) -> dict[str, Floats]:
    """judge.* columns of the judge objects a run file carried ((qidx, object) pairs)."""
    numbers: dict[str, Floats] = {}
    labels: dict[str, dict[int, str]] = defaultdict(dict)
    for qidx, obj in rows:
        for name, value in obj.items():
            if isinstance(value, str):
                labels[name][qidx] = value
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                numbers.setdefault(f"judge.{name}", np.full(n, np.nan))[qidx] = float(value)
    out = dict(numbers)
    for name, given in labels.items():
        for label in sorted(set(given.values())):
            col = np.full(n, np.nan)
            for qidx, value in given.items():
                col[qidx] = 1.0 if value == label else 0.0
            out[f"judge.{name}.{label}"] = col
    return out


def set_columns(results: Sequence[JudgeResult], n: int) -> dict[str, Floats]:
    """judge.* columns of a result set: numeric scores averaged over repeats, label columns the
    share of repeats giving each label (every label of the prompt, given or not)."""
    by_item: dict[tuple[int, str], list[Mapping[str, Any]]] = defaultdict(list)
    prompts_seen: set[str] = set()
    for r in results:
        prompts_seen.add(r.prompt)
        if r.verdict is not None:
            by_item[(r.qidx, r.prompt)].append(r.verdict)
    out: dict[str, Floats] = {}

    def col(name: str) -> Floats:
        return out.setdefault(name, np.full(n, np.nan))

    for name in sorted(prompts_seen):  # every metric of a judged prompt exists, NaN or not
        p = PROMPTS.get(name)
        if p is None:
            continue
        for key in p.scores:
            col(f"judge.{key}")
        for key, allowed in p.labels.items():
            for label in allowed:
                col(f"judge.{key}.{label}")
        if name == "retrieval_quality":
            col("judge.pass_rate")
    for (qidx, name), verdicts in by_item.items():
        p = PROMPTS.get(name)
        if p is None:
            continue
        for key in p.scores:
            col(f"judge.{key}")[qidx] = float(np.mean([v[key] for v in verdicts]))
        for key, allowed in p.labels.items():
            counts = Counter(v[key] for v in verdicts)
            for label in allowed:
                col(f"judge.{key}.{label}")[qidx] = counts[label] / len(verdicts)
        if name == "retrieval_quality":
            passed = [v["retrieval_quality_score"] >= PASS_AT for v in verdicts]
            col("judge.pass_rate")[qidx] = float(np.mean(passed))
    return out


def judge_scores(
    store: Store, ref: RunRef, n_queries: int, which: str | None = None
) -> JudgeScores:
    """Every judge.* column of the run: imported scores, with the chosen result set's over them
    (the set wins where a name is in both)."""
    columns = imported_columns(jstore.imported_judge(store, ref), n_queries)
    chosen = pick_judge(store, ref, which)
    source = None
    errors = 0
    if chosen is not None:
        results = jstore.judge_results(store, chosen)
        columns.update(set_columns(results, n_queries))
        errors = sum(1 for r in results if r.error is not None)
        source = {
            "judge_id": chosen.judge_id,
            "name": chosen.name,
            "model": chosen.model,
            "created_at": chosen.created_at,
            "prompts": chosen.prompts,
        }
    return JudgeScores(columns, source, errors)


def judge_verdicts(
    store: Store, ref: RunRef, qidx: int, which: str | None = None
) -> list[JudgeResult]:
    """One query's results in the chosen set (label, cited context numbers, notes; errors)."""
    chosen = pick_judge(store, ref, which)
    if chosen is None:
        return []
    return [r for r in jstore.judge_results(store, chosen) if r.qidx == qidx]


# --- repeatability -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ItemRepeats:
    """One (query, verdict key) judged several times."""

    qidx: int
    query_id: str  # what is shown: qidx is the store's row number
    key: str  # e.g. faithfulness, retrieval_quality_score
    values: tuple[Any, ...]  # one per repeat that was not an error
    agreement: float  # share of repeats giving the most common value (labels) / 1 - range (scores)
    spread: float  # labels: 0 or 1 (any disagreement); scores: max - min


@dataclass(frozen=True)
class Repeatability:
    """How far a judge agrees with itself over --repeats N."""

    judge: JudgeSet
    repeats: int
    agreement: dict[str, float]  # key -> mean per-item agreement
    spread: dict[str, float]  # key -> mean per-item spread (scores: max - min)
    disagreements: list[ItemRepeats]  # items whose repeats differ (scores: by more than tol)

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge.to_json(),
            "repeats": self.repeats,
            "agreement": self.agreement,
            "spread": self.spread,
            "disagreements": [
                {
                    "query_id": d.query_id,
                    "key": d.key,
                    "values": list(d.values),
                    "agreement": d.agreement,
                    "spread": d.spread,
                }
                for d in self.disagreements
            ],
        }


def repeatability(
    store: Store, ref: RunRef, which: str | None = None, tolerance: float = 0.2
) -> Repeatability:
    """Per-item agreement and score spread of a set judged with repeats; the items where the
    judge disagrees with itself (a label that changed, a score that moved by more than tolerance)."""
    chosen = jstore.judge_set(store, ref, which)
    by_item: dict[tuple[int, str], list[Any]] = defaultdict(list)
    for r in jstore.judge_results(store, chosen):
        if r.verdict is None:
            continue
        p = PROMPTS.get(r.prompt)
        if p is None:
            continue
        for key in (*p.scores, *p.labels):
            by_item[(r.qidx, key)].append(r.verdict[key])
    items: list[ItemRepeats] = []
    ids = jstore.query_ids(store, chosen.run_id) if by_item else []
    for (qidx, key), values in sorted(by_item.items()):
        if len(values) < 2:
            continue
        if isinstance(values[0], str):
            top = Counter(values).most_common(1)[0][1]
            agreement, spread = top / len(values), float(len(set(values)) > 1)
        else:
            spread = float(max(values) - min(values))
            agreement = 1.0 - spread
        items.append(ItemRepeats(qidx, ids[qidx], key, tuple(values), agreement, spread))
    agreements: dict[str, list[float]] = defaultdict(list)
    spreads: dict[str, list[float]] = defaultdict(list)
    for it in items:
        agreements[it.key].append(it.agreement)
        spreads[it.key].append(it.spread)
    disagreements = [
        it
        for it in items
        if (it.spread > 0 if isinstance(it.values[0], str) else it.spread > tolerance + 1e-12)
    ]
    return Repeatability(
        chosen,
        chosen.repeats,
        {k: float(np.mean(v)) for k, v in agreements.items()},
        {k: float(np.mean(v)) for k, v in spreads.items()},
        disagreements,
    )
