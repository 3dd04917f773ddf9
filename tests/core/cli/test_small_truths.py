"""Issue 27, point 10 on the command line: what `rageval` prints is what it means (no `None`, no
Python tuple, a misnamed key named with the one it is probably a typo of)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import rageval, rageval_subprocess


def _lines(path: Path, *records: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_evaluate_says_relevance_none_when_the_run_has_neither_qrels_nor_evidence(
    tmp_path: Path,
) -> None:
    bare = _lines(
        tmp_path / "bare.jsonl",
        {"query_id": "q1", "retrieved": [{"doc_id": "d1", "text": "a"}], "answer": "a"},
    )
    r = rageval_subprocess("evaluate", str(bare), db=tmp_path / "s.duckdb")
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0]
    assert "None" not in header
    assert "relevance=none (the run has neither qrels nor gold evidence" in header
    # the honest other case: a run with qrels still says ids
    judged = _lines(
        tmp_path / "judged.jsonl",
        {"query_id": "q1", "retrieved": [{"doc_id": "d1", "text": "a"}], "relevance": {"d1": 1}},
    )
    header = rageval("evaluate", str(judged), db=tmp_path / "s.duckdb").stdout.splitlines()[0]
    assert "relevance=ids (the run's qrels)" in header


def test_show_prints_lists_as_their_items_not_as_python_tuples(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    run = _lines(
        tmp_path / "tagged.jsonl",
        {"rageval_run": {"name": "tagged", "settings": {"top_k": 1}}},
        {
            "query_id": "q1",
            "retrieved": [{"doc_id": "d1", "text": "a"}],
            "relevance": {"d1": 1},
            "tags": {"product": "life", "query_type": "numeric"},
        },
    )
    assert rageval("import", str(run), db=db).returncode == 0
    r = rageval("show", "tagged", db=db)
    assert r.returncode == 0, r.stderr
    rows = dict((*line.split(None, 1), "")[:2] for line in r.stdout.splitlines())
    assert rows["sources"] == str(run)
    assert rows["tag_keys"] == "product, query_type"
    assert rows["settings"] == '{"top_k": 1}'  # an object stays JSON
    assert "('" not in r.stdout and "',)" not in r.stdout
    # --json keeps them as JSON arrays
    facts = json.loads(rageval("show", "tagged", "--json", db=db).stdout)
    assert facts["tag_keys"] == ["product", "query_type"] and facts["sources"] == [str(run)]


def test_a_misnamed_key_is_named_with_the_key_it_is_probably_a_typo_of(tmp_path: Path) -> None:
    run = _lines(
        tmp_path / "typo.jsonl",
        {"rageval_run": {"nmae": "x"}},
        {"query_id": "q1", "retrived": [{"doc_id": "d1"}], "relevance": {"d1": 1}},
        {"query_id": "q2", "retrieved": [{"doc_id": "d1", "txt": "a"}], "extra": 1},
    )
    r = rageval("import", str(run), db=tmp_path / "s.duckdb")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{run}:1: rageval_run.nmae: unknown key, ignored; did you mean name?" in r.stderr
    assert f"{run}:2: retrived: unknown key, ignored; did you mean retrieved?" in r.stderr
    assert f"{run}:2: retrieved: missing" in r.stderr
    assert f"{run}:3: retrieved[].txt: unknown key, ignored; did you mean text?" in r.stderr
    # no guess when nothing is close
    assert f"{run}:3: extra: unknown key, ignored (warning)" in r.stderr


def test_a_misnamed_column_or_repeated_key_gets_the_guess_too(tmp_path: Path) -> None:
    table = tmp_path / "typo.csv"
    table.write_text("query_id,doc_id,rank,txt,weight\nq1,d1,1,a,1\n")
    r = rageval("import", str(table), db=tmp_path / "s.duckdb")
    assert r.returncode == 0, r.stderr
    assert f"{table}:1: txt: unknown column, ignored; did you mean text?" in r.stderr
    assert f"{table}:1: weight: unknown column, ignored (warning)" in r.stderr
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps([{"qa_pair_id": f"QA_{i}", "question": f"q{i}"} for i in range(3)]))
    results = tmp_path / "results.json"
    results.write_text(
        json.dumps(
            [
                {"qa_pair_id": f"QA_{i}", "retrieved_chunks": [], "retreival_time_ms": 3}
                for i in range(3)
            ]
        )
    )
    r = rageval(
        "import", str(results), str(pairs), "--format", "qa_pairs", db=tmp_path / "s.duckdb"
    )
    assert (
        f"{results}:1: retreival_time_ms: unknown key, ignored (3 times); "
        "did you mean retrieval_time_ms?" in r.stderr
    )
