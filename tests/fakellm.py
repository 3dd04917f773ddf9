"""A fake OpenAI-compatible chat endpoint on 127.0.0.1 for the judge tests (no network).

It answers POST /v1/chat/completions like a judge would: it reads which prompt it was given from
the system message and replies with that prompt's JSON. Tests script failures ahead of the
replies (`fail` holds statuses to answer first, in order), turn on malformed replies, and read
back every request it saw (body and headers). Hostile modes, each its own field: `bodies` (raw
reply bodies by question), `drip` (a reply sent a byte at a time), `auth_fail_after` (a key that
stops working after some replies).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: the usage every reply reports (cost tests multiply these by the prices)
PROMPT_TOKENS = 100
COMPLETION_TOKENS = 20
#: blanks a dripped body opens with (valid JSON still; at one byte per drip it never ends)
DRIP_PAD = 100_000


def _prompt_name(messages: list[dict[str, str]]) -> str:
    system = messages[0]["content"]
    if "relevance of passages" in system:
        return "relevance"
    if "faithful" in system:
        return "faithfulness"
    return "retrieval_quality" if "retrieved contexts serve" in system else "answer_quality"


def _question(messages: list[dict[str, str]]) -> str:
    user = next(m["content"] for m in messages if m["role"] == "user")
    if "\nQuery: " in user:  # the relevance prompt (UMBRELA): one passage of one query
        return user.split("\nQuery: ", 1)[1].split("\n", 1)[0]
    return user.split("Question:\n", 1)[1].split("\n", 1)[0]


def _passage(messages: list[dict[str, str]]) -> str:
    user = next(m["content"] for m in messages if m["role"] == "user")
    return user.split("\nPassage: ", 1)[1].split("\n", 1)[0]


class FakeJudge:
    """The server's state: scripted failures, verdicts by question, the requests seen."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        #: statuses (or (status, {header: value})) answered before any normal reply
        self.fail: deque[Any] = deque()
        #: replies that are not the JSON asked for: "always", "once" (the retry is fine) or None
        self.malformed: str | None = None
        self.malformed_questions: set[str] = set()
        #: question -> faithfulness label (default supported)
        self.faithfulness: dict[str, str] = {}
        #: question -> retrieval_quality_score (default 0.8)
        self.retrieval: dict[str, float] = {}
        #: a function of (question, number of requests so far for it) -> faithfulness label,
        #: to make the judge disagree with itself across repeats
        self.flip: Callable[[str, int], str] | None = None
        self.seen: dict[str, int] = {}
        self.fenced = False  # wrap the JSON in a ```json block, with chatter around it
        self.delay_s = 0.0  # seconds before each reply (a slow model, for Ctrl-C tests)
        #: every reply waits until this is set (cleared: a model that answers when told to)
        self.go = threading.Event()
        self.go.set()
        #: (prompt name, question) -> reply text: recorded replies served as they are
        self.recorded: dict[tuple[str, str], str] = {}
        #: question -> a function of the normal reply object giving the raw 200 body to send
        #: instead (hostile replies: nested, huge, not JSON, absurd usage ...)
        self.bodies: dict[str, Callable[[dict[str, Any]], bytes]] = {}
        self.no_length = False  # raw bodies without Content-Length (read to the close)
        #: "head": the whole answer sent a byte at a time from its status line; "body": the
        #: status and headers at once, then the body a byte at a time (DRIP_PAD blanks first)
        self.drip: str | None = None
        self.drip_every_s = 0.5
        self.drip_questions: set[str] | None = None  # None: every question drips
        #: answer 401 to every request once this many normal replies were sent
        self.auth_fail_after: int | None = None
        self.answered = 0  # normal 200 replies sent
        self.closing = threading.Event()  # set when the server stops: drips end
        #: rate limiting: every n-th first attempt (a body not seen before) is answered 429 at
        #: once (no delay_s) with Retry-After: throttle_retry_after; its retry is answered
        self.throttle_every: int | None = None
        self.throttle_retry_after = "1"
        self.first_attempts = 0
        self.bodies_seen: set[bytes] = set()
        #: usage at the request's limits: prompt tokens = the messages' UTF-8 bytes // 2,
        #: completion tokens = the body's max_tokens (a model that writes until it is cut off)
        self.usage_at_limits = False
        #: the relevance prompt: passage text -> the grade replied (default 2), or a reply text
        #: served as it is ("##final score: 7", chatter ...)
        self.relevance: dict[str, int | str] = {}

    def verdict(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        system = messages[0]["content"]
        if "relevance of passages" in system:
            return {"relevance": self.relevance.get(_passage(messages), 2)}
        question = _question(messages)
        n = self.seen.get(question + system, 0)
        self.seen[question + system] = n + 1
        if "faithful" in system:
            label = self.faithfulness.get(question, "supported")
            if self.flip is not None:
                label = self.flip(question, n)
            return {"faithfulness": label, "evidence": [1], "notes": f"checked {question}"}
        if "retrieved contexts serve" in system:
            score = self.retrieval.get(question, 0.8)
            return {
                "retrieval_quality_score": score,
                "completeness_score": 0.6,
                "relevance_score": 0.9,
                "notes": "fine",
                "extra_key": "ignored",
            }
        return {
            "correctness": 0.75,
            "completeness": 0.5,
            "conciseness": 1.0,
            "citation_accuracy": 0.25,
            "notes": "ok",
        }


def _handler(state: FakeJudge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet test output
            pass

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _send_raw(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if not state.no_length:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client stopped reading (past its cap)
                self.wfile.write(data)

        def _send_dripping(self, head_too: bool, body: Any) -> None:
            data = b" " * DRIP_PAD + json.dumps(body).encode()
            head = (
                f"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n"
            ).encode()
            if not head_too:
                self.wfile.write(head)
            stream = head + data if head_too else data
            for i in range(len(stream)):
                if state.closing.wait(state.drip_every_s):
                    return
                try:
                    self.wfile.write(stream[i : i + 1])
                except OSError:  # the client gave up
                    return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            body = json.loads(raw)
            with state.lock:
                state.requests.append(body)
                state.headers.append(dict(self.headers.items()))
                scripted = state.fail.popleft() if state.fail else None
                if state.auth_fail_after is not None and state.answered >= state.auth_fail_after:
                    scripted = scripted or 401
                throttled = _throttle(state, raw) if scripted is None else False
                if throttled:
                    scripted = (429, {"Retry-After": state.throttle_retry_after})
                if self.path != "/v1/chat/completions":
                    scripted = 404
                messages = body["messages"]
                question = _question(messages)
                retry = len(messages) > 2
                bad = (
                    state.malformed == "always"
                    or (state.malformed == "once" and not retry)
                    or question in state.malformed_questions
                )
                verdict = None if scripted is not None or bad else state.verdict(messages)
            if state.delay_s and not throttled:
                time.sleep(state.delay_s)
            state.go.wait(60)
            if scripted is not None:
                status, headers = scripted if isinstance(scripted, tuple) else (scripted, {})
                self._send(status, {"error": {"message": "scripted failure"}}, headers)
                return
            recorded = state.recorded.get((_prompt_name(messages), question))
            if recorded is not None:
                content = recorded
            elif verdict is None:
                content = "I think the answer looks fine overall."
            elif "relevance" in verdict:  # UMBRELA's reply format, or the scripted text
                grade = verdict["relevance"]
                content = grade if isinstance(grade, str) else f"##final score: {grade}"
            elif state.fenced:
                content = "Here is my verdict:\n```json\n" + json.dumps(verdict) + "\n```\nThanks"
            else:
                content = json.dumps(verdict)
            reply = {
                "id": "fake",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": _usage(state, body),
            }
            hostile = state.bodies.get(question)
            if state.drip and (state.drip_questions is None or question in state.drip_questions):
                self._send_dripping(state.drip == "head", reply)
            elif hostile is not None:
                self._send_raw(hostile(reply))
            else:
                with state.lock:
                    state.answered += 1
                self._send(200, reply)

    return Handler


def _throttle(state: FakeJudge, raw: bytes) -> bool:
    """Whether this request is answered 429 (state.throttle_every; under state.lock)."""
    if state.throttle_every is None or raw in state.bodies_seen:
        return False
    state.bodies_seen.add(raw)
    state.first_attempts += 1
    return state.first_attempts % state.throttle_every == 0


def _usage(state: FakeJudge, body: dict[str, Any]) -> dict[str, int]:
    """The usage a reply reports: fixed, or at the request's limits (state.usage_at_limits)."""
    prompt, completion = PROMPT_TOKENS, COMPLETION_TOKENS
    if state.usage_at_limits:
        prompt = sum(len(m["content"].encode("utf-8")) for m in body["messages"]) // 2
        completion = int(body["max_tokens"])
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that gave up waiting (a timeout test) is not the server's error
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class FakeServer:
    """ThreadingHTTPServer on a free loopback port; `with FakeServer() as s: s.base_url`."""

    def __init__(self) -> None:
        self.state = FakeJudge()
        self.httpd = _QuietServer(("127.0.0.1", 0), _handler(self.state))
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.state.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def n_requests(self) -> int:
        with self.state.lock:
            return len(self.state.requests)


def judge_process(db: Path, base_url: str, *extra: str, key: str = "sk-x") -> Any:
    """`rageval judge judged` against base_url in a real child process (what only a process
    shows: signals, exit at interpreter shutdown), its output piped."""
    from tests.paths import REPO

    argv = ["--db", str(db), "judge", "judged", "--base-url", base_url, *extra]
    return subprocess.Popen(
        [sys.executable, "-m", "rageval_core.cli", *argv],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OPENAI_API_KEY": key},
    )


#: a judge's replies to every prompt of tests/data/judge/judged_run.jsonl, as a real model might
#: word them (fenced blocks, notes); for end-to-end display tests
RECORDED = Path(__file__).parent / "data" / "judge" / "recorded_replies.jsonl"


def recorded_replies() -> dict[tuple[str, str], str]:
    """(prompt, question) -> the recorded reply text."""
    out = {}
    for line in RECORDED.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out[(row["prompt"], row["question"])] = row["reply"]
    return out


def judge_from_recording(db: Path, run: str = "judged", model: str = "recorded-judge") -> Any:
    """Judge a stored copy of judged_run.jsonl with the recorded replies (no network): the
    store then holds a judge result set as `rageval judge` leaves it. Returns the summary."""
    from rageval_core.judging import JudgeConfig, run_judge
    from rageval_core.store import Store

    with FakeServer() as server:
        server.state.recorded = recorded_replies()
        with Store(db) as store:
            return run_judge(
                store, run, JudgeConfig(base_url=server.base_url, model=model), api_key=""
            )
