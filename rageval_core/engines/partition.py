"""One partition of a run (some of its queries, as Arrow) evaluated on its own, and the reduce.

What a distributed engine calls (docs/scale-out.md): the engine splits a run by query, hands each
partition's rows to evaluate_batches() as Arrow record batches (Spark's mapInArrow, Ray Data's
map_batches), gets back a few partial sums per metric, and combine() turns all partials into the
run values that evaluate() gives on one machine. Nothing here imports an engine.

Input: one row per query, the native format's fields (docs/formats.md) as Arrow types, so an
engine's own JSON reader can read a native JSONL file straight into it (INPUT_SCHEMA):

    query_id      string, required, unique
    retrieved     list<struct<doc_id: string, text: string, score: double>>, in rank order;
                  null = judged but absent from the run. text/score may be null or left out
    relevance     map<string, int>, optional: graded qrels; null = no qrels
    relevant_ids  list<string>, optional: label 1 each, merged with relevance (relevance wins)
    evidence      list<string>, optional: gold spans; null or [] = none

Equivalent Arrow types are accepted too (large strings and lists, any integer label width).
Each partition stages its rows in its own in-memory DuckDB for the relational steps (the qrels
merge, each chunk's label at its document's first rank, the evidence x chunk pairs), scores the
pairs with matching.score_pairs and computes per-query values with the metric registry: the same
functions, in the same order, that rageval_core.evaluation.evaluate applies to a stored run. Every metric
is a per-query value (no query depends on another), so partitions are independent; a run value
is a mean (or span-weighted mean, or sum) of them, which combine() rebuilds from per-partition
sums. Answer (generation) metrics and the latency/cost percentiles are not computed here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from rageval_core.errors import ProblemLog, RagevalError, UsageError
from rageval_core.evaluation.report import EVIDENCE_DEFAULTS, RANKING_DEFAULTS, Settings
from rageval_core.formats.safejson import MAX_LABEL, MIN_LABEL
from rageval_core.matching.scorers import score_pairs
from rageval_core.metrics import registry
from rageval_core.metrics.arrays import (
    RankedLabels,
    judged_only,
    ranked_labels_from_relevant,
    ranked_labels_from_rows,
)
from rageval_core.metrics.evidence import Coverage, covers, prepare_coverage
from rageval_core.model import Query
from rageval_core.matching.numbers import numbers_of

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

CHUNK_TYPE = pa.struct([("doc_id", pa.string()), ("text", pa.string()), ("score", pa.float64())])
#: the input rows: one per query (see the module docstring)
INPUT_SCHEMA = pa.schema(
    [
        pa.field("query_id", pa.string(), nullable=False),
        pa.field("retrieved", pa.list_(CHUNK_TYPE)),
        pa.field("relevance", pa.map_(pa.string(), pa.int64())),
        pa.field("relevant_ids", pa.list_(pa.string())),
        pa.field("evidence", pa.list_(pa.string())),
    ]
)
#: INPUT_SCHEMA as a Spark DDL string: Spark's JSON reader reads a native run into it
SPARK_SCHEMA = (
    "query_id STRING, retrieved ARRAY<STRUCT<doc_id: STRING, text: STRING, score: DOUBLE>>, "
    "relevance MAP<STRING, BIGINT>, relevant_ids ARRAY<STRING>, evidence ARRAY<STRING>"
)
#: the partial sums of one partition: one row per metric
PARTIAL_SCHEMA = pa.schema(
    [
        pa.field("metric", pa.string(), nullable=False),
        pa.field("n", pa.int64(), nullable=False),  # queries scored (non-NaN values)
        pa.field("total", pa.float64(), nullable=False),  # sum of their values
        pa.field(
            "weight", pa.float64(), nullable=False
        ),  # sum of their weights (n when unweighted)
        pa.field(
            "weighted", pa.float64(), nullable=False
        ),  # sum of value x weight (total when unweighted)
    ]
)
#: PARTIAL_SCHEMA as a Spark DDL string (mapInArrow's output)
PARTIAL_SPARK_SCHEMA = "metric STRING, n BIGINT, total DOUBLE, weight DOUBLE, weighted DOUBLE"
#: per-query tables name the weight column of a weighted measure (EvidenceRecall) this way
WEIGHT_PREFIX = "weight:"


def default_metrics(k: int = 10, relevance: str | None = "ids", evidence: bool = True) -> list[str]:
    """evaluate()'s default ranking and evidence metrics at cut-off k (answers left out)."""
    names = [m.format(k=k) for m in RANKING_DEFAULTS] if relevance is not None else []
    if evidence:
        names += [m.format(k=k) for m in EVIDENCE_DEFAULTS]
    return names


