"""Which relevance labels count: the `labels` setting resolved into the qrels the ranking metrics
read (issue 31; docs/metrics.md, "Which labels count").

`labels` is an ordered, duplicate-free list of sources: `imported` (the run's own qrels),
`adjudicated` (the final grades of an adjudication), `people` (the grades people gave in
rageval), `llm` (every LLM label set) or `llm:MODEL` (one). For each (query, document) the first
source in the list that has a label wins. Within a source of several voices (`people`'s
annotators, `llm`'s models, several annotators of one `llm:MODEL`) the label is the grade most of
them gave, ties to the lower grade; several adjudications of one document: the latest counts.

resolve() is pure (rows in, labels out) and tested by hand-made cases; labelled_data() gives
a RunData whose qrels arrays are the resolved ones, so every ranking metric, Judged@k, Bpref and
`--judged-only` follow the setting. It is cached on the run's own RunData by the setting and
the store's grades_signature, so a label given changes the next evaluation and nothing else.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rageval_core.rundata import RunData
from rageval_core.settings.label_sources import IMPORTED, LLM, parse_labels
from rageval_core.store import Store
from rageval_core.store.ground_truth import (
    ADJUDICATED,
    LLM_PREFIX,
    PEOPLE,
    AddedSpan,
    GradeRow,
    added_spans,
    grade_rows,
    grades_signature,
    run_label_rows,
    run_qrels,
)
from rageval_core.store.store import RunRef

Key = tuple[str, str]  # (query_id, doc_id)


@dataclass(frozen=True, slots=True)
class Resolved:
    """The labels that count: (query_id, doc_id) -> grade, and which source gave each."""

    grades: dict[Key, float]
    source: dict[Key, str]

    def counts(self, sources: Sequence[str]) -> dict[str, int]:
        """source -> how many (query, document) labels it gave, every source of the list."""
        found = Counter(self.source.values())
        return {s: int(found.get(s, 0)) for s in sources}


def _majority(grades: Iterable[float]) -> float:
    """The grade most voices gave; ties to the lower grade."""
    tally = Counter(grades)
    best = max(tally.values())
    return min(g for g, n in tally.items() if n == best)


def _by_source(source: str, rows: Sequence[GradeRow]) -> dict[Key, float]:
    """(query_id, doc_id) -> the one grade source gives, from the stored rows."""
    if source == ADJUDICATED:
        latest: dict[Key, GradeRow] = {}
        for r in rows:
            if r.source != ADJUDICATED:
                continue
            key = (r.query_id, r.doc_id)
            kept = latest.get(key)
            if kept is None or (r.labelled_at, r.annotator) >= (kept.labelled_at, kept.annotator):
                latest[key] = r
        return {key: r.grade for key, r in latest.items()}
    if source == PEOPLE:
        mine = [r for r in rows if r.source == PEOPLE]
    elif source == LLM:
        mine = [r for r in rows if r.source.startswith(LLM_PREFIX)]
    else:  # llm:MODEL
        mine = [r for r in rows if r.source == source]
    votes: dict[Key, list[float]] = {}
    for r in mine:
        votes.setdefault((r.query_id, r.doc_id), []).append(r.grade)
    return {key: _majority(v) for key, v in votes.items()}


def resolve(
    sources: Sequence[str], imported: Mapping[Key, float], rows: Sequence[GradeRow]
) -> Resolved:
    """Per (query, document) the label of the first source in sources that has one."""
    grades: dict[Key, float] = {}
    source: dict[Key, str] = {}
    for s in sources:
        given = imported if s == IMPORTED else _by_source(s, rows)
        for key, grade in given.items():
            if key not in grades:
                grades[key] = grade
                source[key] = s
    return Resolved(grades, source)


def store_sources(sources: Sequence[str]) -> list[str] | None:
    """The stored sources' names the list reads (None: every LLM set too, read all)."""
    return None if LLM in sources else [s for s in sources if s != IMPORTED]


# --- a RunData that reads the resolved labels -----------------------------------------------------

#: cache keys of a RunData that no label or added span changes (answers, judge, ops; an
#: added span's scores, by its text): a view shares them with its run; every other key (the
#: qrels' arrays) is its own
SHARED_KEYS = frozenset(
    {"cut", "groups", "answers", "judge", "costs", "ops_rows", "haystack", "added_pairs"}
)
#: ... and the evidence side, which no label changes: shared while no span is added
EVIDENCE_KEYS = frozenset(
    {
        "coverage",
        "evidence",
        "evidence_labels",
        "evidence_ids",
        "numbers",
        "diagnosis",
        "split_parts",
    }
)


