"""What the CLI says about itself is true: messages the docs promise, the same on every command."""

from __future__ import annotations

import json
from html import escape

import pytest
from pathlib import Path

from tests.cli import rageval_subprocess


def _many_problems(path: Path, n_bad: int) -> Path:
    lines = [json.dumps({"rageval_run": {"name": "many"}})]
    lines += [json.dumps({"query_id": f"q{i}", "retrieved": "x"}) for i in range(n_bad)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_counts_the_problems_past_the_cap_as_evaluate_does(tmp_path: Path) -> None:
    """docs/formats.md: after 50 problems the rest are only counted (`... and N more problems`)."""
    run = _many_problems(tmp_path / "many.jsonl", 80)
    for command in ("import", "evaluate"):
        done = rageval_subprocess(command, str(run), db=tmp_path / f"{command}.duckdb")
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        lines = done.stderr.splitlines()
        assert sum(": retrieved: expected an array" in line for line in lines) == 50, command
        assert "... and 30 more problems" in lines, (command, lines[-3:])


def test_import_under_the_cap_counts_nothing(tmp_path: Path) -> None:
    run = _many_problems(tmp_path / "few.jsonl", 50)
    done = rageval_subprocess("import", str(run), db=tmp_path / "s.duckdb")
    assert done.returncode == 2
    assert "more problems" not in done.stderr
    assert sum(": retrieved: expected an array" in x for x in done.stderr.splitlines()) == 50


SPAN = "The committee approved the new budget for the city library"


def lenient_run(path: Path) -> Path:
    """4 queries whose span a non-relevant chunk at rank 1 covers (the relevant one is at rank
    2), and 2 with qrels but no gold spans, their relevant chunk at rank 1."""
    header = {"rageval_run": {"name": "lenient"}}
    lenient = [
        {
            "query_id": f"q{i}",
            "query": "what was approved?",
            "retrieved": [
                {"doc_id": "wrong", "text": SPAN + ".", "score": 0.9},
                {"doc_id": "right", "text": "unrelated words only", "score": 0.5},
            ],
            "relevant_ids": ["right"],
            "evidence": [SPAN],
        }
        for i in range(4)
    ]
    plain = [
        {
            "query_id": f"x{i}",
            "query": "q",
            "retrieved": [{"doc_id": "right", "text": "words", "score": 0.9}],
            "relevant_ids": ["right"],
        }
        for i in range(2)
    ]
    path.write_text("\n".join(json.dumps(r) for r in [header, *lenient, *plain]) + "\n")
    return path


def test_the_lenient_warning_speaks_about_the_numbers_shown(tmp_path: Path) -> None:
    run = lenient_run(tmp_path / "lenient.jsonl")
    done = rageval_subprocess("evaluate", str(run), "--k", "1", "--json", db=tmp_path / "a.duckdb")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["metrics"]["R@1"] == 2 / 6 and report["metrics"]["EvidenceRecall@1"] == 1.0
    (warning,) = report["warnings"]
    # the check's R@1 is over 4 queries, the report's over 6: both said, with their queries
    assert "R@1 = 0.000 on the 4 queries scored on relevant ids and on gold evidence" in warning
    assert "the reported R@1, 0.333, is over all 6 scored on relevant ids" in warning
    text = rageval_subprocess("evaluate", str(run), "--k", "1", db=tmp_path / "b.duckdb")
    assert f"warning: {warning}" in text.stdout.splitlines()
    # metrics that hold neither EvidenceRecall@k nor R@k: no lenient warning about them (P@5
    # exceeds the depth of 2: that the report says)
    for metrics in ("P@5 nDCG@10 RR", "P@1 R@5"):
        other = rageval_subprocess(
            "evaluate",
            str(run),
            "--k",
            "1",
            "--metrics",
            metrics,
            "--json",
            db=tmp_path / "c.duckdb",
        )
        assert other.returncode == 0, other.stderr
        (said,) = json.loads(other.stdout)["warnings"]
        assert "this run's depth of 2" in said and "lenient" not in said, metrics


def shallow_run(path: Path, depth: int = 4) -> Path:
    """3 queries with `depth` chunks each; d0 (rank 1) is relevant, and d9 that no list holds."""
    chunks = [{"doc_id": f"d{j}", "text": f"chunk {j}"} for j in range(depth)]
    lines = [json.dumps({"rageval_run": {"name": "shallow"}})]
    lines += [
        json.dumps({"query_id": f"q{i}", "retrieved": chunks, "relevant_ids": ["d0", "d9"]})
        for i in range(3)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


DEPTH_WARNING = (
    "the cut-off k = 10 exceeds this run's depth of 4 (its longest ranked list): no query has a chunk at "
    "ranks 5 to 10, which every @10 measure reads as not relevant, as trec_eval does"
)


def test_k_beyond_the_depth_is_said_by_evaluate_and_report(tmp_path: Path) -> None:
    """The default k (10) on a depth-4 run: P@10 = 1/10, not P@4, and one note says why."""
    run = shallow_run(tmp_path / "shallow.jsonl")
    db = tmp_path / "s.duckdb"
    done = rageval_subprocess("evaluate", str(run), "--json", db=db)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["settings"]["k"] == 10
    assert report["metrics"]["P@10"] == pytest.approx(1 / 10) and report["metrics"]["R@10"] == 0.5
    assert report["warnings"] == [DEPTH_WARNING]
    text = rageval_subprocess("evaluate", str(run), db=db)
    assert f"warning: {DEPTH_WARNING}" in text.stdout.splitlines()
    assert rageval_subprocess("import", str(run), db=db).returncode == 0
    out = tmp_path / "report.html"
    html = rageval_subprocess("report", "shallow", "--out", str(out), db=db)
    assert html.returncode == 0, html.stderr
    assert f"Warning (shallow): {escape(DEPTH_WARNING)}." in out.read_text()
    # two cut-offs beyond the depth: both named, and the ranks up to the larger
    two = rageval_subprocess("evaluate", str(run), "--metrics", "P@5 P@20 R@4", "--json", db=db)
    (warning,) = json.loads(two.stdout)["warnings"]
    assert warning.startswith("the cut-offs k = 5, 20 exceed this run's depth of 4")
    assert "ranks 5 to 20, which every @5, @20 measure" in warning


def test_k_within_the_depth_says_nothing(tmp_path: Path) -> None:
    run = shallow_run(tmp_path / "shallow.jsonl")
    for args in (("--k", "4"), ("--k", "3")):
        done = rageval_subprocess("evaluate", str(run), *args, "--json", db=tmp_path / "s.duckdb")
        assert done.returncode == 0, done.stderr
        assert "warnings" not in json.loads(done.stdout), args
    deep = shallow_run(tmp_path / "deep.jsonl", depth=10)
    done = rageval_subprocess("evaluate", str(deep), "--json", db=tmp_path / "d.duckdb")
    assert "warnings" not in json.loads(done.stdout)


def test_compare_says_the_depth_note_of_the_run_it_concerns(tmp_path: Path) -> None:
    """compare at the default k: the depth-4 run gets evaluate's note, in evaluate's words, in
    the text and the JSON; the depth-10 run it is compared with gets none (nor at k = 4)."""
    db = tmp_path / "s.duckdb"
    shallow = shallow_run(tmp_path / "shallow.jsonl")
    deep = tmp_path / "deep.jsonl"
    deep.write_text(
        shallow_run(tmp_path / "d.jsonl", depth=10).read_text().replace('"shallow"', '"deep"')
    )
    assert rageval_subprocess("import", str(deep), str(shallow), db=db).returncode == 0
    done = rageval_subprocess("compare", "deep", "shallow", "--json", db=db)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["warnings"] == {"shallow": [DEPTH_WARNING]}
    text = rageval_subprocess("compare", "deep", "shallow", db=db).stdout.splitlines()
    assert f"warning: shallow: {DEPTH_WARNING}" in text
    assert not any(line.startswith("warning: deep") for line in text)
    within = rageval_subprocess("compare", "deep", "shallow", "--k", "4", "--json", db=db)
    assert within.returncode == 0 and "warnings" not in json.loads(within.stdout)