def plan(
    metrics: Sequence[str], settings: Settings | None = None, **overrides: Any
) -> tuple[list[registry.Measure], Settings]:
    """Check the metrics and settings once (on the driver, before any partition runs)."""
    s = dataclasses.replace(settings or Settings(), **overrides)
    s.check()
    measures = registry.parse_all(metrics)
    if not measures:
        raise UsageError("name at least one metric: a partition cannot choose run-wide defaults")
    for m in measures:
        family = m.spec.family
        if family not in ("ranking", "evidence"):
            raise UsageError(
                f"measure {m} ({family}) is not computed per partition: "
                "only ranking and evidence metrics are (docs/scale-out.md)"
            )
        if family == "ranking" and s.relevance is None:
            # evaluate() picks ids when the run has qrels: one partition cannot see the run
            raise UsageError(
                f"measure {m} needs relevance='ids' or 'evidence' to be given: a "
                "partition cannot tell whether the whole run has qrels"
            )
    return measures, s


def evaluate_partition(
    rows: pa.Table | pa.RecordBatch,
    metrics: Sequence[str],
    settings: Settings | None = None,
    *,
    source: str = "partition",
    workers: int = 1,
    threads: int = 1,
    **overrides: Any,
) -> pa.Table:
    """Per-query values of one partition: query_id, one float64 column per metric, weights.

    A value is NaN where evaluate() leaves the query out (no qrels in ids mode, no gold spans
    for evidence metrics). Each weighted measure adds a column WEIGHT_PREFIX + name after the
    metric columns (per_query_schema). Bad rows are reported as `source:row: field: problem`
    (row = 1-based row of `rows`) in an InputError.
    workers (score_pairs) and threads (DuckDB) default to 1: the engine runs the partitions in
    parallel already.
    """
    measures, s = plan(metrics, settings, **overrides)
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
    part = _read(table, source, threads)
    families = {m.spec.family for m in measures}
    want_ids = "ranking" in families and s.relevance == "ids"
    want_evidence = "evidence" in families or ("ranking" in families and s.relevance == "evidence")
    n = part.n_queries

    inputs: dict[str, tuple[Any, Ints]] = {}
    if want_ids:
        inputs["ranking"] = _id_labels(part, s)
    if want_evidence:
        cov = _coverage(part, s, workers)
        inputs["evidence"] = (cov, cov.rows)
        if s.relevance == "evidence" and "ranking" in families:
            ids = tuple(part.query_ids[i] for i in cov.rows.tolist())
            inputs["ranking"] = (
                ranked_labels_from_relevant(ids, covers(cov).T, cov.n_ret),
                cov.rows,
            )

    columns: dict[str, pa.Array] = {"query_id": pa.array(part.query_ids, type=pa.string())}
    weight_columns: dict[str, pa.Array] = {}
    for m in measures:
        data_in, selected = inputs[m.spec.family]
        if want_ids and m.spec.every_judged_query and not s.complete:
            data_in, selected = _id_labels(part, dataclasses.replace(s, complete=True))
        name = str(m)
        values = np.full(n, np.nan)
        weights = np.full(n, np.nan)
        if selected.size:  # a partition may hold none of a family's queries
            values[selected] = registry.compute([m], data_in)[name]
            w = registry.weights_of(m, data_in)
            if w is not None:
                weights[selected] = w
        columns[name] = pa.array(values, type=pa.float64())
        if m.spec.weight is not None:
            weight_columns[WEIGHT_PREFIX + name] = pa.array(weights, type=pa.float64())
    return pa.table({**columns, **weight_columns}, schema=per_query_schema(metrics, s))


