"""rageval_core.engines.partition: a run split by query, evaluated per partition and combined, gives
evaluate()'s run values (and per-query values) on the whole stored run. No engine needed."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from rageval_core.engines import partition
from rageval_core.errors import InputError, ProblemLog, UsageError
from rageval_core.evaluation.evaluate import evaluate, open_file_in_scratch_store
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store

WORDS = [
    "tax",
    "rate",
    "income",
    "relief",
    "pension",
    "allowance",
    "threshold",
    "return",
    "filing",
    "deduction",
    "credit",
    "estate",
    "trust",
    "dividend",
    "interest",
    "capital",
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
]
IDS_METRICS = [
    "P@5",
    "R@5",
    "RR",
    "AP",
    "nDCG@5",
    "nDCG",
    "Hit@3",
    "Rprec",
    "F1@5",
    "SetF",
    "AQWV@5",
    "P(rel=2)@5",
    "NumQ",
    "NumRet",
    "NumRel",
    "NumRelRet",
    "Bpref",
    "Judged@5",
]
EVIDENCE_METRICS = [
    "EvidenceRecall@3",
    "EvidenceRecall",
    "PerQueryCoverage@3",
    "FullCoverageRate@5",
    "ContextCoverage@3",
    "ContextCoverage",
    "BestRank@5",
    "EvidenceRecall(threshold=0.9)@5",
]


def random_queries(n: int, seed: int) -> list[Query]:
    """A run with every case the selection rules treat apart.

    Graded and negative labels, a document repeated within a list, judged queries absent from
    the run (retrieved None), queries without qrels, empty lists, queries without gold spans,
    chunks without text or without a retriever score, spans that are exact, fuzzy or absent.
    """
    rng = np.random.default_rng(seed)
    queries = []
    for i in range(n):
        depth = int(rng.integers(0, 9))
        docs = [f"d{int(rng.integers(0, 12))}" for _ in range(depth)]
        texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(6, 20)))) for _ in range(depth)]
        chunks = tuple(
            Chunk(
                doc,
                None if rng.random() < 0.1 else text,
                None if rng.random() < 0.1 else round(float(rng.random()), 3),
            )
            for doc, text in zip(docs, texts, strict=True)
        )
        kind = rng.random()
        retrieved = None if kind < 0.08 else chunks
        relevance = None  # no qrels for 0.08 <= kind < 0.2
        if not 0.08 <= kind < 0.2:
            judged = rng.choice(12, size=int(rng.integers(0, 6)), replace=False)
            relevance = {f"d{int(d)}": int(rng.integers(-1, 4)) for d in judged}
        spans: list[str] = []
        for _ in range(int(rng.integers(0, 4))):
            if texts and rng.random() < 0.7:
                source = texts[int(rng.integers(0, len(texts)))].split()
                piece = source[: max(2, len(source) // 2)]
                if rng.random() < 0.4:  # a fuzzy variant: one word changed
                    piece[0] = str(rng.choice(WORDS))
                spans.append(" ".join(piece))
            else:
                spans.append(" ".join(rng.choice(WORDS, size=5)))
        queries.append(
            Query(
                query_id=f"q{i:03d}",
                retrieved=retrieved,
                relevance=relevance,
                evidence=tuple(spans),
            )
        )
    return queries


def stored(queries: list[Query]) -> tuple[Store, object]:
    store = Store(":memory:")
    store.import_run(
        ParsedRun(RunInfo(name="r"), iter(queries), "native", ("r.jsonl",)), ProblemLog()
    )
    return store, load_run_data(store, "r")


def split(table: pa.Table, parts: int) -> list[pa.Table]:
    """Contiguous slices of nearly equal size (some may be empty when parts > rows)."""
    bounds = np.linspace(0, table.num_rows, parts + 1).round().astype(int)
    return [table.slice(lo, hi - lo) for lo, hi in itertools.pairwise(bounds)]


def run_split(
    table: pa.Table, parts: int, metrics: list[str], **settings: object
) -> tuple[dict[str, float], pa.Table]:
    per_query = [partition.evaluate_partition(p, metrics, **settings) for p in split(table, parts)]
    means = partition.combine(partition.partials(t) for t in per_query)
    return means, pa.concat_tables(per_query)


def assert_same(means: dict[str, float], expected: dict[str, float]) -> None:
    assert list(means) == list(expected)
    for name, value in expected.items():
        if math.isnan(value):
            assert math.isnan(means[name]), name
        else:
            assert means[name] == pytest.approx(value, abs=1e-12, rel=0), name


QUERIES = random_queries(90, seed=5)
SETTINGS = [
    {"relevance": "ids", "k": 5},
    {"relevance": "ids", "k": 5, "complete": True, "rel_level": 2},
    {"relevance": "ids", "k": 5, "score_threshold": 0.4},
    {"relevance": "ids", "k": 5, "score_threshold": 0.4, "judged_only": True},
    {"relevance": "evidence", "k": 3, "threshold": 0.8},
    {"relevance": "evidence", "k": 3, "threshold": 0.0},  # a chunk without text covers at 0
    {"relevance": "evidence", "k": 3, "score_threshold": 0.5, "scorer": "ratio"},
]


@pytest.fixture(scope="module")
def run() -> tuple[Store, object, pa.Table]:
    store, data = stored(QUERIES)
    return store, data, partition.to_arrow(QUERIES)


@pytest.mark.parametrize(
    "settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items())
)
@pytest.mark.parametrize("parts", [1, 2, 7, 90])
def test_split_equals_evaluate(
    run: tuple[Store, object, pa.Table], settings: dict, parts: int
) -> None:
    store, data, table = run
    metrics = (
        IDS_METRICS + EVIDENCE_METRICS
        if settings["relevance"] == "ids"
        else ["P@3", "RR", "AP", "nDCG@3", "Hit@3", *EVIDENCE_METRICS]
    )
    report = evaluate(data, metrics, store=store, **settings)
    means, per_query = run_split(table, parts, metrics, **settings)
    assert_same(means, report.metrics)
    # per-query values too, query for query (NaN where evaluate() leaves the query out)
    assert per_query["query_id"].to_pylist() == list(report.query_ids)
    for name in report.metrics:
        np.testing.assert_allclose(
            per_query[name].to_numpy(),
            report.per_query[name],
            rtol=0,
            atol=1e-12,
            equal_nan=True,
            err_msg=name,
        )


def test_the_run_exercises_every_case(run: tuple[Store, object, pa.Table]) -> None:
    """The split test above is only as strong as its data: each special case occurs."""
    store, data, _ = run
    report = evaluate(data, ["EvidenceRecall@3", "P@5"], store=store, relevance="ids")
    assert report.counts["no_evidence"] > 5 and report.counts["scored_evidence"] > 30
    assert report.counts["skipped_no_qrels"] > 3 and report.counts["missing_from_run"] > 2
    spans = np.asarray(data.n_spans)
    assert set(spans.tolist()) == {0, 1, 2, 3}  # pooled and per-query recall differ
    assert report.metrics["EvidenceRecall@3"] != pytest.approx(
        float(np.nanmean(report.per_query["EvidenceRecall@3"])), abs=1e-3
    )
    values = report.per_query["EvidenceRecall@3"]
    assert (
        np.nanmin(values) == 0.0
        and np.nanmax(values) == 1.0
        and ((values > 0) & (values < 1)).any()
    )
    assert any(q.retrieved == () for q in QUERIES)
    assert any(c.text is None for q in QUERIES for c in q.retrieved or ())
    assert any(len({c.doc_id for c in q.retrieved or ()}) < len(q.retrieved or ()) for q in QUERIES)
    assert any(v < 0 for q in QUERIES for v in (q.relevance or {}).values())


def test_pooled_metric_is_weighted_by_spans() -> None:
    """EvidenceRecall pools spans: two partitions with 1 and 3 spans are not averaged 50/50."""
    queries = [
        Query("a", (Chunk("d1", "alpha beta gamma"),), evidence=("alpha beta gamma",)),
        Query("b", (Chunk("d2", "delta"),), evidence=("zzz yyy xxx", "www vvv uuu", "delta")),
    ]
    table = partition.to_arrow(queries)
    parts = [
        partition.partials(
            partition.evaluate_partition(p, ["EvidenceRecall@1", "PerQueryCoverage@1"])
        )
        for p in split(table, 2)
    ]
    means = partition.combine(parts)
    assert means["EvidenceRecall@1"] == pytest.approx(2 / 4)  # 1 + 1 covered of 1 + 3 spans
    assert means["PerQueryCoverage@1"] == pytest.approx((1 + 1 / 3) / 2)


def test_native_jsonl_read_as_an_engine_would(tmp_path: Path) -> None:
    """A native file read by a JSON reader with the partition schema (DuckDB's here, as Spark's
    would): relevant_ids merged with relevance (relevance wins), the header record dropped."""
    lines = [
        {"rageval_run": {"name": "n"}},
        {
            "query_id": "a",
            "retrieved": [
                {"doc_id": "x", "text": "the cat sat", "score": 0.9},
                {"doc_id": "y", "text": "a dog ran"},
            ],
            "relevant_ids": ["x", "y"],
            "relevance": {"y": 0, "z": 2},
            "evidence": ["dog ran"],
        },
        {
            "query_id": "b",
            "retrieved": [{"doc_id": "z"}, {"doc_id": "z"}, {"doc_id": "w", "score": 0.1}],
            "relevant_ids": ["z"],
        },
        {"query_id": "c", "retrieved": None, "relevance": {"q": 1}},
        {"query_id": "d", "retrieved": [], "relevant_ids": []},
        {"query_id": "e", "retrieved": [{"doc_id": "x", "text": "the cat"}], "evidence": ["cat"]},
    ]
    path = tmp_path / "n.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    con = duckdb.connect()
    table = con.sql(
        "SELECT * FROM read_json($path, format = 'newline_delimited', columns = {"
        "query_id: 'VARCHAR', retrieved: 'STRUCT(doc_id VARCHAR, text VARCHAR, score DOUBLE)[]',"
        "relevance: 'MAP(VARCHAR, BIGINT)', relevant_ids: 'VARCHAR[]', evidence: 'VARCHAR[]'})"
        " WHERE query_id IS NOT NULL",
        params={"path": str(path)},
    ).to_arrow_table()
    assert table.num_rows == 5
    metrics = ["P@2", "R@2", "nDCG@2", "AP", "NumRel", "EvidenceRecall@2", "BestRank"]
    for settings in ({"relevance": "ids", "complete": True}, {"relevance": "ids"}):
        with open_file_in_scratch_store([path]) as store:
            report = evaluate(
                load_run_data(store, store.runs()[0].run_id), metrics, store=store, **settings
            )
        for parts in (1, 2, 5):
            means, _ = run_split(table, parts, metrics, **settings)
            assert_same(means, report.metrics)
    # a's y is judged 0 (relevance wins over relevant_ids) and z counts as relevant unretrieved
    assert report.per_query["R@2"][0] == pytest.approx(1 / 2)


def test_combine_edge_cases() -> None:
    """No scored query: NaN for a mean, 0 for a count; empty partitions change nothing."""
    queries = [Query("a", (Chunk("d1", "text"),), relevance=None)]
    table = partition.to_arrow(queries)
    per_query = partition.evaluate_partition(
        table, ["P@5", "NumQ", "EvidenceRecall@5"], relevance="ids"
    )
    empty = partition.evaluate_partition(
        table.slice(0, 0), ["P@5", "NumQ", "EvidenceRecall@5"], relevance="ids"
    )
    assert empty.num_rows == 0
    means = partition.combine([partition.partials(per_query), partition.partials(empty)])
    assert (
        math.isnan(means["P@5"]) and means["NumQ"] == 0.0 and math.isnan(means["EvidenceRecall@5"])
    )
    assert partition.combine([]) == {}


def test_evaluate_batches_is_the_engine_function() -> None:
    table = partition.to_arrow(QUERIES)
    metrics = ["nDCG@5", "EvidenceRecall@5"]
    batches = table.to_batches(max_chunksize=13)
    assert len(batches) > 5
    out = list(partition.evaluate_batches(iter(batches), metrics, relevance="ids"))
    assert len(out) == len(batches) and all(b.schema.equals(partition.PARTIAL_SCHEMA) for b in out)
    rows = list(partition.evaluate_batches(iter(batches), metrics, per_query=True, relevance="ids"))
    schema = partition.per_query_schema(metrics, relevance="ids")
    assert schema.names == ["query_id", "nDCG@5", "EvidenceRecall@5", "weight:EvidenceRecall@5"]
    assert all(b.schema.equals(schema) for b in rows)
    assert sum(b.num_rows for b in rows) == table.num_rows
    whole = partition.combine(
        [
            partition.partials(
                partition.evaluate_partition(table, metrics, relevance="ids", threads=2)
            )
        ]
    )
    assert_same(partition.combine(out), whole)


def test_large_arrow_types_are_accepted() -> None:
    table = partition.to_arrow(QUERIES[:20])
    chunk = pa.struct(
        [("doc_id", pa.large_string()), ("text", pa.large_string()), ("score", pa.float32())]
    )
    large = table.cast(
        pa.schema(
            [
                pa.field("query_id", pa.large_string()),
                pa.field("retrieved", pa.large_list(chunk)),
                pa.field("relevance", pa.map_(pa.large_string(), pa.int32())),
                pa.field("relevant_ids", pa.large_list(pa.large_string())),
                pa.field("evidence", pa.large_list(pa.large_string())),
            ]
        )
    )
    metrics = ["AP", "EvidenceRecall@3"]
    # float32 scores round differently: compare without a score cut, where they do not matter
    assert_same(
        partition.combine(
            [partition.partials(partition.evaluate_partition(large, metrics, relevance="ids"))]
        ),
        partition.combine(
            [partition.partials(partition.evaluate_partition(table, metrics, relevance="ids"))]
        ),
    )


def test_bad_rows_are_reported_with_their_place() -> None:
    rows = pa.Table.from_pydict(
        {
            "query_id": ["a", "a", ""],
            "retrieved": [
                [{"doc_id": "x", "text": None, "score": float("nan")}],
                [{"doc_id": "", "text": "t", "score": 1.0}],
                [],
            ],
            "relevance": [[("x", 1)], None, None],
            "relevant_ids": [None, ["", "y"], None],
            "evidence": [["ok", ""], None, None],
        },
        schema=partition.INPUT_SCHEMA.remove(0).insert(0, pa.field("query_id", pa.string())),
    )
    with pytest.raises(InputError) as err:
        partition.evaluate_partition(rows, ["P@1"], relevance="ids", source="part-3")
    text = str(err.value)
    for expected in (
        "part-3:3: query_id: missing or empty",
        "part-3:2: query_id: duplicate 'a' (first on row 1)",
        "part-3:2: retrieved[0].doc_id: missing or empty",
        "part-3:1: retrieved[0].score: not a finite number",
        "part-3:2: relevant_ids[0]: expected a non-empty string",
        "part-3:1: evidence[1]: expected a non-empty string",
    ):
        assert expected in text
    with pytest.raises(UsageError, match="retrieved"):
        partition.evaluate_partition(pa.table({"query_id": ["a"]}), ["P@1"], relevance="ids")
    with pytest.raises(UsageError, match="evidence"):
        partition.evaluate_partition(
            rows.set_column(4, "evidence", pa.array([1, 2, 3])), ["P@1"], relevance="ids"
        )


def test_plan_refuses_what_a_partition_cannot_decide() -> None:
    with pytest.raises(UsageError, match="relevance"):
        partition.plan(["P@5"])  # ids or evidence depends on the whole run
    with pytest.raises(UsageError, match="not computed per partition"):
        partition.plan(["TokenF1"], relevance="ids")
    with pytest.raises(UsageError, match="at least one"):
        partition.plan([])
    assert partition.plan(["EvidenceRecall@5"])[1].relevance is None  # no ranking: fine
    assert partition.default_metrics(5, "ids") == [
        "P@5",
        "R@5",
        "RR",
        "AP",
        "nDCG@5",
        "Hit@5",
        "Rprec",
        "EvidenceRecall@5",
        "PerQueryCoverage@5",
        "FullCoverageRate@5",
        "ContextCoverage",
        "BestRank",
    ]


def test_the_numbers_guard_equals_evaluate() -> None:
    """The guard (on by default) in a partition: the near-duplicate with another figure covers
    nothing, as evaluate() rules on a stored run; with it off both agree again, and differ."""
    gold = "the default block size is 128 megabytes (128MB)"
    queries = [
        Query(
            query_id=f"q{i}",
            retrieved=(
                Chunk("near", "The default block size is 32 megabytes (32MB).", 0.9),
                Chunk("same", "default block size: 128 megabytes (128MB), set in hdfs", 0.5)
                if i % 2
                else Chunk("other", "no figure here at all", 0.5),
            ),
            evidence=(gold, "no figure") if i % 3 == 0 else (gold,),
        )
        for i in range(9)
    ]
    store, data = stored(queries)
    table = partition.to_arrow(queries)
    metrics = ["RR", "Hit@1", *EVIDENCE_METRICS]
    got = {}
    for guard in (True, False):
        report = evaluate(
            data, metrics, store=store, relevance="evidence", numbers_must_match=guard
        )
        means, _ = run_split(table, 3, metrics, relevance="evidence", numbers_must_match=guard)
        assert_same(means, report.metrics)
        got[guard] = report.metrics
    default, _ = run_split(table, 2, metrics, relevance="evidence")
    assert_same(default, got[True])
    # rank 1 is the near-duplicate in every query: relevant only without the guard
    assert got[True]["Hit@1"] == 0.0 and got[False]["Hit@1"] == 1.0
    assert got[True]["EvidenceRecall@3"] < got[False]["EvidenceRecall@3"]
