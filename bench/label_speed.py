"""A label click at scale (issue 31): the store write, the grades signature every labelled
result is keyed by, and the re-evaluation that follows, on a 10,000-query run.

    python -m bench.label_speed [--queries N] [--clicks N] [--browser]

Prints milliseconds per click: (write + signature, re-evaluation) in this process; with
--browser, also the whole round trip in chromium: from the key "2" pressed on the Labelling page
(labels imported,people) to the page drawn again with the new count and Judged@k (the rerun
that re-evaluates the run under the new grades signature).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.dashboard_scale import import_run
from bench.dashboard_speed import write_big_run


def measure(workdir: Path, n_queries: int, clicks: int) -> list[tuple[float, float]]:
    from rageval_core import annotate
    from rageval_core.evaluation.evaluate import evaluate
    from rageval_core.evaluation.report import Settings
    from rageval_core.rundata import load_run_data
    from rageval_core.store import Store

    #: the people's grades count (after the imported qrels): a label moves the metrics
    LABELLED = Settings(labels="imported,people")
    run_file, db = workdir / "labels.jsonl", workdir / "labels.duckdb"
    write_big_run(run_file, n_queries)
    import_run(run_file, db)
    out = []
    with Store(db) as store:
        data = load_run_data(store, store.runs()[0].run_id)
        evaluate(data, None, store=store, settings=LABELLED)  # the page's first render
        for i in range(clicks):
            started = time.perf_counter()
            annotate.set_grade(store, str(data.query_ids[i]), f"doc{i}", 2, annotator="bench")
            annotate.grades_signature(store)
            written = time.perf_counter()
            evaluate(data, None, store=store, settings=LABELLED)
            out.append((1000 * (written - started), 1000 * (time.perf_counter() - written)))
    return out


#: the Labelling page's "Labelled" figure reads n and the rerun has finished
_SHOWN = """(n) => {
  const app = document.querySelector("[data-testid='stApp']");
  if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
  const card = Array.from(document.querySelectorAll("[data-testid='stMetric']"))
      .find(c => c.innerText.startsWith("Labelled"));
  return !!card && card.querySelector("[data-testid='stMetricValue']").innerText.trim() === n;
}"""


def measure_browser(db: Path, clicks: int) -> list[float]:
    """Milliseconds from a grade key pressed to the Labelling page drawn again, per click."""
    from playwright.sync_api import sync_playwright

    from bench.dashboard_scale import CHROMIUM, CHROMIUM_ARGS, serve
    from rageval_core.store import Store

    with Store(db) as store:
        name = store.runs()[0].name
    out = []
    with sync_playwright() as pw, serve(db) as (url, _):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(f"{url}/labelling?run={name}&annotator=browser&labels=imported%2Cpeople")
        page.wait_for_function(_SHOWN, arg="0", polling="raf")
        time.sleep(1.0)
        for i in range(clicks):
            started = time.perf_counter()
            page.locator("body").press("2")
            page.wait_for_function(_SHOWN, arg=str(i + 1), polling="raf")
            out.append(1000 * (time.perf_counter() - started))
            time.sleep(0.5)
        browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--clicks", type=int, default=5)
    parser.add_argument("--browser", action="store_true", help="also the round trip in chromium")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for write_ms, evaluate_ms in measure(Path(tmp), args.queries, args.clicks):
            print(f"write + signature {write_ms:.1f} ms, re-evaluation {evaluate_ms:.1f} ms")
        if args.browser:
            for ms in measure_browser(Path(tmp) / "labels.duckdb", args.clicks):
                print(f"key pressed to page drawn again: {ms:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
