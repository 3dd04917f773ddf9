"""`rageval judge RUN --metrics relevance` against the fake OpenAI-compatible server on 127.0.0.1:
each unjudged top-k chunk is one request with the UMBRELA prompt, its 0-3 grade kept as an
llm:MODEL label beside the people's; a reply that is not an integer 0..3 is a judge error, never a
guessed grade; the cache, the dry run and the judge set work as for the other prompts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rageval_core.judging import JudgeConfig, run_judge
from rageval_core.judging.prompts import BadReply, read_final_score
from rageval_core.judging.relevance import keep_grades, unjudged_chunks
from rageval_core.model import Chunk, Query
from rageval_core.store import Store
from rageval_core.store import ground_truth as gt
from rageval_core.store import judgements
from tests.cli import rageval
from tests.fakellm import FakeServer

#: the fixture run's chunks: (query_id, doc_id, passage)
CHUNKS = [
    ("q1", "d1", "The standard rate of VAT is 20%."),
    ("q1", "d2", "Reduced rates apply to fuel."),
    ("q2", "d7", "The Charity Commission registers charities."),
    ("q2", "d8", "Independent examiners review small charity accounts."),
    ("q3", "d3", "VAT returns are due one month and seven days after the period ends."),
]
GRADES = {CHUNKS[0][2]: 3, CHUNKS[1][2]: 0, CHUNKS[2][2]: 1, CHUNKS[3][2]: 2}
SOURCE = "llm:fake-judge"


def judge(server: FakeServer, db: Path, *extra: str) -> Any:
    return rageval(
        "judge", "judged", "--base-url", server.base_url, "--model", "fake-judge",
        "--metrics", "relevance", *extra, db=db, env={"OPENAI_API_KEY": "sk-x"},
    )  # fmt: skip


def llm_grades(db: Path) -> dict[tuple[str, str], float]:
    with Store(db) as store:
        rows = gt.grade_rows(store, sources=[SOURCE])
    assert all(r.annotator == "fake-judge" for r in rows)
    return {(r.query_id, r.doc_id): r.grade for r in rows}


def test_each_unjudged_chunk_is_one_umbrela_request_and_its_grade_is_kept(
    server: FakeServer, db: Path
) -> None:
    server.state.relevance = dict(GRADES)
    with Store(db) as store:  # a person graded d3 already: the LLM leaves it alone
        gt.set_grade(store, "q3", "d3", 2, annotator="alice")
    done = judge(server, db, "--json", "--labels", "imported,people")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["relevance_labels"] == {"source": SOURCE, "documents": 6}
    assert out["requests"] == server.n_requests == 6  # d1 d2 d7 d8 d5 d6; not d3
    prompts = [r["messages"][1]["content"] for r in server.state.requests]
    assert all("##final score: score without providing any reasoning" in p for p in prompts)
    assert all(p.count("\nPassage: ") == 1 for p in prompts)  # one passage per request
    assert not any(CHUNKS[4][2] in p for p in prompts)
    grades = llm_grades(db)
    assert {k: v for k, v in grades.items() if k[0] in ("q1", "q2")} == {
        ("q1", "d1"): 3.0, ("q1", "d2"): 0.0, ("q2", "d7"): 1.0, ("q2", "d8"): 2.0,
    }  # fmt: skip
    assert ("q3", "d3") not in grades and len(grades) == 6
    # relevance alone keeps no judge result set (its verdicts are the grades)
    with Store(db) as store:
        assert judgements.judge_sets(store, store.run("judged").run_id) == []
        # the people's grade is untouched
        assert [(r.annotator, r.grade) for r in gt.grade_rows(store, ["q3"], [gt.PEOPLE])] == [
            ("alice", 2.0)
        ]
    # again: every grade from the cache, nothing sent, the same grades
    again = json.loads(judge(server, db, "--json", "--labels", "imported,people").stdout)
    assert again["requests"] == 0 and again["cache_hits"] == 6 and server.n_requests == 6
    assert llm_grades(db) == grades
    # by default (--labels imported) only the run's qrels count as labels: the LLM grades d3
    # too, beside the person, which is what its calibration against people compares
    default = json.loads(judge(server, db, "--json").stdout)
    assert default["requests"] == 1 and default["cache_hits"] == 6
    assert llm_grades(db)[("q3", "d3")] == 2.0
    bad = judge(server, db, "--labels", "imported,nobody")
    assert bad.returncode == 2 and "nobody" in bad.stderr


@pytest.mark.parametrize(
    "reply",
    [
        "##final score: 7",
        "##final score: 2.5",
        "##final score: two",
        "The passage looks relevant to me.",
        "##final score: 1\n##final score: 3",
    ],
)
def test_a_reply_that_is_no_integer_0_to_3_is_a_judge_error_not_a_grade(
    server: FakeServer, db: Path, reply: str
) -> None:
    server.state.relevance = {CHUNKS[0][2]: reply, CHUNKS[1][2]: 1}
    done = judge(server, db, "--json", "--contexts", "2")
    out = json.loads(done.stdout)
    assert out["judge_errors"] == 1 and out["status"] == "partial"
    assert out["errors"] == {"invalid reply": 1}
    grades = llm_grades(db)
    assert ("q1", "d1") not in grades and grades[("q1", "d2")] == 1.0
    # the bad reply was asked again once, with the relevance prompt's own note
    retries = [r for r in server.state.requests if len(r["messages"]) > 2]
    assert len(retries) == 1 and "##final score: N" in retries[0]["messages"][-1]["content"]


def test_reading_the_final_score() -> None:
    assert read_final_score("##final score: 2") == {"relevance": 2}
    assert read_final_score("M: 2, T: 1\n## Final Score: **3**") == {"relevance": 3}
    assert read_final_score("##final score: 0.") == {"relevance": 0}
    assert read_final_score("##final score: 1\nso, final score: 1") == {"relevance": 1}
    for bad in ("", "score 2", "##final score: -1", "##final score: 4", "##final score: nan"):
        with pytest.raises(BadReply):
            read_final_score(bad)


def test_dry_run_counts_the_requests_and_keeps_nothing(server: FakeServer, db: Path) -> None:
    done = judge(server, db, "--json", "--dry-run", "--price-in", "1", "--price-out", "2")
    out = json.loads(done.stdout)
    assert out["status"] == "dry-run" and out["requests"] == 7 and out["tasks"] == 7
    assert out["estimated_cost_usd"] > 0 and out["worst_case_usd"] >= out["estimated_cost_usd"]
    assert server.n_requests == 0 and llm_grades(db) == {}


def test_with_other_prompts_the_judge_set_keeps_theirs_and_the_grades_go_to_labels(
    server: FakeServer, db: Path
) -> None:
    done = judge(server, db, "--json", "--metrics", "faithfulness,relevance", "--contexts", "1")
    out = json.loads(done.stdout)
    assert out["status"] == "complete" and out["requests"] == 5 + 5
    with Store(db) as store:
        (judge_set,) = judgements.judge_sets(store, store.run("judged").run_id)
        assert judge_set.prompts == {"faithfulness": "faithfulness-v1"}
        assert {r.prompt for r in judgements.judge_results(store, judge_set)} == {"faithfulness"}
    assert len(llm_grades(db)) == 5  # the top chunk of each query
    text = judge(server, db, "--metrics", "relevance", "--contexts", "1").stdout
    assert "kept as llm:fake-judge labels" in text


def test_api_grades_through_the_same_client(server: FakeServer, db: Path) -> None:
    server.state.relevance = dict(GRADES)
    config = JudgeConfig(
        base_url=server.base_url, model="m2", metrics=("relevance",), contexts=1, backoff_s=0.01
    )
    with Store(db) as store:
        summary = run_judge(store, "judged", config, api_key="sk-x")
        assert summary.relevance_labels == 5
        rows = gt.grade_rows(store, ["q1"], ["llm:m2"])
    assert [(r.doc_id, r.grade, r.annotator) for r in rows] == [("d1", 3.0, "m2")]


def test_what_counts_as_unjudged_and_a_documents_best_chunk() -> None:
    q = Query(
        "q",
        retrieved=(Chunk("a", "x"), Chunk("b", "y"), Chunk("c", None), Chunk("d", "z")),
        query="?",
        relevance={"b": 0},  # an imported qrel, even a 0, is a judgment
    )
    assert unjudged_chunks(q, 10) == [("a", "x"), ("d", "z")]
    assert unjudged_chunks(q, 1) == [("a", "x")]
    # under a labels setting: what it resolved, and nothing else (here not the imported b)
    assert unjudged_chunks(q, 10, {("q", "a")}) == [("b", "y"), ("d", "z")]


def test_keep_grades_keeps_the_highest_chunk_grade_per_document(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        assert keep_grades(store, "m", [("q", "a", 1), ("q", "a", 3), ("q", "b", 0)]) == 2
        got = {(r.doc_id, r.grade) for r in gt.grade_rows(store, sources=["llm:m"])}
    assert got == {("a", 3.0), ("b", 0.0)}
