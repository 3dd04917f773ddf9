"""Rank fusion of several runs into one, as ranx's ``fuse`` computes it (docs/outputs.md), but
for RRF over tied retriever scores: a tie group is ranked in the list's order (the TREC reader's
is trec_eval's, doc id descending), where ranx leaves its unstable sort's order.

Methods (per query, over the runs that retrieved something for it):

- ``rrf``: sum over runs of 1 / (k + rank), rank = the document's 1-based position in that run's
  list (Cormack et al. 2009; k = 60 by default).
- ``combsum``: sum over runs of the min-max normalised score.
- ``combmnz``: the same sum times the number of runs that retrieved the document.

Min-max normalisation is ranx's: (score - min) / max(max - min, 1e-9) over one query of one run.
ranx normalises before RRF too; that only keeps the order, so RRF reads ranks alone and needs no
scores. A document absent from a run adds nothing for it. The fused list is ordered by fused
score, descending, ties by doc id descending (trec_eval's order), and cut to depth when given. Everything else a fused query
holds (its text, qrels, gold evidence, tags, chunk texts) comes from the first run that has it; a
fused run has no answers, latencies or token counts (no system produced it as such).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval_core.errors import UsageError
from rageval_core.model import Chunk, Query, RunInfo
from rageval_core.settings.fusion_defaults import DEFAULT_RRF_K as DEFAULT_RRF_K
from rageval_core.settings.fusion_defaults import METHODS as METHODS

#: ranx's floor for max - min: a query whose scores are all equal normalises to 0s
MIN_MAX_FLOOR = 1e-9

Ranking = Sequence[tuple[str, float | None]]


def min_max(scores: Sequence[float]) -> list[float]:
    """(s - min) / max(max - min, 1e-9) for each score (ranx's min-max norm)."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    span = max(hi - lo, MIN_MAX_FLOOR)
    return [(s - lo) / span for s in scores]


def fuse_rankings(
    rankings: Sequence[Ranking], method: str = "rrf", k: float = DEFAULT_RRF_K
) -> list[tuple[str, float]]:
    """One query's fused ranking [(doc_id, fused score)], best first.

    rankings: one list per run, in rank order, of (doc_id, retriever score); a document repeated
    within a list counts at its first rank only. combsum and combmnz need every score.
    """
    check_method(method, k)
    fused: dict[str, float] = {}
    hits: dict[str, int] = {}
    for ranking in rankings:
        seen: set[str] = set()
        docs: list[str] = []
        scores: list[float] = []
        for doc_id, score in ranking:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            docs.append(doc_id)
            if method != "rrf":
                if score is None or not math.isfinite(score):
                    raise UsageError(
                        f"{method} needs a finite retriever score on every chunk; "
                        f"document {doc_id!r} has {score!r} (rrf reads ranks only)"
                    )
                scores.append(float(score))
        if method == "rrf":
            values = [1.0 / (k + rank) for rank in range(1, len(docs) + 1)]
        else:
            values = min_max(scores)
        for doc_id, value in zip(docs, values, strict=True):
            # added run after run, as ranx sums them
            fused[doc_id] = fused.get(doc_id, 0.0) + value
            hits[doc_id] = hits.get(doc_id, 0) + 1
    if method == "combmnz":
        fused = {doc_id: total * hits[doc_id] for doc_id, total in fused.items()}
    # ties by doc id descending, as trec_eval orders them: the fused list evaluates the same
    # read from native JSONL (list order) or from TREC lines (re-sorted by trec_eval's rule)
    ranked = sorted(fused.items(), key=lambda item: item[0], reverse=True)
    return sorted(ranked, key=lambda item: -item[1])


def check_method(method: str, k: float) -> None:
    if method not in METHODS:
        raise UsageError(f"fusion method must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "rrf" and not (math.isfinite(k) and k >= 0):
        raise UsageError(f"rrf's k must be a finite number >= 0, got {k!r}")


@dataclass(frozen=True, slots=True)
class FusedRun:
    """The fused queries (in first-seen query order) and the run facts to write with them."""

    info: RunInfo
    queries: list[Query]


def fuse_queries(
    runs: Sequence[tuple[str, Sequence[Query]]],
    method: str = "rrf",
    k: float = DEFAULT_RRF_K,
    depth: int | None = None,
    name: str | None = None,
) -> FusedRun:
    """Fuse runs given as (name, queries); see the module docstring for what each query keeps."""
    check_method(method, k)
    if len(runs) < 2:
        raise UsageError(f"fusion needs at least two runs, got {len(runs)}")
    if depth is not None and depth < 1:
        raise UsageError(f"depth must be >= 1, got {depth}")
    by_id: dict[str, list[Query]] = {}
    for _, queries in runs:
        for q in queries:
            by_id.setdefault(q.query_id, []).append(q)
    out: list[Query] = []
    for qid, found in by_id.items():
        lists = [q.retrieved for q in found if q.retrieved is not None]
        chunk_of: dict[str, Chunk] = {}
        for retrieved in lists:
            for c in retrieved:
                if c.doc_id not in chunk_of or (chunk_of[c.doc_id].text is None and c.text):
                    chunk_of[c.doc_id] = c
        ranked = fuse_rankings([[(c.doc_id, c.score) for c in r] for r in lists], method, k)
        if depth is not None:
            ranked = ranked[:depth]
        retrieved = tuple(
            Chunk(
                doc_id, text=chunk_of[doc_id].text, score=score, metadata=chunk_of[doc_id].metadata
            )
            for doc_id, score in ranked
        )
        out.append(
            Query(
                query_id=qid,
                retrieved=retrieved if lists else None,
                query=_first(found, "query"),
                # {} is "judged, nothing relevant" (still scored), None "no qrels"
                relevance=next((q.relevance for q in found if q.relevance is not None), None),
                evidence=_first(found, "evidence") or (),
                reference_answer=_first(found, "reference_answer"),
                tags=_first(found, "tags") or {},
            )
        )
    names = [n for n, _ in runs]
    label = f"{method}({', '.join(names)})" + (f", k={k:g}" if method == "rrf" else "")
    settings: dict[str, Any] = {"fusion": method, "fused_runs": names}
    if method == "rrf":
        settings["rrf_k"] = k
    if depth is not None:
        settings["top_k"] = depth
    info = RunInfo(name=name or f"{method}-{'-'.join(names)}", description=label, settings=settings)
    return FusedRun(info, out)


def _first(found: Sequence[Query], field: str) -> Any:
    """The field of the first query that has it (neither None nor empty)."""
    for q in found:
        value = getattr(q, field)
        if value is not None and value != () and value != {}:
            return value
    return None


@contextlib.contextmanager
def stored_queries(
    sources: Sequence[str], store: Any = None
) -> Iterator[list[tuple[str, list[Query]]]]:
    """Each source (stored run name or id, or run file) as (its name, its queries)."""
    from rageval_core.compare.comparison import open_runs

    with open_runs(list(sources), store) as opened:
        yield [(data.run.name, list(st.iter_queries(data.run.run_id))) for st, data in opened]


def write_trec_run(fused: FusedRun, path: Path) -> int:
    """The fused rankings as TREC run lines (qid Q0 doc rank score tag); returns queries written.

    Only the rankings: qrels and texts stay with the input runs (import the file with its qrels).
    """
    tag = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in fused.info.name or "fused")
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for q in fused.queries:
            for rank, c in enumerate(q.retrieved or (), start=1):
                if any(ch.isspace() for ch in q.query_id + c.doc_id):
                    raise UsageError(
                        f"query {q.query_id!r}, document {c.doc_id!r}: TREC ids cannot hold "
                        "whitespace; write native JSONL (.jsonl) instead"
                    )
                fh.write(f"{q.query_id} Q0 {c.doc_id} {rank} {c.score!r} {tag}\n")
            n += 1
    return n


def relevance_of(fused: FusedRun) -> Mapping[str, Mapping[str, float]]:
    """{query id: {doc id: label}} of the fused queries that have qrels (for a TREC qrels file)."""
    return {q.query_id: q.relevance for q in fused.queries if q.relevance is not None}
