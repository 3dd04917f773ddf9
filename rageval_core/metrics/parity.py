"""The seed-parity presets' metrics: TAT-RAG's and EggAI's own formulas, per query and per run.

Inputs are what rageval_core.evaluation.preset_parity derives from a run under the preset rules:
- TAT-RAG: per query a boolean cover matrix (chunks in rank order x gold items; row r, column j
  True when the chunk at rank r+1 covers gold item j);
- EggAI: per query the similarity of each retrieved chunk to the expected context.
Plain float64 arithmetic in the scripts' own order, a Python loop per query: these presets serve
runs of a few hundred queries, and the scripts' numbers are what counts, to the last bit.

A query without gold is NaN on every metric (left out of the means) unless no_gold_scores_zero,
when it scores 0 as both scripts do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]

TATRAG_K = (3, 5, 10)
#: TAT-RAG's metrics whose run value pools over gold items (sum covered / sum gold)
POOLED = ("EvidenceRecall@3", "EvidenceRecall@10")


def tatrag_query(
    cover: NDArray[np.bool_], *, precision_by_retrieved: bool, ap_per_gold_item: bool
) -> dict[str, float]:
    """One query's TAT-RAG metrics from its cover matrix (at least one gold item).

    Precision@5 = relevant chunks in the top 5 / (5, or min(5, retrieved)); a chunk is relevant
    when it covers a gold item. EvidenceRecall@k = PerQueryCoverage@k = gold items covered in the
    top k / gold items; FullCoverageRate@k = 1 when all are. MAP (ap_per_gold_item): the sum of
    (ranks so far covering a new item) / rank over the ranks that cover a new item, divided by
    the number of gold items; otherwise rageval's evidence AP (mean precision at the relevant
    ranks). MRR = 1 / first relevant rank. Both read the whole list; HitRate@10 = any relevant in
    the top 10.
    """
    n, m = cover.shape
    relevant: NDArray[np.bool_] = (
        np.asarray(cover.any(axis=1)) if m else np.zeros(n, dtype=np.bool_)
    )
    out: dict[str, float] = {}
    denom = min(5, n) if precision_by_retrieved else 5
    out["Precision@5"] = int(relevant[:5].sum()) / denom if denom else 0.0
    for k in (3, 10):
        covered = int(cover[:k].any(axis=0).sum())
        out[f"EvidenceRecall@{k}"] = covered / m
        out[f"PerQueryCoverage@{k}"] = covered / m
        out[f"FullCoverageRate@{k}"] = 1.0 if covered >= m else 0.0
    ap = 0.0
    if ap_per_gold_item:
        seen = np.zeros(m, dtype=np.bool_)
        hits = 0
        for rank in range(n):
            if (cover[rank] & ~seen).any():
                hits += 1
                ap += hits / (rank + 1)
            seen |= cover[rank]
        ap /= m
    else:
        ranks = np.flatnonzero(relevant)
        for i, at in enumerate(ranks.tolist()):
            ap += (i + 1) / (at + 1)
        ap = ap / ranks.size if ranks.size else 0.0
    out["MAP"] = ap
    first = np.flatnonzero(relevant)
    out["MRR"] = 1.0 / (int(first[0]) + 1) if first.size else 0.0
    out["HitRate@10"] = 1.0 if relevant[:10].any() else 0.0
    return out


def tatrag_scores(
    covers: Sequence[NDArray[np.bool_]],
    names: Sequence[str],
    *,
    precision_by_retrieved: bool = False,
    ap_per_gold_item: bool = False,
    no_gold_scores_zero: bool = False,
) -> tuple[dict[str, Floats], Floats]:
    """Per-query values of names over all queries, and each query's gold count (the weights)."""
    values = {name: np.full(len(covers), np.nan) for name in names}
    gold = np.zeros(len(covers))
    for q, cover in enumerate(covers):
        gold[q] = cover.shape[1]
        if cover.shape[1] == 0:
            if no_gold_scores_zero:
                for name in names:
                    values[name][q] = 0.0
            continue
        row = tatrag_query(
            cover, precision_by_retrieved=precision_by_retrieved, ap_per_gold_item=ap_per_gold_item
        )
        for name in names:
            values[name][q] = row[name]
    return values, gold


