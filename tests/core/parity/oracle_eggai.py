"""Test oracle: EggAI's retrieval_performance context metrics with the judge off, re-implemented.

context_metrics.py per test case (difflib on lower-cased, stripped text; threshold 0.5), the
averages of mlflow_reporter.py's _log_aggregate_metrics over every test case. Plain Python on the
raw JSON: the QA pairs and [{qa_pair_id, results: [{text, ...}]}].
"""

from __future__ import annotations

import math
from difflib import SequenceMatcher
from typing import Any

NAMES = (
    "recall_score",
    "context_coverage",
    "precision_at_k",
    "mrr_score",
    "ndcg_score",
    "best_match_position",
    "hit_rate_top_1",
    "hit_rate_top_3",
    "hit_rate_top_5",
)


def similarity(expected: str, chunk: str) -> float:
    return SequenceMatcher(None, expected.lower().strip(), chunk.lower().strip()).ratio()


def _dcg(sims: list[float]) -> float:
    return sum(s if i == 0 else s / math.log2(i + 1) for i, s in enumerate(sims))


def case_metrics(
    expected: str, chunks: list[dict[str, Any]], threshold: float = 0.5
) -> dict[str, Any]:
    """One test case's metrics, as calculate_all_metrics returns them."""
    sims = [similarity(expected, c.get("text", "")) for c in chunks]
    coverage = max(sims, default=0.0)
    recall = 1.0 if any(s >= threshold for s in sims) else 0.0
    top5 = sims[:5]
    precision = sum(1 for s in top5 if s >= threshold) / len(top5) if sims else 0.0
    mrr = next((1.0 / (i + 1) for i, s in enumerate(sims) if s >= threshold), 0.0)
    if sims:
        idcg = _dcg(sorted(sims[:10], reverse=True))
        ndcg = _dcg(sims[:10]) / idcg if idcg > 0 else 0.0
    else:
        ndcg = 0.0
    best, position = 0.0, None
    for i, s in enumerate(sims):
        if s >= threshold and s > best:
            best, position = s, i + 1
    return {
        "recall_score": recall,
        "context_coverage": coverage,
        "precision_at_k": precision,
        "mrr_score": mrr,
        "ndcg_score": ndcg,
        "best_match_position": position,
    }


def per_query(
    pairs: list[dict[str, Any]],
    results: list[dict[str, Any]],
    threshold: float = 0.5,
    score_threshold: float | None = None,
) -> list[dict[str, Any]]:
    """Each QA pair's metrics in file order (a pair without results retrieved nothing).

    score_threshold: as if the search had dropped the hits scored below it (EggAI's script has
    no cut-off of its own; rageval's --score-threshold beside the preset does this).
    """
    by_id = {r["qa_pair_id"]: r.get("results", []) for r in results}
    rows = []
    for p in pairs:
        chunks = by_id.get(p["qa_pair_id"], [])
        if score_threshold is not None:
            chunks = [c for c in chunks if c.get("score") is None or c["score"] >= score_threshold]
        rows.append(case_metrics(p["context"], chunks, threshold))
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """mlflow_reporter's averages: context metrics over all cases; positions over those with one."""
    n = len(rows)
    out = {name: sum(r[name] for r in rows) / n for name in NAMES[:5]}
    positions = [r["best_match_position"] for r in rows if r["best_match_position"] is not None]
    out["best_match_position"] = sum(positions) / len(positions) if positions else 0.0
    for k in (1, 3, 5):
        out[f"hit_rate_top_{k}"] = sum(1 for p in positions if (p == 1 if k == 1 else p <= k)) / n
    return out
