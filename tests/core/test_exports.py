"""`rageval export --to parquet|mlflow|jsonl` and `rageval compare --table markdown|latex`.

The Parquet table is read back with pyarrow, the MLflow run with MLflow's own client (a local
file store in tmp_path: nothing leaves the machine); both must hold evaluate's numbers.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rageval_core.outputs.exports import mlflow_name
from rageval_core.outputs.paper_tables import latex_escape, markdown_escape
from tests.cli import rageval
from tests.paths import REPO

SAMPLES = [REPO / "sample_runs" / f"{n}.jsonl" for n in ("bm25", "hybrid_rerank")]
HOSTILE = REPO / "tests" / "data" / "xss" / "hostile.jsonl"
METRICS = "P@5 nDCG@10 AP EvidenceRecall@5 BestRank"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exports") / "s.duckdb"
    assert rageval("import", *map(str, SAMPLES), db=path).returncode == 0
    return path


def evaluated(db: Path, run: str) -> dict:
    printed = rageval("evaluate", run, "--metrics", METRICS, "--per-query", "--json", db=db)
    assert printed.returncode == 0, printed.stderr
    return json.loads(printed.stdout)


def test_parquet_per_query_table(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "bm25.parquet"
    r = rageval("export", "bm25", "--to", "parquet", "--out", str(out), "--metrics", METRICS, db=db)
    assert r.returncode == 0, r.stderr
    table = pq.read_table(out)
    expected = evaluated(db, "bm25")
    assert table.column_names == ["query_id", *expected["metrics"]]
    rows = table.to_pylist()
    assert [row["query_id"] for row in rows] == list(expected["per_query"])
    for row in rows:
        for name, value in expected["per_query"][row["query_id"]].items():
            assert row[name] == value, (row["query_id"], name)  # None both where not scored
    assert json.loads(table.schema.metadata[b"rageval.settings"]) == expected["settings"]


def test_mlflow_run_reads_back_with_mlflows_client(db: Path, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    r = rageval(
        "export", "hybrid_rerank", "--to", "mlflow", "--tracking-uri", uri,
        "--experiment", "retrieval", "--metrics", METRICS, "--k", "7", db=db,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.strip().rsplit(" ", 1)[-1]
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    assert client.get_experiment(run.info.experiment_id).name == "retrieval"
    assert run.info.run_name == "hybrid_rerank" and run.info.status == "FINISHED"
    expected = json.loads(
        rageval(
            "evaluate", "hybrid_rerank", "--metrics", METRICS, "--k", "7", "--json", db=db
        ).stdout
    )
    ops = expected["ops"]
    assert run.data.metrics == {
        **{mlflow_name(k): v for k, v in expected["metrics"].items()},
        **{
            f"latency_ms.{stage}.{p}": stats[p]
            for stage, stats in ops["latency_ms"].items()
            for p in ("mean", "p50", "p90", "p95", "p99")
        },
        **{f"tokens.{kind}.total": stats["total"] for kind, stats in ops["tokens"].items()},
        "cost_usd.total": ops["cost_usd"]["total"],
        "cost_usd.per_query": ops["cost_usd"]["per_query"],
    }
    assert "latency_ms.rerank.p95" in run.data.metrics  # the sample run's three stages
    assert run.data.params["k"] == "7" and run.data.params["scorer"] == "partial"
    assert json.loads(run.data.tags["rageval.metric_names"]) == list(expected["metrics"])
    assert {a.path for a in client.list_artifacts(run_id)} == {"per_query.csv", "report.json"}
    folder = Path(client.download_artifacts(run_id, "", str(tmp_path / "got")))
    rows = list(csv.DictReader(io.StringIO((folder / "per_query.csv").read_text())))
    per_query = evaluated(db, "hybrid_rerank")  # at k 10: only the k-free columns compared
    assert len(rows) == len(per_query["per_query"])
    for row in rows:
        want = per_query["per_query"][row["query_id"]]["AP"]
        assert (row["AP"] == "" and want is None) or float(row["AP"]) == want
    report = json.loads((folder / "report.json").read_text())
    assert report["metrics"] == expected["metrics"]


def test_mlflow_names() -> None:
    assert mlflow_name("nDCG@10") == "nDCG_at_10"
    assert mlflow_name("P(rel=2)@5") == "P_rel_2__at_5"
    assert mlflow_name("ROUGE-L") == "ROUGE-L"


def test_jsonl_stays_the_default_and_the_old_form_works(db: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    assert rageval("export", "bm25", "--to", str(old), db=db).returncode == 0
    new = tmp_path / "new.jsonl"
    assert rageval("export", "bm25", "--to", "jsonl", "--out", str(new), db=db).returncode == 0
    assert old.read_bytes() == new.read_bytes() and old.stat().st_size > 0
    missing = rageval("export", "bm25", "--to", "parquet", db=db)
    assert missing.returncode == 2 and "--out" in missing.stderr


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_compare_tables(db: Path, fmt: str) -> None:
    r = rageval("compare", "bm25", "hybrid_rerank", "--metrics", METRICS, "--table", fmt, db=db)
    assert r.returncode == 0, r.stderr
    compared = json.loads(
        rageval("compare", "bm25", "hybrid_rerank", "--metrics", METRICS, "--json", db=db).stdout
    )
    lines = r.stdout.splitlines()
    rows = [ln for ln in lines if ln.startswith(("| a ", "| b ", "a & ", "b & "))]
    assert len(rows) == 2
    for row, run in zip(rows, ("bm25", "hybrid_rerank"), strict=True):
        cells = [c.strip() for c in row.strip("| \\").split("|" if fmt == "markdown" else "&")]
        assert cells[1] == (markdown_escape(run) if fmt == "markdown" else latex_escape(run))
        for cell, m in zip(cells[2:], compared["metrics"], strict=True):
            value = m["means"][run]
            test = m["vs_baseline"]["hybrid_rerank"]
            better = test["diff"] > 0 if m["higher_is_better"] else test["diff"] < 0
            marked = run == "hybrid_rerank" and test["significant"] and better
            assert (("<sup>a</sup>" in cell) or ("$^{a}$" in cell)) == marked, (run, m["metric"])
            assert f"{value:.4f}" in cell
            others = [x["means"][r] for r in ("bm25", "hybrid_rerank") for x in [m]]
            best = max(others) if m["higher_is_better"] else min(others)
            assert (("**" in cell) or ("textbf" in cell)) == (value == best)
    if fmt == "latex":
        assert lines[0] == r"\begin{table}" and r"\end{tabular}" in lines
    assert any("BestRank ↓" in ln or r"BestRank $\downarrow$" in ln for ln in lines)


def test_table_escapes_run_names(tmp_path: Path) -> None:
    assert markdown_escape("a|b*c") == r"a\|b\*c"
    assert latex_escape("50% & $x_1$") == r"50\% \& \$x\_1\$"
    db = tmp_path / "s.duckdb"
    assert rageval("import", *map(str, SAMPLES), db=db).returncode == 0
    hostile = "<script>x</script>|*b*_&%"
    assert rageval("rename", "bm25", hostile, db=db).returncode == 0
    md = rageval(
        "compare", hostile, "hybrid_rerank", "--metrics", "AP", "--table", "markdown", db=db
    )
    assert md.returncode == 0, md.stderr
    assert "| a | \\<script\\>x\\</script\\>\\|\\*b\\*\\_&% |" in md.stdout
    tex = rageval("compare", hostile, "hybrid_rerank", "--metrics", "AP", "--table", "latex", db=db)
    assert tex.returncode == 0, tex.stderr
    assert r"a & <script>x</script>|*b*\_\&\% & " in tex.stdout
