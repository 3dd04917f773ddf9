"""A small client for any OpenAI-compatible `POST {base_url}/chat/completions` (stdlib only).

Errors are classified as the remote-judge clients do it: 401/403 are never retried (the key is
wrong: the whole run stops); 429, 5xx, timeouts and dropped connections are retried with
exponential backoff and jitter, honouring Retry-After; any other 4xx fails that one request.
A failure to get any answer is named in plain words (`describe_failure`, the one place that
classifies them: refused, name not resolved, TLS, timeout, closed), and when the endpoint has
never answered and its first FAST_STOP_AFTER attempts all failed the same way, the client stops
every request with JudgeUnreachableError instead of retrying each one for minutes.
Each request is bounded as a whole by timeout_s (connect to the reply's last byte) and ends
within about a second of its stop event, whatever the server does; replies are read up to
4 MiB, and one that is no chat completion, or whose usage is no token count, is that request's
EndpointError with a short reason (transport.py, `_reply`).
An adaptive limiter spaces request starts: a 429 halves the shared pace and each success adds
to it again (AIMD), so a rate-limited endpoint is not hammered by all threads at once and an
occasional 429 does not slow the run to a crawl. The API key lives in the Authorization header
of the request only: never in an error, a log line or the cache key.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from rageval_core.errors import RagevalError, UsageError
import rageval_core.judging.transport as transport

#: the longest a Retry-After or a backoff makes a thread wait, in seconds
MAX_WAIT_S = 60.0
#: an endpoint that has never answered is given up on when its first this-many attempts all
#: failed the same way at the connection level (docs/judging.md, "The client")
FAST_STOP_AFTER = 3


class JudgeAuthError(RagevalError):
    """The endpoint refused the key (401/403): nothing more is sent, nothing is stored."""

    exit_code = 2


class JudgeUnreachableError(RagevalError):
    """The endpoint never answered: its first attempts all failed the same way (refused, name
    not resolved, TLS, timeout). The cause is named once; the run stops as a `failed` set."""

    exit_code = 4

    def __init__(self, cause: str, attempts: int, what: str = "the judge endpoint") -> None:
        self.cause = cause
        self.attempts = attempts
        super().__init__(
            f"{what} gave no answer: {cause} "
            f"(the first {attempts} attempts all failed this way; nothing more was sent)"
        )


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """No redirect is followed: urllib would resend the request, Authorization header and all,
    to whatever host the Location names. The answer is a redirect: one request's failure."""

    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> None:
        fp.close()
        where = urlsplit(newurl).netloc.rpartition("@")[2] or urlsplit(req.full_url).netloc
        raise EndpointError(
            f"the endpoint redirected (HTTP {code}) to {where}: not followed, the key (or any "
            "header) is sent only to the configured host (give the address it redirects to "
            "as the base URL or endpoint if you trust it)"
        )


#: the one opener of every judge request (no redirect followed; proxies from the environment
#: as urlopen has them; each request under one deadline: transport.py)
_OPENER = transport.build_opener(_RefuseRedirects())
#: the largest token count one reply may report (no model reads or writes more in one request;
#: a count past it is a hostile or broken reply, kept out of the store)
MAX_REPLY_TOKENS = 100_000_000


class EndpointError(Exception):
    """One request failed for good (retries spent, or a 4xx that retrying cannot fix);
    cause: the failure in plain words, without the attempts (what a summary counts by)."""

    def __init__(self, cause: str, attempts: int = 1) -> None:
        self.cause = cause
        super().__init__(cause if attempts == 1 else f"{cause} after {attempts} attempts")


@dataclass(frozen=True, slots=True)
class Reply:
    """The first choice's text and the usage the endpoint reported (0 when it reported none)."""

    content: str
    prompt_tokens: int
    completion_tokens: int


def base_host(base_url: str) -> str:
    """The endpoint's host[:port]: what a result set records (never a path, query or password)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


def host_port(base_url: str) -> str:
    """host:port the endpoint is reached at (the scheme's port when the URL gives none)."""
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname or ''}:{port}"


