"""The TREC run/qrels reader: trec_eval's ordering and query rules, and exact problem positions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.errors import ProblemLog
from rageval_core.formats import trec
from rageval_core.formats.base import HEAD_BYTES, display_path
from rageval_core.model import Query
from tests.paths import ORACLE, REPO

BAD = REPO / "tests" / "data" / "bad"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def read_all(run: Path, qrels: Path | None = None) -> tuple[object, list[Query], ProblemLog]:
    log = ProblemLog()
    parsed = trec.read(run, qrels, log)
    return parsed, list(parsed.queries), log


def test_module_interface() -> None:
    assert (trec.FORMAT, trec.PRIMARY, trec.COMPANION, trec.COMPANION_REQUIRED) == (
        "trec",
        "run",
        "qrels",
        False,
    )


def test_documents_ordered_as_trec_eval_score_desc_then_docno_desc(tmp_path: Path) -> None:
    # the rank column says d1, d2, d3, d4; trec_eval ignores it
    run = write(
        tmp_path / "r.run",
        "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.9 t\nq1 Q0 d3 3 0.5 t\nq1 Q0 d10 4 0.5 t\n",
    )
    _, queries, log = read_all(run)
    assert log.problems == []
    assert [c.doc_id for c in queries[0].retrieved or ()] == ["d2", "d3", "d10", "d1"]
    assert [c.score for c in queries[0].retrieved or ()] == [0.9, 0.5, 0.5, 0.5]


def test_query_order_and_qrels_join(tmp_path: Path) -> None:
    run = write(
        tmp_path / "r.run",
        "# comment\n\nq2 Q0 a 1 3 tag\nq1 Q0 b 1 2 tag extra junk\nq2 Q0 c 2 1 tag\n",
    )
    qrels = write(tmp_path / "r.qrels", "# judged\nq1 0 b 2\nq3 0 x 1\nq3 0 y 0\nq2 0 zz 0\n")
    parsed, queries, log = read_all(run, qrels)
    assert [q.query_id for q in queries] == ["q2", "q1", "q3"]
    assert [q.line for q in queries] == [3, 4, 3]
    assert queries[0].relevance == {"zz": 0}
    assert queries[1].relevance == {"b": 2}
    assert queries[2].retrieved is None and queries[2].relevance == {"x": 1, "y": 0}
    assert parsed.info.name == "tag"  # type: ignore[attr-defined]
    assert parsed.format == "trec"  # type: ignore[attr-defined]
    assert parsed.sources == (display_path(run), display_path(qrels))  # type: ignore[attr-defined]
    # a judged query missing from the run is a warning naming it, not an error
    assert [str(p) for p in log.problems] == [
        (
            f"{display_path(qrels)}:3: qid: 1 judged query is not in the run: 'q3' "
            "(they score only with --complete, as with trec_eval -c) (warning)"
        )
    ]
    assert log.errors == []


def test_run_queries_without_qrels_have_no_relevance(tmp_path: Path) -> None:
    run = write(tmp_path / "r.run", "q1 Q0 a 1 3 t\nq2 Q0 a 1 3 t\n")
    qrels = write(tmp_path / "r.qrels", "q1 0 a 1\n")
    _, queries, log = read_all(run, qrels)
    assert [(q.query_id, q.relevance) for q in queries] == [("q1", {"a": 1}), ("q2", None)]
    assert log.problems == []
    _, queries, _ = read_all(run)
    assert all(q.relevance is None for q in queries)


def test_disagreeing_tags_leave_the_run_unnamed(tmp_path: Path) -> None:
    run = write(tmp_path / "r.run", "q1 Q0 a 1 3 one\nq1 Q0 b 2 2 two\n")
    parsed, _, log = read_all(run)
    assert parsed.info.name is None  # type: ignore[attr-defined]
    assert [str(p) for p in log.problems] == [
        (
            f"{display_path(run)}:2: tag: run tag 'two' differs from 'one' (line 1); the run is "
            "left unnamed (warning)"
        )
    ]


def test_sidecar_facts_win_over_the_tag(tmp_path: Path) -> None:
    run = write(tmp_path / "r.run", "q1 Q0 a 1 3 tagname\n")
    (tmp_path / "r.run.run.json").write_text(
        json.dumps({"name": "bm25 k1=0.9", "settings": {"top_k": 100}}), encoding="utf-8"
    )
    parsed, _, log = read_all(run)
    assert log.problems == []
    assert parsed.info.name == "bm25 k1=0.9"  # type: ignore[attr-defined]
    assert parsed.info.settings == {"top_k": 100}  # type: ignore[attr-defined]


def test_sniff_tells_run_from_qrels_from_other_files(tmp_path: Path) -> None:
    assert trec.sniff(tmp_path / "x", b"# c\n301 Q0 FR94 1 2.5 STANDARD\n") == "run"
    assert trec.sniff(tmp_path / "x", b"301\t0\tFR94\t1\t-2.5e-3\trun more\n") == "run"
    assert trec.sniff(tmp_path / "x", b"\n# c\n301 0 FR94 2\n") == "qrels"
    assert trec.sniff(tmp_path / "x", b"301 0 FR94 high\n") is None
    assert trec.sniff(tmp_path / "x", b"301 Q0 FR94 1 high STANDARD\n") is None
    assert trec.sniff(tmp_path / "x", b'{"query_id": "q1", "retrieved": []}\n') is None
    assert trec.sniff(tmp_path / "x", b"query_id,doc_id,score\nq1,d1,0.5\n") is None
    assert trec.sniff(tmp_path / "x", b"301 Q0 FR94 1 2.5 S\x00\n") is None
    assert trec.sniff(tmp_path / "x", b"") is None


@pytest.mark.oracle
def test_sniff_recognises_the_oracle_files() -> None:
    kinds = {p.name: trec.sniff(p, p.read_bytes()[:HEAD_BYTES]) for p in sorted(ORACLE.iterdir())}
    assert kinds["results.test"] == kinds["results.trunc"] == kinds["results.comment.test"] == "run"
    assert kinds["qrels.test"] == kinds["qrels.rel_level"] == "qrels"
    assert kinds["qrels.test.with-comments"] == kinds["qrels.comment.test"] == "qrels"
    assert kinds["out.test"] is None and kinds["README.md"] is None


@pytest.mark.oracle
def test_oracle_run_reads_whole() -> None:
    parsed, queries, log = read_all(ORACLE / "results.trunc", ORACLE / "qrels.test")
    assert log.errors == []
    assert [q.query_id for q in queries] == ["301", "303", "302"]
    assert [len(q.retrieved) for q in queries if q.retrieved is not None] == [500, 84]
    assert queries[2].retrieved is None and len(queries[2].relevance or {}) == 1061
    assert parsed.info.name == "STANDARD"  # type: ignore[attr-defined]
    scores = [c.score for c in queries[0].retrieved or ()]
    assert scores == sorted(scores, reverse=True)


# --- bad inputs: every problem names file:line: field -------------------------------------------


def problems_of(run: Path, qrels: Path | None = None) -> list[str]:
    log = ProblemLog()
    parsed = trec.read(run, qrels, log)
    list(parsed.queries)
    return [str(p) for p in log.problems]


def test_too_few_columns() -> None:
    path = BAD / "trec_too_few_columns.run"
    assert problems_of(path) == [
        f"{display_path(path)}:2: columns: expected 6 columns (qid Q0 docno rank score tag), got 3"
    ]


def test_non_numeric_score() -> None:
    path = BAD / "trec_bad_score.run"
    assert problems_of(path) == [
        f"{display_path(path)}:3: score: expected a finite number, got 'abc'"
    ]


def test_nan_score() -> None:
    path = BAD / "trec_nan_score.run"
    assert problems_of(path) == [
        f"{display_path(path)}:2: score: expected a finite number, got 'nan'"
    ]


@pytest.mark.parametrize("score", ["inf", "-Infinity", "1e999", "1_0", "0x10", "--1"])
def test_other_non_finite_or_odd_scores(tmp_path: Path, score: str) -> None:
    path = write(tmp_path / "r.run", f"q1 Q0 a 1 {score} t\n")
    assert problems_of(path) == [
        f"{display_path(path)}:1: score: expected a finite number, got {score!r}"
    ]


def test_duplicate_docno_in_one_query() -> None:
    path = BAD / "trec_duplicate_docno.run"
    assert problems_of(path) == [
        (
            f"{display_path(path)}:4: docno: duplicate document 'd1' for query '1' (first on "
            "line 1); trec_eval rejects such runs"
        )
    ]


def test_bad_qrels_rel(tmp_path: Path) -> None:
    run = write(tmp_path / "r.run", "1 Q0 d1 1 0.9 t\n")
    qrels = BAD / "trec_bad_rel.qrels"
    assert problems_of(run, qrels) == [
        f"{display_path(qrels)}:2: rel: expected a number, got 'yes'"
    ]


def test_bad_qrels_columns(tmp_path: Path) -> None:
    run = write(tmp_path / "r.run", "1 Q0 d1 1 0.9 t\n")
    qrels = BAD / "trec_qrels_columns.qrels"
    shown = display_path(qrels)
    assert problems_of(run, qrels) == [
        f"{shown}:2: columns: expected 4 columns (qid iter docno rel), got 3",
        f"{shown}:3: columns: expected 4 columns (qid iter docno rel), got 5",
    ]


def test_duplicate_qrels_judgement_and_empty_files(tmp_path: Path) -> None:
    run = write(tmp_path / "r.run", "1 Q0 d1 1 0.9 t\n")
    qrels = write(tmp_path / "r.qrels", "1 0 d1 1\n1 0 d1 0\n")
    assert problems_of(run, qrels) == [
        (
            f"{display_path(qrels)}:2: docno: duplicate judgement of 'd1' for query '1' (first "
            "on line 1); trec_eval rejects such qrels"
        )
    ]
    empty = write(tmp_path / "empty.run", "# nothing\n\n")
    assert problems_of(empty) == [
        f"{display_path(empty)}:0: run: no result lines (qid Q0 docno rank score tag)"
    ]


def test_invalid_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "r.run"
    path.write_bytes(b"q1 Q0 a 1 1 t\nq1 Q0 caf\xe9 2 0.5 t\n")
    problems = problems_of(path)
    assert len(problems) == 1
    assert problems[0].startswith(f"{display_path(path)}:2: line: not valid UTF-8")
