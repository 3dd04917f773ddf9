"""The chat client's retry rules (Retry-After, backoff, the limiter) and the lenient reading of
judge replies."""

from __future__ import annotations

import json
import time

import pytest

from rageval_core.errors import UsageError
from rageval_core.judging.client import (
    ChatClient,
    EndpointError,
    JudgeAuthError,
    RateLimiter,
    base_host,
    retry_after_s,
)
from rageval_core.judging.prompts import PROMPTS, BadReply, Item, parse_reply
from rageval_core.judging.runner import request_key
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
    with pytest.raises(EndpointError, match="connection failed"):
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
