"""RunData loaded as Arrow columns equals the run rebuilt from its Query objects; the ops read
lazily (Deferred) and the breakdown regrouped from a report equal their eager definitions."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from rageval_core.metrics import latency_cost as ops
from rageval_core.errors import ProblemLog
from rageval_core.evaluation.evaluate import evaluate, with_breakdown
from rageval_core.evaluation.report import Settings
from rageval_core.latency.run_summary import Deferred
from rageval_core.importing import import_paths
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store

REPO = Path(__file__).resolve().parents[2]


def tricky_queries() -> list[Query]:
    """A repeated document (labelled at its first rank only), negative and graded labels,
    missing scores and texts, a judged-only query, tags and stages some queries lack."""
    return [
        Query(
            "q0",
            (Chunk("a", "t", 0.9), Chunk("b", None, None), Chunk("a", "t", 0.5)),
            relevance={"a": 2, "b": -1},
            evidence=("t",),
            latency_ms={"retrieve": 1.5, "total": 9.0},
            tokens={"prompt": 10, "completion": 2},
            tags={"kind": "x", "src": "s1"},
        ),
        Query(
            "q1",
            (Chunk("c", "u", None),),
            relevance={"z": 1},
            latency_ms={"rerank": 3.25},
            tags={"src": "s2"},
        ),
        Query("q2", None, relevance={"a": 1}, evidence=("v", "w")),
        Query("q3", (), tags={"kind": "y"}, tokens={"completion": 7}),
    ]


def rebuilt(store: Store, run: str) -> dict[str, object]:
    """The arrays load_run_data promises, rebuilt query by query from the model objects."""
    qs = list(store.iter_queries(run))
    depth = max(len(q.retrieved or ()) for q in qs)
    n = len(qs)
    labels = np.zeros((n, depth), np.int32)
    scores = np.full((n, depth), np.nan)
    tags: dict[str, list[object]] = {}
    latency, tokens = [], []
    for i, q in enumerate(qs):
        seen = set()
        for r, c in enumerate(q.retrieved or ()):
            if c.doc_id not in seen:
                labels[i, r] = max((q.relevance or {}).get(c.doc_id, 0), 0)
                seen.add(c.doc_id)
            if c.score is not None:
                scores[i, r] = c.score
        for key, value in q.tags.items():
            tags.setdefault(key, [None] * n)[i] = value
        latency += [(i, stage, ms) for stage, ms in q.latency_ms.items()]
        if q.latency_ms and "total" not in q.latency_ms:  # derived: the sum of the stages
            latency.append((i, "total", sum(q.latency_ms.values())))
        tokens += [(i, kind, count) for kind, count in q.tokens.items()]
    return {
        "ids": [q.query_id for q in qs],
        "labels": labels,
        "scores": scores,
        "n_ret": [len(q.retrieved or ()) for q in qs],
        "n_spans": [len(q.evidence) for q in qs],
        "in_run": [q.retrieved is not None for q in qs],
        "has_qrels": [q.relevance is not None for q in qs],
        "tags": tags,
        "latency": sorted(latency),
        "tokens": sorted(tokens),
    }


def test_load_run_data_equals_the_query_objects() -> None:
    with Store(":memory:") as store:
        store.import_run(
            ParsedRun(RunInfo(name="r"), tricky_queries(), "native", ("r.jsonl",)), ProblemLog()
        )
        data = load_run_data(store, "r")
        want = rebuilt(store, "r")
    assert data.query_ids.dtype == object and data.query_ids.tolist() == want["ids"]
    np.testing.assert_array_equal(data.labels, want["labels"])
    assert data.labels[0].tolist() == [2, 0, 0]  # "a" again at rank 3: not found twice
    np.testing.assert_array_equal(data.chunk_score, want["scores"])
    assert data.n_ret.tolist() == want["n_ret"] and data.n_spans.tolist() == want["n_spans"]
    assert data.in_run.tolist() == want["in_run"] and data.has_qrels.tolist() == want["has_qrels"]
    assert list(data.tags) == list(want["tags"])  # type: ignore[arg-type]
    for key, values in want["tags"].items():  # type: ignore[attr-defined]
        assert data.tags[key].dtype == object and data.tags[key].tolist() == values
    got_latency = sorted(
        zip(
            data.latency_q.tolist(),
            data.latency_stage.tolist(),
            data.latency_ms.tolist(),
            strict=True,
        )
    )
    got_tokens = sorted(
        zip(data.tokens_q.tolist(), data.tokens_kind.tolist(), data.tokens_n.tolist(), strict=True)
    )
    assert got_latency == want["latency"] and got_tokens == want["tokens"]
    assert data.latency_stage.dtype.kind == "U" and data.tokens_kind.dtype.kind == "U"


def test_an_empty_run_loads() -> None:
    with Store(":memory:") as store:
        store.import_run(
            ParsedRun(RunInfo(name="e"), [Query("q", ())], "native", ("e.jsonl",)), ProblemLog()
        )
        data = load_run_data(store, "e")
    assert data.n_queries == 1 and data.tags == {} and data.latency_stage.size == 0


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("rd") / "s.duckdb"
    with Store(db) as store:
        import_paths(store, [REPO / "sample_runs" / "hybrid_rerank.jsonl"])
    return db


def test_lazy_ops_equal_the_eager_summaries(sample: Path) -> None:
    with Store(sample) as store:
        data = load_run_data(store, "hybrid_rerank")
        report = evaluate(data, store=store, settings=Settings(k=5), by="query_type")
        assert isinstance(report.ops, Deferred)
        assert "latency_ms" in report.ops and "nope" not in report.ops  # without computing
        # the eager definition, straight from ops on the long rows
        eager = {
            "latency_ms": ops.latency_summary(
                data.latency_stage, data.latency_ms, derived=data.latency_derived
            ),
            "tokens": ops.token_summary(data.tokens_kind, data.tokens_n),
        }
        assert dict(report.ops)["latency_ms"] == eager["latency_ms"]
        assert report.ops["tokens"] == eager["tokens"]
        assert report.ops["cost_usd"]["n_queries_with_tokens"] == data.n_queries
        values = data.tags["query_type"]
        for group, entry in report.by["groups"].items():  # type: ignore[index]
            mask = np.array([(v if v is not None else ops.NO_TAG) == group for v in values])
            assert entry["n"] == int(mask.sum())
            lat_rows = mask[data.latency_q]
            assert entry["latency_ms"] == ops.latency_summary(
                data.latency_stage[lat_rows],
                data.latency_ms[lat_rows],
                derived=data.latency_derived[lat_rows],
            )
            assert list(entry) == ["n", "metrics", "latency_ms", "tokens", "cost_usd"]
        # a pickle (st.cache_data) or a JSON holds plain dicts
        back = pickle.loads(pickle.dumps(report))
        assert type(back.ops) is dict and back.ops == report.ops
        assert report.to_json()["ops"] == ops.to_json_value(dict(report.ops))


def test_with_breakdown_equals_evaluate_by(sample: Path) -> None:
    with Store(sample) as store:
        data = load_run_data(store, "hybrid_rerank")
        s = Settings(k=3, threshold=0.6, relevance="evidence")
        direct = evaluate(data, store=store, settings=s, by="source")
        regrouped = with_breakdown(data, evaluate(data, store=store, settings=s), "source")
    assert regrouped.metrics == direct.metrics
    assert regrouped.to_json() == direct.to_json()
    assert "EvidenceRecall@3" in regrouped.weights  # pooled: its weights travel with the report
