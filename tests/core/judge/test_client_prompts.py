"""The chat client's retry rules (Retry-After, backoff, the limiter) and the lenient reading of
judge replies."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from rageval_core.errors import UsageError
from rageval_core.judging.client import (
    FAST_STOP_AFTER,
    ChatClient,
    EndpointError,
    JudgeAuthError,
    JudgeUnreachableError,
    RateLimiter,
    base_host,
    retry_after_s,
)
from rageval_core.judging.prompts import PROMPTS, BadReply, Item, parse_reply
from rageval_core.judging.runner import request_key
from tests.cli import rageval
from tests.core.judge.conftest import RUN_FILE
from tests.fakellm import FakeServer

ITEM = Item("What is X?", ("X is 1.",), "X is 1 [1].", "1", ("X is 1",))


def body(question: str = "What is X?") -> dict[str, object]:
    item = Item(question, ("ctx",), "a", None, ())
    return {"model": "m", "messages": PROMPTS["faithfulness"].messages(item)}


def recorder() -> tuple[list[float], object]:
    waits: list[float] = []
    return waits, waits.append


def test_retry_after_is_honoured() -> None:
    with FakeServer() as server:
        server.state.fail.extend([(429, {"Retry-After": "7"}), (503, {"Retry-After": "3"})])
        waits, sleep = recorder()
        client = ChatClient(server.base_url, "k", "VAR", sleep=sleep)  # type: ignore[arg-type]
        reply = client.chat(body())
    assert json.loads(reply.content)["faithfulness"] == "supported"
    assert client.waits == [7.0, 3.0]
    assert 7.0 in waits and 3.0 in waits  # the waits really were slept
    assert client.limiter.backoffs == 1  # the 429 widened the spacing; the 503 did not


def test_backoff_grows_with_jitter_and_gives_up() -> None:
    with FakeServer() as server:
        server.state.fail.extend([500] * 4)
        client = ChatClient(
            server.base_url, None, "VAR", backoff_s=1.0, max_attempts=4, sleep=lambda s: None
        )
        with pytest.raises(EndpointError, match="HTTP 500 after 4 attempts"):
            client.chat(body())
    assert len(client.waits) == 3
    for attempt, wait in enumerate(client.waits):  # 2^attempt x [0.5, 1.5)
        assert 0.5 * 2**attempt <= wait < 1.5 * 2**attempt


def test_other_client_errors_fail_the_request_without_retrying() -> None:
    with FakeServer() as server:
        server.state.fail.append(400)
        client = ChatClient(server.base_url, None, "VAR", sleep=lambda s: None)
        with pytest.raises(EndpointError, match="HTTP 400"):
            client.chat(body())
        assert server.n_requests == 1


def test_auth_error_names_the_variable_not_the_key() -> None:
    with FakeServer() as server:
        server.state.fail.append(401)
        client = ChatClient(server.base_url, "sk-very-secret", "TEAM_KEY", sleep=lambda s: None)
        with pytest.raises(JudgeAuthError) as e:
            client.chat(body())
    assert "TEAM_KEY" in str(e.value) and "401" in str(e.value)
    assert "sk-very-secret" not in str(e.value)


def test_a_dead_endpoint_is_a_failed_request() -> None:
    with FakeServer() as server:
        url = server.base_url
    client = ChatClient(url, None, "VAR", max_attempts=2, sleep=lambda s: None, timeout_s=2)
    with pytest.raises(EndpointError, match=r"refused the connection .* after 2 attempts"):
        client.chat(body())


def test_retry_after_forms() -> None:
    assert retry_after_s("5") == 5.0
    assert retry_after_s(None) is None and retry_after_s("soon") is None
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= (retry_after_s(future) or 0) <= 31


def test_the_limiter_backs_off_on_429_and_recovers() -> None:
    limiter = RateLimiter()
    limiter.throttled()
    limiter.throttled()
    assert limiter.interval_s == pytest.approx(0.1)
    for _ in range(100):
        limiter.succeeded()
    assert limiter.interval_s == 0.0


def test_base_url_checks_and_host() -> None:
    assert base_host("https://api.example.com:8443/v1?x=1") == "api.example.com:8443"
    assert base_host("http://127.0.0.1/v1") == "127.0.0.1"
    for bad in ("ftp://x/v1", "localhost:8000", "http://user:pw@host/v1"):
        with pytest.raises(UsageError):
            ChatClient(bad, None, "VAR")


def test_the_cache_key_covers_model_messages_and_parameters_not_the_key() -> None:
    b = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0}
    assert request_key(b, 0) == request_key(dict(reversed(list(b.items()))), 0)
    assert request_key(b, 0) != request_key({**b, "model": "n"}, 0)
    assert request_key(b, 0) != request_key({**b, "temperature": 0.5}, 0)
    assert request_key(b, 0) != request_key(b, 1)  # a repeat is its own request


@pytest.mark.parametrize(
    "reply",
    [
        '{"faithfulness": "supported", "evidence": [1], "notes": "ok"}',
        'Sure!\n```json\n{"faithfulness": "Supported", "evidence": ["1"]}\n```',
        'My verdict: {"faithfulness": "supported", "extra": 1} -- done',
    ],
)
def test_lenient_reading_of_faithfulness(reply: str) -> None:
    verdict = parse_reply(reply, PROMPTS["faithfulness"])
    assert verdict["faithfulness"] == "supported"
    assert "extra" not in verdict


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("looks fine", "no JSON object"),
        ('{"faithfulness": "probably"}', "expected one of supported"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_invalid_faithfulness_replies(reply: str, problem: str) -> None:
    with pytest.raises(BadReply, match=problem):
        parse_reply(reply, PROMPTS["faithfulness"])


def test_scores_must_be_numbers_in_the_unit_interval() -> None:
    p = PROMPTS["retrieval_quality"]
    ok = parse_reply(
        '{"retrieval_quality_score": "0.7", "completeness_score": 1, "relevance_score": 0}', p
    )
    assert ok == {"retrieval_quality_score": 0.7, "completeness_score": 1.0, "relevance_score": 0.0}
    for bad in ("1.5", "-0.1", "true", '"high"', "null"):
        text = (
            f'{{"retrieval_quality_score": {bad}, "completeness_score": 1, "relevance_score": 1}}'
        )
        with pytest.raises(BadReply, match="retrieval_quality_score"):
            parse_reply(text, p)


def test_prompts_carry_the_texts_and_a_version() -> None:
    for p in PROMPTS.values():
        user = p.messages(ITEM)[1]["content"]
        assert "What is X?" in user and "[1] X is 1." in user
        assert p.version.startswith(p.name + "-v")
    assert "X is 1 [1]." in PROMPTS["faithfulness"].messages(ITEM)[1]["content"]
    assert not PROMPTS["faithfulness"].applies(Item("q", ("c",), None, None, ()))
    assert not PROMPTS["retrieval_quality"].applies(Item("q", (), "a", None, ()))


def closed_port_url() -> str:
    """A loopback URL nothing listens on (a port just let go of)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@contextlib.contextmanager