class _ViewCache(dict[Any, Any]):
    """A labelled view's cache: the keys of SHARED_KEYS live in its run's cache (computed once
    for both), the others in its own."""

    def __init__(self, base: dict[Any, Any], spans_added: bool) -> None:
        super().__init__()
        self.base = base
        self.shared = SHARED_KEYS if spans_added else SHARED_KEYS | EVIDENCE_KEYS

    def _home(self, key: Any) -> dict[Any, Any] | None:
        shared = isinstance(key, tuple) and bool(key) and key[0] in self.shared
        return self.base if shared else None

    def __contains__(self, key: object) -> bool:
        home = self._home(key)
        return key in home if home is not None else super().__contains__(key)

    def __getitem__(self, key: Any) -> Any:
        home = self._home(key)
        return home[key] if home is not None else super().__getitem__(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        home = self._home(key)
        if home is not None:
            home[key] = value
        else:
            super().__setitem__(key, value)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


def labelled_data(store: Store, data: RunData, labels: str) -> RunData:
    """data as the ground truth made in rageval has it: its qrels (has_qrels, labels, judged,
    judged rows) the resolved labels of the `labels` setting, and its gold spans the run's own
    followed by those added in rageval (RunData.added); data itself for `imported` alone and no
    added span. Cached on data by the setting and the store's grades_signature: a label or span
    given, changed or taken back makes a new view, which shares every array no label or span
    changes with data (and a span's scores with the views before it)."""
    sources = parse_labels(labels)
    grades, grade_hash, spans, span_hash = grades_signature(store)
    if sources == (IMPORTED,) and spans == 0:
        return data
    signature = ((grades, grade_hash) if sources != (IMPORTED,) else None, (spans, span_hash))
    # the latest view per setting only: a label given replaces it (a long labelling session
    # keeps one view, not one per label)
    kept = data._cache.get(("labelled", sources))
    if kept is not None and kept[0] == signature:
        return kept[1]  # type: ignore[no-any-return]
    view = _view(store, data, sources)
    data._cache[("labelled", sources)] = (signature, view)
    return view


def label_counts(view: RunData) -> dict[str, int]:
    """How many (query, document) labels each source gave a view of labelled_data (of a run's
    own RunData: every qrels line is imported)."""
    counts = view._cache.get(("label_counts",))
    return dict(counts) if counts is not None else {IMPORTED: int(view.judged_q.size)}


def _view(store: Store, data: RunData, sources: tuple[str, ...]) -> RunData:
    ids = [str(q) for q in data.query_ids]
    position = {q: i for i, q in enumerate(ids)}
    added: dict[int, tuple[AddedSpan, ...]] = {}
    n_added = grades_signature(store)[2]
    # few rows store-wide: all read and picked here (a list of 10,000 ids costs DuckDB more)
    for span in added_spans(store, None if n_added <= 4 * len(ids) else ids):
        q = position.get(span.query_id)
        if q is not None:
            added[q] = (*added.get(q, ()), span)
    changes: dict[str, Any] = {}
    if sources != (IMPORTED,):
        changes, counts = _labelled(store, data, sources)
    if added:
        n_spans = data.n_spans.copy()
        for q, spans in added.items():
            n_spans[q] += len(spans)
        run = changes.get("run", data.run)
        changes.update(
            n_spans=n_spans, added=added, run=dataclasses.replace(run, has_evidence=True)
        )
    view = dataclasses.replace(
        data, **changes, _cache=_ViewCache(data._cache, spans_added=bool(added))
    )
    if sources != (IMPORTED,):
        view._cache[("label_counts",)] = counts
    return view


def _labelled(
    store: Store, data: RunData, sources: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, int]]:
    """The qrels arrays of data under sources, and how many labels each source gave."""
    keep = IMPORTED in sources
    ids = [str(q) for q in data.query_ids]
    position = {q: i for i, q in enumerate(ids)}
    n_grades = grades_signature(store)[0]
    # few rows store-wide: all read and picked here (a list of 10,000 ids costs DuckDB more)
    rows = grade_rows(store, None if n_grades <= 4 * len(ids) else ids, store_sources(sources))
    rows = [
        r
        for r in rows
        if r.query_id in position and (r.source.startswith(LLM_PREFIX) or r.source in sources)
    ]
    touched = sorted({position[r.query_id] for r in rows if r.query_id in position})
    qrels, chunks = run_label_rows(store, data.run.run_id, touched)
    imported = {(ids[q], d): float(rel) for q, d, rel in qrels} if keep else {}
    resolved = resolve(sources, imported, rows)
    new_grades = np.asarray(list(resolved.grades.values()) or [0.0])
    integral = bool(np.array_equal(new_grades, np.floor(new_grades)))
    dtype: Any = data.labels.dtype if integral else np.float64

    n = data.n_queries
    is_touched = np.zeros(n, dtype=bool)
    is_touched[touched] = True
    labels = data.labels.astype(dtype) if keep else np.zeros(data.labels.shape, dtype)
    judged = (
        data.judged.copy()
        if keep and data.judged is not None
        else np.zeros(data.labels.shape, np.int8)
    )
    has_qrels = data.has_qrels.copy() if keep else np.zeros(n, dtype=bool)
    untouched_rows = (~is_touched[data.judged_q]) if keep else np.zeros(data.judged_q.size, bool)
    jq = [data.judged_q[untouched_rows]]
    jl = [data.judged_label[untouched_rows].astype(dtype)]
    labels[is_touched] = 0
    judged[is_touched] = 0
    has_qrels[is_touched] = False
    by_query: dict[int, list[tuple[str, float]]] = {}
    for (qid, doc), grade in resolved.grades.items():
        q = position.get(qid)
        if q is not None and is_touched[q]:
            by_query.setdefault(q, []).append((doc, grade))
    for q, docs in by_query.items():
        has_qrels[q] = True
        jq.append(np.full(len(docs), q, dtype=np.int64))
        jl.append(np.asarray([g for _, g in docs], dtype=dtype))
    # a document's label at its first rank only, as run_tables joins the qrels
    seen: set[tuple[int, str]] = set()
    for q, rank, doc in chunks:
        if (q, doc) in seen:
            continue
        seen.add((q, doc))
        found = resolved.grades.get((ids[q], doc))
        if found is not None:
            labels[q, rank - 1] = max(found, 0)
            judged[q, rank - 1] = 1 if found >= 0 else -1
    counts = _counts(sources, resolved, data, untouched_rows if keep else None)
    changes = {
        "run": dataclasses.replace(data.run, has_qrels=bool(has_qrels.any())),
        "has_qrels": has_qrels,
        "labels": labels,
        "judged": judged,
        "judged_q": np.concatenate(jq).astype(np.int64),
        "judged_label": np.concatenate(jl).astype(dtype),
    }
    return changes, counts


