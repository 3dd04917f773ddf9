"""Compare's transition table: each shared query's status in the baseline against its status in
the candidate (passing, no_gold, or its primary reason), with the queries of each cell."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rageval_core.diagnosis.model import NO_GOLD, PASSING, Diagnosis


@dataclass(frozen=True, slots=True)
class Transition:
    """One cell: queries whose status went from `before` to `after`."""

    before: str
    after: str
    query_ids: tuple[str, ...]

    @property
    def kind(self) -> str:
        """fixed (a reason -> passing), broken (passing -> a reason), changed (one reason to
        another), same."""
        if self.before == self.after:
            return "same"
        if self.after == PASSING:
            return "fixed"
        if self.before == PASSING:
            return "broken"
        return "changed"

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.before,
            "to": self.after,
            "kind": self.kind,
            "n": len(self.query_ids),
            "query_ids": list(self.query_ids),
        }


@dataclass(frozen=True, slots=True)
class Transitions:
    baseline: str
    candidate: str
    n_shared: int
    cells: tuple[Transition, ...]  # the non-empty ones, by (before, after) in STATUS order

    def count(self, before: str, after: str) -> int:
        return next(
            (len(c.query_ids) for c in self.cells if (c.before, c.after) == (before, after)), 0
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "shared": self.n_shared,
            "cells": [c.to_json() for c in self.cells],
        }


def transitions(baseline: Diagnosis, candidate: Diagnosis) -> Transitions:
    """The transition table over the queries both diagnoses hold (by query id, baseline order).

    Both should be diagnosed at the same settings (Compare's); reasons of different modes
    (evidence, ids) are still tabulated as they are."""
    where = {str(q): i for i, q in enumerate(candidate.query_ids)}
    order = [
        PASSING,
        *baseline.reasons,
        *(r for r in candidate.reasons if r not in baseline.reasons),
        NO_GOLD,
    ]
    cells: dict[tuple[str, str], list[str]] = {}
    shared = 0
    for i, qid in enumerate(baseline.query_ids):
        j = where.get(str(qid))
        if j is None:
            continue
        shared += 1
        key = (str(baseline.status[i]), str(candidate.status[j]))
        cells.setdefault(key, []).append(str(qid))
    rank = {name: n for n, name in enumerate(order)}
    found = sorted(cells, key=lambda c: (rank.get(c[0], len(order)), rank.get(c[1], len(order))))
    return Transitions(
        baseline.run,
        candidate.run,
        shared,
        tuple(Transition(b, a, tuple(cells[(b, a)])) for b, a in found),
    )
