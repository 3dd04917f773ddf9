"""One run's rows as numpy arrays (queries x ranks), loaded from the store once.

Everything that moves in the UI (k, threshold, score cut-off, relevance level) is then an array
operation on these: no SQL and no text scoring per change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from rageval_core.metrics import latency_cost as ops
from rageval_core.errors import UsageError
from rageval_core.matching.keys import ScorerKey
from rageval_core.store import RunRecord, Store
from rageval_core.store import reads
from rageval_core.store.reads import run_tables
from rageval_core.store.ground_truth import AddedSpan
from rageval_core.store.scores import SpanPairs, ensure_scored, pair_score_table, score_spans
from rageval_core.store.store import RunRef

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class RunData:
    """The arrays of one stored run; row q is the query at qidx q (file order)."""

    run: RunRecord
    query_ids: NDArray[np.object_]  # (n,)
    in_run: NDArray[np.bool_]  # (n,) False: judged only, absent from the run
    has_qrels: NDArray[np.bool_]  # (n,)
    n_ret: Ints  # (n,) chunks retrieved
    #: (n, depth) qrels label at each rank, >= 0 (0: unjudged); int32, or float64 when a label
    #: of the run is a real grade (judged_label likewise)
    labels: NDArray[Any]
    chunk_score: Floats  # (n, depth) retriever score, NaN when absent or beyond the list
    judged_q: Ints  # one row per qrels line: query index
    judged_label: NDArray[Any]  # ... and its label (the labels' type)
    n_spans: Ints  # (n,) gold evidence spans
    tags: dict[str, NDArray[np.object_]]  # key -> (n,) value or None
    latency_q: Ints  # one row per (query, stage), a derived total included (ops.derive_total)
    latency_stage: NDArray[np.str_]  # fixed-width strings: ops groups them without a Python loop
    latency_ms: Floats
    tokens_q: Ints  # one row per (query, kind)
    tokens_kind: NDArray[np.str_]
    tokens_n: Ints
    #: (n, depth) what the qrels say of the chunk at each rank (metrics.arrays: JUDGED, POOLED
    #: or NOT_IN_QRELS); None: not known (Bpref, Judged@k and judged_only then refuse)
    judged: NDArray[np.int8] | None = None
    #: (rows of latency_q) True on the total rows ops.derive_total added (no total recorded)
    latency_derived: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: the stages in pipeline order (ops.pipeline_order), a derived total last
    latency_stages: tuple[str, ...] = ()
    #: gold spans added in rageval (store-wide, ground_truth.added_spans) per qidx, in eidx
    #: order after the run's own: set on a view (evaluation/labels.py), whose n_spans counts them
    added: Mapping[int, tuple[AddedSpan, ...]] = field(default_factory=dict)
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def n_queries(self) -> int:
        return int(self.query_ids.size)

    @property
    def depth(self) -> int:
        return int(self.labels.shape[1])


def memo(data: RunData, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """make(), computed once per run and key and kept on the RunData (its arrays never change)."""
    if key not in data._cache:
        data._cache[key] = make()
    return data._cache[key]


def total_latency(data: RunData) -> tuple[Floats, NDArray[np.bool_]]:
    """Per query: its total stage, recorded or derived (ops.derive_total), NaN without latency;
    and whether it is derived (the sum of its top-level stages: no total recorded)."""
    out = np.full(data.n_queries, np.nan)
    is_total = data.latency_stage == ops.TOTAL
    out[data.latency_q[is_total]] = data.latency_ms[is_total]
    derived = np.zeros(data.n_queries, dtype=bool)
    derived[data.latency_q[data.latency_derived]] = True
    return out, derived


def load_stored(store: Store, name: str) -> RunData:
    """load_run_data for a run given by name where a file was also possible: a name that looks
    like a path ("runs/x.jsonl") and matches no run says both that no such file exists and why
    no stored run matched."""
    try:
        return load_run_data(store, name)
    except UsageError as e:
        path = Path(name)
        if path.suffix or len(path.parts) > 1:
            raise UsageError(f"{name}: no such file, and {e}") from e
        raise


@dataclass(eq=False)
class LoadedRun:
    """A run ready to evaluate or compare: its arrays and the store they came from (evidence
    scores, texts and answers are read from it). A run read from a file or from Python objects
    lives in its own in-memory store, closed with close() or at the end of a `with` block."""

    store: Store
    data: RunData
    owns_store: bool = True

    @property
    def name(self) -> str:
        return self.data.run.name

    @property
    def n_queries(self) -> int:
        return self.data.n_queries

    def close(self) -> None:
        if self.owns_store:
            self.store.close()

    def __enter__(self) -> LoadedRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LoadedRun({self.name!r}, {self.n_queries} queries)"


def load_run_data(store: Store, ref: RunRef) -> RunData:
    """Read one run's numeric rows (not its texts) into dense arrays.

    Columns come as Arrow (no Python object per row); strings that repeat (tag keys and values,
    stage and token names) are dictionary-encoded, so each distinct string becomes one Python
    object however many rows hold it.
    """
    run = store.run(ref)
    n = run.n_queries
    t = run_tables(store, run.run_id)
    depth = run.max_depth
    cq = _ints(t.chunks, "qidx")
    cr = _ints(t.chunks, "rank") - 1
    judged_label = _floats(t.qrels.column("rel"))
    # int32 labels unless a grade is fractional: integer labels compute as trec_eval's
    label_type = np.int32 if np.array_equal(judged_label, np.floor(judged_label)) else np.float64
    labels = np.zeros((n, depth), dtype=label_type)
    # a negative label is "judged, never relevant" (trec_eval): gain 0, as RankedLabels expects
    lab = t.labels
    rel = _floats(lab.column("rel"))
    labels[_ints(lab, "qidx"), _ints(lab, "rank") - 1] = np.maximum(rel, 0)
    # judged (1) or in the pool with a negative label (-1); 0: not in the qrels (JUDGED etc.)
    judged = np.zeros((n, depth), dtype=np.int8)
    judged[_ints(lab, "qidx"), _ints(lab, "rank") - 1] = np.where(rel >= 0, 1, -1)
    chunk_score = np.full((n, depth), np.nan)
    chunk_score[cq, cr] = _floats(t.chunks.column("score"))
    n_ret = np.bincount(cq, minlength=n).astype(np.int64)
    n_spans = np.zeros(n, dtype=np.int64)
    n_spans[_ints(t.spans, "qidx")] = _ints(t.spans, "n")
    tag_values: dict[str, NDArray[np.object_]] = {}
    tag_q = _ints(t.tags, "qidx")
    key_codes, key_names = _codes(t.tags.column("key"))
    values = _strings(t.tags.column("value"))
    # keys in first-seen order, as the rows came (a dictionary lists its values in that order)
    for code, key in enumerate(key_names):
        col = np.full(n, None, dtype=object)
        sel = key_codes == code
        col[tag_q[sel]] = values[sel]
        tag_values[key] = col
    stage = _names(t.latency.column("stage"))
    order = ops.pipeline_order(_ints(t.latency, "qidx"), stage)
    lat_q, lat_stage, lat_ms, lat_derived = ops.derive_total(
        _ints(t.latency, "qidx"), stage, _floats(t.latency.column("ms"))
    )
    return RunData(
        run=run,
        query_ids=_strings(t.queries.column("query_id"), dictionary=False),
        in_run=t.queries.column("in_run").to_numpy(zero_copy_only=False).astype(bool),
        has_qrels=t.queries.column("has_qrels").to_numpy(zero_copy_only=False).astype(bool),
        n_ret=n_ret,
        labels=labels,
        chunk_score=chunk_score,
        judged_q=_ints(t.qrels, "qidx"),
        judged_label=judged_label.astype(label_type),
        n_spans=n_spans,
        tags=tag_values,
        latency_q=lat_q,
        latency_stage=lat_stage,
        latency_ms=lat_ms,
        latency_derived=lat_derived,
        latency_stages=order + ((ops.TOTAL,) if lat_derived.any() else ()),
        tokens_q=_ints(t.tokens, "qidx"),
        tokens_kind=_names(t.tokens.column("kind")),
        tokens_n=_ints(t.tokens, "n"),
        judged=judged,
    )


def _codes(column: pa.ChunkedArray) -> tuple[NDArray[np.int64], list[str]]:
    """A non-NULL string column as (code per row, the distinct strings in first-seen order)."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    return (np.asarray(encoded.indices.to_numpy(), dtype=np.int64), encoded.dictionary.to_pylist())


