"""Ctrl-C in a real `rageval collect` process: exit 130, the grid points stored before it kept,
the one under way storing nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rageval_core.store import Store
from tests.paths import REPO
from tests.retrieval_server import Server


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child is POSIX")
def test_ctrl_c_keeps_the_finished_grid_points(server: Server, questions: Path, db: Path) -> None:
    server.state.slow_when = ("top_k", 5)  # the second grid point hangs until Ctrl-C
    argv = ["--db", str(db), "collect", "--questions", str(questions), "--endpoint", server.url]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rageval_core.cli", *argv, "--grid", "top_k=1,5,10", "--json"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    deadline = time.monotonic() + 60
    # a request of the second point means the first was stored (a point is stored before the next)
    while proc.poll() is None and time.monotonic() < deadline:
        with server.state.lock:
            if any(b.get("top_k") == 5 for b in server.state.requests):
                break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    summary = json.loads(out)
    assert summary["status"] == "interrupted"
    assert [p["status"] for p in summary["points"]] == ["stored", "interrupted", "not started"]
    with Store(db) as store:
        (run,) = store.runs()
    assert run.settings == {"top_k": 1} and run.n_queries == 6
    assert not any(b.get("top_k") == 10 for b in server.state.requests)
