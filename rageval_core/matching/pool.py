"""The process pool behind matching.score_pairs: forkserver workers fed batches of pairs.

The Python-level part of pair scoring (rapidfuzz's alignment pair by pair, difflib) holds the
GIL, so it runs in worker processes once there are enough pairs. Workers start from a fork
server (never a plain fork of a threaded process), send each distinct text once per job, and
leave by themselves when the process that owns the pool is gone.
"""

from __future__ import annotations

import functools
import math
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from numpy.typing import NDArray

#: Below this many pairs needing Python-level scoring (alignment, difflib) everything runs
#: in-process: a pool's start (see _context) would cost more than it saves (the figures:
#: docs/benchmarks.md, "Figures behind the code").
POOL_MIN_PAIRS = 10_000

#: Pairs per pool job: enough to make a job's pickling and hand-over small next to its
#: scoring, few enough to keep both workers busy to the end of a block (docs/benchmarks.md).
BATCH_MIN = 500
BATCH_MAX = 4_000

#: (scores, window starts, window ends) of a batch of pairs
Windows = tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]
#: scores one batch: (kind, evidence texts, chunk texts), pair i = (evidence[i], chunks[i])
RunBatch = Callable[[str, list[str], list[str]], Windows]


def _run_packed(
    args: tuple[RunBatch, str, list[str], list[str], NDArray[np.int32], NDArray[np.int32]],
) -> Windows:
    """A pool job: each distinct text sent once, the pairs as indices into them."""
    run_batch, kind, evidence, chunks, pe, pc = args
    return run_batch(kind, [evidence[i] for i in pe.tolist()], [chunks[j] for j in pc.tolist()])


@functools.cache
def _context() -> multiprocessing.context.BaseContext:
    """forkserver where it exists (POSIX), else spawn; never plain fork.

    Forking a process that runs threads (DuckDB, Streamlit) can deadlock the child. The fork
    server starts once per process with rageval_core.matching.scorers preloaded, after which a
    pool of workers starts quickly; spawn pays the interpreter start and imports every time
    (docs/benchmarks.md, "Figures behind the code").
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # the module that owns the batch functions (it imports this one)
        context.set_forkserver_preload(["rageval_core.matching.scorers"])
        _start_quietly()
        return context
    return multiprocessing.get_context("spawn")


def _start_quietly() -> None:
    """Start the fork server with its stdout and stderr (and so its workers') on /dev/null.

    A worker being forked while its owner is interrupted (Ctrl-C) finds the owner's semaphores
    gone and would print a traceback over the owner's clean "interrupted" line; and a worker
    holding the owner's stdout or stderr would keep a reader of those pipes waiting after the
    owner has exited. Nothing else is lost: a task's own exception reaches the owner through the
    pool.
    """
    from multiprocessing import forkserver

    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        forkserver.ensure_running()
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(devnull)


def _exit_with(pid: int) -> None:
    """Pool worker start: leave when process pid (the pool's owner) is gone, even if killed.

    A killed owner never shuts its pool down; its workers would wait for work forever (and
    hold the fork server open), so each watches the owner once a second.
    """

    def watch() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # the pid is taken by another user's process: ours is gone
                os._exit(1)
            if _is_zombie(pid):  # exited, not yet reaped by its parent: gone all the same
                os._exit(1)

    threading.Thread(target=watch, name="rageval-owner-watch", daemon=True).start()


def _is_zombie(pid: int) -> bool:
    """Whether process pid has exited and waits for its parent to reap it (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"Z"


def no_pairs() -> Windows:
    """The result of scoring no pair."""
    return np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)


class PairPool:
    """A process pool started on first need and closed by the caller.

    run_batch scores one batch of pairs: called in-process for few pairs, in the workers
    otherwise (so it must be a module-level function they can import by name).
    """

    def __init__(self, workers: int, run_batch: RunBatch) -> None:
        self.workers = workers
        self.run_batch = run_batch
        self._executor: ProcessPoolExecutor | None = None

    def map_pairs(
        self,
        kind: str,
        evidence: list[str],
        chunks: list[str],
        pe: NDArray[np.int64],
        pc: NDArray[np.int64],
    ) -> Callable[[], Windows]:
        """Start scoring pairs (evidence[pe[i]], chunks[pc[i]]); call the result to wait for them."""
        n = int(pe.size)
        if n == 0:
            return no_pairs
        if self.workers <= 1 or n < POOL_MIN_PAIRS:
            done = self.run_batch(
                kind, [evidence[i] for i in pe.tolist()], [chunks[j] for j in pc.tolist()]
            )
            return lambda: done
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=_context(),
                initializer=_exit_with,
                initargs=(os.getpid(),),
            )
        # Small batches balance the load; each sends its distinct texts once (a chunk is
        # paired with several spans) and the pairs as int32 indices: a fraction of the bytes.
        size = max(BATCH_MIN, min(BATCH_MAX, math.ceil(n / (self.workers * 8))))
        futures = []
        for lo in range(0, n, size):
            e_ids, e_at = np.unique(pe[lo : lo + size], return_inverse=True)
            c_ids, c_at = np.unique(pc[lo : lo + size], return_inverse=True)
            job = (
                self.run_batch,
                kind,
                [evidence[i] for i in e_ids.tolist()],
                [chunks[j] for j in c_ids.tolist()],
                e_at.astype(np.int32),
                c_at.astype(np.int32),
            )
            futures.append(self._executor.submit(_run_packed, job))

        def collect() -> Windows:
            parts = [f.result() for f in futures]
            return tuple(np.concatenate(p) for p in zip(*parts, strict=True))  # type: ignore[return-value]

        return collect

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(cancel_futures=True)
            self._executor = None
