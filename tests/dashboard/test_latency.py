"""Latency & cost page: the numbers shown are the core's, and missing facts get a message."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard.components.text import escape_text
from rageval_core.store import Store
from tests.cli import import_files

REPO = Path(__file__).resolve().parents[2]
PAGE = "latency.py"


def frame_with(at: AppTest, *columns: str) -> pd.DataFrame:
    """The one dataframe on the page whose first columns are these."""
    found = [
        d.value for d in at.dataframe if list(d.value.columns[: len(columns)]) == list(columns)
    ]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def stored_latencies(db: Path, run: str, stage: str) -> np.ndarray:
    """The run's latencies of one stage, read back from the store query by query."""
    with Store(db) as store:
        values = [q.latency_ms[stage] for q in store.iter_queries(run) if stage in q.latency_ms]
    return np.asarray(values, dtype=np.float64)


def import_run(tmp_path: Path, name: str, records: list[dict]) -> Path:  # type: ignore[type-arg]
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    db = tmp_path / f"{name}.duckdb"
    import_files(db, path)
    return db


def small_run(latency: bool, tokens: bool, prices: bool, name: str = "small") -> list[dict]:  # type: ignore[type-arg]
    header: dict = {"name": name}  # type: ignore[type-arg]
    if prices:
        header["prices_per_1k"] = {"prompt": 0.5, "completion": 1.5}
    out: list[dict] = [{"rageval_run": header}]  # type: ignore[type-arg]
    for i in range(6):
        q: dict = {  # type: ignore[type-arg]
            "query_id": f"q{i}",
            "query": f"question {i}",
            "retrieved": [{"doc_id": f"d{i}", "text": f"text {i}"}, {"doc_id": "dx", "text": "x"}],
            "relevance": {f"d{i}": 1} if i % 2 else {"dz": 1},
            "tags": {"kind": "odd" if i % 2 else "even"},
        }
        if latency:
            q["latency_ms"] = {"retrieval": 10.0 + i, "generation": 100.0 * (i + 1)}
        if tokens:
            q["tokens"] = {"prompt": 1000 + i, "completion": 10 * i}
        out.append(q)
    return out


@pytest.mark.parametrize("run", ["bm25", "hybrid_rerank"])
def test_percentiles_equal_numpy_on_the_stored_latencies(
    make_app: Callable[..., AppTest], app_db: Path, run: str
) -> None:
    at = make_app(PAGE, run=run)
    assert not at.exception, [e.value for e in at.exception]
    table = frame_with(at, "stage", "queries", "p50").set_index("stage")
    for stage in ("total", "retrieval", "generation"):
        ms = stored_latencies(app_db, run, stage)
        assert ms.size == 360
        row = table.loc[stage]
        assert row["queries"] == ms.size
        for p in (50, 90, 95, 99):
            assert row[f"p{p}"] == pytest.approx(np.percentile(ms, p), rel=1e-12), (stage, p)
        assert row["mean"] == pytest.approx(ms.mean(), rel=1e-12)
    # hybrid_rerank has a rerank stage, bm25 does not
    assert ("rerank" in table.index) == (run == "hybrid_rerank")


def test_tokens_and_cost_match_the_stored_counts(
    make_app: Callable[..., AppTest], app_db: Path
) -> None:
    at = make_app(PAGE, run="tfidf_char")
    assert not at.exception
    with Store(app_db) as store:
        record = store.run("tfidf_char")
        queries = list(store.iter_queries("tfidf_char"))
    prompt = np.array([q.tokens["prompt"] for q in queries], dtype=np.float64)
    completion = np.array([q.tokens["completion"] for q in queries], dtype=np.float64)
    tokens = frame_with(at, "kind", "queries", "mean", "total").set_index("kind")
    assert tokens.loc["prompt", "total"] == prompt.sum()
    assert tokens.loc["completion", "mean"] == pytest.approx(completion.mean())
    expected = (
        prompt * record.price_prompt_per_1k + completion * record.price_completion_per_1k
    ) / 1000
    shown = {m.label: m.value for m in at.metric}
    assert shown["Total cost"] == f"${expected.sum():,.4f}"
    assert shown["Cost per query (mean)"] == f"${expected.mean():,.6f}"
    per_query = frame_with(at, "query_id", "total_ms")
    assert per_query["cost_usd"].to_numpy() == pytest.approx(expected)
    assert list(per_query["query_id"]) == [q.query_id for q in queries]


