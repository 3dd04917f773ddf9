"""Overview: the cards, curves and breakdown show the core's values at the sidebar's settings."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import plotly.io as pio
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.errors import ProblemLog
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Report, Settings
from rageval_core.formats import read_inputs
from rageval_core.rundata import load_run_data
from rageval_core.store import Store

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_runs" / "bm25.jsonl"  # the first run of app_db: the Overview opens on it


@pytest.fixture(scope="module")
def reference() -> Iterator[Callable[..., Report]]:
    """evaluate() on the same sample file, imported into a store of its own."""
    store = Store(":memory:")
    log = ProblemLog()
    store.import_run(read_inputs([SAMPLE], None, log)[0], log)
    data = load_run_data(store, store.runs()[0].run_id)

    def run(metrics: list[str] | None = None, by: str | None = None, **settings: object) -> Report:
        s = Settings(**{"relevance": "ids", **settings})  # type: ignore[arg-type]
        return evaluate(data, metrics, store=store, settings=s, by=by)

    yield run
    store.close()


def cards(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def expected_cards(report: Report, hit1: float) -> dict[str, str]:
    values = {**report.metrics, "Hit@1": hit1}
    return {name: f"{v:.3f}" for name, v in values.items()}


def figure(at: AppTest, key: str) -> go.Figure:
    """The plotly figure a chart element with this widget key carries."""
    for el in at.get("plotly_chart"):
        if el.proto.id.endswith(key):
            return pio.from_json(el.proto.spec)
    raise AssertionError(f"no chart {key}")


def trace(fig: go.Figure, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the named trace; plotly ships arrays base64-encoded ({"dtype", "bdata"})."""
    t = next(t for t in fig.data if t.name == name)
    return array(t.x), array(t.y)


def array(value: object) -> np.ndarray:
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return np.asarray(value, dtype=np.float64)


def test_cards_match_evaluate_at_defaults(make_app: Callable[..., AppTest], reference) -> None:  # type: ignore[no-untyped-def]
    at = make_app()
    assert not at.exception
    assert at.sidebar.selectbox(key="run").value == "bm25"
    report = reference(k=10, threshold=0.7)
    hit1 = reference(["Hit@1"], k=10).metrics["Hit@1"]
    shown = cards(at)
    assert shown == expected_cards(report, hit1)
    assert {"R@10", "EvidenceRecall@10", "TokenF1"} <= set(shown)  # all three families
    c = report.counts
    caption = " ".join(x.value for x in at.caption)
    assert f"{c['skipped_no_qrels']:,} skipped without qrels" in caption
    assert f"{c['no_evidence']:,} without evidence" in caption
    assert "relevance mode: ids" in caption


def test_bands_follow_the_table(make_app: Callable[..., AppTest], reference) -> None:  # type: ignore[no-untyped-def]
    at = make_app()
    report = reference(k=10, threshold=0.7)
    deltas = {m.label: m.proto.delta for m in at.metric}
    for name, lo, hi in (("R@10", 0.5, 0.8), ("RR", 0.3, 0.7), ("EvidenceRecall@10", 0.5, 0.8)):
        v = report.metrics[name]
        assert deltas[name] == ("good" if v > hi else "poor" if v < lo else ""), name
    assert deltas["P@10"] == "" and deltas["AP"] == ""  # not banded: neutral


def test_cards_follow_the_k_and_threshold_sliders(
    make_app: Callable[..., AppTest], reference
) -> None:  # type: ignore[no-untyped-def]
    at = make_app()
    at.sidebar.slider(key="k").set_value(5).run()
    assert not at.exception
    at5 = reference(k=5, threshold=0.7)
    assert cards(at) == expected_cards(at5, reference(["Hit@1"], k=5).metrics["Hit@1"])
    at.sidebar.slider(key="threshold").set_value(0.55).run()
    assert not at.exception
    moved = reference(k=5, threshold=0.55)
    assert cards(at) == expected_cards(moved, reference(["Hit@1"], k=5).metrics["Hit@1"])
    assert moved.metrics["EvidenceRecall@5"] != at5.metrics["EvidenceRecall@5"]  # it did move


def test_curves_show_evaluate_values(make_app: Callable[..., AppTest], reference) -> None:  # type: ignore[no-untyped-def]
    at = make_app(k="4", threshold="0.6")
    over_k = figure(at, "overview.curves_k")
    for k in (1, 4, 10):
        report = reference([f"R@{k}", f"nDCG@{k}", f"EvidenceRecall@{k}"], k=k, threshold=0.6)
        for name in ("R", "nDCG", "EvidenceRecall"):
            assert trace(over_k, f"{name}@k")[1][k - 1] == pytest.approx(
                report.metrics[f"{name}@{k}"]
            )
    over_t = figure(at, "overview.curves_t")
    x, y = trace(over_t, "EvidenceRecall@4")
    for t in (0.3, 0.6, 0.9):
        i = int(np.argmin(np.abs(x - t)))
        assert y[i] == pytest.approx(
            reference(["EvidenceRecall@4"], k=4, threshold=t).metrics["EvidenceRecall@4"]
        )


