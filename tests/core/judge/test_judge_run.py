"""`rageval judge` against a fake OpenAI-compatible server on loopback: every metric filled,
the cache, retries, 401, malformed replies, cost, budget, dry run, and the key kept nowhere."""

from __future__ import annotations

import json
import math
import secrets
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from rageval_core.judging import JudgeAuthError, JudgeConfig, metric_names, run_judge
from rageval_core.judging.prompts import PROMPTS
from rageval_core.store import Store
from rageval_core.store import judgements
from tests.cli import rageval, rageval_subprocess
from tests.core.judge.conftest import FAITHFULNESS, RUN_FILE
from tests.fakellm import COMPLETION_TOKENS, PROMPT_TOKENS, FakeServer

N_QUERIES = 5
N_TASKS = N_QUERIES * len(PROMPTS)  # every fixture query has a query, an answer and contexts


def judge_cli(server: FakeServer, db: Path, *extra: str, key: str = "sk-x") -> Any:
    return rageval(
        "judge",
        "judged",
        "--base-url",
        server.base_url,
        "--model",
        "fake-judge",
        *extra,
        db=db,
        env={"OPENAI_API_KEY": key},
    )


def judge_api(server: FakeServer, db: Path, **config: Any) -> Any:
    base = {"base_url": server.base_url, "model": "fake-judge", "backoff_s": 0.01}
    with Store(db) as store:
        return run_judge(store, "judged", JudgeConfig(**{**base, **config}), api_key="sk-x")


def evaluate_json(db: Path, *extra: str) -> dict[str, Any]:
    done = rageval("evaluate", "judged", "--json", "--per-query", *extra, db=db)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def fixture_queries() -> list[dict[str, Any]]:
    lines = RUN_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[1:]]