def per_query_schema(
    metrics: Sequence[str], settings: Settings | None = None, **overrides: Any
) -> pa.Schema:
    """evaluate_partition's columns: query_id, each metric, then each weighted metric's weight.

    An engine that matches output columns by position (Spark's mapInArrow) declares these.
    """
    measures, _ = plan(metrics, settings, **overrides)
    names = [str(m) for m in measures]
    weighted = [WEIGHT_PREFIX + str(m) for m in measures if m.spec.weight is not None]
    return pa.schema(
        [pa.field("query_id", pa.string())]
        + [pa.field(name, pa.float64()) for name in [*names, *weighted]]
    )


def partials(per_query: pa.Table) -> pa.RecordBatch:
    """The sums combine() needs from one partition's per-query values (one row per metric)."""
    out: dict[str, list[Any]] = {field.name: [] for field in PARTIAL_SCHEMA}
    for name in per_query.column_names:
        if name == "query_id" or name.startswith(WEIGHT_PREFIX):
            continue
        values = per_query[name].to_numpy()
        scored = ~np.isnan(values)
        v = values[scored]
        if WEIGHT_PREFIX + name in per_query.column_names:
            w = per_query[WEIGHT_PREFIX + name].to_numpy()[scored]
            weight, weighted = float(w.sum()), float(np.dot(v, w))
        else:
            weight, weighted = float(v.size), float(v.sum())
        for key, value in (
            ("metric", name),
            ("n", int(v.size)),
            ("total", float(v.sum())),
            ("weight", weight),
            ("weighted", weighted),
        ):
            out[key].append(value)
    return pa.RecordBatch.from_pydict(out, schema=PARTIAL_SCHEMA)


def evaluate_batches(
    batches: Iterable[pa.RecordBatch],
    metrics: Sequence[str],
    settings: Settings | None = None,
    *,
    per_query: bool = False,
    **options: Any,
) -> Iterator[pa.RecordBatch]:
    """The engine's per-partition function: each batch of query rows -> its partial sums.

    Rows are whole queries, so any split into batches is a split by query and every batch is
    evaluated on its own (memory stays bounded by the batch). per_query: yield the per-query
    values instead (evaluate_partition's columns, e.g. to write them out for drill-downs).
    options go to evaluate_partition.
    """
    for batch in batches:
        values = evaluate_partition(batch, metrics, settings, **options)
        if per_query:
            yield from values.to_batches()
        else:
            yield partials(values)


def combine(parts: Iterable[pa.Table | pa.RecordBatch]) -> dict[str, float]:
    """The run values from every partition's partial sums (PARTIAL_SCHEMA rows), as evaluate().

    Means are total / n, weighted means (EvidenceRecall: weight = gold spans) weighted / weight,
    counts (Num*) the total; NaN where no query was scored, 0.0 for a count of none.
    """
    sums: dict[str, list[list[float]]] = {}
    for part in parts:
        for row in part.to_pylist():
            acc = sums.setdefault(row["metric"], [[], [], [], []])
            for i, key in enumerate(("n", "total", "weight", "weighted")):
                acc[i].append(row[key])
    out: dict[str, float] = {}
    for name, (n, total, weight, weighted) in sums.items():
        spec = registry.parse(name).spec
        if spec.aggregate == "sum":
            out[name] = math.fsum(total)
        elif sum(n) == 0 or math.fsum(weight) <= 0:
            out[name] = math.nan
        else:
            out[name] = math.fsum(weighted) / math.fsum(weight)
    return out


def to_arrow(queries: Iterable[Query]) -> pa.Table:
    """Queries (from any reader) as INPUT_SCHEMA rows, e.g. to split a run without an engine."""
    cols: dict[str, list[Any]] = {field.name: [] for field in INPUT_SCHEMA}
    for q in queries:
        cols["query_id"].append(q.query_id)
        cols["retrieved"].append(
            None
            if q.retrieved is None
            else [{"doc_id": c.doc_id, "text": c.text, "score": c.score} for c in q.retrieved]
        )
        cols["relevance"].append(None if q.relevance is None else list(q.relevance.items()))
        cols["relevant_ids"].append(None)
        cols["evidence"].append(list(q.evidence))
    return pa.Table.from_pydict(cols, schema=INPUT_SCHEMA)


