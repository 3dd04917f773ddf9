"""split_across_chunks: a missed gold span cut once at a word boundary into two parts (each at
least split_min_chars long) whose parts two different top-k chunks cover.

The one reason that reads texts: only the spans the arrays leave undecided (not covered, not
refused by the numbers guard, not covered below k) are checked, each part scored against the
query's top-k chunks with the run's own scorer, normalisation and numbers guard, so "covered"
means what it means for a whole span. The parts' scores are not kept (they are few).
"""

from __future__ import annotations

import re

import numpy as np

from rageval_core.diagnosis.reasons import Bools, EvidenceArrays, Ints, SplitCheck
from rageval_core.evaluate import Settings
from rageval_core.matching import score_pairs
from rageval_core.numbers import missing_numbers
from rageval_core.rundata import RunData
from rageval_core.store import Store
from rageval_core.store.diagnosis import split_texts

_BLANKS = re.compile(r"\s+")


def cuts(text: str, min_chars: int) -> list[tuple[str, str]]:
    """Every (first part, second part) of text cut at one run of blanks between words, each
    part (without its blanks at the cut) at least min_chars characters long."""
    out = []
    for blank in _BLANKS.finditer(text):
        left, right = text[: blank.start()].strip(), text[blank.end() :].strip()
        if left and right and len(left) >= min_chars and len(right) >= min_chars:
            out.append((left, right))
    return out


def split_check(store: Store, data: RunData, arrays: EvidenceArrays, s: Settings) -> SplitCheck:
    """The split check of evidence_reasons for one run at settings s."""

    def check(q: Ints, e: Ints) -> tuple[Bools, Ints, Ints, Ints]:
        return _check(store, data, arrays, s, q, e)

    return check


def _check(
    store: Store, data: RunData, arrays: EvidenceArrays, s: Settings, q: Ints, e: Ints
) -> tuple[Bools, Ints, Ints, Ints]:
    m = q.size
    split = np.zeros(m, dtype=bool)
    first = np.zeros(m, dtype=np.int64)
    second = np.zeros(m, dtype=np.int64)
    extra = np.zeros(m, dtype=np.int64)
    queries = sorted(set(q.tolist()))
    span_rows, chunk_rows = split_texts(store, data.run.run_id, queries)
    span_text = {(int(a), int(b)): t for a, b, t in span_rows}
    chunk_text = {(int(a), int(r)): t for a, r, t in chunk_rows}
    k = min(s.k, arrays.raw.shape[1])
    parts: list[str] = []
    chunks: list[str] = []
    pair_part: list[int] = []
    pair_chunk: list[int] = []
    # per candidate: its cuts' part indexes and its top-k chunks' (rank, chunk index)
    plans: list[tuple[list[tuple[int, int, int]], list[tuple[int, int]]]] = []
    chunk_index: dict[tuple[int, int], int] = {}
    for qi, ei in zip(q.tolist(), e.tolist(), strict=True):
        text = span_text.get((qi, ei)) or ""
        top = []
        for r in range(min(k, int(arrays.n_ret[qi]))):
            original = r if arrays.order is None else int(arrays.order[qi, r])
            chunk = chunk_text.get((qi, original + 1))
            if chunk is None:
                continue
            key = (qi, original + 1)
            if key not in chunk_index:
                chunk_index[key] = len(chunks)
                chunks.append(chunk)
            top.append((r + 1, chunk_index[key]))
        plan = []
        if len(top) >= 2:
            for left, right in cuts(text, s.split_min_chars):
                li, ri = len(parts), len(parts) + 1
                parts += [left, right]
                plan.append((li, ri, min(len(left), len(right))))
                for _, ci in top:
                    pair_part += [li, ri]
                    pair_chunk += [ci, ci]
        plans.append((plan, top))
    if not pair_part:
        return split, first, second, extra
    # in this process: the parts are few, and a pool would cost more to start than they take
    scored = score_pairs(
        parts, chunks, pair_part, pair_chunk, scorer=s.scorer_key, norm=s.norm, workers=1
    )
    covered: set[tuple[int, int]] = set()
    t = np.float32(s.threshold)
    for i in np.flatnonzero(scored.score >= t).tolist():
        part, chunk = parts[pair_part[i]], chunks[pair_chunk[i]]
        if not s.numbers_must_match or not missing_numbers(part, chunk):
            covered.add((pair_part[i], pair_chunk[i]))
    for row, (plan, top) in enumerate(plans):
        best: tuple[int, int, int] | None = None  # (extra chars, first rank, second rank)
        for li, ri, chars in plan:
            lefts = [rank for rank, ci in top if (li, ci) in covered]
            rights = [rank for rank, ci in top if (ri, ci) in covered]
            pair = next(((a, b) for a in lefts for b in rights if a != b), None)
            if pair is not None and (best is None or chars < best[0]):
                best = (chars, *pair)
        if best is not None:
            split[row], extra[row], first[row], second[row] = True, best[0], best[1], best[2]
    return split, first, second, extra