def describe_failure(error: BaseException, base_url: str, timeout_s: float) -> tuple[str, bool]:
    """(the cause in plain words, whether it is connection-level: no HTTP answer at all).

    The one place that classifies a request's failure below HTTP; urllib wraps most of these
    in URLError(reason)."""
    if isinstance(error, urllib.error.URLError) and isinstance(error.reason, BaseException):
        error = error.reason
    where = host_port(base_url)
    host = urlsplit(base_url).hostname or ""
    if isinstance(error, TimeoutError):
        return f"{where} did not answer within {timeout_s:g} s (timeout)", True
    if isinstance(error, ConnectionRefusedError):
        return f"{where} refused the connection (nothing listens there?)", True
    if isinstance(error, socket.gaierror):
        return f"the name {host} could not be resolved (DNS)", True
    if isinstance(error, ssl.SSLError):
        reason = getattr(error, "reason", None) or type(error).__name__
        return f"the TLS handshake with {where} failed ({reason})", True
    if isinstance(error, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
        return f"{where} closed the connection without an answer", True
    if isinstance(error, http.client.HTTPException):
        return f"{where} sent something that is not HTTP ({type(error).__name__})", True
    if isinstance(error, OSError) and error.strerror:
        return f"cannot connect to {where}: {error.strerror.lower()}", True
    return f"cannot connect to {where} ({type(error).__name__})", True


def base_url_problem(base_url: str) -> str | None:
    """What is wrong with a base URL, in words that follow its name (None: nothing)."""
    if not base_url.strip():
        return "is empty: give the endpoint's address, e.g. https://api.openai.com/v1"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in base_url):
        return f"must hold no spaces, line breaks or control characters, got {base_url!r}"
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 (reading it checks it: out of range or not a number raises)
    except ValueError as e:  # unbalanced IPv6 brackets, a bad port
        return f"is not a URL ({e}), got {base_url!r}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"must be an http(s) URL, got {base_url!r}"
    if parts.username or parts.password:
        return "must not hold a user or password: the key is read from an environment variable"
    return None


def check_base_url(base_url: str) -> str:
    """base_url without a trailing slash; UsageError unless it is an http(s) URL."""
    problem = base_url_problem(base_url)
    if problem is not None:
        raise UsageError(f"--base-url {problem}")
    return base_url.rstrip("/")


