"""Compare's resampling jobs across slider moves: a job cancelled for settings the user left is
never handed back as a result when the user returns to them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

PENDING = "Computing p-values"


def pending(at: AppTest) -> bool:
    return any(PENDING in i.value for i in at.info)


def test_returning_to_settings_whose_queued_job_was_cancelled_computes_them_again(
    make_app: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch
) -> None:
    """threshold 0.70's job waits behind a busy thread; a move to 0.71 cancels it (queued for
    settings left behind); back at 0.70 the page shows the deltas and starts the job again, not
    the cancelled future's CancelledError, and its p-values come in."""
    from rageval_dashboard.state import compare as state_compare

    monkeypatch.setattr(state_compare, "COMPARE_INLINE_CELLS", 0)
    state_compare.clear_caches()
    busy = threading.Event()
    state_compare._test_pool().submit(busy.wait, 120)  # the one thread, held
    try:
        at = make_app("compare.py", threshold="0.7")
        at.run()  # the note's second look starts 0.70's job: queued behind the busy one
        assert pending(at) and not at.exception
        at.sidebar.slider(key="threshold").set_value(0.71).run()
        at.run()  # 0.71's job: 0.70's, still queued, is cancelled
        assert pending(at) and not at.exception
        at.sidebar.slider(key="threshold").set_value(0.70).run()
        assert not at.exception, [e.value for e in at.exception]
        assert pending(at)
    finally:
        busy.set()
    deadline = time.monotonic() + 120
    while pending(at):
        assert time.monotonic() < deadline, "the tests did not come in"
        time.sleep(0.2)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    assert any("p (Holm)" in str(df.value.columns.tolist()) for df in at.dataframe)
    state_compare.clear_caches()