def test_by_tag_table_is_the_core_breakdown(make_app: Callable[..., AppTest], app_db: Path) -> None:
    at = make_app(PAGE, run="bm25")
    at.selectbox(key="latency.by").set_value("query_type").run()
    at.selectbox(key="latency.by_stage").set_value("total").run()
    assert not at.exception
    by = frame_with(at, "tag", "value", "stage")
    assert set(by["stage"]) == {"total"}
    with Store(app_db) as store:
        queries = list(store.iter_queries("bm25"))
    for value, row in by.set_index("value").iterrows():
        ms = np.array(
            [q.latency_ms["total"] for q in queries if q.tags.get("query_type", "(none)") == value]
        )
        assert row["queries"] == ms.size
        assert row["p95"] == pytest.approx(np.percentile(ms, 95), rel=1e-12)
    assert by["queries"].sum() == len(queries)


def test_scatter_uses_the_chosen_metric_and_tag(make_app: Callable[..., AppTest]) -> None:
    at = make_app(PAGE, run="bm25", k="5")
    metric = at.selectbox(key="latency.metric")
    # by default a measure without a cut-off: a k move leaves the scatter as it was
    assert "nDCG@5" in metric.options and metric.value == "AP"
    chart = at.get("plotly_chart")[-1].proto.spec
    at.sidebar.slider(key="k").set_value(4).run()
    assert not at.exception and at.selectbox(key="latency.metric").value == "AP"
    assert at.get("plotly_chart")[-1].proto.spec == chart
    at.sidebar.slider(key="k").set_value(5).run()
    at.selectbox(key="latency.metric").set_value("RR").run()
    at.selectbox(key="latency.tag").set_value("source").run()
    assert not at.exception
    assert any("360 queries at k = 5" in c.value for c in at.caption)
    # a measure at k follows a k move (nDCG@5 -> nDCG@3), and its scatter with it
    at.selectbox(key="latency.metric").set_value("nDCG@5").run()
    at.sidebar.slider(key="k").set_value(3).run()
    assert not at.exception
    assert at.selectbox(key="latency.metric").value == "nDCG@3"
    title = json.loads(at.get("plotly_chart")[-1].proto.spec)["layout"]["title"]["text"]
    assert title == f"Latency against {escape_text('nDCG@3')}"