def test_a_move_resends_only_the_curves_it_changes(
    make_app: Callable[..., AppTest],
) -> None:
    """Neither curve marks the current setting: a k move sends the curves over k unchanged
    (same spec, same element id: the browser keeps the chart it drew) and a threshold move the
    curves over the threshold; the other chart follows the move (values at k, evidence curves
    at the threshold)."""

    def specs(at: AppTest) -> dict[str, tuple[str, str]]:
        charts = [el.proto for el in at.get("plotly_chart")]
        return {
            key: next((c.spec, c.id) for c in charts if c.id.endswith(key))
            for key in ("overview.curves_k", "overview.curves_t")
        }

    at = make_app(k="6", threshold="0.6")
    before = specs(at)
    at.sidebar.slider(key="k").set_value(7).run()
    assert not at.exception
    after_k = specs(at)
    assert after_k["overview.curves_k"] == before["overview.curves_k"]
    assert after_k["overview.curves_t"] != before["overview.curves_t"]  # values at k = 7
    at.sidebar.slider(key="threshold").set_value(0.4).run()
    assert not at.exception
    after_t = specs(at)
    assert after_t["overview.curves_t"] == after_k["overview.curves_t"]
    assert after_t["overview.curves_k"] != after_k["overview.curves_k"]  # evidence curves
    for key in ("overview.curves_k", "overview.curves_t"):
        assert not figure(at, key).layout.shapes


def test_evidence_mode_draws_ranking_over_the_threshold(
    make_app: Callable[..., AppTest], reference
) -> None:  # type: ignore[no-untyped-def]
    at = make_app(relevance="evidence")
    assert not at.exception
    assert "relevance mode: evidence" in " ".join(x.value for x in at.caption)
    report = reference(k=10, threshold=0.7, relevance="evidence")
    assert cards(at)["R@10"] == f"{report.metrics['R@10']:.3f}"
    x, y = trace(figure(at, "overview.curves_t"), "R@10")
    assert x.size == 21  # ranking metrics relabel per threshold: the coarse grid
    i = int(np.argmin(np.abs(x - 0.5)))
    assert y[i] == pytest.approx(
        reference(["R@10"], threshold=0.5, relevance="evidence").metrics["R@10"]
    )


def test_breakdown_has_one_row_per_tag_value(make_app: Callable[..., AppTest], reference) -> None:  # type: ignore[no-untyped-def]
    at = make_app()
    at.selectbox(key="overview.tag").set_value("query_type").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "query_type" in d.value.columns)
    with SAMPLE.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()][1:]  # after the header record
    values = {r.get("tags", {}).get("query_type") for r in rows}
    assert sorted(table["query_type"]) == sorted(values)
    counts = {v: sum(r.get("tags", {}).get("query_type") == v for r in rows) for v in values}
    assert dict(zip(table["query_type"], table["queries"], strict=True)) == counts
    by = reference(k=10, threshold=0.7, by="query_type").by["groups"]
    for value, recall in zip(table["query_type"], table["R@10"], strict=True):
        expected = by[value]["metrics"]["R@10"]
        assert (np.isnan(recall) and np.isnan(expected)) or recall == pytest.approx(expected)


def test_run_without_evidence_shows_info(make_app: Callable[..., AppTest], tmp_path: Path) -> None:
    run = tmp_path / "plain.jsonl"
    lines = [{"rageval_run": {"name": "plain"}}] + [
        {
            "query_id": f"q{i}",
            "query": f"question {i}",
            "retrieved": [{"doc_id": f"d{i}"}, {"doc_id": f"d{i + 1}"}, {"doc_id": "x"}],
            "relevant_ids": [f"d{i + 1}"],
            "tags": {"kind": "odd" if i % 2 else "even"},
        }
        for i in range(6)
    ]
    run.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    db = tmp_path / "plain.duckdb"
    with Store(db) as store:
        log = ProblemLog()
        store.import_run(read_inputs([run], None, log)[0], log)
    at = make_app(db=db)
    assert not at.exception
    assert any("no gold evidence" in i.value for i in at.info)
    assert not any(el.proto.id.endswith("overview.curves_t") for el in at.get("plotly_chart"))
    shown = cards(at)
    # the default k (10) beyond the depth (3), as the CLI: R@10 equals R@3 here
    assert shown["R@10"] == "1.000" and shown["RR"] == "0.500" and shown["Hit@1"] == "0.000"
    assert not any(name.startswith("EvidenceRecall") for name in shown)
    at.selectbox(key="overview.tag").set_value("kind").run()
    table = next(d.value for d in at.dataframe if {"kind", "queries"} <= set(d.value.columns))
    assert sorted(table["kind"]) == ["even", "odd"] and list(table["queries"]) == [3, 3]
