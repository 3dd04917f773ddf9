"""The diagnosis as data: the reasons' names and order, each missed gold item, each what-if,
the two-stage split, and the Diagnosis that holds them and renders itself as JSON."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]

#: evidence mode: a missed gold span gets the first of these that holds, in this order
EVIDENCE_REASONS = (
    "numbers_differ",
    "ranked_below_k",
    "split_across_chunks",
    "near_miss",
    "not_retrieved",
)
#: ids mode (qrels): a failing query's reason
IDS_REASONS = ("relevant_below_k", "not_retrieved")
#: a query's status when it has no reason: nothing missed, or nothing to find
PASSING, NO_GOLD = "passing", "no_gold"
#: the two-stage split of each gold item (stages.py), in this order
STAGE_KINDS = ("lost_at_retrieval", "lost_at_rerank", "promoted_by_rerank", "kept")


@dataclass(frozen=True, eq=False)
class Missed:
    """Every missed gold item, one row each, by query then item.

    item: the gold span's index in its query (evidence mode), -1 in ids mode (the query).
    reason: index into Diagnosis.reasons. rank: the 1-based rank the reason names (the refused
    chunk, the covering chunk below k, the first half's chunk of a split, the first relevant
    document below k), 0 when none; rank2: a split's second half's chunk, 0 otherwise.
    score: the best score in the top k as the metrics count it (near_miss, not_retrieved; NaN
    without a chunk); raw_score: the same without the numbers guard (above score when the best
    chunk's figures differ). extra_chars: a split's shorter part, the characters a chunk would
    have to keep more.
    """

    qidx: Ints
    item: Ints
    reason: Ints
    rank: Ints
    rank2: Ints
    score: Floats
    extra_chars: Ints
    raw_score: Floats

    def __len__(self) -> int:
        return int(self.qidx.size)

    def take(self, rows: NDArray[Any]) -> Missed:
        return Missed(
            self.qidx[rows],
            self.item[rows],
            self.reason[rows],
            self.rank[rows],
            self.rank2[rows],
            self.score[rows],
            self.extra_chars[rows],
            self.raw_score[rows],
        )


@dataclass(frozen=True, slots=True)
class WhatIf:
    """One suggested change and how many failing queries it turns passing, computed exactly."""

    reason: str  # the reason whose fix it is
    change: str  # "k = 20", "threshold 0.6", "numbers guard off", "chunks keeping 35 more ..."
    fixes: int  # failing queries that pass after the change
    of: int  # failing queries now
    items: int  # missed gold items of that reason
    note: str = ""  # what else the line says (e.g. the chunks with other figures)

    def text(self) -> str:
        note = f" ({self.note})" if self.note else ""
        return f"{self.change} would fix {self.fixes} of {self.of} failing queries{note}"

    def to_json(self) -> dict[str, Any]:
        return {"change": self.change, "fixes": self.fixes, "of": self.of}


@dataclass(frozen=True, slots=True)
class Stages:
    """A reranked run against its first stage, per gold item (STAGE_KINDS) over shared queries."""

    first_stage: str
    counts: Mapping[str, int]
    #: share of the gold items the first stage's whole list covers (what a reranker can reach)
    ceiling: float
    #: share of those the reranked top k covers (how much of what it could reach it delivers)
    delivered: float
    #: share of all gold items the reranked top k covers
    reranked: float
    #: gold items in the reranked top k but in no first-stage list (in none of STAGE_KINDS): the
    #: two runs are not two stages of one pipeline
    added: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            **{kind: int(self.counts[kind]) for kind in STAGE_KINDS},
            "ceiling": _number(self.ceiling),
            "delivered": _number(self.delivered),
        }
        if self.added:
            out["added_by_rerank"] = self.added
        return out


def _number(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


@dataclass(frozen=True, eq=False)
class Diagnosis:
    """Why each failing query of a run fails at one setting, and what would fix it.

    status[q]: PASSING, NO_GOLD, or the query's primary reason (its missed items' most frequent
    reason, ties broken by the order of reasons). failing: the queries with a reason.
    """

    run: str
    settings: dict[str, Any]
    relevance: str | None
    reasons: tuple[str, ...]
    query_ids: NDArray[np.object_]
    status: NDArray[np.object_]
    missed: Missed
    what_if: tuple[WhatIf, ...]
    #: ids mode: documents the qrels do not judge in each query's top k (a possible label hole)
    unjudged: Ints | None = None
    stages: Stages | None = None
    #: with a tag: {"tag": TAG, "groups": {value: {"n", "spans", "queries"}}}
    by: dict[str, Any] | None = None
    _rows: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def failing(self) -> NDArray[np.bool_]:
        return (self.status != PASSING) & (self.status != NO_GOLD)

    @property
    def n_failing(self) -> int:
        return int(np.count_nonzero(self.failing))

    def span_counts(self, rows: NDArray[Any] | None = None) -> dict[str, int]:
        """{reason: missed gold items} (evidence mode: spans; ids mode: failing queries)."""
        missed = self.missed if rows is None else self.missed.take(np.isin(self.missed.qidx, rows))
        counts = np.bincount(missed.reason, minlength=len(self.reasons))
        return {r: int(c) for r, c in zip(self.reasons, counts, strict=True)}

    def query_counts(self, rows: NDArray[Any] | None = None) -> dict[str, int]:
        """{reason: failing queries whose primary reason it is, no_gold: queries without gold}."""
        status = self.status if rows is None else self.status[rows]
        return {name: int(np.count_nonzero(status == name)) for name in (*self.reasons, NO_GOLD)}

    def examples(self, reason: str, n: int = 5) -> list[str]:
        """Up to n ids of queries whose primary reason is reason, in query order."""
        return [str(q) for q in self.query_ids[self.status == reason][:n]]

    def queries_with(self, reason: str) -> NDArray[np.int64]:
        """Row numbers of the queries whose primary reason is reason (a bar's click: a filter)."""
        return np.flatnonzero(self.status == reason).astype(np.int64)

    def missed_of(self, qidx: int) -> Missed:
        """The missed items of one query."""
        lo, hi = np.searchsorted(self.missed.qidx, [qidx, qidx + 1])  # sorted by query
        return self.missed.take(np.arange(lo, hi))

    def sentences(self, qidx: int) -> list[str]:
        """One sentence per missed item of a query (the drilldown's opening lines)."""
        from rageval_core.diagnosis.text import sentence

        m = self.missed_of(qidx)
        return [sentence(self, m, i) for i in range(len(m))]

    def to_json(self, per_query: bool = False) -> dict[str, Any]:
        """The documented object of `rageval diagnose --json` (docs/diagnosis.md)."""
        out: dict[str, Any] = {
            "run": self.run,
            "settings": self.settings,
            "spans": self.span_counts(),
            "queries": self.query_counts(),
            "what_if": [w.to_json() for w in self.what_if],
        }
        if self.unjudged is not None:
            out["unjudged_top_k"] = int(self.unjudged[self.failing].sum())
        if self.stages is not None:
            out["stages"] = self.stages.to_json()
        if self.by is not None:
            out["by"] = self.by
        if per_query:
            out["per_query"] = self._per_query_json()
        return out

    def _per_query_json(self) -> list[dict[str, Any]]:
        m = self.missed
        starts = np.searchsorted(m.qidx, np.arange(self.query_ids.size + 1))
        out = []
        for q in np.flatnonzero(self.failing).tolist():
            lo, hi = int(starts[q]), int(starts[q + 1])
            entry: dict[str, Any] = {
                "query_id": str(self.query_ids[q]),
                "reason": str(self.status[q]),
                "missed": [self._item_json(i) for i in range(lo, hi)],
            }
            if self.unjudged is not None:
                entry["unjudged_top_k"] = int(self.unjudged[q])
            out.append(entry)
        return out

    def _item_json(self, i: int) -> dict[str, Any]:
        m = self.missed
        reason = self.reasons[int(m.reason[i])]
        item: dict[str, Any] = {"span": None if m.item[i] < 0 else int(m.item[i]), "reason": reason}
        if reason == "split_across_chunks":
            item["rank"] = [int(m.rank[i]), int(m.rank2[i])]
            item["extra_chars"] = int(m.extra_chars[i])
        elif m.rank[i] > 0 or m.item[i] < 0:  # ids mode: the first relevant rank (None: none)
            item["rank"] = int(m.rank[i]) or None
        else:
            item["score"] = _number(float(m.score[i]))
        return item