def test_fills_every_judge_metric_for_every_query(server: FakeServer, db: Path) -> None:
    done = judge_cli(server, db, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for key in ("requests", "cache_hits", "judge_errors", "prompt_tokens", "completion_tokens"):
        assert key in out
    assert out["requests"] == N_TASKS == server.n_requests
    assert out["judge_errors"] == 0 and out["status"] == "complete"
    report = evaluate_json(db)
    names = metric_names(list(PROMPTS))
    for name in names:
        assert report["metrics"][name] is not None, name
        for qid, row in report["per_query"].items():
            assert row[name] is not None, (qid, name)
    # the shares of the labels follow what the fake judge said, question by question
    said = [FAITHFULNESS.get(q["query"], "supported") for q in fixture_queries()]
    for label in ("supported", "insufficient", "contradicted"):
        assert report["metrics"][f"judge.faithfulness.{label}"] == pytest.approx(
            said.count(label) / len(said)
        )
    assert report["settings"]["judge"]["model"] == "fake-judge"
    assert report["counts"]["judged"] == N_QUERIES


def test_a_repeat_sends_zero_requests(server: FakeServer, db: Path) -> None:
    first = json.loads(judge_cli(server, db, "--json").stdout)
    sent = server.n_requests
    again = judge_cli(server, db, "--json", "--price-in", "1", "--price-out", "1")
    second = json.loads(again.stdout)
    assert server.n_requests == sent == first["requests"]
    assert second["requests"] == 0 and second["cache_hits"] == N_TASKS
    assert second["cost_usd"] == 0.0
    # the cached verdicts are the same verdicts
    assert evaluate_json(db)["metrics"] == evaluate_json(db, "--judge", "1")["metrics"]


def test_429_and_5xx_are_retried_to_a_complete_result(server: FakeServer, db: Path) -> None:
    server.state.fail.extend([(429, {"Retry-After": "0"}), 500, 503, 429, 502])
    summary = judge_api(server, db, concurrency=1)
    assert summary.status == "complete"
    assert summary.judge_errors == 0
    assert summary.retries == 5
    assert server.n_requests == N_TASKS + 5
    assert summary.done == N_TASKS


def test_retries_that_never_succeed_are_judge_errors_not_zeros(
    server: FakeServer, db: Path
) -> None:
    server.state.fail.extend([500] * 3)  # the first task's three attempts
    summary = judge_api(server, db, concurrency=1, max_attempts=3)
    assert summary.judge_errors == 1 and summary.errors == {"HTTP 500": 1}  # by cause
    assert summary.status == "partial" and summary.cause is None
    with Store(db) as store:
        results = judgements.judge_results(store, judgements.judge_set(store, "judged"))
    failed = [r for r in results if r.error is not None]
    assert len(failed) == 1 and failed[0].verdict is None
    first = failed[0]
    report = evaluate_json(db)
    qid = list(report["per_query"])[first.qidx]
    key = "judge.correctness" if first.prompt == "answer_quality" else None
    if key:
        assert report["per_query"][qid][key] is None


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_stop_at_once_with_exit_2_and_store_nothing(
    server: FakeServer, db: Path, status: int
) -> None:
    server.state.fail.extend([status] * 100)
    key = "sk-" + secrets.token_hex(16)
    done = judge_cli(server, db, "--api-key-env", "MY_JUDGE_KEY", key="unused")
    assert done.returncode == 2
    assert f"HTTP {status}" in done.stderr and "MY_JUDGE_KEY" in done.stderr
    assert server.n_requests <= 4  # one per thread at most: never retried
    with Store(db) as store:
        counts = store.table_counts()
    assert counts["judge_sets"] == counts["judge_results"] == counts["judge_cache"] == 0
    with Store(db) as store, pytest.raises(JudgeAuthError):
        run_judge(
            store,
            "judged",
            JudgeConfig(base_url=server.base_url, model="m", concurrency=1),
            api_key=key,
        )


def test_malformed_replies_are_counted_as_judge_errors(server: FakeServer, db: Path) -> None:
    server.state.malformed_questions = {"Who audits charities?"}
    summary = judge_api(server, db)
    assert summary.judge_errors == len(PROMPTS)  # each prompt of that query, after one retry
    assert summary.requests == N_TASKS + len(PROMPTS)
    report = evaluate_json(db)
    q2 = report["per_query"]["q2"]
    assert all(q2[name] is None for name in metric_names(list(PROMPTS)))  # never scored 0
    assert report["counts"]["judge_errors"] == len(PROMPTS)
    with Store(db) as store:
        assert store.table_counts()["judge_cache"] == N_TASKS - len(PROMPTS)  # errors not cached
    again = judge_api(server, db)  # the failed ones are asked again
    assert again.cache_hits == N_TASKS - len(PROMPTS) and again.requests == 2 * len(PROMPTS)


def test_a_bad_first_reply_is_asked_again_once(server: FakeServer, db: Path) -> None:
    server.state.malformed = "once"
    summary = judge_api(server, db)
    assert summary.judge_errors == 0
    assert summary.requests == 2 * N_TASKS
    retries = [r["messages"] for r in server.state.requests if len(r["messages"]) > 2]
    assert len(retries) == N_TASKS
    assert all(m[-1]["role"] == "user" and "could not be read" in m[-1]["content"] for m in retries)


def test_fenced_json_with_chatter_is_read(server: FakeServer, db: Path) -> None:
    server.state.fenced = True
    summary = judge_api(server, db)
    assert summary.judge_errors == 0 and summary.requests == N_TASKS


def test_cost_is_tokens_times_prices(server: FakeServer, db: Path) -> None:
    done = judge_cli(server, db, "--json", "--price-in", "2", "--price-out", "4")
    out = json.loads(done.stdout)
    assert out["prompt_tokens"] == N_TASKS * PROMPT_TOKENS
    assert out["completion_tokens"] == N_TASKS * COMPLETION_TOKENS
    expected = (N_TASKS * PROMPT_TOKENS * 2 + N_TASKS * COMPLETION_TOKENS * 4) / 1000
    assert out["cost_usd"] == pytest.approx(expected)
    with Store(db) as store:
        results = judgements.judge_results(store, judgements.judge_set(store, "judged"))
    assert sum(r.cost_usd for r in results) == pytest.approx(expected)
    with Store(db) as store:
        per_query = judgements.cost_per_query(store, judgements.judge_set(store, "judged"))
    assert sorted(per_query) == list(range(N_QUERIES))
    assert sum(per_query.values()) == pytest.approx(expected)


def test_the_runs_prices_are_never_taken_for_the_judges(server: FakeServer, db: Path) -> None:
    # the run's prices are its generator's: the judge's cost is unknown until its own are given
    header = json.loads(RUN_FILE.read_text(encoding="utf-8").splitlines()[0])["rageval_run"]
    assert header["prices_per_1k"]["prompt"] > 0
    dry = json.loads(judge_cli(server, db, "--dry-run", "--json").stdout)
    assert dry["estimated_cost_usd"] is None
    text = judge_cli(server, db, "--dry-run").stdout
    assert "estimated cost unknown (the judge's prices: --price-in/--price-out)" in text
    priced = json.loads(
        judge_cli(server, db, "--dry-run", "--json", "--price-in", "2", "--price-out", "4").stdout
    )
    by_hand = (priced["prompt_tokens"] * 2 + N_TASKS * 120 * 4) / 1000
    assert priced["estimated_cost_usd"] == pytest.approx(by_hand)
    done = json.loads(judge_cli(server, db, "--json").stdout)
    assert done["cost_usd"] is None and done["prompt_tokens"] == N_TASKS * PROMPT_TOKENS


def test_max_cost_stops_before_the_budget_and_keeps_what_finished(
    server: FakeServer, db: Path
) -> None:
    budget = 1.0  # a request's worst case (prompt bytes + 64 max_tokens) is about 0.5
    summary = judge_api(
        server,
        db,
        concurrency=1,
        max_tokens=64,
        max_cost_usd=budget,
        price_in_per_1k=0.5,
        price_out_per_1k=1.5,
    )
    assert summary.status == "budget"
    assert 0 < summary.done < N_TASKS
    assert summary.cost_usd <= budget
    assert server.n_requests == summary.requests == summary.done
    with Store(db) as store:
        kept = judgements.judge_results(store, judgements.judge_set(store, "judged"))
    assert len(kept) == summary.done


def test_dry_run_sends_nothing_and_estimates(server: FakeServer, db: Path) -> None:
    prices = ("--price-in", "0.5", "--price-out", "1.5")
    done = judge_cli(server, db, "--dry-run", "--json", *prices)
    out = json.loads(done.stdout)
    assert server.n_requests == 0
    assert out["requests"] == N_TASKS and out["estimated_cost_usd"] > 0
    with Store(db) as store:
        assert store.table_counts()["judge_sets"] == 0
    judge_api(server, db)
    after = json.loads(judge_cli(server, db, "--dry-run", "--json", *prices).stdout)
    assert after["requests"] == 0 and after["estimated_cost_usd"] == 0


def test_the_key_is_never_stored_printed_or_cached(server: FakeServer, db: Path) -> None:
    key = "sk-" + secrets.token_hex(20)
    outputs = [judge_cli(server, db, "--json", key=key), judge_cli(server, db, key=key)]
    server.state.fail.extend([401] * 10)
    outputs.append(judge_cli(server, db, "--metrics", "faithfulness", "--repeats", "2", key=key))
    # it was used: the endpoint saw it in the Authorization header
    assert server.state.headers[0]["Authorization"] == f"Bearer {key}"
    for done in outputs:
        assert key not in done.stdout and key not in done.stderr
    blobs = [p.read_bytes() for p in db.parent.iterdir() if p.is_file()]
    assert blobs and all(key.encode() not in blob for blob in blobs)
    # DuckDB may compress strings, so the bytes alone prove little: read every row of every table
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        rows = {t: con.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables}
    assert rows.get("judge_cache")  # the cache was written
    assert all(key not in repr(row) for table in rows.values() for row in table)
    with Store(db) as store:
        sets = judgements.judge_sets(store, "judged")
    assert sets and all(s.base_host.startswith("127.0.0.1:") for s in sets)


def test_repeats_show_where_the_judge_disagrees_with_itself(server: FakeServer, db: Path) -> None:
    flips = "Is food zero-rated?"
    server.state.flip = lambda q, n: (
        ("supported" if n % 2 == 0 else "insufficient") if q == flips else "supported"
    )
    done = judge_cli(server, db, "--json", "--repeats", "3", "--metrics", "faithfulness")
    out = json.loads(done.stdout)
    assert out["requests"] == 3 * N_QUERIES
    rep = out["repeatability"]
    assert [d["key"] for d in rep["disagreements"]] == ["faithfulness"]
    assert sorted(rep["disagreements"][0]["values"]) == ["insufficient", "supported", "supported"]
    assert rep["agreement"]["faithfulness"] == pytest.approx((4 * 1 + 2 / 3) / N_QUERIES)
    report = evaluate_json(db)
    assert report["per_query"]["q4"]["judge.faithfulness.supported"] == pytest.approx(2 / 3)


def test_several_judges_newest_by_default_or_by_name(server: FakeServer, db: Path) -> None:
    judge_api(server, db, name="strict", metrics=("faithfulness",))
    server.state.faithfulness = {}
    # another model: other requests (the same model would be answered from the cache)
    judge_api(server, db, name="lenient", model="fake-judge-2", metrics=("faithfulness",))
    newest = evaluate_json(db)["metrics"]
    strict = evaluate_json(db, "--judge", "strict")["metrics"]
    assert newest["judge.faithfulness.supported"] == 1.0
    assert strict["judge.faithfulness.supported"] == pytest.approx(3 / 5)
    imported = evaluate_json(db, "--judge", "none")
    assert "judge.faithfulness.supported" in imported["metrics"]  # the run file's labels
    assert imported["metrics"]["judge.faithfulness.supported"] == pytest.approx(1 / 2)
    missing = rageval("evaluate", "judged", "--judge", "nobody", db=db)
    assert missing.returncode == 2 and "nobody" in missing.stderr


def test_imported_judge_scores_show_without_any_judge_run(db: Path) -> None:
    report = evaluate_json(db)
    given = [q.get("judge", {}) for q in fixture_queries()]
    numbers = [j["ragas_faithfulness"] for j in given if "ragas_faithfulness" in j]
    labels = [j["faithfulness"] for j in given if "faithfulness" in j]
    assert report["metrics"]["judge.ragas_faithfulness"] == pytest.approx(
        sum(numbers) / len(numbers)
    )
    assert report["metrics"]["judge.faithfulness.supported"] == pytest.approx(
        labels.count("supported") / len(labels)
    )
    assert report["per_query"]["q5"]["judge.ragas_faithfulness"] is None
    text = rageval("evaluate", "judged", db=db).stdout
    assert "judge.ragas_faithfulness" in text


def test_bad_arguments_exit_2(server: FakeServer, db: Path) -> None:
    for extra in (("--metrics", "vibes"), ("--concurrency", "0"), ("--repeats", "0")):
        done = judge_cli(server, db, *extra)
        assert done.returncode == 2, extra
    done = rageval("judge", "judged", "--base-url", "ftp://x", "--model", "m", db=db)
    assert done.returncode == 2 and "http" in done.stderr
    # a budget without prices cannot be kept
    bare = db.parent / "bare.jsonl"
    lines = RUN_FILE.read_text(encoding="utf-8").splitlines()[1:]
    bare.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert rageval("import", str(bare), db=db).returncode == 0
    done = rageval(
        "judge", "bare", "--base-url", server.base_url, "--model", "m", "--max-cost", "1", db=db
    )
    assert done.returncode == 2 and "--price-in" in done.stderr
    assert server.n_requests == 0
    assert math.isfinite(0.0)


def test_the_recorded_replies_fill_a_judge_set_for_display_tests(db: Path) -> None:
    from tests.fakellm import judge_from_recording, recorded_replies

    summary = judge_from_recording(db)
    assert summary.judge_errors == 0 and summary.done == N_TASKS == len(recorded_replies())
    report = evaluate_json(db)
    rows = [
        json.loads(r) for r in (RUN_FILE.parent / "recorded_replies.jsonl").read_text().splitlines()
    ]
    scores = [
        json.loads(r["reply"][r["reply"].find("{") : r["reply"].rfind("}") + 1])
        for r in rows
        if r["prompt"] == "retrieval_quality"
    ]
    passed = [s["retrieval_quality_score"] >= 0.7 for s in scores]
    assert report["metrics"]["judge.pass_rate"] == pytest.approx(sum(passed) / len(passed))
    with Store(db) as store:
        from rageval_core.judging.scores import judge_verdicts

        q4 = judge_verdicts(store, "judged", 3)
    faith = next(r for r in q4 if r.prompt == "faithfulness")
    assert faith.verdict is not None and faith.verdict["faithfulness"] == "contradicted"
    assert faith.verdict["evidence"] == [1] and "<b>not bold</b>" in faith.verdict["notes"]


@pytest.mark.parametrize("how", ["cancel", "ctrl-c"])
def test_cancel_or_ctrl_c_keeps_every_finished_result(
    server: FakeServer, db: Path, how: str
) -> None:
    import threading

    cancel = threading.Event()
    stop_after = 4

    def progress(done: int, total: int) -> None:
        if done >= stop_after:
            if how == "cancel":
                cancel.set()
            else:
                raise KeyboardInterrupt  # what SIGINT raises in the main thread

    config = JudgeConfig(base_url=server.base_url, model="fake-judge", concurrency=1)
    with Store(db) as store:
        summary = run_judge(store, "judged", config, progress=progress, cancel=cancel)
        kept = judgements.judge_results(store, judgements.judge_set(store, "judged"))
    assert summary.status == ("cancelled" if how == "cancel" else "interrupted")
    assert stop_after <= summary.done < N_TASKS
    assert len(kept) == summary.done and all(r.verdict is not None for r in kept)
    assert server.n_requests == summary.requests


def test_ragas_result_columns_are_judge_metrics(tmp_path: Path) -> None:
    rows = [
        {
            "user_input": f"question {i}",
            "retrieved_contexts": [f"context {i}"],
            "reference_contexts": [f"context {i}"],
            "response": f"answer {i}",
            "faithfulness": score,
            "context_recall": recall,
        }
        for i, (score, recall) in enumerate([(0.8, 1.0), (0.4, 0.5), (0.9, 0.0)])
    ]
    path = tmp_path / "ragas_result.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    done = rageval("evaluate", str(path), "--format", "ragas", "--json", "--per-query")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for column in ("faithfulness", "context_recall"):
        values = [r[column] for r in rows]
        assert out["metrics"][f"judge.{column}"] == pytest.approx(sum(values) / len(values))
        assert [q[f"judge.{column}"] for q in out["per_query"].values()] == values


def test_a_judge_that_gets_no_answer_fails_fast_with_exit_4(db: Path) -> None:
    # nothing listens on the port: the cause named once, a quick stop, exit 4, a failed set
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    done = rageval_subprocess(
        "judge", "judged", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", db=db
    )
    took = time.monotonic() - started
    assert done.returncode == 4, done.stderr
    assert took < 20  # the first attempts, not 6 attempts with backoff for every item
    cause = f"127.0.0.1:{port} refused the connection (nothing listens there?)"
    assert (done.stdout + done.stderr).count(cause) == 1, done.stdout
    assert "Traceback" not in done.stderr
    assert "failed: the judge endpoint gave no answer" in done.stdout
    with Store(db) as store:
        (kept,) = judgements.judge_sets(store, "judged")
    assert kept.status == "failed" and kept.verdicts == 0 and kept.judge_errors >= 1
    assert kept.requests == kept.judge_errors and not kept.usable
    # never read by default: evaluate shows the run file's own judge scores only
    report = evaluate_json(db)
    assert report["settings"].get("judge") is None
    assert report["metrics"] == evaluate_json(db, "--judge", "none")["metrics"]
    explicit = evaluate_json(db, "--judge", str(kept.judge_id))  # by id it is still read
    assert explicit["settings"]["judge"]["judge_id"] == kept.judge_id


def test_every_reply_invalid_is_a_failed_run_not_a_complete_one(
    server: FakeServer, db: Path
) -> None:
    # the endpoint answers (no fast stop: every item is tried), but nothing can be read
    server.state.malformed = "always"
    done = judge_cli(server, db, "--json")
    assert done.returncode == 4
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["cause"] is None
    assert out["judge_errors"] == out["done"] == N_TASKS
    assert out["errors"] == {"invalid reply": N_TASKS}
    assert server.n_requests == 2 * N_TASKS
    assert out["judge"]["verdicts"] == 0 and out["judge"]["status"] == "failed"


def test_some_judge_errors_make_a_partial_set_that_is_still_read(
    server: FakeServer, db: Path
) -> None:
    server.state.malformed_questions = {"Who audits charities?"}
    done = judge_cli(server, db)
    assert done.returncode == 0, done.stderr
    assert f"partial: {len(PROMPTS)} of {N_TASKS} judgments are judge errors" in done.stdout
    with Store(db) as store:
        (kept,) = judgements.judge_sets(store, "judged")
    assert kept.status == "partial" and kept.verdicts == N_TASKS - len(PROMPTS)
    assert evaluate_json(db)["settings"]["judge"]["judge_id"] == kept.judge_id


def test_the_newest_usable_set_is_read_by_default_past_a_failed_one(
    server: FakeServer, db: Path
) -> None:
    good = judge_api(server, db, name="good", metrics=("faithfulness",))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with Store(db) as store:
        failed = run_judge(store, "judged", JudgeConfig(base_url=dead, model="m2"), api_key="")
    assert failed.status == "failed" and failed.cause and failed.judge is not None
    assert good.judge is not None
    assert evaluate_json(db)["settings"]["judge"]["judge_id"] == good.judge.judge_id