# --- reading one partition -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class _Partition:
    """One partition's rows as flat arrays (row q = the partition's q-th query)."""

    query_ids: list[str]
    in_run: NDArray[np.bool_]  # (n,)
    has_qrels: NDArray[np.bool_]  # (n,)
    n_ret: Ints  # (n,)
    chunk_score: Floats  # (n, depth), NaN: no score or beyond the list
    chunk_q: Ints  # one entry per retrieved chunk: its query ...
    chunk_rank: Ints  # ... its 0-based rank
    chunk_label: NDArray[np.int32]  # ... its label (at its document's first rank only)
    chunk_judged: NDArray[np.int8]  # ... JUDGED, POOLED or NOT_IN_QRELS (metrics.arrays)
    chunk_text: list[str | None]
    judged_q: Ints  # one entry per (query, judged document)
    judged_label: NDArray[np.int32]
    span_q: Ints  # one entry per gold span: its query ...
    span_text: list[str]
    pairs: tuple[Ints, Ints]  # (chunk, span) entries of every chunk with text x its query's spans

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def depth(self) -> int:
        return int(self.chunk_score.shape[1])


def _list_column(
    table: pa.Table, name: str, item: pa.DataType | None, source: str
) -> pa.Array | None:
    """A list-like column as one array (None when absent); UsageError for a wrong type."""
    if name not in table.column_names:
        return None
    column = table[name].combine_chunks() if table.num_rows else pa.array([], table[name].type)
    kind = column.type
    ok = pa.types.is_list(kind) or pa.types.is_large_list(kind)
    if item is None:  # a map: read as a list of (key, value) structs
        ok = pa.types.is_map(kind)
        if ok:
            column = column.cast(pa.list_(pa.struct([kind.key_field, kind.item_field])))
    elif ok and pa.types.is_struct(item):
        ok = pa.types.is_struct(kind.value_type)
    elif ok:
        ok = pa.types.is_string(kind.value_type) or pa.types.is_large_string(kind.value_type)
    if not ok:
        raise UsageError(
            f"{source}: column {name} is {kind}, expected "
            f"{INPUT_SCHEMA.field(name).type} (docs/scale-out.md)"
        )
    return column


def _flat(column: pa.Array | None, n: int) -> tuple[pa.Array, Ints, Ints, Ints, NDArray[np.bool_]]:
    """(values, parent row, position in its list, list lengths, row not null) of a list column.

    Strings come out as pa.string(); an absent column as no values and every row null.
    """
    if column is None:
        none = np.zeros(0, dtype=np.int64)
        return pa.array([], pa.string()), none, none, np.zeros(n, np.int64), np.zeros(n, np.bool_)
    values = pc.list_flatten(column)
    if pa.types.is_large_string(values.type):
        values = values.cast(pa.string())
    parent = np.asarray(pc.list_parent_indices(column), dtype=np.int64)
    # parents come in row order, so a row's first value is where its parent first appears
    position = np.arange(parent.size, dtype=np.int64) - np.searchsorted(parent, parent, "left")
    lengths = np.bincount(parent, minlength=n).astype(np.int64)
    return values, parent, position, lengths, np.asarray(column.is_valid(), dtype=np.bool_)


def _field(values: pa.Array, name: str, kind: pa.DataType) -> pa.Array:
    """A struct field (null where the struct is) cast to kind; all null when there is no field."""
    if not pa.types.is_struct(values.type) or values.type.get_field_index(name) < 0:
        return pa.nulls(len(values), kind)
    return pc.struct_field(values, name).cast(kind)


def _report(
    log: ProblemLog, source: str, rows: Ints, field: Callable[[int], str], problem: str
) -> None:
    """One error per bad entry: rows[i] is its row (0-based), field(i) names it."""
    for i, row in enumerate(rows.tolist()):
        log.error(source, row + 1, field(i), problem)


def _blank(strings: pa.Array) -> Ints:
    """Positions of the null or empty strings."""
    return np.flatnonzero(np.asarray(pc.fill_null(pc.equal(strings, ""), True)))