class RateLimiter:
    """Spaces request starts, shared by the judging threads: additive increase of the pace on
    success, multiplicative decrease on a 429 (AIMD, as TCP paces a congested link).

    A 429 halves the pace (the interval between starts doubles, from STEP_S when there was
    none), never to an interval past the server's Retry-After nor max_interval_s: the thread
    that got it waits that Retry-After itself (ChatClient.chat), the others only keep a wider
    spacing. Each success adds RECOVER_PER_S starts per second; a pace above 1 / STEP_S is no
    spacing at all. So an endpoint that throttles now and then costs its Retry-Afters and a few
    short spacings, not a crawl; one that throttles every request keeps every thread apart.
    clock: seconds, monotonic (a test gives a fake one with the sleep it advances).
    """

    #: the first spacing after a 429, and the spacing below which there is none, in seconds
    STEP_S = 0.05
    #: starts per second each success adds to the pace
    RECOVER_PER_S = 4.0

    def __init__(
        self,
        min_interval_s: float = 0.0,
        max_interval_s: float = 10.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = min_interval_s
        self.min_interval_s = min_interval_s
        self.max_interval_s = max_interval_s
        self._clock = clock
        self._next = 0.0
        self._lock = threading.Lock()
        self.backoffs = 0

    def wait(self, sleep: Callable[[float], None]) -> None:
        """Take the next start slot; sleep until it comes."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval_s
        if start > now:
            sleep(start - now)

    def throttled(self, retry_after_s: float | None = None) -> None:
        """A 429: halve the pace (at most to the Retry-After's and max_interval_s's spacing)."""
        with self._lock:
            self.backoffs += 1
            cap = self.max_interval_s
            if retry_after_s is not None:
                cap = min(cap, max(self.STEP_S, retry_after_s))
            grown = max(self.STEP_S, self.interval_s * 2)
            self.interval_s = max(self.min_interval_s, min(cap, grown))

    def succeeded(self) -> None:
        """A reply: add RECOVER_PER_S to the pace; past 1 / STEP_S the spacing is gone."""
        with self._lock:
            if self.interval_s <= self.min_interval_s:
                return
            interval = 1.0 / (1.0 / self.interval_s + self.RECOVER_PER_S)
            self.interval_s = max(self.min_interval_s, 0.0 if interval < self.STEP_S else interval)


def retry_after_s(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class JsonClient:
    """POST JSON to one URL with retries, pacing and a deadline per request; one instance is
    shared by the threads of a run (the judge's chat requests, collect's retrieval requests).

    The headers (a key among them) go to that URL only: never into an error or a log line."""

    #: who answers, as the errors name it
    service = "the judge endpoint"

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        timeout_s: float = 60.0,
        max_attempts: int = 6,
        backoff_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.url = url
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        self._headers.update(headers)
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.sleep = sleep
        self.limiter = limiter or RateLimiter()
        self.retries = 0  # requests sent again (429, 5xx, timeouts)
        self.waits: list[float] = []  # each wait before a retry, in seconds
        self.ever_answered = False  # any HTTP answer at all, even an error status
        self.first_failures: list[str] = []  # connection-level causes before any answer
        self.unreachable: JudgeUnreachableError | None = None  # set once given up on
        self._lock = threading.Lock()

    def _backoff(self, attempt: int) -> float:
        # full jitter around an exponential step: threads that failed together spread out
        return min(MAX_WAIT_S, self.backoff_s * 2**attempt * (0.5 + random.random()))

    def auth_error(self, status: int) -> RagevalError:
        """What a 401/403 raises: the run stops, nothing more is sent."""
        raise NotImplementedError

    def post(
        self,
        body: Mapping[str, Any],
        stop: threading.Event | None = None,
        took_ms: list[float] | None = None,
    ) -> bytes:
        """The reply's body (at most 4 MiB) to one request; EndpointError when it fails for good,
        auth_error() on 401/403, JudgeUnreachableError once the endpoint is given up on
        (FAST_STOP_AFTER). stop: an event that ends the request and the retry waits early.
        took_ms: gets the wall time of the attempt that answered (connect to the reply's last
        byte; no pacing or retry wait in it)."""
        data = json.dumps(body).encode("utf-8")
        problem = "no attempt made"
        for attempt in range(self.max_attempts):
            if self.unreachable is not None:
                raise self.unreachable
            if stop is not None and stop.is_set():
                raise EndpointError("cancelled")
            self.limiter.wait(self.sleep)
            deadline = transport.Deadline(self.timeout_s, stop)
            request = transport.DeadlineRequest(
                self.url, deadline, data=data, headers=self._headers
            )
            wait: float | None = None
            started = time.perf_counter()
            try:
                with _OPENER.open(request, timeout=self.timeout_s) as response:
                    self._answered()
                    payload = transport.read_reply(response)
                if took_ms is not None:
                    took_ms.append((time.perf_counter() - started) * 1000.0)
                self.limiter.succeeded()
                return payload
            except (transport.RequestCancelled, transport.ReplyTooLarge) as e:
                raise EndpointError(str(e)) from None
            except urllib.error.HTTPError as e:
                self._answered()
                status = e.code
                e.close()
                if status in (401, 403):
                    raise self.auth_error(status) from None
                wait = retry_after_s(e.headers.get("Retry-After") if e.headers else None)
                if status == 429:  # this request waits its own Retry-After; the pace halves
                    self.limiter.throttled(wait)
                elif status < 500 and status != 408:
                    raise EndpointError(f"HTTP {status}") from None
                problem = f"HTTP {status}"
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                # refused, not resolved, TLS, timeout, reset mid-read ...
                problem, _ = describe_failure(e, self.url, self.timeout_s)
                self._no_answer(problem)
            if attempt + 1 == self.max_attempts:
                break
            delay = min(MAX_WAIT_S, wait) if wait is not None else self._backoff(attempt)
            with self._lock:
                self.waits.append(delay)
            if stop is not None:
                if stop.wait(delay):
                    # given up on while waiting: this request failed for that reason too
                    raise self.unreachable or EndpointError("cancelled")
            else:
                self.sleep(delay)
            with self._lock:
                self.retries += 1
        raise EndpointError(problem, self.max_attempts)

    def _answered(self) -> None:
        with self._lock:
            self.ever_answered = True

    def _no_answer(self, cause: str) -> None:
        """Count a connection-level failure; give the endpoint up (raise) when it has never
        answered and its first FAST_STOP_AFTER attempts all failed with this same cause."""
        with self._lock:
            if self.ever_answered:
                return
            self.first_failures.append(cause)
            first = self.first_failures[:FAST_STOP_AFTER]
            if self.unreachable is None and len(first) == FAST_STOP_AFTER and len(set(first)) == 1:
                self.unreachable = JudgeUnreachableError(cause, FAST_STOP_AFTER, self.service)
            found = self.unreachable
        if found is not None:
            raise found


class ChatClient(JsonClient):
    """POST chat completions with retries; one instance is shared by the judging threads."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        key_env: str,
        **options: Any,
    ) -> None:
        """options: JsonClient's (timeout_s, max_attempts, backoff_s, sleep, limiter)."""
        super().__init__(
            check_base_url(base_url) + "/chat/completions",
            {"Authorization": f"Bearer {api_key}"} if api_key else {},
            **options,
        )
        self.key_env = key_env

    def auth_error(self, status: int) -> RagevalError:
        return JudgeAuthError(
            f"the judge endpoint answered HTTP {status} "
            f"({'unauthorized' if status == 401 else 'forbidden'}): check the API key "
            f"in the environment variable {self.key_env}"
        )

    def chat(self, body: Mapping[str, Any], stop: threading.Event | None = None) -> Reply:
        """The reply to one request (post(), then the chat completion read from it)."""
        return _reply(self.post(body, stop))


