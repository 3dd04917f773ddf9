"""A hostile judge endpoint (issue 28, points 2, 3 and 8), played by a fake server on 127.0.0.1:
a reply dripped a byte at a time is cut at --timeout, and Cancel or Ctrl-C end it within a
second; a reply past the size cap, nested, not JSON or with absurd token counts is one judge
error for its item while every finished item is kept; a key refused after some replies says
exactly what the store kept."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rageval_core.judging import JudgeAuthError, JudgeConfig, run_judge
from rageval_core.judging.client import ChatClient, EndpointError
from rageval_core.judging.prompts import PROMPTS, Item
from rageval_core.store import Store, judgements
from tests.core.judge.test_judge_run import judge_cli as judge_run_cli
from tests.fakellm import COMPLETION_TOKENS, PROMPT_TOKENS, FakeServer, judge_process

N_TASKS = 5 * len(PROMPTS)  # the fixture's five queries, every prompt applies to each
HOSTILE = "Who audits charities?"  # the question whose replies the server spoils
MAX_REPLY_BYTES = 4 * 1024 * 1024  # the documented cap (docs/judging.md, "The client")


def body(question: str = "What is X?") -> dict[str, object]:
    item = Item(question, ("ctx",), "a", None, ())
    return {"model": "m", "messages": PROMPTS["faithfulness"].messages(item)}


def judge_cli(server: FakeServer, db: Path, *extra: str) -> Any:
    return judge_run_cli(server, db, "--json", *extra)


def cache_tokens(db: Path) -> list[tuple[int, int]]:
    with Store(db) as store, store._cursor() as cur:
        rows = cur.execute("SELECT prompt_tokens, completion_tokens FROM judge_cache").fetchall()
    return [(int(p), int(c)) for p, c in rows]


def judge_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("judge")]


# --- point 2: --timeout bounds the whole request; Cancel and Ctrl-C within a second -----------


@pytest.mark.parametrize("where", ["head", "body"])
def test_a_dripping_reply_is_cut_at_the_timeout(where: str) -> None:
    """A byte every 0.2 s never lets a read time out; the request still ends at --timeout."""
    with FakeServer() as server:
        server.state.drip, server.state.drip_every_s = where, 0.2
        client = ChatClient(server.base_url, None, "VAR", timeout_s=1.0, max_attempts=1)
        started = time.monotonic()
        with pytest.raises(EndpointError) as e:
            client.chat(body())
        took = time.monotonic() - started
    assert e.value.cause.endswith("did not answer within 1 s (timeout)")
    assert took < 3.0  # about the timeout (the drip would go on for hours)


def test_a_dripping_item_is_a_judge_error_and_the_rest_are_kept(db: Path) -> None:
    with FakeServer() as server:
        server.state.drip, server.state.drip_every_s = "body", 0.2
        server.state.drip_questions = {HOSTILE}
        config = JudgeConfig(
            base_url=server.base_url, model="m", timeout_s=1.0, max_attempts=1, concurrency=4
        )
        started = time.monotonic()
        with Store(db) as store:
            summary = run_judge(store, "judged", config, api_key="")
            kept = judgements.judge_results(store, judgements.judge_set(store, "judged", "m"))
        took = time.monotonic() - started
    assert took < 3.0 * 1.0 + 5  # each dripped request cut at 1 s (in parallel), not hours
    assert summary.status == "partial" and summary.judge_errors == len(PROMPTS)
    (cause,) = summary.errors
    assert cause.endswith("did not answer within 1 s (timeout)")
    errors = [r for r in kept if r.error is not None]
    assert len(errors) == len(PROMPTS) and {r.qidx for r in errors} == {1}
    assert sum(r.verdict is not None for r in kept) == N_TASKS - len(PROMPTS)


def test_the_cli_gives_up_on_an_endpoint_that_drips_its_answer(db: Path) -> None:
    # the status line itself dripped: no answer ever arrives; three attempts cut at 1 s each
    with FakeServer() as server:
        server.state.drip = "head"
        started = time.monotonic()
        done = judge_cli(server, db, "--timeout", "1")
        took = time.monotonic() - started
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["cause"].endswith("within 1 s (timeout)")
    assert took < 10  # a few attempts of 1 s, with their backoff


def test_stop_set_mid_drip_ends_the_request_within_a_second() -> None:
    with FakeServer() as server:
        server.state.drip = "body"
        client = ChatClient(server.base_url, None, "VAR", timeout_s=60.0, max_attempts=1)
        stop = threading.Event()
        said: list[BaseException] = []

        def ask() -> None:
            try:
                client.chat(body(), stop)
            except BaseException as e:  # the thread's outcome, read below
                said.append(e)

        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        time.sleep(1.0)  # the reply is dripping by now
        assert asking.is_alive()
        stop.set()
        stopped = time.monotonic()
        asking.join(timeout=10)
        took = time.monotonic() - stopped
    assert not asking.is_alive()
    assert took < 1.0
    assert len(said) == 1 and isinstance(said[0], EndpointError)
    assert said[0].cause == "cancelled"


def test_cancel_ends_every_request_of_a_dashboard_job_within_a_second(db: Path) -> None:
    """The dashboard's Cancel is run_judge's cancel event: the call returns and no request
    thread is left dripping behind it."""
    cancel = threading.Event()
    with FakeServer() as server:
        server.state.drip = "body"
        config = JudgeConfig(base_url=server.base_url, model="m", timeout_s=60.0)
        out: list[Any] = []
        with Store(db) as store:
            job = threading.Thread(
                target=lambda: out.append(run_judge(store, "judged", config, cancel=cancel))
            )
            job.start()
            deadline = time.monotonic() + 10
            while server.n_requests < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)
            cancel.set()
            stopped = time.monotonic()
            job.join(timeout=10)
            while judge_threads() and time.monotonic() - stopped < 10:
                time.sleep(0.02)
            took = time.monotonic() - stopped
    assert not job.is_alive() and out and out[0].status == "cancelled"
    assert not judge_threads()
    assert took < 1.0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child is POSIX")
def test_ctrl_c_ends_a_judge_run_within_a_second_while_replies_drip(db: Path) -> None:
    with FakeServer() as server:
        server.state.drip = "body"
        proc = judge_process(db, server.base_url, "--model", "m")
        deadline = time.monotonic() + 60
        while server.n_requests < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        stopped = time.monotonic()
        try:
            _, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
        took = time.monotonic() - stopped
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert took < 2.0  # within a second of its threads, plus the interpreter's exit


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_timeout_that_bounds_nothing_is_a_usage_error(
    server: FakeServer, db: Path, value: str
) -> None:
    done = judge_cli(server, db, "--timeout", value)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr == f"rageval: --timeout must be a number of seconds > 0, got {float(value)}\n"
    )
    assert server.n_requests == 0


# --- the size cap ---------------------------------------------------------------------------


def padded_reply(size: int) -> Callable[[dict[str, Any]], bytes]:
    """A valid reply padded with blanks to size bytes."""

    def make(reply: dict[str, Any]) -> bytes:
        text = json.dumps(reply).encode()
        return b" " * (size - len(text)) + text

    return make


@pytest.mark.parametrize("announced", [True, False])
def test_a_reply_past_the_cap_is_cut_and_is_a_judge_error(
    server: FakeServer, db: Path, announced: bool
) -> None:
    # announced: a Content-Length past the cap; else read to the close until the cap is passed
    server.state.no_length = not announced
    server.state.bodies[HOSTILE] = padded_reply(MAX_REPLY_BYTES + 1)
    done = judge_cli(server, db)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "partial"
    assert out["errors"] == {"the reply is larger than 4 MiB: cut there, not read": len(PROMPTS)}
    assert out["judge"]["verdicts"] == N_TASKS - len(PROMPTS)
    # the honest negative: a reply of exactly the cap is read (the failed items asked again)
    server.state.bodies[HOSTILE] = padded_reply(MAX_REPLY_BYTES)
    again = json.loads(judge_cli(server, db).stdout)
    assert again["requests"] == len(PROMPTS) and again["judge_errors"] == 0
    assert again["status"] == "complete" and again["judge"]["verdicts"] == N_TASKS


# --- point 3: a hostile reply is one judge error; the finished items are kept -----------------


def with_usage(**usage: Any) -> Callable[[dict[str, Any]], bytes]:
    def make(reply: dict[str, Any]) -> bytes:
        return json.dumps({**reply, "usage": {**reply["usage"], **usage}}).encode()

    return make


def nested(depth: int) -> Callable[[dict[str, Any]], bytes]:
    def make(reply: dict[str, Any]) -> bytes:
        text = json.dumps(reply)
        return (text[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}").encode()

    return make


def constant(data: bytes) -> Callable[[dict[str, Any]], bytes]:
    return lambda reply: data


HOSTILE_REPLIES: dict[str, tuple[Callable[[dict[str, Any]], bytes], str]] = {
    "nested 100000 deep": (nested(100_000), "the reply nests too deeply to be read"),
    "nested alone": (
        constant(b"[" * 200_000 + b"]" * 200_000),
        "the reply nests too deeply to be read",
    ),
    "prompt_tokens 10^30": (
        with_usage(prompt_tokens=10**30),
        "the reply's usage.prompt_tokens is not a token count (a whole number from 0 to "
        "100,000,000)",
    ),
    "completion_tokens 1e30": (
        with_usage(completion_tokens=1e30),
        "the reply's usage.completion_tokens is not a token count (a whole number from 0 to "
        "100,000,000)",
    ),
    "negative tokens": (
        with_usage(prompt_tokens=-5),
        "the reply's usage.prompt_tokens is not a token count (a whole number from 0 to "
        "100,000,000)",
    ),
    "tokens as a string": (
        with_usage(completion_tokens="20"),
        "the reply's usage.completion_tokens is not a token count (a whole number from 0 to "
        "100,000,000)",
    ),
    "tokens NaN": (
        constant(b'{"choices": [{"message": {"content": "{}"}}], "usage": {"prompt_tokens": NaN}}'),
        "the reply's usage.prompt_tokens is not a token count (a whole number from 0 to "
        "100,000,000)",
    ),
    "usage a list": (
        lambda reply: json.dumps({**reply, "usage": [1, 2]}).encode(),
        "the reply's usage is not an object",
    ),
    "not JSON": (constant(b"<html>Bad gateway</html>"), "the reply is not JSON"),
    "not UTF-8": (constant(b'{"choices": "\xff\xfe"}'), "the reply cannot be read as JSON text"),
    "a 5000-digit integer": (
        constant(b'{"usage": {"prompt_tokens": ' + b"9" * 5000 + b"}}"),
        "the reply cannot be read as JSON text",
    ),
    "choices missing": (
        constant(b'{"id": "x"}'),
        "the reply is not a chat completion (no choices[0].message.content)",
    ),
    "choices a string": (
        constant(b'{"choices": "many"}'),
        "the reply is not a chat completion (no choices[0].message.content)",
    ),
    "choices empty": (
        constant(b'{"choices": []}'),
        "the reply is not a chat completion (no choices[0].message.content)",
    ),
    "content a number": (
        constant(b'{"choices": [{"message": {"content": 7}}]}'),
        "the reply has no text content",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE_REPLIES))
def test_a_hostile_reply_is_one_judge_error_and_the_finished_items_are_kept(
    server: FakeServer, db: Path, case: str
) -> None:
    make, reason = HOSTILE_REPLIES[case]
    server.state.bodies[HOSTILE] = make
    done = judge_cli(server, db)
    assert "Traceback" not in done.stderr
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "partial"
    assert out["errors"] == {reason: len(PROMPTS)}  # one error per item, never retried
    assert out["requests"] == N_TASKS
    assert out["prompt_tokens"] == PROMPT_TOKENS * (N_TASKS - len(PROMPTS))
    with Store(db) as store:
        kept = judgements.judge_results(store, judgements.judge_set(store, "judged"))
    errors = [r for r in kept if r.error is not None]
    assert {r.qidx for r in errors} == {1} and len(errors) == len(PROMPTS)
    assert all(r.error == f"request failed: {reason}" for r in errors)
    assert all(r.prompt_tokens == r.completion_tokens == 0 for r in errors)
    assert sum(r.verdict is not None for r in kept) == N_TASKS - len(PROMPTS)
    # the store saw sane counts only: the cache holds the valid replies, as reported
    assert cache_tokens(db) == [(PROMPT_TOKENS, COMPLETION_TOKENS)] * (N_TASKS - len(PROMPTS))


def test_every_reply_hostile_is_a_failed_run_with_exit_4(server: FakeServer, db: Path) -> None:
    from tests.core.judge.conftest import RUN_FILE

    lines = RUN_FILE.read_text(encoding="utf-8").splitlines()[1:]
    for i, question in enumerate(json.loads(line)["query"] for line in lines):
        server.state.bodies[question] = (
            with_usage(prompt_tokens=10**30) if i % 2 else nested(50_000)
        )
    done = judge_cli(server, db)
    assert "Traceback" not in done.stderr
    assert done.returncode == 4, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["judge_errors"] == N_TASKS
    assert out["judge"]["status"] == "failed" and cache_tokens(db) == []


def test_tokens_a_loose_server_writes_as_whole_floats_or_leaves_out_are_read(
    server: FakeServer, db: Path
) -> None:
    # the honest negative: 100.0 is a count; no usage at all (a local server) counts 0
    server.state.bodies[HOSTILE] = with_usage(prompt_tokens=100.0)
    server.state.bodies["Is food zero-rated?"] = lambda reply: json.dumps(
        {k: v for k, v in reply.items() if k != "usage"}
    ).encode()
    out = json.loads(judge_cli(server, db).stdout)
    assert out["status"] == "complete" and out["judge_errors"] == 0
    assert out["prompt_tokens"] == PROMPT_TOKENS * (N_TASKS - len(PROMPTS))


# --- point 8: a key refused after some replies --------------------------------------------------


def test_a_401_after_some_replies_says_the_cache_kept_them(server: FakeServer, db: Path) -> None:
    server.state.auth_fail_after = 4
    done = judge_cli(server, db, "--concurrency", "1")
    assert done.returncode == 2
    assert "HTTP 401" in done.stderr and "OPENAI_API_KEY" in done.stderr
    said = done.stderr.strip()
    assert said.endswith(
        "nothing more was sent and no result set was kept; the 4 replies judged valid before "
        "it are kept in the store's judge cache, so a run with the right key answers them from "
        "there without sending or paying again"
    ), said
    assert said.count("\n") == 0
    with Store(db) as store:
        counts = store.table_counts()
    assert counts["judge_cache"] == 4
    assert counts["judge_sets"] == counts["judge_results"] == 0
    # what was said is what happens: the key fixed, those four are not sent again
    server.state.auth_fail_after = None
    sent = server.n_requests
    again = json.loads(judge_cli(server, db).stdout)
    assert again["cache_hits"] == 4 and again["requests"] == N_TASKS - 4
    assert server.n_requests - sent == N_TASKS - 4


def test_a_401_at_once_says_nothing_was_stored(server: FakeServer, db: Path) -> None:
    server.state.auth_fail_after = 0
    done = judge_cli(server, db, "--concurrency", "1")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("nothing more was sent and nothing was stored")
    with Store(db) as store:
        assert store.table_counts()["judge_cache"] == 0


def test_the_python_api_raises_the_same_words(server: FakeServer, db: Path) -> None:
    server.state.auth_fail_after = 1
    config = JudgeConfig(base_url=server.base_url, model="m", concurrency=1)
    with Store(db) as store, pytest.raises(JudgeAuthError) as e:
        run_judge(store, "judged", config, api_key="sk-x")
    assert "the one reply judged valid before it is kept in the store's judge cache" in str(e.value)
