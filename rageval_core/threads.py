"""Background threads that end before the interpreter does.

Python ends a daemon thread that is still running at exit by making it leave (pthread_exit) as it
takes the GIL back; a thread inside DuckDB or Arrow at that moment unwinds through C++ frames
that catch everything, and the process aborts ("FATAL: exception not rethrown", exit 134; seen in
test and bench children). So every thread rageval starts in the background is tracked here with
a way to ask it to stop; stop_all(), called by the CLI before it exits and at interpreter exit
(as the interpreter starts to exit, before any daemon thread is ended), asks each to stop and waits for it. Resources
that hold a DuckDB connection (the dashboard's LeasedStore) register a closer, called there too.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

#: how long stop_all waits, in all, for the threads it asked to stop
STOP_WAIT_S = 10.0

_lock = threading.Lock()
#: live tracked threads -> how to ask each to stop (None: it ends by itself soon)
_threads: weakref.WeakKeyDictionary[threading.Thread, Callable[[], None] | None] = (
    weakref.WeakKeyDictionary()
)
#: objects to close at exit (a LeasedStore's connection), held weakly: a closed, dropped store
#: is forgotten
_closers: weakref.WeakSet[Any] = weakref.WeakSet()


def track(thread: threading.Thread, stop: Callable[[], None] | None = None) -> threading.Thread:
    """Have stop_all ask thread to stop (stop()) and wait for it; returns thread."""
    with _lock:
        _threads[thread] = stop
    return thread


def start(
    target: Callable[..., object],
    *args: object,
    name: str,
    stop: Callable[[], None] | None = None,
) -> threading.Thread:
    """A tracked daemon thread running target(*args), started."""
    thread = track(threading.Thread(target=target, args=args, name=name, daemon=True), stop)
    thread.start()
    return thread


def close_at_exit(resource: Any) -> None:
    """Have stop_all call resource.close() (after the threads have stopped)."""
    with _lock:
        _closers.add(resource)


def stop_all(wait_s: float = STOP_WAIT_S) -> list[threading.Thread]:
    """Ask every tracked thread to stop, wait up to wait_s for all, then close the registered
    resources; returns the threads still running (empty when all ended)."""
    with _lock:
        found = [(t, stop) for t, stop in _threads.items() if t.is_alive()]
    for _, stop in found:
        if stop is not None:
            with contextlib.suppress(Exception):  # a failed stop must not keep the others going
                stop()
    deadline = time.monotonic() + wait_s
    for thread, _ in found:
        if thread is not threading.current_thread():
            thread.join(max(deadline - time.monotonic(), 0.0))
    with _lock:
        closers = list(_closers)
    for resource in closers:
        with contextlib.suppress(Exception):
            resource.close()
    return [t for t, _ in found if t.is_alive()]


def finish(code: int, wait_s: float = STOP_WAIT_S) -> None:
    """stop_all(); if a thread will not stop, say so and end the process at once with code
    (ending the interpreter with it inside DuckDB or Arrow could abort the process)."""
    stuck = stop_all(wait_s)
    if not stuck:
        return
    print(
        f"rageval: background work ({', '.join(t.name for t in stuck)}) did not stop within "
        f"{wait_s:g} s; leaving without it",
        file=sys.stderr,
    )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _register() -> None:
    """Run finish(1) as the interpreter starts to exit, before concurrent.futures refuses new
    work: a judge job stopped after that lost its verdicts (submit() raised RuntimeError)."""
    import concurrent.futures.thread  # noqa: F401 (its exit hook first, so ours runs before it)

    hook = getattr(threading, "_register_atexit", None)  # Python's own (3.9+), runs LIFO
    if hook is None:
        atexit.register(finish, 1)
    else:
        hook(finish, 1)


_register()
