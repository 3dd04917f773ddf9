"""Labels out and in (issue 31, point 7) and kept through what happens to a run (point 1):
`export --to qrels` writes the labels that count, `attach --labels FILE --annotator NAME` brings
grades made elsewhere, and nothing labelled is lost when a run is renamed, re-imported,
deleted and imported again, or its qrels attached."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rageval_core.store import Store
from rageval_core.store.ground_truth import add_span, added_spans, grade_rows, set_grades
from tests.cli import rageval
from tests.trec_files import write_run_and_qrels

METRICS = "P@5,R@10,RR,AP,nDCG@10,Judged@10,Bpref"


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A TREC run of 15 queries and qrels for q0..q9."""
    return write_run_and_qrels(
        tmp_path, seed=4, queries=15, judged=10, docs=30, depth=10, per_query=6
    )


def _grades(db: Path, run: Path) -> list[tuple[str, str, int]]:
    """People's grades on retrieved documents of q1, q3 (imported qrels) and q12, q14 (none)."""
    rnd = random.Random(9)
    lines = [line.split() for line in run.read_text().splitlines()]
    rows = [
        (q, d, rnd.choice([0, 1, 2])) for q, _, d, *_ in lines if q in ("q1", "q3", "q12", "q14")
    ]
    with Store(db) as store:
        set_grades(store, rows[::2], annotator="ann")
    return rows[::2]


def _metrics(db: Path, *args: str) -> dict[str, float]:
    out = rageval("evaluate", *args, "--metrics", METRICS, "--json", db=db)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["metrics"]  # type: ignore[no-any-return]


def test_exported_qrels_attached_again_give_the_same_metrics(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    run, qrels = files
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(run), str(qrels), "--name", "bm25", db=db).returncode == 0
    given = _grades(db, run)
    out_file = tmp_path / "out.qrels"
    done = rageval(
        "export", "bm25", "--to", "qrels", "--labels", "people,imported", "--out", str(out_file),
        db=db,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = out_file.read_text().splitlines()
    assert all(len(line.split()) == 4 and line.split()[1] == "0" for line in lines)
    for q, d, g in given:  # people first: their grade where they gave one
        assert f"{q} 0 {d} {g}" in lines
    expected = _metrics(db, "bm25", "--labels", "people,imported")
    other = tmp_path / "other.duckdb"
    assert rageval("import", str(run), "--name", "again", db=other).returncode == 0
    assert rageval("attach", "again", "--qrels", str(out_file), db=other).returncode == 0
    assert _metrics(other, "again") == expected
    # and straight from the files (the direct route): the same numbers
    assert _metrics(other, str(run), "--qrels", str(out_file)) == expected
    # --labels imported exports the run's own qrels, line for line
    own = tmp_path / "own.qrels"
    rageval("export", "bm25", "--to", "qrels", "--out", str(own), db=db)
    assert sorted(own.read_text().split("\n")) == sorted(qrels.read_text().split("\n"))


def test_attached_labels_are_that_persons_grades(files: tuple[Path, Path], tmp_path: Path) -> None:
    run, qrels = files
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(run), "--name", "bm25", db=db).returncode == 0
    out = rageval("attach", "bm25", "--labels", str(qrels), "--annotator", "trec-pool", db=db)
    assert out.returncode == 0, out.stderr
    with Store(db) as store:
        rows = grade_rows(store)
        assert {(r.source, r.annotator) for r in rows} == {("people", "trec-pool")}
        assert len(rows) == len(qrels.read_text().splitlines())
        assert not store.run("bm25").has_qrels  # the run's own qrels are untouched
    # the people's labels equal the same file attached as the run's qrels
    other = tmp_path / "o.duckdb"
    rageval("import", str(run), str(qrels), "--name", "bm25", db=other)
    assert _metrics(db, "bm25", "--labels", "people") == _metrics(other, "bm25")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("q1 0 d1 1\nq2 0 d2\n", ":2: "),  # a short line: file:line: field: problem
        ("q1 0 d1 high\n", ":1: "),
    ],
)
def test_a_bad_labels_file_is_refused_and_keeps_nothing(
    files: tuple[Path, Path], tmp_path: Path, text: str, problem: str
) -> None:
    run, _ = files
    db = tmp_path / "s.duckdb"
    rageval("import", str(run), "--name", "bm25", db=db)
    bad = tmp_path / "bad.qrels"
    bad.write_text(text)
    out = rageval("attach", "bm25", "--labels", str(bad), "--annotator", "x", db=db)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"bad.qrels{problem}" in out.stderr
    with Store(db) as store:
        assert grade_rows(store) == []


def test_labels_of_another_collection_are_refused(files: tuple[Path, Path], tmp_path: Path) -> None:
    run, _ = files
    db = tmp_path / "s.duckdb"
    rageval("import", str(run), "--name", "bm25", db=db)
    other = tmp_path / "other.qrels"
    other.write_text("x1 0 d1 1\nx2 0 d2 0\n")
    out = rageval("attach", "bm25", "--labels", str(other), "--annotator", "x", db=db)
    assert out.returncode == 2 and "none of its 2 queries" in out.stderr
    no_name = rageval("attach", "bm25", "--labels", str(other), db=db)
    assert no_name.returncode == 2 and "--annotator" in no_name.stderr
    with Store(db) as store:
        assert grade_rows(store) == []


def test_nothing_labelled_is_lost_when_the_run_is_renamed_reimported_deleted_or_attached(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    run, qrels = files
    db = tmp_path / "s.duckdb"
    rageval("import", str(run), "--name", "bm25", db=db)
    given = _grades(db, run)
    with Store(db) as store:
        add_span(store, "q2", "a sentence someone marked", annotator="ann")
        before = (grade_rows(store), added_spans(store))
    labelled = _metrics(db, "bm25", "--labels", "people")

    def kept() -> None:
        with Store(db) as store:
            assert (grade_rows(store), added_spans(store)) == before
        assert len(before[0]) == len(given)

    assert rageval("rename", "bm25", "renamed", db=db).returncode == 0
    kept()
    assert _metrics(db, "renamed", "--labels", "people") == labelled
    assert rageval("import", str(run), "--name", "renamed", db=db).returncode == 0  # the same run
    kept()
    assert rageval("delete", "renamed", db=db).returncode == 0
    kept()
    assert rageval("import", str(run), "--name", "back", db=db).returncode == 0
    kept()
    assert _metrics(db, "back", "--labels", "people") == labelled
    assert rageval("attach", "back", "--qrels", str(qrels), db=db).returncode == 0
    kept()
    assert _metrics(db, "back", "--labels", "people") == labelled
