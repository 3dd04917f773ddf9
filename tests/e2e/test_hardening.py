"""The dashboard in real browsers under stress: imports writing meanwhile, a busy store, a killed
import, hostile names, path imports outside the allowed folders and an oversize upload.

Each test runs `streamlit run` (tests.e2e.conftest.serve) on a store of its own and drives
Debian's chromium through playwright; writers are real `rageval import` processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rageval_core.store import Store
from tests.core.store.test_crash import IMPORT_AND_PAUSE, kill, make_run, run_child, wait_line
from tests.core.store.test_injection import INJECTIONS, hostile_run
from tests.e2e.conftest import REPO, serve
from tests.e2e.harness import screenshot, wait_idle
from tests.e2e.test_security import INJECTED

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BUSY = "The store is busy"
#: figures for docs/reliability.md (printed with -s)
FIGURES: dict[str, int] = {}


def cli(db: Path, *args: str, wait_s: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGEVAL_BUSY_WAIT_S": str(wait_s)}
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "--db", str(db), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def no_exception(page: Any) -> None:
    assert page.locator("[data-testid='stException']").count() == 0, page.url
    body = page.locator("body").inner_text()
    assert (
        "Traceback" not in body and "IOException" not in body and "Could not set lock" not in body
    )


def test_two_browsers_keep_working_while_imports_write(browser: Any, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    first = make_run(tmp_path / "first.jsonl", 100)
    assert cli(db, "import", str(first)).returncode == 0
    files = [make_run(tmp_path / f"run{i}.jsonl", 400, seed=i) for i in range(3)]
    results: list[subprocess.CompletedProcess[str]] = []

    def writer() -> None:
        for f in files:
            results.append(cli(db, "import", str(f)))
            time.sleep(0.5)

    visits = {"pages": 0, "busy": 0}
    with serve(db) as url:
        contexts = [browser.new_context(viewport={"width": 1300, "height": 900}) for _ in range(2)]
        pages = [c.new_page() for c in contexts]
        for p in pages:
            p.set_default_timeout(120_000)
        thread = threading.Thread(target=writer)
        thread.start()
        paths = ["", "runs", "queries", "latency", "threshold"]
        i = 0
        try:
            while thread.is_alive() or i < 10:
                for n, p in enumerate(pages):
                    p.goto(f"{url}/{paths[(i + n) % len(paths)]}")
                    # the busy message may show while an import holds the store; it clears by itself
                    if p.get_by_text(BUSY).count():
                        visits["busy"] += 1
                    wait_idle(p, timeout_ms=180_000)
                    no_exception(p)
                    visits["pages"] += 1
                i += 1
            thread.join()
            # every import made it, and both browsers see every run
            for done in results:
                assert done.returncode == 0, done.stderr
            for p in pages:
                p.goto(f"{url}/runs")
                wait_idle(p)
                p.get_by_text("4 run(s) in the store").wait_for()
                no_exception(p)
            screenshot(pages[0], "hardening_concurrent_runs")
        finally:
            thread.join()
            for c in contexts:
                c.close()
    with Store(db) as store:
        runs = {r.name: r for r in store.runs()}
        assert sorted(runs) == sorted(["first", *(f.stem for f in files)])
        assert all(runs[f.stem].n_queries == 400 for f in files)
    FIGURES["page loads during imports"] = visits["pages"]
    FIGURES["busy messages seen"] = visits["busy"]
    print(f"\nconcurrency (browser): {visits}, imports {len(results)}")


HOLD = """
    import sys, time
    from rageval_core.store import Store
    store = Store(sys.argv[1])
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    store.close()
"""


def test_a_busy_store_shows_a_retrying_message_then_the_page(page: Any, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    assert cli(db, "import", str(make_run(tmp_path / "r.jsonl", 20))).returncode == 0
    with serve(db) as url:
        page.goto(f"{url}/runs")
        wait_idle(page)
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD.replace("\n    ", "\n"), str(db), "8"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        try:
            page.goto(f"{url}/runs")
            message = page.get_by_text(BUSY)
            message.wait_for(timeout=30_000)
            assert "retrying" in message.inner_text() and "Nothing is lost" in message.inner_text()
            screenshot(page, "hardening_busy")
            no_exception(page)
        finally:
            holder.wait(timeout=60)
        # once the other process lets go, the same page load finishes by itself
        page.get_by_text("1 run(s) in the store").wait_for(timeout=60_000)
        wait_idle(page)
        assert page.get_by_text(BUSY).count() == 0
        no_exception(page)


def test_an_interrupted_import_is_reported_on_the_runs_page(page: Any, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    big = make_run(tmp_path / "killed.jsonl", 12_000, evidence=False)
    proc = run_child(IMPORT_AND_PAUSE, str(db), str(big))
    wait_line(proc, "import ")
    kill(proc, "import, then the dashboard starts")
    with serve(db) as url:
        page.goto(f"{url}/runs")
        wait_idle(page)
        page.get_by_text("An import or scoring was interrupted before it finished").wait_for()
        code = page.locator("[data-testid='stCode']").first.inner_text()
        assert "killed.jsonl" in code and "nothing of it was stored" in code
        screenshot(page, "hardening_interrupted")
        no_exception(page)
        page.reload()
        wait_idle(page)
        assert page.get_by_text("was interrupted").count() == 0  # said once
        page.get_by_text("No runs yet").first.wait_for()


def test_hostile_names_are_shown_verbatim_and_run_nothing(page: Any, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    assert cli(db, "import", str(make_run(tmp_path / "bystander.jsonl", 10))).returncode == 0
    done = cli(db, "import", str(hostile_run(tmp_path / "hostile.jsonl")))
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        before = {r.name: store.table_rows(r.run_id) for r in store.runs()}
    opened: list[str] = []
    page.on("dialog", lambda d: (opened.append(d.message), d.dismiss()))
    with serve(db) as url:
        for path in ("", "queries", "threshold", "latency", "runs", "compare"):
            page.goto(f"{url}/{path}?run={INJECTIONS[0]}")
            wait_idle(page)
            found = page.evaluate(INJECTED)
            assert found == {
                "xss": "undefined",
                "js_links": 0,
                "handlers": 0,
                "scripts": 0,
                "imgs_x": 0,
            }, path
            run = page.locator("[data-testid='stSidebar']").get_by_role("combobox", name="Run")
            assert run.input_value() == INJECTIONS[0], path
            no_exception(page)
        screenshot(page, "hardening_hostile_runs")
    assert opened == []
    with Store(db) as store:
        after = {r.name: store.table_rows(r.run_id) for r in store.runs()}
    assert after == before  # browsing changed no run's rows, and no run went missing
    FIGURES["hostile strings"] = len(INJECTIONS)


def test_a_path_outside_the_folders_is_refused_in_the_app(page: Any, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    Store(db).close()
    with serve(db) as url:
        page.goto(f"{url}/runs")
        wait_idle(page)
        page.get_by_role("tab", name="From a path").click()
        box = page.get_by_label("Paths, one per line (e.g. a TREC run and its qrels)")
        box.fill("/etc/passwd\n../../../../../etc/shadow")
        box.blur()
        page.get_by_role("button", name="Import from paths").click()
        wait_idle(page)
        page.get_by_text("Refused: every path must name a file inside the folders").wait_for()
        body = page.locator("body").inner_text()
        assert "root:x:0:0" not in body  # nothing of the file reached the page
        screenshot(page, "hardening_path_refused")
        no_exception(page)
    with Store(db) as store:
        assert store.runs() == []


def test_an_oversize_upload_gets_a_clear_message(
    page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap (server.maxUploadSize, 1 MB here to keep the test small) is Streamlit's own."""
    db = tmp_path / "store.duckdb"
    Store(db).close()
    big = make_run(tmp_path / "big.jsonl", 2_000)
    assert big.stat().st_size > 1024 * 1024
    with serve(db, {"server.maxUploadSize": 1}) as url:
        page.goto(f"{url}/runs")
        wait_idle(page)
        page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(str(big))
        page.get_by_text("File must be 1.0MB or smaller.").wait_for()
        screenshot(page, "hardening_upload_too_large")
        assert page.get_by_role("button", name="Import uploaded files").is_disabled()
        no_exception(page)
    with Store(db) as store:
        assert store.runs() == []
