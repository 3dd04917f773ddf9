"""The judge's pace, budget and inputs (issue 28, points 5-7): the limiter's arithmetic on a fake
clock, each 429 waiting its own Retry-After while the shared pace recovers, --max-cost as a hard
budget with requests in flight (a fake server that reports usage at the request's limits), and a
run file judged like its stored copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rageval_core.judging import ChatClient, JudgeConfig, RateLimiter, run_judge
from rageval_core.judging.prompts import PROMPTS, Item
from rageval_core.store import Store
from tests.cli import rageval
from tests.core.judge.conftest import RUN_FILE
from tests.fakellm import FakeServer

N_TASKS = 5 * len(PROMPTS)
PRICES = {"price_in_per_1k": 0.5, "price_out_per_1k": 1.5}


def judge_cli(server: FakeServer, db: Path, run: str, *extra: str) -> Any:
    return rageval(
        "judge",
        run,
        "--base-url",
        server.base_url,
        "--model",
        "fake-judge",
        *extra,
        db=db,
        env={"OPENAI_API_KEY": "sk-x"},
    )


class FakeClock:
    """A monotonic clock that only the fake sleep moves; the sleeps are recorded."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


# --- point 5: the pace ---------------------------------------------------------------------


def test_a_429_halves_the_pace_but_never_past_its_retry_after_or_the_maximum() -> None:
    limiter = RateLimiter()
    seen = []
    for _ in range(8):
        limiter.throttled(1.0)
        seen.append(limiter.interval_s)
    assert seen == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0])
    for _ in range(20):
        limiter.throttled()  # no Retry-After: up to the maximum
    assert limiter.interval_s == 10.0
    assert limiter.backoffs == 28


def test_the_pace_recovers_from_an_occasional_429() -> None:
    # the scripted endpoint: one 429 for every three replies, 120 times (a 120-item run's worth)
    limiter = RateLimiter()
    widest = 0.0
    for _ in range(120):
        limiter.throttled()
        widest = max(widest, limiter.interval_s)
        for _ in range(3):
            limiter.succeeded()
    assert widest == pytest.approx(0.05)  # never wider than the first step
    assert limiter.interval_s == 0.0  # (main: 10 s, its maximum, about 13 s per item)


def test_after_a_burst_of_429s_five_successes_restore_full_speed() -> None:
    limiter = RateLimiter()
    for _ in range(4):  # all four threads throttled at once: 0.05, 0.1, 0.2, 0.4 s
        limiter.throttled()
    steps = []
    for _ in range(5):
        limiter.succeeded()
        steps.append(limiter.interval_s)
    # each success adds 4 starts/s to the pace (2.5/s at 0.4 s); past 20/s there is no spacing
    assert steps == pytest.approx([1 / 6.5, 1 / 10.5, 1 / 14.5, 1 / 18.5, 0.0])


def test_starts_are_spaced_by_the_interval_on_a_fake_clock() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock)
    limiter.wait(clock.sleep)  # no 429 yet: no spacing
    limiter.wait(clock.sleep)
    assert clock.sleeps == []
    limiter.throttled()
    limiter.throttled()  # 0.1 s between starts
    for _ in range(2):
        limiter.wait(clock.sleep)
    limiter.succeeded()  # 1 / (10 + 4) s
    for _ in range(2):
        limiter.wait(clock.sleep)
    # the first start after the 429s takes the slot the last one left; each later one waits
    # the interval in force when the slot before it was taken
    assert clock.sleeps == pytest.approx([0.1, 0.1, 1 / 14])


def test_each_429_waits_its_own_retry_after_and_the_pace_recovers() -> None:
    with FakeServer() as server:
        server.state.throttle_every = 1  # every first attempt: 429, Retry-After: 2
        server.state.throttle_retry_after = "2"
        waits: list[float] = []
        client = ChatClient(server.base_url, "k", "VAR", sleep=waits.append)
        for question in ("What is X?", "What is Y?", "What is Z?"):
            messages = PROMPTS["faithfulness"].messages(Item(question, ("ctx",), "a", None, ()))
            client.chat({"model": "m", "messages": messages, "max_tokens": 16})
            assert client.limiter.interval_s == 0.0  # one reply after the 429: full speed
    assert client.waits == [2.0, 2.0, 2.0]  # each its own Retry-After, nothing added to it
    assert client.limiter.backoffs == 3 and client.retries == 3