def test_run_without_latency_or_tokens_says_so(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    db = import_run(tmp_path, "bare", small_run(latency=False, tokens=False, prices=False))
    at = make_app(PAGE, db=db)
    assert not at.exception, [e.value for e in at.exception]
    infos = " ".join(i.value for i in at.info)
    assert "This run has no latency" in infos
    assert "This run has no token counts" in infos
    assert not [d for d in at.dataframe if "p95" in d.value.columns]


def test_tokens_without_prices_say_the_price_is_missing(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    db = import_run(tmp_path, "unpriced", small_run(latency=True, tokens=True, prices=False))
    at = make_app(PAGE, db=db)
    assert not at.exception, [e.value for e in at.exception]
    infos = " ".join(i.value for i in at.info)
    assert "No price for prompt and completion tokens" in infos
    shown = {m.label: m.value for m in at.metric}
    assert shown["Total cost"] == "—"
    # token counts are still shown; no total stage: the scatter sums the stages and says so
    tokens = frame_with(at, "kind", "queries", "mean", "total").set_index("kind")
    assert tokens.loc["prompt", "total"] == sum(1000 + i for i in range(6))
    per_query = frame_with(at, "query_id", "total_ms")
    assert per_query["total_ms"].tolist() == [10.0 + i + 100.0 * (i + 1) for i in range(6)]
    assert per_query["cost_usd"].isna().all()
    assert any("6 without a `total` stage" in c.value for c in at.caption)


def test_priced_small_run_cost(make_app: Callable[..., AppTest], tmp_path: Path) -> None:
    db = import_run(tmp_path, "priced", small_run(latency=True, tokens=True, prices=True))
    at = make_app(PAGE, db=db)
    assert not at.exception
    # by hand: 6 * 1000 * 0.5/1000 + 15 * 0.5/1000 + 10 * 15 * 1.5/1000 = 3 + 0.0075 + 0.225
    expected = sum((1000 + i) * 0.5 / 1000 + 10 * i * 1.5 / 1000 for i in range(6))
    shown = {m.label: m.value for m in at.metric}
    assert shown["Total cost"] == f"${expected:,.4f}" == "$3.2325"


def pipeline_run(n: int, with_total: set[int]) -> list[dict]:  # type: ignore[type-arg]
    """Queries logging embed/search/generate (file order, not alphabetical); the queries in
    with_total also record a total (200 ms more than their stages: it is kept, not re-summed)."""
    out: list[dict] = [{"rageval_run": {"name": "pipe"}}]  # type: ignore[type-arg]
    for i in range(n):
        latency = {"embed": 0.25 + 0.01 * i, "search": 20.0 + i, "generate": 300.0 + 7 * i}
        if i in with_total:
            latency["total"] = sum(latency.values()) + 200.0
        out.append(
            {
                "query_id": f"q{i}",
                "retrieved": [{"doc_id": f"d{i}", "text": "t"}],
                "relevant_ids": [f"d{i}"],
                "latency_ms": latency,
                "tags": {"kind": "odd" if i % 2 else "even"},
            }
        )
    return out


@pytest.mark.parametrize("with_total", [set(), {0, 1, 2}])
def test_a_run_without_total_shows_a_derived_one_in_pipeline_order(
    make_app: Callable[..., AppTest], tmp_path: Path, with_total: set[int]
) -> None:
    db = import_run(tmp_path, "pipe", pipeline_run(10, with_total))
    at = make_app(PAGE, db=db)
    assert not at.exception, [e.value for e in at.exception]
    table = frame_with(at, "stage", "queries", "p50")
    n_derived = 10 - len(with_total)
    label = "total (derived)" if not with_total else f"total ({n_derived} derived)"
    # the stages as the file lists them (not alphabetical), the total last and marked
    assert list(table["stage"]) == ["embed", "search", "generate", label]
    totals = np.array(
        [
            0.25 + 0.01 * i + 20.0 + i + 300.0 + 7 * i + (200.0 if i in with_total else 0.0)
            for i in range(10)
        ]
    )
    row = table.set_index("stage").loc[label]
    assert row["queries"] == 10
    for p in (50, 90, 95, 99):
        assert row[f"p{p}"] == pytest.approx(np.percentile(totals, p), rel=1e-12)
    assert any(f"{n_derived} of 10 queries record no `total`" in c.value for c in at.caption)
    per_query = frame_with(at, "query_id", "total_ms", "total_derived")
    assert per_query["total_ms"].to_numpy() == pytest.approx(totals)
    assert per_query["total_derived"].tolist() == [i not in with_total for i in range(10)]
    assert list(per_query.columns[3:6]) == ["embed_ms", "search_ms", "generate_ms"]
    # the by-tag breakdown opens on the total, not on the first stage
    assert at.selectbox(key="latency.by_stage").value == "total"


def test_a_run_with_recorded_totals_marks_none_derived(
    make_app: Callable[..., AppTest], app_db: Path
) -> None:
    at = make_app(PAGE, run="bm25")
    table = frame_with(at, "stage", "queries", "p50")
    # the sample file's order: retrieval, generation, total (every total recorded)
    assert list(table["stage"]) == ["retrieval", "generation", "total"]
    assert not any("derived" in c.value for c in at.caption)
    assert "total_derived" not in frame_with(at, "query_id", "total_ms").columns
