"""`rageval collect` against an endpoint that misbehaves: redirects, drips, fails, refuses the
key, or is not there; the key from the environment never leaves the request."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from rageval_core.cli.dispatch import main
from rageval_core.store import Store
from tests.retrieval_server import Server


def collect(db: Path, questions: Path, url: str, *extra: str) -> int:
    argv = ["--db", str(db), "collect", "--questions", str(questions), "--endpoint", url]
    return main([*argv, "--grid", "top_k=2", *extra])


def test_a_redirect_is_refused_and_nothing_is_stored(
    server: Server, questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.state.redirect_to = "http://127.0.0.2:9/steal"
    assert collect(db, questions, server.url, "--retries", "0") == 2
    err = capsys.readouterr().err
    assert "redirected (HTTP 302) to 127.0.0.2:9: not followed" in err
    assert err.count(": request: the endpoint redirected") == 6  # one per question
    assert len(server.state.requests) == 6  # never sent again, neither here nor there
    with Store(db) as store:
        assert store.runs() == []


def test_the_deadline_bounds_a_reply_that_drips(
    server: Server, questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a byte every 0.2 s: no single read ever times out; the whole-request deadline ends it
    server.state.drip = True
    code = collect(db, questions, server.url, "--timeout", "1", "--retries", "0", "--json")
    assert code == 2
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "failed"
    failures = summary["points"][0]["failures"]
    assert len(failures) == 6
    assert all("did not answer within 1 s (timeout)" in f for f in failures)


def test_server_errors_are_retried_with_backoff_and_then_stored(
    server: Server, questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.state.fail.extend([503, 500, 429])
    assert collect(db, questions, server.url, "--json", "--concurrency", "1") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["retries"] == 3 and summary["status"] == "done"
    assert len(server.state.requests) == 6 + 3


def test_an_endpoint_that_never_answers_stops_the_run_exit_4(
    questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/search"
    assert collect(db, questions, url, "--grid", "search_type=a,b", "--concurrency", "1") == 4
    captured = capsys.readouterr()
    assert "the retrieval endpoint gave no answer" in captured.err
    assert "refused the connection" in captured.err
    assert "0 of 2 grid points stored" in captured.out
    with Store(db) as store:
        assert store.runs() == []


def test_the_key_goes_in_the_header_only_never_out(
    server: Server,
    questions: Path,
    db: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "Bearer sk-collect-5ecret-value"
    monkeypatch.setenv("RETRIEVER_AUTH", secret)
    server.state.require_header = ("Authorization", secret)
    flag = ["--header-env", "Authorization=RETRIEVER_AUTH"]
    assert collect(db, questions, server.url, *flag, "--json") == 0
    assert all(h.get("Authorization") == secret for h in server.state.headers)
    out = capsys.readouterr()
    assert main(["--db", str(db), "runs", "--json"]) == 0
    (name,) = [r["name"] for r in json.loads(capsys.readouterr().out)]
    assert main(["--db", str(db), "show", name, "--json"]) == 0
    assert main(["--db", str(db), "collect", "--questions", str(questions), "--endpoint",
                 server.url, *flag, "--dry-run", "--json"]) == 0  # fmt: skip
    later = capsys.readouterr()
    for text in (out.out, out.err, later.out, later.err):
        assert "5ecret" not in text
    assert b"5ecret" not in db.read_bytes()
    # a key the endpoint refuses: exit 2, the variable named, its value never shown
    monkeypatch.setenv("RETRIEVER_AUTH", "Bearer wrong-5ecret")
    assert collect(db, questions, server.url, *flag, "--name-template", "again") == 2
    err = capsys.readouterr().err
    assert "HTTP 401 (unauthorized): check the headers from $RETRIEVER_AUTH" in err
    assert "5ecret" not in err


def test_an_unset_header_variable_is_exit_2_before_anything_is_sent(
    server: Server, questions: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = ["--header-env", "Authorization=RAGEVAL_TEST_UNSET_VAR"]
    assert collect(db, questions, server.url, *flag) == 2
    assert "$RAGEVAL_TEST_UNSET_VAR is not set" in capsys.readouterr().err
    assert server.state.requests == []
    assert not db.exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--grid", "top_k"], "expected NAME=V1,V2"),
        (["--grid", "top_k=1,,5"], "an empty value"),
        (["--grid", "top_k=1,1"], "1 is given twice"),
        (["--grid", "k=1", "--grid", "k=2"], "--grid k: given twice"),
        (["--name-template", "{nope}"], "{nope} is neither a --grid name"),
        (["--endpoint", "ftp://x/y"], "--endpoint must be an http(s) URL"),
        (["--concurrency", "0"], "--concurrency 0: give 1 to 64"),
    ],
)
def test_bad_flags_are_exit_2_with_the_flag_named(
    server: Server,
    questions: Path,
    db: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    message: str,
) -> None:
    argv = ["--db", str(db), "collect", "--questions", str(questions), "--endpoint", server.url]
    assert main([*argv, *flags]) == 2
    assert message in capsys.readouterr().err
    assert server.state.requests == []