def test_a_run_against_an_endpoint_that_throttles_every_third_request(
    server: FakeServer, db: Path
) -> None:
    server.state.throttle_every = 3
    server.state.throttle_retry_after = "0.2"
    client = ChatClient(server.base_url, "sk-x", "VAR")
    config = JudgeConfig(base_url=server.base_url, model="fake-judge", concurrency=4)
    with Store(db) as store:
        summary = run_judge(store, "judged", config, client=client)
    assert summary.status == "complete" and summary.done == N_TASKS
    assert client.waits == [0.2] * (N_TASKS // 3)  # each 429 waited its own Retry-After
    assert summary.retries == N_TASKS // 3
    assert client.limiter.interval_s == 0.0  # the pace recovered (main: still spaced)


# --- point 6: the budget -------------------------------------------------------------------


def spent_by_the_server(server: FakeServer, prices: dict[str, float]) -> float:
    """What the replies the server sent cost, from its own usage counts (usage_at_limits)."""
    total = 0.0
    for body in server.state.requests:
        prompt = sum(len(m["content"].encode("utf-8")) for m in body["messages"]) // 2
        total += prompt * prices["price_in_per_1k"] / 1000
        total += body["max_tokens"] * prices["price_out_per_1k"] / 1000
    return total


def test_max_cost_is_never_passed_with_four_requests_in_flight(
    server: FakeServer, db: Path
) -> None:
    server.state.usage_at_limits = True  # every reply as long as max_tokens allows
    server.state.delay_s = 0.1  # so that four really are in flight
    budget = 5.0  # a request costs about 1 USD here, its worst case about 1.2
    config = JudgeConfig(
        base_url=server.base_url,
        model="fake-judge",
        concurrency=4,
        max_cost_usd=budget,
        backoff_s=0.01,
        **PRICES,
    )
    with Store(db) as store:
        summary = run_judge(store, "judged", config, api_key="sk-x")
    paid = spent_by_the_server(server, PRICES)
    assert summary.status == "budget" and 0 < summary.done < N_TASKS
    assert summary.cost_usd == pytest.approx(paid)
    assert paid <= budget  # (main: 7.73 USD on this 5 USD budget)
    ledger = summary.ledger
    assert ledger.spent_usd == pytest.approx(paid) and ledger.reserved_usd == pytest.approx(0)
    assert ledger.reservations == server.n_requests
    assert ledger.peak_reserved_usd <= budget
    assert (
        ledger.refused_worst_case_usd is not None and paid + ledger.refused_worst_case_usd > budget
    )
    assert ledger.overruns == 0


def test_every_request_says_max_tokens_and_the_ledger_is_printed(
    server: FakeServer, db: Path
) -> None:
    server.state.usage_at_limits = True
    server.state.malformed = "once"  # the second ask of each item has a body of its own
    prices = ("--price-in", "0.5", "--price-out", "1.5")
    done = judge_cli(server, db, "judged", "--max-cost", "4", "--max-tokens", "77", *prices)
    assert done.returncode == 0, done.stderr
    assert server.n_requests >= 2
    assert {body["max_tokens"] for body in server.state.requests} == {77}
    assert any(len(body["messages"]) > 2 for body in server.state.requests)
    assert "budget $4.0000: spent $" in done.stdout
    assert "reserved at most $" in done.stdout
    assert "stopped: the next request's worst case ($" in done.stdout
    again = judge_cli(server, db, "judged", "--max-cost", "2", "--json", *prices)
    ledger = json.loads(again.stdout)["budget"]
    assert ledger["limit_usd"] == 2.0 and ledger["spent_usd"] <= 2.0
    assert set(ledger) >= {"reserved_usd", "peak_reserved_usd", "left_usd", "reservations"}


def test_a_dry_run_gives_the_worst_case_the_budget_reserves(server: FakeServer, db: Path) -> None:
    prices = ("--price-in", "0.5", "--price-out", "1.5")
    out = json.loads(judge_cli(server, db, "judged", "--dry-run", "--json", *prices).stdout)
    assert out["worst_case_usd"] > out["estimated_cost_usd"] > 0
    # 512 completion tokens each at the output price are part of every worst case
    assert out["worst_case_usd"] > N_TASKS * 512 * 1.5 / 1000


# --- point 7: a run file -------------------------------------------------------------------


def test_a_run_file_is_judged_like_its_stored_copy(server: FakeServer, db: Path) -> None:
    prices = ("--price-in", "0.5", "--price-out", "1.5")
    stored = judge_cli(server, db, "judged", "--dry-run", "--json", *prices)
    from_file = judge_cli(server, db, str(RUN_FILE), "--dry-run", "--json", *prices)
    assert from_file.returncode == 0, from_file.stderr
    a, b = json.loads(stored.stdout), json.loads(from_file.stdout)
    for key in ("tasks", "requests", "prompt_tokens", "estimated_cost_usd", "worst_case_usd"):
        assert a[key] == b[key], key
    assert b["requests"] == N_TASKS and server.n_requests == 0

    done = judge_cli(server, db, str(RUN_FILE))
    assert done.returncode == 0, done.stderr
    assert server.n_requests == N_TASKS
    assert "verdicts not kept" in done.stdout and "kept as judge" not in done.stdout
    with Store(db) as store:
        assert store.table_counts()["judge_sets"] == 0  # nothing stored beside a file
    # its replies are the stored run's too: neither sends anything now
    for run in ("judged", str(RUN_FILE)):
        out = json.loads(judge_cli(server, db, run, "--dry-run", "--json").stdout)
        assert out["requests"] == 0 and out["cache_hits"] == N_TASKS
    assert server.n_requests == N_TASKS


def test_a_missing_file_is_named(server: FakeServer, db: Path, tmp_path: Path) -> None:
    done = judge_cli(server, db, str(tmp_path / "nope.jsonl"), "--dry-run")
    assert done.returncode == 2
    assert "nope.jsonl: no such file" in done.stderr
