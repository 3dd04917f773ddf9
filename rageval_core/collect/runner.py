"""Run the user's retriever over a parameter grid and store one run per grid point.

Each question is posted once per grid point (concurrently, through the judge's client: one
deadline per request, replies cut at 4 MiB, redirects refused, retries with backoff on 429, 5xx
and timeouts, 401/403 stop everything). A grid point is stored when every question of it has
been answered: written as a native JSONL run and imported as `rageval import` imports one
(validation, content hash, evidence scored), with the grid values as its run settings. A
question whose request or reply failed is reported (`question QID: reply: field: problem`) and
never stored as "retrieved nothing": its grid point is not stored, unless keep_partial, which
stores it without those questions and says so in its description. Ctrl-C (KeyboardInterrupt in
the calling thread) stops the requests within about a quarter of a second; the grid points
stored before it stay, the one under way stores nothing.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rageval_core.collect.grid import Axis, default_template, endpoint_host, points, run_names
from rageval_core.collect.mapping import REQUEST_STAGE, Mapping_, ReplyProblem, read_reply
from rageval_core.errors import RagevalError, UsageError
from rageval_core.judging.client import (
    EndpointError,
    JsonClient,
    JudgeUnreachableError,
    base_url_problem,
)
from rageval_core.model import Query, RunInfo

#: progress(grid point's run name, questions done, questions in all)
Progress = Callable[[str, int, int], None]


class EndpointAuthError(RagevalError):
    """The endpoint refused the headers (401/403): nothing more is sent."""

    exit_code = 2


class RetrieverClient(JsonClient):
    """POST one question at a time to the retrieval endpoint (headers: from the environment)."""

    service = "the retrieval endpoint"

    def __init__(self, url: str, headers: Mapping[str, str], header_envs: Sequence[str], **kw: Any):
        super().__init__(url, headers, **kw)
        self.header_envs = tuple(header_envs)

    def auth_error(self, status: int) -> RagevalError:
        hint = (
            f"check the headers from {', '.join('$' + v for v in self.header_envs)}"
            if self.header_envs
            else "give its key with --header-env NAME=VAR"
        )
        word = "unauthorized" if status == 401 else "forbidden"
        return EndpointAuthError(f"the retrieval endpoint answered HTTP {status} ({word}): {hint}")


@dataclass(frozen=True)
class CollectConfig:
    """What `rageval collect` was asked to do (docs/collect.md)."""

    endpoint: str
    axes: tuple[Axis, ...] = ()
    mapping: Mapping_ = field(default_factory=Mapping_)
    name_template: str | None = None
    concurrency: int = 4
    timeout_s: float = 30.0
    retries: int = 3
    #: header name -> environment variable holding its value (the values are never kept)
    header_envs: Mapping[str, str] = field(default_factory=dict)
    keep_partial: bool = False
    #: the question file's name, for {questions} in the template and the run description
    questions_name: str = ""

    def check(self) -> None:
        problem = base_url_problem(self.endpoint)
        if problem is not None:
            raise UsageError(f"--endpoint {problem}")
        if not 1 <= self.concurrency <= 64:
            raise UsageError(f"--concurrency {self.concurrency}: give 1 to 64")
        if not 0 < self.timeout_s <= 3600:
            raise UsageError(f"--timeout {self.timeout_s:g}: give more than 0 and at most 3600 s")
        if not 0 <= self.retries <= 10:
            raise UsageError(f"--retries {self.retries}: give 0 to 10")

    @property
    def host(self) -> str:
        return endpoint_host(self.endpoint)

    def grid(self) -> list[dict[str, Any]]:
        return points(self.axes)

    def names(self) -> list[str]:
        template = self.name_template or default_template(self.axes)
        return run_names(
            template, self.grid(), {"endpoint_host": self.host, "questions": self.questions_name}
        )

    def headers(self) -> dict[str, str]:
        """The headers to send, read from the environment now; UsageError for an unset one."""
        import os

        out = {}
        for name, var in self.header_envs.items():
            value = os.environ.get(var)
            if not value:
                raise UsageError(f"--header-env {name}={var}: ${var} is not set (or empty)")
            out[name] = value
        return out


@dataclass
class PointOutcome:
    """One grid point: its run name and values, what happened, the questions that failed."""

    name: str
    params: dict[str, Any]
    #: stored | already stored | not stored | interrupted | not started
    status: str = "not started"
    answered: int = 0
    failures: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # from the import, when it refused
    run_id: str | None = None
    latency_p50_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": self.params,
            "status": self.status,
            "answered": self.answered,
            "failed": len(self.failures),
            "failures": self.failures,
            "problems": self.problems,
            "run_id": self.run_id,
            "request_p50_ms": self.latency_p50_ms,
        }


@dataclass
class CollectSummary:
    """What a collect did, point by point; status: done | partial | interrupted | failed."""

    endpoint_host: str
    questions: int
    points: list[PointOutcome]
    status: str = "done"
    requests: int = 0
    retries: int = 0
    cause: str | None = None  # why every request stopped (unreachable, refused headers)
    cause_exit: int | None = None  # that error's exit code

    @property
    def stored(self) -> list[PointOutcome]:
        return [p for p in self.points if p.status in ("stored", "already stored")]

    def to_json(self) -> dict[str, Any]:
        return {
            "endpoint_host": self.endpoint_host,
            "questions": self.questions,
            "status": self.status,
            "requests": self.requests,
            "retries": self.retries,
            "cause": self.cause,
            "grid_points": len(self.points),
            "stored": len(self.stored),
            "points": [p.to_json() for p in self.points],
        }


def plan(config: CollectConfig, questions: Sequence[Query]) -> CollectSummary:
    """The summary before anything is sent: every grid point named, not started."""
    config.check()
    names = config.names()
    return CollectSummary(
        endpoint_host=config.host,
        questions=len(questions),
        points=[PointOutcome(n, p) for n, p in zip(names, config.grid(), strict=True)],
    )


#: opens the store for one step (a context manager): held only while a grid point is stored,
#: so the dashboard or an import can use it between points
OpenStore = Callable[[], AbstractContextManager[Any]]


def collect(
    open_store: OpenStore,
    questions: Sequence[Query],
    config: CollectConfig,
    summary: CollectSummary,
    *,
    progress: Progress | None = None,
    client: JsonClient | None = None,
) -> CollectSummary:
    """Send every question at every grid point of summary (plan()), storing each point once it
    is complete; summary is filled as it goes (a caller that is interrupted still holds what
    was stored). Returns summary."""
    with open_store() as store:  # names checked before anything is sent
        taken = {r.name for r in store.runs()}
    for point in summary.points:
        if point.name in taken:
            raise UsageError(
                f"a run named {point.name!r} is already stored: give another --name-template "
                "(or rename or delete that run)"
            )
    client = client or RetrieverClient(
        config.endpoint,
        config.headers(),
        list(config.header_envs.values()),
        timeout_s=config.timeout_s,
        max_attempts=config.retries + 1,
    )
    stop = threading.Event()
    pool = cf.ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="collect")
    try:
        for point in summary.points:
            point.status = "interrupted"  # until it is stored or refused
            answers = _answers(client, questions, config.mapping, point, stop, pool, progress)
            summary.requests += len(answers)
            with open_store() as store:
                _store(store, questions, answers, config, point)
    except KeyboardInterrupt:
        stop.set()
        summary.status = "interrupted"
    except (JudgeUnreachableError, EndpointAuthError) as e:
        stop.set()
        summary.status, summary.cause, summary.cause_exit = "failed", str(e), e.exit_code
        for point in summary.points:
            if point.status == "interrupted":
                point.status = "not stored"
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        summary.retries = client.retries
    failed = any(p.failures for p in summary.points)
    if summary.status == "done" and (failed or len(summary.stored) < len(summary.points)):
        summary.status = "partial" if summary.stored else "failed"
    return summary


@dataclass(frozen=True)
class _Answer:
    chunks: tuple[Any, ...]
    latency_ms: dict[str, float]
    tokens: dict[str, int]


def _answers(
    client: JsonClient,
    questions: Sequence[Query],
    mapping: Mapping_,
    point: PointOutcome,
    stop: threading.Event,
    pool: cf.ThreadPoolExecutor,
    progress: Progress | None,
) -> dict[str, _Answer | str]:
    """query_id -> its answer, or the failure's message; raises what stops every request."""

    def ask(q: Query) -> _Answer | str:
        body = mapping.request(q.query_id, q.query or "", point.params)
        took: list[float] = []
        try:
            payload = client.post(body, stop, took)
            got = read_reply(payload, mapping)
        except EndpointError as e:
            return f"question {q.query_id}: request: {e}"
        except ReplyProblem as e:
            return f"question {q.query_id}: reply: {e.field}: {e.problem}"
        return _Answer(got.chunks, {REQUEST_STAGE: round(took[0], 3), **got.latency_ms}, got.tokens)

    futures = {pool.submit(ask, q): q.query_id for q in questions}
    out: dict[str, _Answer | str] = {}
    try:
        pending = set(futures)
        while pending:
            # a short wait: Ctrl-C reaches this thread between waits
            done, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
            for f in done:
                out[futures[f]] = f.result()  # re-raises what stops every request
            if progress is not None:
                progress(point.name, len(out), len(futures))
    except BaseException:
        stop.set()
        for f in futures:
            f.cancel()
        raise
    return out


