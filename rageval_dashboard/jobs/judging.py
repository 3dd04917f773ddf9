"""A judge run launched from the dashboard: run_judge in a background thread, with its progress,
a Cancel (a threading.Event) and its outcome, for the Judge page to poll (from any session:
the page keeps the job in state.judge_jobs(), shared by the server's sessions).

The API key never passes through here: JudgeConfig names the environment variable, and
run_judge reads it in the worker thread. Nothing of the key reaches the session state, the URL
or the store (the result set records the endpoint's host only).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from rageval_core import threads
from rageval_core.errors import RagevalError
from rageval_core.judging import JudgeAuthError, JudgeConfig, run_judge
from rageval_core.store import Store


@dataclass
class JudgeJob:
    """One judge run in the background: how far it is, and how it ended."""

    run_name: str
    config: JudgeConfig
    cancel: threading.Event = field(default_factory=threading.Event)
    done: int = 0
    total: int = 0
    summary: dict[str, Any] | None = None  # JudgeSummary.to_json() once finished
    error: str | None = None  # our message, or the core's (never holds the key)
    thread: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def progress(self, done: int, total: int) -> None:
        with self.lock:
            self.done, self.total = done, total

    def snapshot(self) -> tuple[int, int]:
        with self.lock:
            return self.done, self.total


def start(store: Store, run_id: int, run_name: str, config: JudgeConfig) -> JudgeJob:
    """Judge the run in a daemon thread; the job is returned at once (job.running)."""
    job = JudgeJob(run_name, config)

    def work() -> None:
        try:
            summary = run_judge(store, run_id, config, progress=job.progress, cancel=job.cancel)
            job.summary = summary.to_json()
            if (
                job.cancel.is_set()
                and summary.status == "complete"
                and summary.done < summary.tasks
            ):
                # cancelled before the first request went out: the core's loop never started
                job.summary["status"] = "cancelled"
        except JudgeAuthError as e:
            job.error = str(e)
        except RagevalError as e:
            job.error = str(e)
        except Exception as e:  # a thread's exception would be lost: shown on the page
            job.error = f"the judge run failed: {type(e).__name__}"

    # tracked: the server's exit cancels it (what finished is kept) and waits for it
    job.thread = threads.start(work, name="rageval-judge", stop=job.cancel.set)
    return job
