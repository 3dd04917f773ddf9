"""Per-query views of a run: the query table (metrics at k, tags, failing flags) and one query's detail.

The table is built from a Report's per-query arrays and the run's RunData with array
operations only (no loop over queries), so it answers every k/threshold move. The detail reads
one query's rows from the store (one parameterised query per table) and the kept pair scores
(rageval_core.store.scores), so nothing is rescored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.metrics import latency_cost as ops
from rageval_core.errors import UsageError
from rageval_core.evaluation.report import Report, Settings
from rageval_core.model import label_value
from rageval_core.matching.numbers import numbers_of, odd_numbers
from rageval_core.settings.presets import get_preset
from rageval_core.evaluation.labels import labelled_data, query_labels
from rageval_core.rundata import RunData, added_pairs, total_latency
from rageval_core.store import Store, reads
from rageval_core.store.scores import ensure_scored

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Ints = NDArray[np.int64]
Objects = NDArray[np.object_]

#: the sort that opens the table: failing queries first, then the weakest ones
WORST_FIRST = "worst first"
FILE_ORDER = "query order"
#: metrics that rank "worst" (lowest first), in order of preference, formatted with k
WORST_KEYS = ("PerQueryCoverage@{k}", "nDCG@{k}", "R@{k}", "Hit@{k}", "ContextCoverage@{k}")
#: column names of the table besides metrics and tags
QUERY_ID, QUERY, LATENCY, N_RETRIEVED = "query_id", "query", "total_ms", "n_retrieved"
FAILING, FAIL_COVERAGE, FAIL_HIT = "failing", "not_fully_covered", "no_hit"
#: a query with nothing to find: no relevant document judged and no gold span (unanswerable)
NO_GOLD = "no_gold"
#: tag columns are named "tag:<key>" so a tag can never shadow a metric or a fixed column
TAG_PREFIX = "tag:"


# --- the query table --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class QueryTable:
    """One row per query of the run (file order): what the Queries page lists and filters."""

    query_ids: Objects  # (n,)
    texts: Objects  # (n,) query text or None
    metrics: dict[str, Floats]  # name -> (n,), NaN where the query is not scored
    tags: dict[str, Objects]  # key -> (n,) value or None
    total_ms: Floats  # (n,) the total stage, recorded or derived (rundata.total_latency)
    total_derived: Bools  # (n,) total_ms is the sum of the query's stages (none recorded)
    n_retrieved: Ints  # (n,) after the retriever-score cut, if any
    fail_coverage: Bools  # (n,) FullCoverageRate@k == 0 (evidence runs)
    fail_hit: Bools  # (n,) Hit@k == 0 with something relevant judged (ids mode)
    no_gold: Bools  # (n,) nothing relevant judged and no gold span: never failing, never scored
    k: int
    _haystack: NDArray[Any] = field(
        repr=False
    )  # casefolded "id\0text" (StringDType) for the search

    @property
    def n_queries(self) -> int:
        return int(self.query_ids.size)

    @property
    def failing(self) -> Bools:
        return self.fail_coverage | self.fail_hit

    def columns(self) -> dict[str, NDArray[Any]]:
        """Every column in display order: id, failing, text, metrics, why failing, latency, tags."""
        out: dict[str, NDArray[Any]] = {
            QUERY_ID: self.query_ids,
            FAILING: self.failing,
            NO_GOLD: self.no_gold,
            QUERY: self.texts,
        }
        out.update(self.metrics)
        out[FAIL_COVERAGE] = self.fail_coverage
        out[FAIL_HIT] = self.fail_hit
        out[LATENCY] = self.total_ms
        out[N_RETRIEVED] = self.n_retrieved
        out.update({TAG_PREFIX + key: values for key, values in self.tags.items()})
        return out

    def records(self, rows: Sequence[int] | NDArray[np.int64]) -> list[dict[str, Any]]:
        """The given rows as JSON-ready dicts (NaN -> None), for a per-query download."""
        cols = self.columns()
        idx = np.asarray(rows, dtype=np.int64)
        picked = {name: values[idx].tolist() for name, values in cols.items()}
        out = [dict(zip(picked, row, strict=True)) for row in zip(*picked.values(), strict=True)]
        return ops.to_json_value(out)  # type: ignore[no-any-return]


def query_table(
    report: Report, data: RunData, texts: Sequence[str | None] | Objects | None = None
) -> QueryTable:
    """The per-query table of a report: its per-query metrics (at the report's k), tags, latency.

    texts: the query texts in qidx order (query_texts()); without them the text column is None.
    Under a preset, failing = its failing metric is 0 (presets.Preset.failing).
    Failing = not every gold span covered in the top k (FullCoverageRate@k == 0) or, in ids mode,
    nothing relevant in the top k (Hit@k == 0) for a query that has something relevant judged:
    a query whose qrels hold nothing relevant cannot be found, so it is not flagged.
    """
    n = data.n_queries
    if report.query_ids.size != n:
        raise UsageError(f"report has {report.query_ids.size} queries, the run data {n}")
    k = int(report.settings["k"])
    metrics = dict(report.per_query)
    preset = report.settings.get("preset")
    with np.errstate(invalid="ignore"):
        # under a preset, its own "nothing found" metric (presets.Preset.failing) says failing
        full = report.per_query.get(
            get_preset(preset).failing if preset else f"FullCoverageRate@{k}"
        )
        fail_coverage = np.zeros(n, bool) if full is None else full == 0.0
        hit = report.per_query.get(f"Hit@{k}")
        fail_hit = np.zeros(n, bool)
        level = int(report.settings.get("rel_level", 1))
        judged_rel = np.bincount(data.judged_q[data.judged_label >= level], minlength=n) > 0
        if hit is not None and report.relevance == "ids":
            fail_hit = (hit == 0.0) & judged_rel
    if texts is None:
        text_col = np.full(n, None, dtype=object)
    else:
        text_col = np.asarray(
            list(texts) if not isinstance(texts, np.ndarray) else texts, dtype=object
        )
        if text_col.shape != (n,):
            raise UsageError(f"expected {n} query texts, got {text_col.size}")
    total_ms, total_derived = total_latency(data)
    return QueryTable(
        query_ids=data.query_ids,
        texts=text_col,
        metrics=metrics,
        tags=data.tags,
        total_ms=total_ms,
        total_derived=total_derived,
        n_retrieved=retrieved_after_cut(data, report.settings.get("score_threshold")),
        fail_coverage=np.asarray(fail_coverage, dtype=bool),
        fail_hit=np.asarray(fail_hit, dtype=bool),
        # only in a run that has retrieval gold at all (an answers-only run has none to miss)
        no_gold=~judged_rel & (data.n_spans == 0) & (data.run.has_qrels or data.run.has_evidence),
        k=k,
        _haystack=_run_haystack(data, texts, text_col),
    )


def _run_haystack(data: RunData, texts: object, text_col: Objects) -> NDArray[Any]:
    """The search haystack, kept on the run's data for the same texts object (a slider move
    builds a new table for the same run and texts: the haystack does not change)."""
    kept = data._cache.get(("haystack",))
    if kept is not None and kept[0] is texts:
        return kept[1]  # type: ignore[no-any-return]
    haystack = _haystack(data.query_ids, text_col)
    data._cache[("haystack",)] = (texts, haystack)
    return haystack


def _haystack(ids: Objects, texts: Objects) -> NDArray[Any]:
    # built once per table; \0 between the two: a search term never matches across id and text.
    # StringDType (variable width): one long query does not widen every row as "<U" would.
    joined = [
        f"{i}\0{'' if t is None else t}".casefold()
        for i, t in zip(ids.tolist(), texts.tolist(), strict=True)
    ]
    return np.asarray(joined, dtype=np.dtypes.StringDType())


def retrieved_after_cut(data: RunData, score_threshold: float | None) -> Ints:
    """Chunks per query left after dropping those scored below the cut (unscored ones stay)."""
    if score_threshold is None:
        return data.n_ret
    exists = np.arange(data.depth)[None, :] < data.n_ret[:, None]
    with np.errstate(invalid="ignore"):
        return (exists & ~(data.chunk_score < score_threshold)).sum(axis=1).astype(np.int64)


def query_texts(store: Store, data: RunData) -> Objects:
    """The query texts of the run in qidx order (None where a query has none)."""
    texts = reads.query_texts(store, data.run.run_id)
    return np.asarray(texts, dtype=object).reshape(len(texts))


def filter_rows(
    table: QueryTable,
    *,
    failing_only: bool = False,
    no_gold_only: bool = False,
    tag: str | None = None,
    tag_values: Sequence[str] = (),
    text: str = "",
    text_hits: Sequence[int] | None = None,
) -> Bools:
    """Mask of the rows to show: failing only, no gold only, a tag's values (ops.NO_TAG = no
    value), a search.

    The search is a case-insensitive plain substring (no pattern syntax) over id and text;
    text_hits (search_all_texts' rows), when given, stands for it: every stored text searched.
    """
    keep = np.ones(table.n_queries, dtype=bool)
    if failing_only:
        keep &= table.failing
    if no_gold_only:
        keep &= table.no_gold
    if tag is not None and tag_values:
        col = table.tags.get(tag)
        if col is None:
            raise UsageError(f"no tag {tag!r} (tags: {', '.join(sorted(table.tags)) or 'none'})")
        labels = np.where(col == None, ops.NO_TAG, col).astype(str)  # noqa: E711
        keep &= np.isin(labels, np.asarray(list(tag_values), dtype=str))
    needle = text.strip().casefold()
    if text_hits is not None:
        found = np.zeros(table.n_queries, dtype=bool)
        found[np.asarray(text_hits, dtype=np.int64)] = True
        keep &= found
    elif needle and table.n_queries:
        keep &= np.strings.find(table._haystack, needle) >= 0
    return keep


def search_all_texts(store: Store, data: RunData, text: str) -> list[int]:
    """Rows of the queries whose id, text, answer, reference answer, a chunk's text or a gold
    span holds text (case-insensitive plain substring; SQL over the stored texts)."""
    needle = text.strip()
    if not needle:
        return list(range(data.n_queries))
    rows = set(reads.text_search(store, data.run.run_id, needle))
    folded = needle.casefold()
    rows |= {i for i, q in enumerate(data.query_ids.tolist()) if folded in str(q).casefold()}
    return sorted(rows)


def tag_values(table: QueryTable, tag: str) -> list[str]:
    """The distinct values of a tag, sorted, with ops.NO_TAG last when some query lacks it."""
    col = table.tags[tag]
    present = {str(v) for v in col.tolist() if v is not None}
    return sorted(present) + ([ops.NO_TAG] if any(v is None for v in col.tolist()) else [])


def sort_options(table: QueryTable) -> list[str]:
    """The sorts a page offers: worst first, file order, then each metric and latency both ways."""
    out = [WORST_FIRST, FILE_ORDER]
    for name in [*table.metrics, LATENCY, N_RETRIEVED]:
        out += [f"{name} ↑", f"{name} ↓"]
    return out


def sort_rows(table: QueryTable, rows: Ints | Bools, by: str = WORST_FIRST) -> Ints:
    """The given rows (indices or a mask) ordered by a sort_options() entry; NaN always last.

    Worst first: failing rows first, then by the first of WORST_KEYS present (lowest first),
    ties in file order; queries without gold are not in this order (nothing to fail on) unless
    every row asked for is one (the "no gold" filter): then file order.
    """
    idx = np.flatnonzero(rows) if rows.dtype == bool else np.asarray(rows, dtype=np.int64)
    if by == FILE_ORDER:
        return np.sort(idx)
    if by == WORST_FIRST:
        scored = idx[~table.no_gold[idx]]
        if scored.size == 0:
            return np.sort(idx)
        idx = scored
        keys: list[NDArray[Any]] = [idx]  # lexsort: the last key is the primary one
        for template in reversed(WORST_KEYS):
            name = template.format(k=table.k)
            if name in table.metrics:
                keys.append(_nan_last(table.metrics[name][idx], descending=False))
        keys.append(~table.failing[idx])
        return idx[np.lexsort(keys)]
    name, _, arrow = by.rpartition(" ")
    cols = {**table.metrics, LATENCY: table.total_ms, N_RETRIEVED: table.n_retrieved.astype(float)}
    if name not in cols or arrow not in ("↑", "↓"):
        raise UsageError(f"cannot sort by {by!r}")
    values = _nan_last(np.asarray(cols[name], dtype=np.float64)[idx], descending=arrow == "↓")
    return idx[np.lexsort((idx, values))]


def _nan_last(values: Floats, descending: bool) -> Floats:
    out = -values if descending else values.copy()
    out[np.isnan(out)] = np.inf
    return out


def neighbours(failing_mask: Bools, qidx: int) -> tuple[int | None, int | None]:
    """(previous, next) failing query index around qidx in file order; None at either end."""
    failing = np.flatnonzero(failing_mask)
    lo = int(np.searchsorted(failing, qidx, side="left"))
    hi = int(np.searchsorted(failing, qidx, side="right"))
    prev = int(failing[lo - 1]) if lo > 0 else None
    nxt = int(failing[hi]) if hi < failing.size else None
    return prev, nxt


# --- one query's detail -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpanDetail:
    """One gold evidence span and how the ranked list covers it at the threshold."""

    eidx: int  # 0-based index within the query (row of QueryDetail.scores)
    text: str
    first_rank: int | None  # first rank (after the cut) whose chunk covers it, anywhere in the list
    best_score: float | None  # best score within the top k (None: nothing retrieved)
    best_rank: int | None  # the rank holding best_score (the higher-ranked one on ties)
    k: int
    #: who added it in rageval (its annotator); None: a gold span of the run's own
    added_by: str | None = None

    @property
    def covered(self) -> bool:
        """Covered within the top k at the threshold."""
        return self.first_rank is not None and self.first_rank <= self.k


@dataclass(frozen=True, slots=True)
class ChunkDetail:
    """One retrieved chunk (after the score cut) with its best-matching gold span."""

    rank: int  # 1-based, after the cut
    original_rank: int  # 1-based rank in the run as retrieved
    doc_id: str
    text: str | None
    score: float | None  # the retriever's score
    label: float | None  # qrels label of its document (None: unjudged or no qrels)
    relevant: (
        bool | None
    )  # ids mode: label >= rel_level at the document's first rank; None without qrels
    #: the gold span it matches best, among those it covers when it covers any (-1: no spans
    #: or no text)
    match_eidx: int
    match_score: float | None
    match_start: int  # window of that span in the ORIGINAL chunk text, [start, end); -1: none
    match_end: int
    covers: bool  # its best score reaches the threshold (it covers at least one span)
    in_top_k: bool
    #: its best span holds a number the chunk does not (rageval_core.matching.numbers): a fuzzy match
    #: with another figure; with numbers_must_match on, the pair does not cover
    numbers_differ: bool = False
    #: (start, end) in text of the window's numbers that are not the span's: the figures to mark
    odd_numbers: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class QueryDetail:
    """Everything the drilldown shows for one query at one setting."""

    qidx: int
    query_id: str
    query: str | None
    answer: str | None
    reference_answer: str | None
    in_run: bool
    has_qrels: bool
    spans: tuple[SpanDetail, ...]
    chunks: tuple[ChunkDetail, ...]  # rank order after the cut
    n_dropped: int  # chunks dropped by the retriever-score cut
    scores: NDArray[np.float32]  # (spans, chunks) match scores; 0 for a chunk without text
    missed_relevant: tuple[str, ...]  # ids mode: relevant documents not in the top k
    threshold: float
    k: int
    relevance: Mapping[str, float] = field(default_factory=dict)  # the query's qrels
    #: the source of each label of relevance under the labels setting (imported, people ...)
    label_sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def n_covered(self) -> int:
        return sum(s.covered for s in self.spans)


def query_detail(store: Store, data: RunData, qidx: int, settings: Settings) -> QueryDetail:
    """One query's texts, gold spans, ranked chunks and span x chunk scores at the settings."""
    settings.check()
    if not 0 <= qidx < data.n_queries:
        raise UsageError(f"query index {qidx} is outside 0..{data.n_queries - 1}")
    own = data
    # the labels setting's qrels, and the gold spans added in rageval after the run's own
    data = labelled_data(store, data, settings.labels)
    rid = data.run.run_id
    n_spans = int(data.n_spans[qidx])
    if n_spans:
        ensure_scored(store, rid, settings.scorer_key)  # a no-op once kept
    rows = reads.query_rows(store, rid, qidx, settings.scorer_key, pairs=bool(n_spans))
    q, ch, pairs = rows.query, rows.chunks, list(rows.pairs)
    ev = list(rows.evidence)
    added = data.added.get(qidx, ())
    ev += [(len(ev) + j, span.text) for j, span in enumerate(added)]
    for q_i, e_i, got in added_pairs(store, data, settings.scorer_key):
        if q_i == qidx:
            pairs += zip(
                got.rank, [e_i] * got.rank.size, got.score, got.start, got.end, strict=True
            )

    depth = len(ch)
    # (spans, original ranks) scores and windows; a chunk without text scores 0 (no window)
    raw = np.zeros((len(ev), depth), dtype=np.float32)
    start = np.full((len(ev), depth), -1, dtype=np.int64)
    end = np.full((len(ev), depth), -1, dtype=np.int64)
    if pairs:
        p = np.asarray(pairs, dtype=np.float64)
        r, e = p[:, 0].astype(np.int64) - 1, p[:, 1].astype(np.int64)
        raw[e, r] = p[:, 2].astype(np.float32)
        start[e, r], end[e, r] = p[:, 3].astype(np.int64), p[:, 4].astype(np.int64)

    # the span's numbers the chunk lacks, per pair (the "numbers must match" guard)
    span_numbers = [numbers_of(text) for _, text in ev]
    chunk_numbers = [numbers_of(c[2]) for c in ch]
    lacking = np.asarray(
        [[bool(sn - cn) for cn in chunk_numbers] for sn in span_numbers], dtype=np.bool_
    ).reshape(len(ev), depth)
    guarded = np.where(lacking, np.float32(0.0), raw) if settings.numbers_must_match else raw

    retriever = np.asarray([np.nan if c[3] is None else c[3] for c in ch], dtype=np.float64)
    keep = np.ones(depth, dtype=bool)
    if settings.score_threshold is not None:
        with np.errstate(invalid="ignore"):
            keep = ~(retriever < settings.score_threshold)  # an unscored chunk is kept
    kept = np.flatnonzero(keep)  # original 0-based ranks, in order
    scores = guarded[:, kept]
    raw_kept = raw[:, kept]
    t32 = np.float32(settings.threshold)  # float32 like the kept scores (as the metrics compare)
    hits = scores >= t32
    k = settings.k

    spans = []
    for e_i, (eidx, text) in enumerate(ev):
        covering = np.flatnonzero(hits[e_i])
        top = scores[e_i, :k]
        best = int(np.argmax(top)) if top.size else -1
        spans.append(
            SpanDetail(
                eidx=int(eidx),
                text=text,
                first_rank=int(covering[0]) + 1 if covering.size else None,
                best_score=float(top[best]) if top.size else None,
                best_rank=best + 1 if top.size else None,
                k=k,
                added_by=added[e_i - (len(ev) - len(added))].annotator
                if e_i >= len(ev) - len(added)
                else None,
            )
        )

    resolved = query_labels(store, own, qidx, settings.labels)
    rel = {doc: label_value(label) for (_, doc), label in resolved.grades.items()}
    has_qrels = bool(data.has_qrels[qidx])
    seen: set[str] = set()
    chunks = []
    for new_rank, orig in enumerate(kept.tolist(), start=1):
        _, doc_id, text, score = ch[orig]
        label = rel.get(doc_id) if has_qrels else None
        relevant = None
        if has_qrels:
            # a repeated document is found once, at its first rank (as the metrics count it)
            relevant = doc_id not in seen and label is not None and label >= settings.rel_level
            seen.add(doc_id)
        # a covering chunk shows the match that counts; another shows its best raw match, so a
        # match the guard refused is still seen (marked weakly, as not covering)
        covers = bool(hits[:, new_rank - 1].any())
        col = (scores if covers else raw_kept)[:, new_rank - 1]
        m = int(np.argmax(col)) if col.size else -1
        has_match = m >= 0 and text is not None
        differ = has_match and bool(lacking[m, orig]) and col[m] >= t32
        window = (int(start[m, orig]), int(end[m, orig])) if has_match else (-1, -1)
        chunks.append(
            ChunkDetail(
                rank=new_rank,
                original_rank=orig + 1,
                doc_id=doc_id,
                text=text,
                score=None if score is None or math.isnan(score) else float(score),
                label=label,
                relevant=relevant,
                match_eidx=m if has_match else -1,
                match_score=float(col[m]) if m >= 0 else None,
                match_start=window[0],
                match_end=window[1],
                covers=covers,
                in_top_k=new_rank <= k,
                numbers_differ=differ,
                odd_numbers=(
                    odd_numbers(text or "", span_numbers[m], *window)
                    if differ and window[0] >= 0
                    else ()
                ),
            )
        )
    top_docs = {c.doc_id for c in chunks[:k]}
    missed = tuple(
        d for d, label in rel.items() if label >= settings.rel_level and d not in top_docs
    )
    return QueryDetail(
        qidx=qidx,
        query_id=q[0],
        query=q[1],
        answer=q[2],
        reference_answer=q[3],
        in_run=bool(q[4]),
        has_qrels=has_qrels,
        spans=tuple(spans),
        chunks=tuple(chunks),
        n_dropped=int(depth - kept.size),
        scores=scores,
        missed_relevant=missed,
        threshold=float(settings.threshold),
        k=k,
        relevance=rel,
        label_sources={doc: source for (_, doc), source in resolved.source.items()},
    )


def qidx_of(data: RunData, query_id: str) -> int | None:
    """The row of a query id in the run (None when the run has no such query)."""
    hits = np.flatnonzero(data.query_ids == query_id)
    return int(hits[0]) if hits.size else None