def _reply(payload: bytes) -> Reply:
    """The first choice's message text and the usage; EndpointError, with a short reason, when
    the body is no reply or its usage is no token count (never stored, never a crash)."""
    try:
        obj = json.loads(payload)
    except RecursionError:
        raise EndpointError("the reply nests too deeply to be read") from None
    except json.JSONDecodeError:
        raise EndpointError("the reply is not JSON") from None
    except ValueError:  # not UTF-8, or an integer of thousands of digits
        raise EndpointError("the reply cannot be read as JSON text") from None
    try:
        content = obj["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise EndpointError(
            "the reply is not a chat completion (no choices[0].message.content)"
        ) from None
    if not isinstance(content, str):
        raise EndpointError("the reply has no text content")
    usage = obj.get("usage")
    if usage is None:  # not reported (a local server): no tokens counted
        usage = {}
    if not isinstance(usage, dict):
        raise EndpointError("the reply's usage is not an object")
    return Reply(
        content, _token_count(usage, "prompt_tokens"), _token_count(usage, "completion_tokens")
    )


def _token_count(usage: dict[str, Any], key: str) -> int:
    """usage[key] as a whole number of tokens in [0, MAX_REPLY_TOKENS] (absent or null: 0)."""
    value = usage.get(key)
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():  # 100.0 from a loose server
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPLY_TOKENS:
        raise EndpointError(
            f"the reply's usage.{key} is not a token count (a whole number from 0 to "
            f"{MAX_REPLY_TOKENS:,})"
        )
    return value