def hanging_up() -> Iterator[str]:
    """A loopback server that accepts every connection and closes it without a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        listener.close()


def no_answer(url: str, timeout_s: float = 5.0) -> tuple[str, int]:
    """The cause a one-attempt request to url fails with, and the port it names."""
    client = ChatClient(url, None, "VAR", max_attempts=1, sleep=lambda s: None, timeout_s=timeout_s)
    with pytest.raises(EndpointError) as e:
        client.chat(body())
    return e.value.cause, urlsplit(url).port or 0


def test_each_way_of_getting_no_answer_is_named_in_plain_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cause, port = no_answer(closed_port_url())
    assert cause == f"127.0.0.1:{port} refused the connection (nothing listens there?)"
    with FakeServer() as server:  # plain HTTP spoken to as https: the handshake fails
        cause, port = no_answer(server.base_url.replace("http://", "https://"))
        assert cause.startswith(f"the TLS handshake with 127.0.0.1:{port} failed (")
        server.state.delay_s = 2.0  # a model slower than the timeout
        cause, port = no_answer(server.base_url, timeout_s=0.3)
        assert cause == f"127.0.0.1:{port} did not answer within 0.3 s (timeout)"
    with hanging_up() as url:
        cause, port = no_answer(url)
        assert cause == f"127.0.0.1:{port} closed the connection without an answer"

    def unresolved(*args: object, **kwargs: object) -> None:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unresolved)  # no DNS query leaves the machine
    cause, _ = no_answer("https://judge.example.invalid/v1")
    assert cause == "the name judge.example.invalid could not be resolved (DNS)"


def test_an_endpoint_that_never_answers_is_given_up_on_after_the_first_attempts() -> None:
    client = ChatClient(closed_port_url(), None, "VAR", sleep=lambda s: None)  # 6 attempts
    with pytest.raises(JudgeUnreachableError) as e:
        client.chat(body())
    assert len(client.waits) == FAST_STOP_AFTER - 1  # three attempts, not six
    assert "refused the connection" in e.value.cause and e.value.exit_code == 4
    with pytest.raises(JudgeUnreachableError):  # every later request stops at once
        client.chat(body())
    assert len(client.waits) == FAST_STOP_AFTER - 1


def test_an_endpoint_that_answered_once_is_retried_to_the_last_attempt() -> None:
    # the honest negative case: the same refusals after one answer are an outage, not a typo
    with FakeServer() as server:
        client = ChatClient(server.base_url, None, "VAR", sleep=lambda s: None)
        client.chat(body())
    with pytest.raises(EndpointError, match=r"refused the connection .* after 6 attempts"):
        client.chat(body())
    assert len(client.waits) == 5 and client.unreachable is None


def test_first_failures_that_differ_are_not_given_up_on() -> None:
    client = ChatClient(closed_port_url(), None, "VAR", sleep=lambda s: None, max_attempts=4)
    client.first_failures.append("something else first")
    with pytest.raises(EndpointError, match="after 4 attempts"):
        client.chat(body())
    assert client.unreachable is None


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_key_stays_on_its_host(status: int) -> None:
    """An endpoint answering a redirect to another host (another port is another origin): the
    request fails, naming the status and the target, and the target never hears of the key."""
    with FakeServer() as endpoint, FakeServer() as elsewhere:
        target = elsewhere.base_url + "/chat/completions"
        endpoint.state.fail.append((status, {"Location": target}))
        client = ChatClient(endpoint.base_url, "sk-secret", "VAR", sleep=lambda s: None)
        with pytest.raises(EndpointError) as e:
            client.chat(body())
        where = target.split("/")[2]
        assert f"redirected (HTTP {status}) to {where}" in str(e.value)
        assert "sk-secret" not in str(e.value)
        assert elsewhere.n_requests == 0 and endpoint.n_requests == 1
        # the next request is answered: one refused redirect does not stop the client
        assert client.chat(body()).content


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1/v1",
        "http://127.0.0.1:99999/v1",
        "http://127.0.0.1:port/v1",
        "http://judge host/v1",
        "http://judge.example/v1\r\nX-Injected: 1",
        "http://judge.example/v1\n",
    ],
)
def test_a_malformed_base_url_is_a_usage_error_on_one_escaped_line(url: str) -> None:
    with pytest.raises(UsageError) as e:
        ChatClient(url, None, "VAR")
    said = str(e.value)
    assert said.startswith("--base-url ") and "\n" not in said and "\r" not in said
    assert repr(url) in said


def test_malformed_base_urls_exit_2_from_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(RUN_FILE), db=db).returncode == 0
    for url in ("http://[::1/v1", "http://127.0.0.1:70000/v1", "http://a b/v1\r\n"):
        done = rageval("judge", "judged", "--base-url", url, "--model", "m", db=db)
        assert done.returncode == 2, (url, done.stderr)
        assert "Traceback" not in done.stderr and "--base-url" in done.stderr
        assert "\r" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
