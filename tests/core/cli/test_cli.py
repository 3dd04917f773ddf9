"""The `rageval` command end to end: exit codes, messages, nothing lost.

Called in-process through cli.main (tests/cli.py); the smoke tests at the end run the real
entry point in a child process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import rageval, rageval_subprocess
from tests.paths import REPO


def write_run(path: Path, n: int, name: str | None = None, bad_line: int | None = None) -> Path:
    lines = []
    if name:
        lines.append(json.dumps({"rageval_run": {"name": name, "settings": {"top_k": 2}}}))
    for i in range(n):
        q = {
            "query_id": f"q{i}",
            "query": f"question {i}",
            "retrieved": [{"doc_id": f"d{i}", "text": f"chunk {i}", "score": 0.5}],
            "relevant_ids": [f"d{i}"],
        }
        lines.append("{not json" if bad_line == len(lines) + 1 else json.dumps(q))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_list_show_export(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    run = write_run(tmp_path / "a.jsonl", 5, name="alpha")
    r = rageval("import", str(run), db=db)
    assert r.returncode == 0, r.stderr
    assert "imported: alpha (5 queries" in r.stdout
    again = rageval("import", str(run), db=db)
    assert again.returncode == 0 and "already stored: alpha" in again.stdout
    listed = json.loads(rageval("runs", "--json", db=db).stdout)
    assert [x["name"] for x in listed] == ["alpha"]
    assert listed[0]["n_queries"] == 5 and listed[0]["settings"] == {"top_k": 2}
    shown = rageval("show", "alpha", db=db)
    assert shown.returncode == 0 and "n_queries" in shown.stdout
    out = tmp_path / "back.jsonl"
    assert rageval("export", "alpha", "--to", str(out), db=db).returncode == 0
    exported = [json.loads(x) for x in out.read_text().splitlines()]
    assert exported[0]["rageval_run"]["name"] == "alpha"
    assert [q["query_id"] for q in exported[1:]] == [f"q{i}" for i in range(5)]


def test_bad_file_exit_2_with_position_and_store_untouched(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    good = write_run(tmp_path / "good.jsonl", 3, name="keep")
    assert rageval("import", str(good), db=db).returncode == 0
    bad = write_run(tmp_path / "bad.jsonl", 4, name="broken", bad_line=3)
    r = rageval("import", str(bad), db=db)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "bad.jsonl:3: " in r.stderr
    listed = json.loads(rageval("runs", "--json", db=db).stdout)
    assert [(x["name"], x["n_queries"]) for x in listed] == [("keep", 3)]


def test_unknown_run_and_bad_arguments_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    r = rageval("show", "nope", db=db)
    assert r.returncode == 2 and "nope" in r.stderr and "Traceback" not in r.stderr
    r = rageval("import", str(tmp_path / "missing.jsonl"), db=db)
    assert r.returncode == 2 and "missing.jsonl" in r.stderr and "Traceback" not in r.stderr
    r = rageval("import", "--format", "nosuch", "x", db=db)
    assert r.returncode == 2


def test_rename_and_delete(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert (
        rageval("import", str(write_run(tmp_path / "a.jsonl", 2, name="a")), db=db).returncode == 0
    )
    assert (
        rageval("import", str(write_run(tmp_path / "b.jsonl", 3, name="b")), db=db).returncode == 0
    )
    r = rageval("rename", "a", "b", db=db)
    assert r.returncode == 2 and "b" in r.stderr
    assert rageval("rename", "a", "c", db=db).returncode == 0
    assert rageval("delete", "b", db=db).returncode == 0
    listed = json.loads(rageval("runs", "--json", db=db).stdout)
    assert [x["name"] for x in listed] == ["c"]


@pytest.mark.parametrize(
    "command", ["import", "runs", "show", "rename", "delete", "export", "demo", "dashboard"]
)
def test_every_command_has_help(command: str, tmp_path: Path) -> None:
    r = rageval(command, "--help", db=tmp_path / "s.duckdb")
    assert r.returncode == 0 and "usage: rageval" in r.stdout


def _every_format() -> dict[str, list[Path]]:
    from tests.core.formats.test_roundtrip import EVERY_FORMAT

    return EVERY_FORMAT


@pytest.mark.parametrize(
    "fmt",
    [
        pytest.param(f, marks=[pytest.mark.oracle] if f.startswith("trec") else [])
        for f in sorted(_every_format())
    ],
)
def test_evaluate_works_on_every_format(fmt: str, tmp_path: Path) -> None:
    run, *companion = (str(p) for p in _every_format()[fmt])
    if fmt.startswith("trec"):
        args = ["evaluate", run, "--qrels", *companion]
    else:  # a gold set or QA pairs file comes as a second file
        args = ["evaluate", run, *companion]
    args += ["--json", "--per-query"]
    r = rageval(*args, db=tmp_path / "unused.duckdb")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["n_queries"] > 0 and out["metrics"], out
    assert all(v is None or isinstance(v, float) for v in out["metrics"].values())
    assert len(out["per_query"]) == out["n_queries"]


@pytest.mark.parametrize("name", ["bm25", "tfidf_char", "hybrid_rerank"])
def test_evaluate_every_sample_run_from_the_store(name: str, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(REPO / "sample_runs" / f"{name}.jsonl"), db=db).returncode == 0
    r = rageval("evaluate", name, "--json", "--by", "query_type", db=db)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["settings"]["relevance"] == "ids"
    assert 0.0 < out["metrics"]["nDCG@10"] < 1.0
    assert 0.0 < out["metrics"]["EvidenceRecall@10"] <= 1.0
    assert out["ops"]["latency_ms"]["total"]["count"] == 360
    assert sum(g["n"] for g in out["by"]["groups"].values()) == 360


# --- the real entry point, in child processes ------------------------------------------------------


def test_smoke_import_and_bad_file_through_a_process(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    r = rageval_subprocess("import", str(write_run(tmp_path / "a.jsonl", 3, name="alpha")), db=db)
    assert r.returncode == 0 and "imported: alpha (3 queries" in r.stdout, r.stderr
    bad = rageval_subprocess("import", str(write_run(tmp_path / "bad.jsonl", 3, bad_line=2)), db=db)
    assert bad.returncode == 2 and "bad.jsonl:2:" in bad.stderr and "Traceback" not in bad.stderr
    listed = rageval_subprocess("runs", "--json", db=db)
    assert [x["name"] for x in json.loads(listed.stdout)] == ["alpha"]


def test_smoke_help_through_a_process() -> None:
    r = rageval_subprocess("--help")
    assert r.returncode == 0 and "usage: rageval" in r.stdout
    assert rageval_subprocess("nosuchcommand").returncode == 2


def test_evaluate_prints_a_derived_total_and_sensible_latency_decimals(tmp_path: Path) -> None:
    from tests.core.cli.test_gate_cli import write_pipeline_run

    run = str(write_pipeline_run(tmp_path / "pipe.jsonl", None))
    done = rageval_subprocess("evaluate", run)
    assert done.returncode == 0, done.stderr
    rows = {
        line.split()[0]: line.split()
        for line in done.stdout.split("latency (ms)", 1)[1].splitlines()[3:7]
    }
    # file order, the total last and marked; mean and p50 of embed 5/6 ms, search 20..39 ms,
    # generate 300..330 ms, total their sums (350 ms on average) at about 3 significant digits
    assert list(rows) == ["embed", "search", "generate", "total"]
    assert rows["total"][:4] == ["total", "(derived)", "20", "350.0"]
    assert rows["embed"][1:4] == ["20", "5.50", "5.50"]
    assert rows["search"][2] == "29.5" and rows["generate"][2] == "315.0"
    assert "350.0000" not in done.stdout
    as_json = json.loads(rageval_subprocess("evaluate", run, "--json").stdout)
    total = as_json["ops"]["latency_ms"]["total"]
    assert total["derived"] == 20 and total["mean"] == 350.0
    assert list(as_json["ops"]["latency_ms"]) == ["embed", "search", "generate", "total"]
    # the HTML report marks it too
    html = tmp_path / "report.html"
    done = rageval("report", run, "--out", str(html))
    assert done.returncode == 0, done.stderr
    assert '<td class="text">total (derived)</td>' in html.read_text()
