"""The judge against a rate-limiting endpoint (issue 28, point 5): the same run judged twice
against a fake OpenAI-compatible server on 127.0.0.1, once with no 429 at all and once with
every third first attempt answered 429 + `Retry-After: 1`; the time of each and their ratio.

The fake model answers after a fixed latency (a real judge takes about a second); a 429 comes
back at once, as a rate limiter's does. Each 429 costs its own Retry-After in one thread, so the
least the throttled run can take is the plain run plus n_429 x Retry-After / concurrency; what
the limiter's shared spacing adds beyond that is the figure to watch.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.common import ScenarioResult, Table, fmt_ratio, fmt_seconds
from rageval_core.judging import ChatClient, JudgeConfig, run_judge
from rageval_core.judging.prompts import PROMPTS
from rageval_core.store import Store
from tests.fakellm import FakeServer

RETRY_AFTER = "1"
THROTTLE_EVERY = 3


def write_run(path: Path, n_queries: int) -> Path:
    """A native run whose every query all three prompts apply to."""
    lines = [json.dumps({"rageval_run": {"name": "paced"}})]
    for i in range(n_queries):
        lines.append(
            json.dumps(
                {
                    "query_id": f"q{i}",
                    "query": f"What is the rate of tax number {i}?",
                    "retrieved": [
                        {"doc_id": f"d{i}", "text": f"Tax number {i} is charged at {i % 30}%."},
                        {"doc_id": f"e{i}", "text": "Reduced rates apply to fuel."},
                    ],
                    "evidence": [f"charged at {i % 30}%"],
                    "answer": f"It is {i % 30}% [1].",
                    "reference_answer": f"{i % 30}%.",
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def judge_once(
    workdir: Path, run_file: Path, throttle: bool, latency_s: float, concurrency: int
) -> dict[str, Any]:
    """One judge run on a fresh store (no cache): its wall time and what the client saw."""
    from rageval_core.importing import import_paths

    db = workdir / f"store-{'throttled' if throttle else 'plain'}.duckdb"
    with Store(db) as store:
        import_paths(store, [run_file], score=False)
    with FakeServer() as server:
        server.state.delay_s = latency_s
        if throttle:
            server.state.throttle_every = THROTTLE_EVERY
            server.state.throttle_retry_after = RETRY_AFTER
        config = JudgeConfig(base_url=server.base_url, model="bench", concurrency=concurrency)
        client = ChatClient(server.base_url, None, "VAR", max_attempts=config.max_attempts)
        with Store(db) as store:
            started = time.perf_counter()
            summary = run_judge(store, "paced", config, client=client)
            seconds = time.perf_counter() - started
        sent = server.n_requests
    return {
        "seconds": seconds,
        "status": summary.status,
        "judged": summary.done - summary.judge_errors,
        "tasks": summary.tasks,
        "requests": sent,
        "throttled": client.limiter.backoffs,
        "retry_waits_s": sum(client.waits),
        "final_interval_s": client.limiter.interval_s,
    }


def run(
    workdir: Path, n_queries: int = 120, latency_s: float = 0.5, concurrency: int = 4
) -> ScenarioResult:
    workdir.mkdir(parents=True, exist_ok=True)
    run_file = write_run(workdir / "paced.jsonl", n_queries)
    plain = judge_once(workdir, run_file, False, latency_s, concurrency)
    throttled = judge_once(workdir, run_file, True, latency_s, concurrency)
    ratio = throttled["seconds"] / plain["seconds"]
    floor = plain["seconds"] + throttled["retry_waits_s"] / concurrency
    rows = tuple(
        (
            name,
            fmt_seconds(r["seconds"]),
            f"{r['judged']:,} / {r['tasks']:,}",
            f"{r['requests']:,}",
            f"{r['throttled']:,}",
            fmt_seconds(r["retry_waits_s"]) if r["retry_waits_s"] else "0",
        )
        for name, r in (
            ("no 429", plain),
            (f"every {THROTTLE_EVERY}rd first attempt 429", throttled),
        )
    )
    table = Table(
        ("endpoint", "wall time", "judged", "requests", "429s", "Retry-After waited (sum)"),
        rows,
    )
    n_tasks = n_queries * len(PROMPTS)
    return ScenarioResult(
        key="judge_pacing",
        title="Judge pacing against a rate-limited endpoint",
        setup=(
            f"`rageval_core.judging.run_judge` on {n_queries} queries x {len(PROMPTS)} prompts "
            f"({n_tasks} judgments) at concurrency {concurrency}, against tests/fakellm.py on "
            f"127.0.0.1 answering after {latency_s:g} s; the throttled endpoint answers every "
            f"{THROTTLE_EVERY}rd first attempt at once with 429 and `Retry-After: {RETRY_AFTER}`. "
            "Each run on a fresh store (no cache). One run each (the time is sleeps, not CPU)."
        ),
        tables=(("", table),),
        notes=(
            f"throttled / plain: {fmt_ratio(ratio)} (issue 28's target: about 2x)",
            f"the least the throttled run can take (plain + Retry-After waits / concurrency): "
            f"{fmt_seconds(floor)}; the limiter's spacing added "
            f"{fmt_seconds(max(0.0, throttled['seconds'] - floor))}",
            f"the shared spacing at the end of the throttled run: "
            f"{fmt_seconds(throttled['final_interval_s']) if throttled['final_interval_s'] else '0'}"
            " (before issue 28 it settled at its 10 s maximum: about 13 s per item)",
        ),
        data={
            "plain": plain,
            "throttled": throttled,
            "ratio": ratio,
            "floor_s": floor,
            "n_queries": n_queries,
            "latency_s": latency_s,
            "concurrency": concurrency,
        },
    )