def _names(column: pa.ChunkedArray) -> NDArray[np.str_]:
    """A non-NULL column of a few distinct strings (stage or token kind names) as a str array."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    names = np.asarray(encoded.dictionary.to_pylist(), dtype=str)
    return names[encoded.indices.to_numpy()] if len(encoded) else np.zeros(0, dtype=str)


def _ints(table: pa.Table, name: str) -> Ints:
    """A non-NULL integer column as int64."""
    return np.asarray(table.column(name).to_numpy(), dtype=np.int64)


def _strings(column: pa.ChunkedArray, dictionary: bool = True) -> NDArray[np.object_]:
    """A string column as an object array (None for NULL).

    dictionary: the column repeats a few values (tag values, stage names): encode it first, so
    each distinct string is one Python object shared by every row that holds it.
    """
    if not dictionary or len(column) == 0:
        return np.asarray(column.to_pylist(), dtype=object).reshape(len(column))
    encoded = pc.dictionary_encode(column.combine_chunks())
    names = np.asarray([*encoded.dictionary.to_pylist(), None], dtype=object)
    codes = encoded.indices.fill_null(len(encoded.dictionary)).to_numpy()
    return names[codes]


def _floats(column: Any) -> Floats:
    """A DuckDB numeric column (numpy, maybe masked for NULLs, or Arrow) as float64, NaN for NULL."""
    if isinstance(column, (pa.ChunkedArray, pa.Array)):
        return np.asarray(
            column.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False),
            dtype=np.float64,
        )
    if isinstance(column, np.ma.MaskedArray):
        return np.ma.filled(column.astype(np.float64), np.nan)
    return np.asarray(column, dtype=np.float64)


def evidence_tensor(
    store: Store, data: RunData, key: ScorerKey = ScorerKey("partial")
) -> NDArray[np.float32]:
    """(n, depth, max spans) pair scores: NaN where the chunk or the span does not exist.

    A retrieved chunk without text scores 0 against every span. Scored once per
    (run, scorer, normalisation) and kept in the store; cached on data as well.
    """
    if ("evidence", key) in data._cache:
        return data._cache["evidence", key]  # type: ignore[no-any-return]
    ensure_scored(store, data.run.run_id, key)
    # only the four columns the tensor needs, in storage order: no sort, no span offsets
    rows = pair_score_table(store, data.run.run_id, key)
    width = int(data.n_spans.max()) if data.n_queries else 0
    tensor = np.full((data.n_queries, data.depth, width), np.nan, dtype=np.float32)
    exists = (np.arange(data.depth)[None, :, None] < data.n_ret[:, None, None]) & (
        np.arange(width)[None, None, :] < data.n_spans[:, None, None]
    )
    tensor[exists] = 0.0
    tensor[_ints(rows, "qidx"), _ints(rows, "rank") - 1, _ints(rows, "eidx")] = rows.column(
        "score"
    ).to_numpy()
    for q, e, pairs in added_pairs(store, data, key):
        tensor[q, pairs.rank - 1, e] = pairs.score
    data._cache["evidence", key] = tensor
    return tensor


def added_pairs(store: Store, data: RunData, key: ScorerKey) -> list[tuple[int, int, SpanPairs]]:
    """(qidx, eidx, pairs) of every added span of data (data.added): scored once per (span,
    scorer, normalisation) and kept in a memo the run's views share, so a span added later is
    the only one scored then (store.scores.score_spans)."""
    if not data.added:
        return []
    kept: dict[tuple[int, str], SpanPairs] = memo(data, ("added_pairs", key), dict)
    missing = [(q, s.text) for q, spans in data.added.items() for s in spans]
    missing = [item for item in missing if item not in kept]
    if missing:
        scored = score_spans(store, data.run.run_id, key, missing)
        kept.update(zip(missing, scored, strict=True))
    out = []
    for q, spans in data.added.items():
        first = int(data.n_spans[q]) - len(spans)
        out += [(q, first + j, kept[(q, s.text)]) for j, s in enumerate(spans)]
    return out


def numbers_guard(store: Store, data: RunData) -> NDArray[np.bool_]:
    """(n, depth, max spans) False where the span holds a number the chunk does not (the
    "numbers must match" guard, rageval_core.matching.numbers); True elsewhere, padding included.
    Computed by DuckDB once per run and cached on data: it reads texts only, no setting."""

    def make() -> NDArray[np.bool_]:
        width = int(data.n_spans.max()) if data.n_queries else 0
        ok = np.ones((data.n_queries, data.depth, width), dtype=np.bool_)
        rows = reads.numbers_missing_pairs(store, data.run.run_id)
        ok[_ints(rows, "qidx"), _ints(rows, "rank") - 1, _ints(rows, "eidx")] = False
        for q, e, pairs in added_pairs(store, data, ScorerKey("partial")):
            ok[q, pairs.rank - 1, e] = pairs.numbers_ok  # any scorer's pairs: the same texts
        return ok

    return memo(data, ("numbers",), make)  # type: ignore[no-any-return]
