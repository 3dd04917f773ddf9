"""Helpers for the browser tests: waiting for Streamlit to settle, screenshots, URL params."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
#: the tallest screenshot taken (px): a long page is cut here rather than making a huge PNG
MAX_SHOT_HEIGHT = 6000


def wait_idle(page: Any, timeout_ms: int = 90_000) -> None:
    """Wait until the app has rendered and its script run (the last rerun) has finished.

    stApp carries data-test-script-state (what streamlit's own e2e tests wait on); a rerun
    that a click or key press just asked for may not have started yet, hence the second look.
    """
    done = "[data-testid='stApp'][data-test-script-state='notRunning']"
    page.locator("[data-testid='stMain']").wait_for(timeout=timeout_ms)
    for _ in range(2):
        time.sleep(0.4)
        page.locator(done).wait_for(timeout=timeout_ms)
    # elements whose code is still loading (lazy chunks, first visit) show a skeleton
    page.wait_for_function(
        "() => !document.querySelector(\"[data-testid='stSkeleton']\")", timeout=timeout_ms
    )
    time.sleep(0.3)  # plotly and the grids draw after the run


def open_tab(page: Any, name: str) -> None:
    """Click the tab labelled name and wait for the run it starts (Compare's sections run
    only when open)."""
    page.get_by_role("tab", name=name, exact=True).click()
    wait_idle(page)


def screenshot(page: Any, name: str) -> Path:
    """Save the whole page (Streamlit scrolls inside stMain, so grow the viewport to fit it)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    size = page.viewport_size or {"width": 1400, "height": 1000}
    height = page.evaluate(
        "() => { const m = document.querySelector(\"[data-testid='stMain']\");"
        " return m ? m.scrollHeight : document.body.scrollHeight; }"
    )
    tall = max(size["height"], min(int(height), MAX_SHOT_HEIGHT))
    page.set_viewport_size({"width": size["width"], "height": tall})
    try:
        time.sleep(0.8)  # plotly and the grids re-layout to the new size
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)
    return path


def query_params(page: Any) -> dict[str, str]:
    """The current URL's query parameters (last value of each)."""
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}