def _report_blank_items(
    log: ProblemLog, source: str, name: str, items: pa.Array, rows: Ints, pos: Ints
) -> None:
    """One error per null or empty string of a flattened list column: items[j] is name[pos[j]]
    of row rows[j]."""
    bad = _blank(items)
    _report(
        log, source, rows[bad], lambda i: f"{name}[{pos[bad[i]]}]", "expected a non-empty string"
    )


def _read(table: pa.Table, source: str, threads: int = 1) -> _Partition:
    """Check one partition's rows and flatten them; InputError listing every bad row."""
    n = table.num_rows
    if "query_id" not in table.column_names:
        raise UsageError(f"{source}: no query_id column (expected the columns of INPUT_SCHEMA)")
    qid = table["query_id"].combine_chunks() if n else pa.array([], pa.string())
    if not (pa.types.is_string(qid.type) or pa.types.is_large_string(qid.type)):
        raise UsageError(f"{source}: column query_id is {qid.type}, expected string")
    if "retrieved" not in table.column_names:
        raise UsageError(f"{source}: no retrieved column (null rows: queries absent from the run)")
    retrieved = _list_column(table, "retrieved", CHUNK_TYPE, source)
    relevance = _list_column(table, "relevance", None, source)
    relevant_ids = _list_column(table, "relevant_ids", pa.string(), source)
    evidence = _list_column(table, "evidence", pa.string(), source)

    log = ProblemLog()
    query_ids = qid.to_pylist()
    bad = _blank(qid)
    _report(log, source, bad, lambda i: "query_id", "missing or empty")
    seen: dict[str, int] = {}
    for row, q in enumerate(query_ids):
        if q and seen.setdefault(q, row) != row:
            log.error(source, row + 1, "query_id", f"duplicate {q!r} (first on row {seen[q] + 1})")

    chunks, chunk_q, chunk_rank, n_ret, in_run = _flat(retrieved, n)
    doc_id = _field(chunks, "doc_id", pa.string())
    text = _field(chunks, "text", pa.string())
    score = _field(chunks, "score", pa.float64())
    bad = _blank(doc_id)
    _report(
        log,
        source,
        chunk_q[bad],
        lambda i: f"retrieved[{chunk_rank[bad[i]]}].doc_id",
        "missing or empty (or the chunk is null)",
    )
    score_np = np.array(score.to_numpy(zero_copy_only=False), dtype=np.float64)  # a copy: written
    score_np[np.asarray(score.is_null())] = np.nan  # no score: kept as NaN, as the store does
    bad = np.flatnonzero(np.isinf(score_np))  # NaN is caught below, where it is not a null
    bad = np.union1d(bad, np.flatnonzero(np.isnan(score_np) & np.asarray(score.is_valid())))
    _report(
        log,
        source,
        chunk_q[bad],
        lambda i: f"retrieved[{chunk_rank[bad[i]]}].score",
        "not a finite number",
    )

    rel, rel_q, rel_pos, _, rel_valid = _flat(relevance, n)
    rel_doc = _field(rel, "key", pa.string())
    rel_label = _field(rel, "value", pa.int64())
    label_np = np.asarray(rel_label.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    bad = np.flatnonzero(
        np.asarray(rel_label.is_null()) | (label_np < MIN_LABEL) | (label_np > MAX_LABEL)
    )
    _report(
        log,
        source,
        rel_q[bad],
        lambda i: f"relevance.{rel_doc[int(bad[i])].as_py()}",
        f"expected an integer label from {MIN_LABEL} to {MAX_LABEL}",
    )
    bad = _blank(rel_doc)
    _report(log, source, rel_q[bad], lambda i: "relevance", "empty doc_id")
    ids, ids_q, ids_pos, _, ids_valid = _flat(relevant_ids, n)
    _report_blank_items(log, source, "relevant_ids", ids, ids_q, ids_pos)
    spans, span_q, span_pos, _, _ = _flat(evidence, n)
    _report_blank_items(log, source, "evidence", spans, span_q, span_pos)
    log.raise_if_errors()

    depth = int(n_ret.max()) if n else 0
    chunk_score = np.full((n, depth), np.nan)
    chunk_score[chunk_q, chunk_rank] = score_np
    chunk_label, chunk_judged, judged_q, judged_label, pairs = _stage(
        chunk_q,
        chunk_rank,
        doc_id,
        text,
        rel_q,
        rel_pos,
        rel_doc,
        rel_label,
        ids_q,
        ids,
        span_q,
        threads,
    )
    return _Partition(
        query_ids=query_ids,
        in_run=in_run,
        has_qrels=rel_valid | ids_valid,
        n_ret=n_ret,
        chunk_score=chunk_score,
        chunk_q=chunk_q,
        chunk_rank=chunk_rank,
        chunk_label=chunk_label,
        chunk_judged=chunk_judged,
        chunk_text=text.to_pylist(),
        judged_q=judged_q,
        judged_label=judged_label,
        span_q=span_q,
        span_text=spans.to_pylist(),
        pairs=pairs,
    )


def _stage(
    chunk_q: Ints,
    chunk_rank: Ints,
    doc_id: pa.Array,
    text: pa.Array,
    rel_q: Ints,
    rel_pos: Ints,
    rel_doc: pa.Array,
    rel_label: pa.Array,
    ids_q: Ints,
    ids: pa.Array,
    span_q: Ints,
    threads: int = 1,
) -> tuple[NDArray[np.int32], NDArray[np.int8], Ints, NDArray[np.int32], tuple[Ints, Ints]]:
    """The relational steps in an in-memory DuckDB: qrels merge, chunk labels, pairs.

    As the native reader and the store do it: relevance wins over relevant_ids for an id in
    both (and a key given twice keeps its last label, as json.loads); a document's label counts
    at its first rank only (rundata.load_run_data's window).
    """
    # the three tables are read by name in the SQL below (DuckDB's replacement scans)
    chunk_rows = pa.table(  # noqa: F841
        {
            "i": np.arange(chunk_q.size, dtype=np.int64),
            "q": chunk_q,
            "rank": chunk_rank,
            "doc_id": doc_id,
            "has_text": pc.is_valid(text),
        }
    )
    qrels_rows = pa.table(  # noqa: F841
        {
            "q": np.concatenate((rel_q, ids_q)),
            "doc_id": pa.concat_arrays([rel_doc, ids]),
            "label": pa.concat_arrays([rel_label, pa.array(np.ones(ids_q.size, np.int64))]),
            # relevance first, its later keys before earlier ones; then relevant_ids
            "pick": np.concatenate((-rel_pos, np.full(ids_q.size, 1, np.int64))),
        }
    )
    span_rows = pa.table({"i": np.arange(span_q.size, dtype=np.int64), "q": span_q})  # noqa: F841
    con = duckdb.connect(":memory:", config={"threads": threads})
    try:
        con.execute(
            "CREATE TEMP TABLE judged AS SELECT q, doc_id, label FROM ("
            " SELECT *, row_number() OVER (PARTITION BY q, doc_id ORDER BY pick) AS n"
            " FROM qrels_rows) WHERE n = 1"
        )
        judged = con.execute("SELECT q, label FROM judged ORDER BY q").fetchnumpy()
        labels = con.execute(
            "SELECT CASE WHEN first THEN coalesce(label, 0) ELSE 0 END AS label,"
            "       CASE WHEN NOT first OR label IS NULL THEN 0 WHEN label >= 0 THEN 1 ELSE -1 END"
            "       AS judged"
            " FROM (SELECT c.i, j.label, row_number() OVER (PARTITION BY c.q, c.doc_id"
            "       ORDER BY c.rank) = 1 AS first"
            "       FROM chunk_rows c LEFT JOIN judged j ON j.q = c.q AND j.doc_id = c.doc_id)"
            " ORDER BY i"
        ).fetchnumpy()
        pairs = con.execute(
            "SELECT c.i AS chunk, s.i AS span FROM chunk_rows c JOIN span_rows s ON s.q = c.q"
            " WHERE c.has_text ORDER BY c.i, s.i"
        ).fetchnumpy()
    except duckdb.Error as e:
        raise RagevalError(f"staging a partition in DuckDB failed: {e}") from e
    finally:
        con.close()
    return (
        np.asarray(labels["label"], dtype=np.int32),  # in int32's range: checked in _read
        np.asarray(labels["judged"], dtype=np.int8),
        np.asarray(judged["q"], dtype=np.int64),
        np.asarray(judged["label"], dtype=np.int32),
        (np.asarray(pairs["chunk"], dtype=np.int64), np.asarray(pairs["span"], dtype=np.int64)),
    )


# --- the metric inputs, as rageval_core.evaluation.evaluate builds them for a stored run ----------------


def _id_labels(part: _Partition, settings: Settings) -> tuple[RankedLabels, Ints]:
    """relevance.id_labels: the queries trec_eval scores, after the retriever-score cut."""
    selected = np.flatnonzero(part.has_qrels & (part.in_run | settings.complete)).astype(np.int64)
    keep = np.ones(part.chunk_q.size, dtype=np.bool_)
    if settings.score_threshold is not None:
        with np.errstate(invalid="ignore"):  # a chunk without a score is kept
            keep = ~(part.chunk_score[part.chunk_q, part.chunk_rank] < settings.score_threshold)
    # the surviving chunks keep their order and move up; rows of unselected queries drop out
    position = np.full(part.n_queries, -1, dtype=np.int64)
    position[selected] = np.arange(selected.size)
    keep &= position[part.chunk_q] >= 0
    q = position[part.chunk_q[keep]]
    rank = np.arange(q.size) - np.searchsorted(q, q, "left") + 1
    judged = position[part.judged_q] >= 0
    arrays = ranked_labels_from_rows(
        [part.query_ids[i] for i in selected.tolist()],
        q,
        rank,
        part.chunk_label[keep],
        position[part.judged_q[judged]],
        part.judged_label[judged],
        rel_level=settings.rel_level,
        ret_judged=part.chunk_judged[keep],
    )
    return (judged_only(arrays) if settings.judged_only else arrays), selected


def _coverage(part: _Partition, settings: Settings, workers: int) -> Coverage:
    """relevance.coverage: the pairs scored, as rundata.evidence_tensor, then prepare_coverage."""
    n_spans = np.bincount(part.span_q, minlength=part.n_queries).astype(np.int64)
    width = int(n_spans.max()) if part.n_queries else 0
    tensor = np.full((part.n_queries, part.depth, width), np.nan, dtype=np.float32)
    exists = (np.arange(part.depth)[None, :, None] < part.n_ret[:, None, None]) & (
        np.arange(width)[None, None, :] < n_spans[:, None, None]
    )
    tensor[exists] = 0.0  # a chunk without text scores 0 against every span
    pair_ch, pair_sp = part.pairs
    if pair_ch.size:
        texts = [t if t is not None else "" for t in part.chunk_text]  # only texts are paired
        scored = score_pairs(
            part.span_text,
            texts,
            pair_sp,
            pair_ch,
            scorer=settings.scorer_key,
            workers=workers,
        )
        span_first = np.searchsorted(part.span_q, part.span_q, "left")  # spans come in row order
        eidx = pair_sp - span_first[pair_sp]
        score = np.asarray(scored.score, dtype=np.float32)
        # relevance.coverage's guard, on the raw texts as the store's
        if settings.numbers_must_match:
            span_numbers = [numbers_of(t) for t in part.span_text]
            chunk_numbers = {c: numbers_of(part.chunk_text[c]) for c in np.unique(pair_ch).tolist()}
            lacking = [
                bool(span_numbers[e] - chunk_numbers[c])
                for e, c in zip(pair_sp.tolist(), pair_ch.tolist(), strict=True)
            ]
            score = np.where(np.asarray(lacking, dtype=bool), np.float32(0.0), score)
        tensor[part.chunk_q[pair_ch], part.chunk_rank[pair_ch], eidx] = score
    cov = prepare_coverage(
        tensor,
        n_spans,
        part.n_ret,
        retriever_scores=part.chunk_score,
        score_cut=settings.score_threshold,
    )
    return cov.with_threshold(settings.threshold)
