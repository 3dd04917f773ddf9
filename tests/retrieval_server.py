"""A small retrieval endpoint on 127.0.0.1 for the `rageval collect` tests (no network).

It serves the demo collection (rageval_core/demo) behind the demo's own retrievers: POST
{"query", "search_type", "top_k"} answers {"results": [{"id", "text", "score"}], "timings_ms":
{"retrieval": ms}}, search_type "keyword" (BM25), "vector" (character TF-IDF) or "hybrid"
(reciprocal rank fusion of both), top_k honoured. Tests read back every request (body and
headers) and script hostile answers: `bodies` (raw reply bodies by question), `fail` (statuses
answered first), `redirect_to`, `drip` (a reply a byte at a time), `delay_s`, `require_header`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rageval_core.demo import GoldQuery, build_corpus, build_questions
from rageval_core.demo.retrievers import rrf
from rageval_core.demo.runs import Pipelines
from rageval_core.formats.native import write_native
from rageval_core.model import Query, RunInfo

SEED = 7


@cache
def demo() -> tuple[Pipelines, tuple[GoldQuery, ...]]:
    """The demo collection's indexes and its first 40 questions (built once per process)."""
    corpus = build_corpus(SEED)
    return Pipelines(corpus), tuple(build_questions(corpus, 40, SEED))


def search(query: str, search_type: str, top_k: int) -> list[dict[str, Any]]:
    """What the server answers: the top_k chunks of search_type, best first."""
    pipes, _ = demo()
    if search_type == "keyword":
        hits = pipes.bm25.search(query, top_k)
    elif search_type == "vector":
        hits = pipes.tfidf.search(query, top_k)
    else:
        hits = rrf([pipes.bm25.search(query, 50), pipes.tfidf.search(query, 50)], 60, top_k)
    return [
        {"id": pipes.chunks[i].chunk_id, "text": pipes.chunks[i].text, "score": round(s, 6)}
        for i, s in hits
    ]


def write_questions(path: Path, n: int = 6) -> list[GoldQuery]:
    """The first n demo questions as a native JSONL file with their evidence and qrels."""
    _, questions = demo()
    chosen = list(questions[:n])
    write_native(
        RunInfo(),
        (
            Query(
                query_id=q.query_id,
                query=q.text,
                retrieved=(),
                relevance=dict(q.relevance),
                evidence=q.evidence,
                tags={"query_type": q.query_type},
            )
            for q in chosen
        ),
        path,
    )
    return chosen


class State:
    """What the server answers and what it saw."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        #: question text -> raw reply body (bytes), answered with 200
        self.bodies: dict[str, bytes] = {}
        #: statuses answered first, in order, whatever the question
        self.fail: deque[int] = deque()
        #: question text -> status answered every time
        self.fail_questions: dict[str, int] = {}
        self.redirect_to: str | None = None
        self.drip = False
        self.delay_s = 0.0
        #: (body key, value): requests whose body has it wait slow_s (0.2 s slices) first
        self.slow_when: tuple[str, Any] | None = None
        self.slow_s = 60.0
        #: (header, value) every request must carry, else 401
        self.require_header: tuple[str, str] | None = None
        self.closing = threading.Event()


def _handler(state: State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            with state.lock:
                state.requests.append(body)
                state.headers.append(dict(self.headers.items()))
                failing = state.fail.popleft() if state.fail else None
            if state.delay_s and state.closing.wait(state.delay_s):
                return
            slow = (
                state.slow_when is not None and body.get(state.slow_when[0]) == state.slow_when[1]
            )
            if slow and state.closing.wait(state.slow_s):
                return
            if state.require_header is not None:
                name, value = state.require_header
                if self.headers.get(name) != value:
                    self._send(401, b'{"error": "unauthorized"}')
                    return
            if state.redirect_to is not None:
                self._send(302, b"", {"Location": state.redirect_to})
                return
            if failing is not None:
                self._send(failing, b'{"error": "scripted"}')
                return
            nested = body.get("q")  # a custom mapping's place: {"q": {"text": ...}}
            query = nested.get("text", "") if isinstance(nested, dict) else body.get("query", "")
            if query in state.fail_questions:
                self._send(state.fail_questions[query], b'{"error": "scripted"}')
                return
            if query in state.bodies:
                self._send(200, state.bodies[query])
                return
            t0 = time.perf_counter()
            results = search(query, body.get("search_type", "hybrid"), int(body.get("top_k", 10)))
            reply = {
                "results": results,
                "timings_ms": {"retrieval": (time.perf_counter() - t0) * 1000},
            }
            data = json.dumps(reply).encode()
            if state.drip:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) + 100_000))
                self.end_headers()
                for _ in range(100_000):
                    if state.closing.wait(0.2):
                        return
                    try:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    except OSError:
                        return
                return
            self._send(200, data)

    return Handler


class Server:
    """The endpoint's URL and state while it runs."""

    def __init__(self, httpd: ThreadingHTTPServer, state: State) -> None:
        self.httpd = httpd
        self.state = state
        port = httpd.server_address[1]
        self.url = f"http://127.0.0.1:{port}/search"


@contextlib.contextmanager
def serve() -> Iterator[Server]:
    """The endpoint on 127.0.0.1 at a free port (bound to port 0), in a thread."""
    demo()  # the indexes before the first request (its deadline would count them)
    state = State()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Server(httpd, state)
    finally:
        state.closing.set()
        httpd.shutdown()
        httpd.server_close()