def _store(
    store: Any,
    questions: Sequence[Query],
    answers: Mapping[str, _Answer | str],
    config: CollectConfig,
    point: PointOutcome,
) -> None:
    """Store the grid point as one run when it may be (all answered, or keep_partial)."""
    from rageval_core.formats.native import write_native
    from rageval_core.importing import import_paths

    point.failures = [a for q in questions if isinstance(a := answers[q.query_id], str)]
    good = [(q, answers[q.query_id]) for q in questions if not isinstance(answers[q.query_id], str)]
    point.answered = len(good)
    wall = sorted(a.latency_ms[REQUEST_STAGE] for _, a in good if isinstance(a, _Answer))
    point.latency_p50_ms = wall[len(wall) // 2] if wall else None
    if not good or (point.failures and not config.keep_partial):
        point.status = "not stored"
        return
    left_out = (
        f"; {len(point.failures)} questions failed and are left out (their requests or replies "
        "failed: the run's metrics are over the questions that answered)"
        if point.failures
        else ""
    )
    info = RunInfo(
        name=point.name,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        description=(
            f"collected by rageval collect from {config.host}: {len(good)} of "
            f"{len(questions)} questions"
            + (f" from {config.questions_name}" if config.questions_name else "")
            + left_out
        ),
        settings=dict(point.params),
    )
    queries = [
        dataclasses.replace(q, retrieved=a.chunks, latency_ms=a.latency_ms, tokens=a.tokens)
        for q, a in good
        if isinstance(a, _Answer)
    ]
    with tempfile.TemporaryDirectory(prefix="rageval-collect-") as tmp:
        path = Path(tmp) / "run.jsonl"
        write_native(info, queries, path)
        out = import_paths(store, [path], "native", point.name, show_source=lambda _: point.name)
    if out.failed:
        point.status = "not stored"
        point.problems = [str(p) for p in out.problems]
        return
    record = (out.imported or out.existing)[0]
    point.status = "stored" if out.imported else "already stored"
    point.run_id = str(record.run_id)
