"""`rageval collect` against a retrieval server over the demo collection: one stored run per grid
point, equal to what the server returned, with latency, the grid as run facts, and the gold of
the questions carried over."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.cli.dispatch import main
from rageval_core.compare.sweeps import sweep, swept_settings
from rageval_core.compare.trends import trends
from rageval_core.store import Store
from tests.retrieval_server import Server, demo, search

GRID = ["--grid", "search_type=hybrid,keyword,vector", "--grid", "top_k=1,5"]


def collect(db: Path, questions: Path, url: str, *extra: str) -> int:
    return main(
        ["--db", str(db), "collect", "--questions", str(questions), "--endpoint", url, *extra]
    )


def test_the_grid_expands_to_one_run_per_point_named_by_the_template(
    server: Server, questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert collect(db, questions, server.url, *GRID) == 0
    host = server.url.split("/")[2]
    with Store(db) as store:
        runs = {r.name: r for r in store.runs()}
    expected = {
        f"{host} search_type={st} top_k={k}": {"search_type": st, "top_k": k}
        for st in ("hybrid", "keyword", "vector")
        for k in (1, 5)
    }
    assert set(runs) == set(expected)
    for name, run in runs.items():
        assert run.settings == expected[name]  # typed: top_k an int, not "5"
        assert run.n_queries == 6
        assert run.max_depth == expected[name]["top_k"]
    # each question once per grid point, the grid values where the default mapping puts them
    sent = {(b["search_type"], b["top_k"], b["query"]) for b in server.state.requests}
    assert len(server.state.requests) == len(sent) == 6 * 6
    assert "6 of 6 grid points stored" in capsys.readouterr().out


def test_stored_runs_equal_what_the_server_returned_with_the_gold_carried_over(
    server: Server, questions: Path, db: Path
) -> None:
    assert (
        collect(db, questions, server.url, *GRID, "--name-template", "{search_type}@{top_k}") == 0
    )
    _, gold = demo()
    by_id = {q.query_id: q for q in gold}
    with Store(db) as store:
        for st in ("hybrid", "keyword", "vector"):
            for k in (1, 5):
                run = store.run(f"{st}@{k}")
                stored = list(store.iter_queries(run.run_id))
                assert len(stored) == 6
                for q in stored:
                    want = search(by_id[q.query_id].text, st, k)
                    got = [(c.doc_id, c.text, c.score) for c in q.retrieved or ()]
                    assert got == [(w["id"], w["text"], w["score"]) for w in want]
                    assert q.evidence == by_id[q.query_id].evidence
                    assert q.relevance == dict(by_id[q.query_id].relevance)
                    assert q.tags["query_type"] == by_id[q.query_id].query_type
        # evidence scored on import, as `rageval import` does
        assert store.run("keyword@5").has_evidence


def test_latency_per_request_is_stored_beside_the_replys_own_timings(
    server: Server, questions: Path, db: Path
) -> None:
    assert collect(db, questions, server.url, "--grid", "top_k=3") == 0
    with Store(db) as store:
        (run,) = store.runs()
        stored = list(store.iter_queries(run.run_id))
    for q in stored:
        assert set(q.latency_ms) == {"request", "request.retrieval"}
        # the client's wall time holds the server's own retrieval time
        assert q.latency_ms["request"] > q.latency_ms["request.retrieval"] > 0


def test_sweeps_and_trends_see_the_grid_values(server: Server, questions: Path, db: Path) -> None:
    assert collect(db, questions, server.url, *GRID) == 0
    with Store(db) as store:
        rows = sweep(store, metrics=["nDCG@10", "R@5"])
        lines = trends(store, metrics=["nDCG@10"])
    assert len(rows) == 6
    assert swept_settings(rows) == ["search_type", "top_k"]
    assert {(r.settings["search_type"], r.settings["top_k"]) for r in rows} == {
        (st, k) for st in ("hybrid", "keyword", "vector") for k in (1, 5)
    }
    assert all(r.latency_p95_ms > 0 for r in rows)  # the request stage, a total of its own
    # recall at 5 grows with top_k for every search type (1 chunk cannot hold what 5 hold)
    for st in ("hybrid", "keyword", "vector"):
        r1, r5 = (
            next(r for r in rows if r.settings == {"search_type": st, "top_k": k}) for k in (1, 5)
        )
        assert r5.metrics["R@5"] >= r1.metrics["R@5"]
    assert all(t.tags["search_type"] in ("hybrid", "keyword", "vector") for t in lines)


def test_a_bad_reply_is_reported_per_question_and_its_grid_point_not_stored(
    server: Server, questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, gold = demo()
    server.state.bodies[gold[1].text] = b"<html>oops</html>"
    server.state.bodies[gold[2].text] = b'{"results": [{"text": "no id"}]}'
    server.state.bodies[gold[3].text] = b'{"error": "index offline"}'
    assert collect(db, questions, server.url, "--grid", "top_k=2") == 2
    err = capsys.readouterr().err
    assert f"question {gold[1].query_id}: reply: reply: is not JSON" in err
    assert (
        f"question {gold[2].query_id}: reply: results[0].id | doc_id | chunk_id | _id: no chunk id"
        in err
    )
    assert f"question {gold[3].query_id}: reply: results | documents" in err
    assert "no chunks list there" in err
    with Store(db) as store:
        assert store.runs() == []  # never stored as "retrieved nothing"


def test_keep_partial_stores_the_point_without_the_failed_questions(
    server: Server, questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, gold = demo()
    server.state.bodies[gold[1].text] = b'{"results": [{"id": "a", "score": "high"}]}'
    server.state.bodies[gold[2].text] = b'{"results": []}'  # an answer: nothing retrieved
    assert collect(db, questions, server.url, "--grid", "top_k=2", "--keep-partial", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "partial" and summary["stored"] == 1
    assert summary["points"][0]["failures"] == [
        f"question {gold[1].query_id}: reply: results[0].score: is text, not a score"
    ]
    with Store(db) as store:
        (run,) = store.runs()
        stored = {q.query_id: q for q in store.iter_queries(run.run_id)}
    assert gold[1].query_id not in stored
    assert stored[gold[2].query_id].retrieved == ()
    assert len(stored) == 5
    assert "1 questions failed and are left out" in (run.description or "")


def test_an_empty_chunks_list_is_an_answer_and_the_point_is_stored(
    server: Server, questions: Path, db: Path
) -> None:
    _, gold = demo()
    server.state.bodies[gold[0].text] = b'{"results": []}'
    assert collect(db, questions, server.url, "--grid", "top_k=2") == 0
    with Store(db) as store:
        (run,) = store.runs()
        stored = {q.query_id: q for q in store.iter_queries(run.run_id)}
    assert stored[gold[0].query_id].retrieved == ()


def test_a_custom_mapping_places_the_request_and_reads_the_reply(
    server: Server, questions: Path, db: Path, tmp_path: Path
) -> None:
    _, gold = demo()
    for q in gold[:6]:
        hits = [
            {"doc": {"key": "c2"}, "body": "second", "rank": 2, "sim": 0.5},
            {"doc": {"key": "c1"}, "body": "first", "rank": 1, "sim": 0.9, "page": 4},
        ]
        reply = {"data": {"hits": hits}, "meta": {"ms": {"embed": 1.5}}, "usage": {"embed": 7}}
        server.state.bodies[q.text] = json.dumps(reply).encode()
    mapping = tmp_path / "mapping.json"
    mapping.write_text(
        json.dumps(
            {
                "request": {
                    "query": "q.text",
                    "query_id": "q.id",
                    "params": {"top_k": "options.limit"},
                    "body": {"alpha": 0.7},
                },
                "reply": {
                    "chunks": "data.hits",
                    "id": "doc.key",
                    "text": "body",
                    "score": "sim",
                    "rank": "rank",
                    "metadata": ["page"],
                    "latency_ms": "meta.ms",
                    "tokens": "usage",
                },
            }
        )
    )
    assert collect(db, questions, server.url, "--grid", "top_k=3", "--mapping", str(mapping)) == 0
    first = server.state.requests[0]
    assert set(first) == {"q", "options", "alpha"}
    assert first["options"] == {"limit": 3} and first["alpha"] == 0.7
    assert {r["q"]["id"] for r in server.state.requests} == {q.query_id for q in gold[:6]}
    with Store(db) as store:
        (run,) = store.runs()
        q = next(iter(store.iter_queries(run.run_id)))
    assert [(c.doc_id, c.text, c.score) for c in q.retrieved or ()] == [
        ("c1", "first", 0.9),
        ("c2", "second", 0.5),
    ]  # ordered by the reply's rank
    assert dict(q.retrieved[0].metadata) == {"page": 4}  # type: ignore[index]
    assert set(q.latency_ms) == {"request", "request.embed"}
    assert dict(q.tokens) == {"embed": 7}


def test_a_bad_mapping_file_is_exit_2_naming_its_line_and_field(
    server: Server, questions: Path, db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mapping = tmp_path / "mapping.json"
    mapping.write_text('{\n  "request": {"query": "q"},\n  "reply": {"chunkz": "hits"}\n}\n')
    assert collect(db, questions, server.url, "--mapping", str(mapping)) == 2
    assert f"{mapping}:3: reply.chunkz: unknown key" in capsys.readouterr().err
    assert server.state.requests == []


def test_questions_from_qa_pairs_carry_their_context_as_evidence(server: Server, db: Path) -> None:
    data = Path(__file__).parents[2] / "data" / "qa_pairs"
    files = [str(data / "pairs.jsonl"), str(data / "retrieval.json")]
    code = main(
        ["--db", str(db), "collect", "--questions", *files, "--endpoint", server.url,
         "--grid", "top_k=2"]
    )  # fmt: skip
    assert code == 0
    with Store(db) as store:
        (run,) = store.runs()
        stored = {q.query_id: q for q in store.iter_queries(run.run_id)}
    assert stored["1"].evidence == ("The standard rate of VAT is 20%.",)
    assert stored["1"].reference_answer == "20%"
    assert {b["query"] for b in server.state.requests} >= {"What is the standard VAT rate?"}


def test_dry_run_sends_nothing_and_stores_nothing(
    server: Server, questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert collect(db, questions, server.url, *GRID, "--dry-run", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["requests"] == 36 and out["grid_points"] == 6
    assert out["first_request"]["top_k"] == 1 and out["first_request"]["search_type"] == "hybrid"
    assert server.state.requests == []
    assert not db.exists()


def test_names_that_collide_are_refused_before_anything_is_sent(
    server: Server, questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert collect(db, questions, server.url, *GRID, "--name-template", "{search_type}") == 2
    assert "two grid points the name 'hybrid'" in capsys.readouterr().err
    assert collect(db, questions, server.url, "--grid", "top_k=1", "--name-template", "x") == 0
    n = len(server.state.requests)
    assert collect(db, questions, server.url, "--grid", "top_k=1", "--name-template", "x") == 2
    assert "a run named 'x' is already stored" in capsys.readouterr().err
    assert len(server.state.requests) == n


@pytest.mark.parametrize(
    ("given", "qid", "gold"),
    [
        (["qa_pairs/pairs.jsonl"], "1", ("evidence", ("The standard rate of VAT is 20%.",))),
        (["tatrag/gold.json"], "q1", ("evidence", ("Total cost of revenue $48,881",))),
        (["beir/mini"], "q1", ("relevance", {"d1": 1, "d3": 2})),
    ],
    ids=["qa-pairs-alone", "tatrag-gold-alone", "beir-dataset-without-run"],
)
def test_a_gold_set_without_its_run_gives_the_questions(
    server: Server, db: Path, given: list[str], qid: str, gold: tuple[str, object]
) -> None:
    data = Path(__file__).parents[2] / "data"
    files = [str(data / g) for g in given]
    code = main(
        ["--db", str(db), "collect", "--questions", *files, "--endpoint", server.url,
         "--grid", "top_k=2"]
    )  # fmt: skip
    assert code == 0
    with Store(db) as store:
        (run,) = store.runs()
        stored = {q.query_id: q for q in store.iter_queries(run.run_id)}
    field, value = gold
    assert getattr(stored[qid], field) == value
    assert all(len(q.retrieved or ()) == 2 for q in stored.values())
    assert len(server.state.requests) == len(stored)
