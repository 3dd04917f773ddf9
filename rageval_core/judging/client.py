"""A small client for any OpenAI-compatible `POST {base_url}/chat/completions` (stdlib only).

Errors are classified as the remote-judge clients do it: 401/403 are never retried (the key is
wrong: the whole run stops); 429, 5xx, timeouts and dropped connections are retried with
exponential backoff and jitter, honouring Retry-After; any other 4xx fails that one request.
An adaptive limiter spaces request starts and widens the spacing on every 429, so a rate-limited
endpoint is not hammered by all threads at once. The API key lives in the Authorization header
of the request only: never in an error, a log line or the cache key.
"""

from __future__ import annotations

import json
import random
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

#: the longest a Retry-After or a backoff makes a thread wait, in seconds
MAX_WAIT_S = 60.0


class JudgeAuthError(RagevalError):
    """The endpoint refused the key (401/403): nothing more is sent, nothing is stored."""

    exit_code = 2


class EndpointError(Exception):
    """One request failed for good (retries spent, or a 4xx that retrying cannot fix)."""


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


def check_base_url(base_url: str) -> str:
    """base_url without a trailing slash; UsageError unless it is an http(s) URL."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--base-url must be an http(s) URL, got {base_url!r}")
    if parts.username or parts.password:
        raise UsageError(
            "--base-url must not hold a user or password: give the key by --api-key-env"
        )
    return base_url.rstrip("/")


class RateLimiter:
    """Spaces request starts: the interval doubles on a 429 and shrinks again on successes."""

    def __init__(self, min_interval_s: float = 0.0, max_interval_s: float = 10.0) -> None:
        self.interval_s = min_interval_s
        self.min_interval_s = min_interval_s
        self.max_interval_s = max_interval_s
        self._next = 0.0
        self._lock = threading.Lock()
        self.backoffs = 0

    def wait(self, sleep: Callable[[float], None]) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval_s
        if start > now:
            sleep(start - now)

    def throttled(self) -> None:
        with self._lock:
            self.backoffs += 1
            self.interval_s = min(self.max_interval_s, max(0.05, self.interval_s * 2))

    def succeeded(self) -> None:
        with self._lock:
            self.interval_s = max(self.min_interval_s, self.interval_s * 0.9)
            if self.interval_s < 0.01:
                self.interval_s = self.min_interval_s


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


class ChatClient:
    """POST chat completions with retries; one instance is shared by the judging threads."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        key_env: str,
        *,
        timeout_s: float = 60.0,
        max_attempts: int = 6,
        backoff_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.url = check_base_url(base_url) + "/chat/completions"
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.key_env = key_env
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.sleep = sleep
        self.limiter = limiter or RateLimiter()
        self.retries = 0  # requests sent again (429, 5xx, timeouts)
        self.waits: list[float] = []  # each wait before a retry, in seconds
        self._lock = threading.Lock()

    def _backoff(self, attempt: int) -> float:
        # full jitter around an exponential step: threads that failed together spread out
        return min(MAX_WAIT_S, self.backoff_s * 2**attempt * (0.5 + random.random()))

    def chat(self, body: Mapping[str, Any], stop: threading.Event | None = None) -> Reply:
        """The reply to one request; EndpointError when it fails for good, JudgeAuthError on
        401/403. stop: an event that ends the retry waits early (cancel, Ctrl-C, auth error)."""
        data = json.dumps(body).encode("utf-8")
        problem = "no attempt made"
        for attempt in range(self.max_attempts):
            if stop is not None and stop.is_set():
                raise EndpointError("cancelled")
            self.limiter.wait(self.sleep)
            request = urllib.request.Request(self.url, data=data, headers=self._headers)
            wait: float | None = None
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    payload = response.read()
                self.limiter.succeeded()
                return _reply(payload)
            except urllib.error.HTTPError as e:
                status = e.code
                e.close()
                if status in (401, 403):
                    raise JudgeAuthError(
                        f"the judge endpoint answered HTTP {status} "
                        f"({'unauthorized' if status == 401 else 'forbidden'}): check the API key "
                        f"in the environment variable {self.key_env}"
                    ) from None
                if status == 429:
                    self.limiter.throttled()
                elif status < 500 and status != 408:
                    raise EndpointError(f"HTTP {status}") from None
                problem = f"HTTP {status}"
                wait = retry_after_s(e.headers.get("Retry-After") if e.headers else None)
            except TimeoutError:
                problem = "timed out"
            except urllib.error.URLError as e:
                if isinstance(e.reason, TimeoutError):
                    problem = "timed out"
                else:
                    problem = f"connection failed ({type(e.reason).__name__})"
            except (ConnectionError, OSError) as e:  # reset mid-read, etc.
                problem = f"connection failed ({type(e).__name__})"
            if attempt + 1 == self.max_attempts:
                break
            delay = min(MAX_WAIT_S, wait) if wait is not None else self._backoff(attempt)
            with self._lock:
                self.retries += 1
                self.waits.append(delay)
            if stop is not None:
                if stop.wait(delay):
                    raise EndpointError("cancelled")
            else:
                self.sleep(delay)
        raise EndpointError(f"{problem} after {self.max_attempts} attempts")


def _reply(payload: bytes) -> Reply:
    """The first choice's message text and the usage; EndpointError when the body is no reply."""
    try:
        obj = json.loads(payload)
        content = obj["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise EndpointError("the endpoint's reply is not a chat completion") from None
    if not isinstance(content, str):
        raise EndpointError("the endpoint's reply has no text content")
    usage = obj.get("usage") if isinstance(obj, dict) else None
    usage = usage if isinstance(usage, dict) else {}

    def count(key: str) -> int:
        value = usage.get(key)
        return (
            int(value)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0
            else 0
        )

    return Reply(content, count("prompt_tokens"), count("completion_tokens"))