def eggai_query(
    sims: Sequence[float], threshold: float, *, precision_by_retrieved: bool
) -> dict[str, float]:
    """One test case's EggAI context metrics from its chunks' similarities (rank order).

    recall_score = 1 if any similarity >= threshold; context_coverage = the best similarity (0
    for no chunks); precision_at_k = similarities >= threshold in the top 5 / (5, or the length
    of the top 5); mrr_score = 1 / first rank at the threshold; ndcg_score over the top 10,
    graded by the similarity itself with discount 1 at ranks 1 and 2 and log2(rank) after, the
    ideal being the same ten similarities sorted; best_match_position = the first rank holding
    the highest similarity at or above the threshold (NaN for none); hit_rate_top_k = 1 when
    that position is <= k.
    """
    n = len(sims)
    relevant = [s >= threshold for s in sims]
    out: dict[str, float] = {
        "recall_score": 1.0 if any(relevant) else 0.0,
        "context_coverage": max(sims, default=0.0),
    }
    top = relevant[:5]
    denom = len(top) if precision_by_retrieved else 5
    out["precision_at_k"] = sum(top) / denom if n else 0.0
    out["mrr_score"] = next((1.0 / (i + 1) for i, r in enumerate(relevant) if r), 0.0)
    ideal = _dcg(sorted(sims[:10], reverse=True))
    out["ndcg_score"] = _dcg(sims[:10]) / ideal if n and ideal > 0 else 0.0
    best, position = 0.0, math.nan
    for i, s in enumerate(sims):
        if s >= threshold and s > best:  # strictly greater: the first of equal bests
            best, position = s, float(i + 1)
    out["best_match_position"] = position
    for k in (1, 3, 5):
        out[f"hit_rate_top_{k}"] = 1.0 if position <= k else 0.0  # NaN <= k is False
    return out


def _dcg(sims: Sequence[float]) -> float:
    total = 0.0
    for i, s in enumerate(sims):
        total += s if i == 0 else s / math.log2(i + 1)
    return total


def eggai_scores(
    sims: Sequence[Sequence[float] | None],
    names: Sequence[str],
    threshold: float,
    *,
    precision_by_retrieved: bool = False,
    no_gold_scores_zero: bool = False,
) -> dict[str, Floats]:
    """Per-query values of names; sims[q] None: the query has no gold (NaN, or 0 when it counts)."""
    values = {name: np.full(len(sims), np.nan) for name in names}
    for q, row in enumerate(sims):
        if row is None:
            if no_gold_scores_zero:
                for name in names:
                    if name != "best_match_position":
                        values[name][q] = 0.0
            continue
        got = eggai_query(row, threshold, precision_by_retrieved=precision_by_retrieved)
        for name in names:
            values[name][q] = got[name]
    return values


def aggregate(family: str, name: str, values: Floats, weights: Floats, scored: int) -> float:
    """A preset metric's run value, as its project's reporter computes it.

    TAT-RAG: the mean over scored queries, EvidenceRecall@k pooled (sum covered / sum gold; 0
    when there is no gold). EggAI: the mean over scored cases; best_match_position over the
    cases that have one (0.0 when none do).
    """
    ok = ~np.isnan(values)
    if family == "tatrag" and name in POOLED:
        total = float(weights[ok].sum())
        return float((values[ok] * weights[ok]).sum() / total) if total else 0.0
    if family == "eggai" and name == "best_match_position":
        return _mean(values[ok]) if ok.any() else 0.0
    if not scored:
        return math.nan
    return _mean(values[ok])


def _mean(values: Floats) -> float:
    """The scripts' mean: a left-to-right Python sum over the count (numpy sums pairwise)."""
    total = 0.0
    for v in values.tolist():
        total += v
    return total / len(values)
