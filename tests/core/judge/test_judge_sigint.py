"""Ctrl-C in a real `rageval judge` process: exit 130, every finished judgment kept."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest

from rageval_core.store import Store, judgements
from tests.fakellm import FakeServer, judge_process


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child is POSIX")
def test_ctrl_c_keeps_the_finished_judgments(server: FakeServer, db: Path) -> None:
    server.state.delay_s = 0.2  # a slow model: the run is still going when Ctrl-C comes
    proc = judge_process(
        db, server.base_url, "--model", "slow", "--concurrency", "1", "--json", key="sk-sigint"
    )
    deadline = time.monotonic() + 60
    while server.n_requests < 4 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    summary = json.loads(out)
    assert summary["status"] == "interrupted"
    with Store(db) as store:
        kept = judgements.judge_results(store, judgements.judge_set(store, "judged"))
    assert len(kept) == summary["done"] >= 3
    assert all(r.verdict is not None for r in kept)
