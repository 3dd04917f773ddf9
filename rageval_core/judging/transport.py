"""The judge's HTTP transport: urllib's opener (proxies from the environment, no redirect
followed) over connections whose every socket step is cut into short slices.

A per-read timeout alone bounds nothing: an endpoint that drips a byte every half second never
lets a read time out. Here one deadline covers the whole request (connect, TLS handshake, send,
status line, headers and the full body), and a stop event (Cancel, Ctrl-C, a 401 elsewhere) is
looked at between slices of at most SLICE_S seconds, so a request ends within about SLICE_S of
either, whatever the server does. The reply is read up to MAX_REPLY_BYTES; a larger one is cut
there. Name resolution (getaddrinfo) is the one step that cannot be sliced.
"""

from __future__ import annotations

import errno
import http.client
import io
import os
import select
import socket
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

#: the longest a socket call waits before the deadline and the stop event are looked at again
SLICE_S = 0.25
#: the largest reply read (docs/judging.md, "The client"): a verdict is a few hundred bytes
MAX_REPLY_BYTES = 4 * 1024 * 1024
_READ_BYTES = 64 * 1024
_SEND_BYTES = 64 * 1024
_IN_PROGRESS = {errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY, errno.EAGAIN}


class RequestCancelled(Exception):
    """The stop event was set while the request was under way (no OSError: urllib passes it
    through as it is)."""

    def __init__(self) -> None:
        super().__init__("cancelled")


class RequestTimedOut(TimeoutError):
    """The whole request (connect to the last byte of the reply) passed its deadline."""


class ReplyTooLarge(Exception):
    """The reply is longer than MAX_REPLY_BYTES: it was cut there, not read."""

    def __init__(self) -> None:
        super().__init__(
            f"the reply is larger than {MAX_REPLY_BYTES // (1024 * 1024)} MiB: cut there, not read"
        )


class Deadline:
    """One request's time limit and stop event; slice() is the next socket call's timeout."""

    def __init__(self, timeout_s: float, stop: threading.Event | None) -> None:
        self.timeout_s = timeout_s
        self.stop = stop
        self.end = time.monotonic() + timeout_s

    def slice(self) -> float:
        """Seconds the next socket call may wait; RequestCancelled or RequestTimedOut instead
        when the request must end now."""
        if self.stop is not None and self.stop.is_set():
            raise RequestCancelled
        left = self.end - time.monotonic()
        if left <= 0:
            raise RequestTimedOut(f"the request took longer than {self.timeout_s:g} s")
        return min(left, SLICE_S)


def _connect(
    address: tuple[str, int], deadline: Deadline, source: tuple[str, int] | None
) -> socket.socket:
    """A TCP connection as socket.create_connection makes it, its wait sliced by deadline."""
    host, port = address
    last: OSError | None = None
    for family, kind, proto, _, sockaddr in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            if source:
                sock.bind(source)
            sock.setblocking(False)
            code = sock.connect_ex(sockaddr)
            while code in _IN_PROGRESS:
                _, ready, failed = select.select([], [sock], [sock], deadline.slice())
                if ready or failed:
                    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, os.strerror(code))  # ECONNREFUSED: ConnectionRefusedError
            return sock
        except (RequestTimedOut, RequestCancelled):
            sock.close()
            raise
        except OSError as e:  # the next address may answer
            sock.close()
            last = e
        except BaseException:
            sock.close()
            raise
    raise last or OSError(f"no address found for {host}")


class _SlicedSocket:
    """The few socket methods http.client uses, each call sliced by the deadline."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self.sock = sock
        self.deadline = deadline
        self._users = 1  # the connection, then each reader made by makefile()

    def sendall(self, data: Any) -> None:
        view = memoryview(data).cast("B")
        sent = 0
        while sent < len(view):
            self.sock.settimeout(self.deadline.slice())
            try:
                # a timed-out send is tried again with the same bytes (what TLS requires)
                sent += self.sock.send(view[sent : sent + _SEND_BYTES])
            except TimeoutError:
                continue

    def recv_into(self, buffer: Any) -> int:
        while True:
            self.sock.settimeout(self.deadline.slice())
            try:
                return self.sock.recv_into(buffer)
            except TimeoutError:
                continue

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        self._users += 1
        return io.BufferedReader(_SlicedReader(self))

    def close(self) -> None:
        self._users -= 1
        if self._users <= 0:
            self.sock.close()


class _SlicedReader(io.RawIOBase):
    def __init__(self, sock: _SlicedSocket) -> None:
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)

    def close(self) -> None:
        if not self.closed:
            self._sock.close()
        super().close()


def _open_tcp(conn: Any) -> None:
    """HTTPConnection.connect with the deadline: TCP, then a proxy's CONNECT tunnel if any."""
    sock = _connect((conn.host, conn.port), conn.deadline, conn.source_address)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sock = _SlicedSocket(sock, conn.deadline)
    if conn._tunnel_host:
        conn._tunnel()


class _HTTPConnection(http.client.HTTPConnection):
    deadline: Deadline  # set by _connection

    def connect(self) -> None:
        _open_tcp(self)


class _HTTPSConnection(http.client.HTTPSConnection):
    deadline: Deadline  # set by _connection

    def connect(self) -> None:
        _open_tcp(self)
        plain = self.sock.sock  # type: ignore[union-attr]
        tls = self._context.wrap_socket(  # type: ignore[attr-defined]
            plain,
            server_hostname=self._tunnel_host or self.host,  # type: ignore[attr-defined]
            do_handshake_on_connect=False,
        )
        while True:
            tls.settimeout(self.deadline.slice())
            try:
                tls.do_handshake()
                break
            except TimeoutError:
                continue
        self.sock = _SlicedSocket(tls, self.deadline)  # type: ignore[assignment]


def _connection(kind: type[http.client.HTTPConnection], req: Any) -> Callable[..., Any]:
    """What urllib's do_open makes a connection with: kind, given the request's deadline."""

    def make(host: str, **kwargs: Any) -> http.client.HTTPConnection:
        conn = kind(host, **kwargs)
        conn.deadline = req.deadline  # type: ignore[attr-defined]
        return conn

    return make


class DeadlineRequest(urllib.request.Request):
    """A request carrying its Deadline to the connection that sends it."""

    def __init__(self, url: str, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self.deadline = deadline


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: Any) -> Any:
        return self.do_open(_connection(_HTTPConnection, req), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: Any) -> Any:
        connection = _connection(_HTTPSConnection, req)
        return self.do_open(connection, req, context=self._context)  # type: ignore[attr-defined]


def build_opener(*handlers: urllib.request.BaseHandler) -> urllib.request.OpenerDirector:
    """urllib's opener with the deadline's connections (for DeadlineRequest only)."""
    return urllib.request.build_opener(*handlers, _HTTPHandler(), _HTTPSHandler())


def read_reply(response: Any) -> bytes:
    """The whole body, at most MAX_REPLY_BYTES; ReplyTooLarge past that (a Content-Length
    announcing more is refused before anything is read)."""
    announced = response.headers.get("Content-Length")
    if announced and announced.strip().isdigit() and int(announced) > MAX_REPLY_BYTES:
        raise ReplyTooLarge
    parts: list[bytes] = []
    size = 0
    while chunk := response.read(_READ_BYTES):
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise ReplyTooLarge
        parts.append(chunk)
    return b"".join(parts)
