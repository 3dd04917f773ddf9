"""The Python API (`import rageval as rv`): the README's example runs as written; a run gives the
same numbers whether it comes from its file, from records, from a DataFrame or from a store; bad
records are reported as the CLI reports a bad file; the CLI's gate agrees with rv.gate."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import rageval as rv
from rageval_core.errors import InputError, UsageError
from tests.cli import rageval
from tests.paths import REPO

BM25 = REPO / "sample_runs" / "bm25.jsonl"
HYBRID = REPO / "sample_runs" / "hybrid_rerank.jsonl"


def records(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def same_metrics(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        x, y = a[name], b[name]
        assert (x == y) or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), name


def test_the_readme_example_runs_as_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Python API") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "the README's Python API section has no python block"
    monkeypatch.chdir(REPO)
    exec(compile(code.group(1), "README.md", "exec"), {})
    printed = capsys.readouterr().out.split()
    assert printed, "the example prints nothing"
    expected = rv.evaluate(BM25, k=5).metrics["nDCG@5"]
    assert float(printed[0]) == pytest.approx(expected, abs=1e-12)


def test_a_run_gives_the_same_numbers_from_its_file_its_records_and_a_dataframe() -> None:
    rows = records(BM25)
    table = pd.DataFrame(
        [
            {
                "query_id": q["query_id"],
                "rank": rank,
                "doc_id": c["doc_id"],
                "text": c.get("text"),
                "score": c.get("score"),
                "query": q.get("query"),
                "relevance": json.dumps(q["relevance"]),  # {} too: judged, nothing relevant
                "evidence": json.dumps(q.get("evidence") or []),
                **{f"latency_ms.{stage}": ms for stage, ms in (q.get("latency_ms") or {}).items()},
            }
            for q in rows[1:]
            if q.get("retrieved")
            for rank, c in enumerate(q["retrieved"], 1)
        ]
    )
    with rv.load(BM25) as from_file, rv.load(rows) as from_records, rv.load(table) as from_frame:
        assert from_file.n_queries == from_records.n_queries == 360
        assert from_records.name == "records" and from_frame.name == "table"
        metrics = ["P@5", "R@10", "RR", "AP", "nDCG@10", "EvidenceRecall@5", "FullCoverageRate@10"]
        reports = [
            rv.evaluate(run, metrics, k=5, threshold=0.8)
            for run in (from_file, from_records, from_frame)
        ]
    same_metrics(reports[0].metrics, reports[1].metrics)
    assert all(q.get("retrieved") for q in rows[1:])  # a table cannot hold a query without chunks
    assert from_frame.n_queries == 360
    same_metrics(reports[0].metrics, reports[2].metrics)
    assert reports[0].metrics["nDCG@10"] == rv.evaluate(BM25, ["nDCG@10"]).metrics["nDCG@10"]


def test_bad_records_are_reported_as_a_bad_file_is() -> None:
    good = {"query_id": "q1", "retrieved": [{"doc_id": "d1", "text": "x"}], "relevant_ids": ["d1"]}
    with pytest.raises(InputError) as caught:
        rv.load(
            [
                good,
                {"retrieved": []},
                {"query_id": "q3", "retrieved": [{"doc_id": 7}]},
                {"query_id": "q4", "retrieved": [], "latency_ms": {"total": float("nan")}},
            ]
        )
    shown = [str(p) for p in caught.value.problems if p.severity == "error"]
    assert shown[0] == "records:2: query_id: missing"
    assert shown[1].startswith("records:3: retrieved[0].doc_id: ")
    assert shown[2].startswith("records:4: record: not JSON data")
    with pytest.raises(UsageError, match="cannot load a int"):
        rv.load(42)  # type: ignore[arg-type]


def test_a_stored_run_by_name_and_the_missing_one(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(BM25), db=db).returncode == 0
    with rv.load("bm25", db=db) as stored, rv.load(BM25) as from_file:
        same_metrics(rv.evaluate(stored).metrics, rv.evaluate(from_file).metrics)
    with pytest.raises(UsageError, match="nope"):
        rv.load("nope", db=db)
    with pytest.raises(UsageError, match="no such file"):
        rv.load("runs/nope.jsonl", db=db)


def test_compare_and_gate_agree_with_the_cli(tmp_path: Path) -> None:
    with rv.load(BM25) as bm25, rv.load(HYBRID) as hybrid:
        comparison = rv.compare([bm25, hybrid], ["nDCG@10", "RR"], n_worst=0)
    by_files = rv.compare([BM25, HYBRID], ["nDCG@10", "RR"], n_worst=0)
    assert comparison.to_json() == by_files.to_json()
    as_text = rv.gate(comparison, max_drop="nDCG@10=0.01,RR=0.02")
    as_mapping = rv.gate(comparison, max_drop={"nDCG@10": 0.01, "RR": 0.02})
    assert as_text.to_json() == as_mapping.to_json()
    cli = rageval(
        "gate",
        "--baseline",
        str(BM25),
        "--candidate",
        str(HYBRID),
        "--max-drop",
        "nDCG@10=0.01,RR=0.02",
        "--json",
        db=tmp_path / "s.duckdb",
    )
    assert cli.returncode == (0 if as_text.passed else 1)
    assert json.loads(cli.stdout) == json.loads(json.dumps(as_text.to_json()))
    with pytest.raises(UsageError, match="no rule"):
        rv.gate(comparison)