def _counts(
    sources: Sequence[str], resolved: Resolved, data: RunData, untouched: Any | None
) -> dict[str, int]:
    counts = resolved.counts(sources)
    if untouched is not None:  # the imported labels of the queries no other source labels
        counts[IMPORTED] += int(np.count_nonzero(untouched))
    return counts


def resolved_qrels(
    store: Store, ref: RunRef, labels: str
) -> tuple[list[tuple[str, str, float]], dict[str, int]]:
    """The labels that count for a stored run's queries under the `labels` setting, as qrels
    rows (query_id, doc_id, grade): by query in the run's order, the imported documents in
    their file order first, then the others by id; and how many each source gave."""
    sources = parse_labels(labels)
    run = store.run(ref)
    ids, qrels = run_qrels(store, run.run_id)
    imported = {(q, d): rel for q, d, rel in qrels} if IMPORTED in sources else {}
    rows = grade_rows(store, ids, store_sources(sources))
    rows = [r for r in rows if r.source.startswith(LLM_PREFIX) or r.source in sources]
    resolved = resolve(sources, imported, rows)
    position = {q: i for i, q in enumerate(ids)}
    first = {key: i for i, key in enumerate(imported)}
    order = sorted(
        resolved.grades,
        key=lambda key: (position[key[0]], first.get(key, len(first)), key[1]),
    )
    return [(q, d, resolved.grades[(q, d)]) for q, d in order], resolved.counts(sources)


def query_labels(store: Store, data: RunData, qidx: int, labels: str) -> Resolved:
    """The labels that count for one query of data (a run's own RunData) under the setting,
    document by document, and which source gave each: what the drilldown shows."""
    sources = parse_labels(labels)
    qid = str(data.query_ids[qidx])
    qrels, _ = run_label_rows(store, data.run.run_id, [qidx])
    imported = {(qid, d): rel for _, d, rel in qrels} if IMPORTED in sources else {}
    if sources == (IMPORTED,):
        return resolve(sources, imported, [])
    rows = grade_rows(store, [qid], store_sources(sources))
    rows = [r for r in rows if r.source.startswith(LLM_PREFIX) or r.source in sources]
    return resolve(sources, imported, rows)
