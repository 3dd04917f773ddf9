"""Helpers for the browser tests: waiting for Streamlit to settle, screenshots, URL params."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
#: the tallest screenshot taken (px): a long page is cut here rather than making a huge PNG
MAX_SHOT_HEIGHT = 6000


#: how long the page must stay unchanged to count as settled, and the least time a wait takes
#: (a rerun a click has asked for may start that late on a busy machine); polls, no fixed sleep
QUIET_MS, LEAST_MS = 300, 600
#: watch every DOM mutation (child list, attribute, text) of the page, once per document; mark
#: when this wait began
_WATCH = """() => {
  if (!window.__ragevalObserver) {
    window.__ragevalLast = performance.now();
    window.__ragevalObserver = new MutationObserver(() => {
      window.__ragevalLast = performance.now();
    });
    window.__ragevalObserver.observe(document, {
      subtree: true, childList: true, attributes: true, characterData: true,
    });
  }
  window.__ragevalWaitStart = performance.now();
}"""
#: true once the app's script run has finished, no skeleton is shown, no mutation has happened
#: for quietMs and the wait is leastMs old: plotly's and the grids' drawing after the run, and a
#: rerun a click has asked for, keep it false (the measure of issue 32)
_SETTLED = """([quietMs, leastMs]) => {
  if (!window.__ragevalObserver) {  // a new document since the wait began
    (WATCH)();
    return false;
  }
  const app = document.querySelector("[data-testid='stApp']");
  if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
  if (!document.querySelector("[data-testid='stMain']")) return false;
  if (document.querySelector("[data-testid='stSkeleton']")) return false;
  const now = performance.now();
  return now - window.__ragevalLast >= quietMs && now - window.__ragevalWaitStart >= leastMs;
}""".replace("(WATCH)", f"({_WATCH})")


def wait_settled(
    page: Any, timeout_ms: int = 90_000, quiet_ms: int = QUIET_MS, least_ms: int = LEAST_MS
) -> None:
    """Poll (every 50 ms, up to timeout_ms) until the page has settled, as _SETTLED says."""
    page.evaluate(_WATCH)
    page.wait_for_function(_SETTLED, arg=[quiet_ms, least_ms], timeout=timeout_ms, polling=50)


def wait_idle(page: Any, timeout_ms: int = 90_000) -> None:
    """Wait until the app has rendered, its script run (the last rerun) has finished and the
    page has stopped changing.

    stApp carries data-test-script-state (what streamlit's own e2e tests wait on); a rerun that a
    click or key press just asked for may not have started yet, and plotly and the grids draw
    after the run: both change the DOM, so the page must also stay unchanged for QUIET_MS.
    """
    page.locator("[data-testid='stMain']").wait_for(timeout=timeout_ms)
    wait_settled(page, timeout_ms)


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
        wait_settled(page)  # plotly and the grids re-layout to the new size
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)
    return path


def query_params(page: Any) -> dict[str, str]:
    """The current URL's query parameters (last value of each)."""
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}
