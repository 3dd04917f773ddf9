"""The Runs page in a real browser, on a store of this module's own (the tests
import into it): the import tab in the URL, a taken name asks, a TREC run without qrels is
warned about and its qrels attached later, facts attached to a stored run show in the list."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from rageval_dashboard import keys
from tests.e2e.conftest import REPO, import_runs, serve
from tests.e2e.harness import query_params, screenshot, wait_idle
from tests.e2e.test_reading_links_downloads import click_row, download

pytestmark = pytest.mark.e2e

NATIVE = REPO / "tests" / "data" / "good" / "native_full.jsonl"
NAME = "bm25-k3"  # the run NATIVE names


@pytest.fixture(scope="module")
def runs_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("runs19") / "rageval.duckdb"
    import_runs(db, [NATIVE])
    with serve(db) as url:
        yield url


def upload(page: Any, *files: Path) -> None:
    # the first uploader is the import's (Attach facts has one for qrels further down)
    page.locator("[data-testid='stFileUploader'] input[type='file']").first.set_input_files(
        [str(f) for f in files]
    )
    button = page.get_by_role("button", name="Import uploaded files")
    expect(button).to_be_enabled()
    button.click()
    wait_idle(page)


def run_list(page: Any) -> Any:
    return page.get_by_text("Stored runs", exact=True).locator(
        "xpath=following::*[@data-testid='stDataFrame'][1]"
    )


def test_the_import_tab_is_in_the_url(runs_url: str, page: Any) -> None:
    page.goto(f"{runs_url}/runs")
    wait_idle(page)
    page.get_by_role("tab", name="From a path").click()
    wait_idle(page)
    assert keys.RUNS_TAB in query_params(page)
    page.reload()
    wait_idle(page)
    expect(page.get_by_role("tab", name="From a path")).to_have_attribute("aria-selected", "true")
    # the folders a path may come from are listed
    expect(page.locator("[data-testid='stCode']").first).to_contain_text(str(REPO))


def test_a_taken_name_asks_and_overwrite_keeps_one_run(
    runs_url: str, page: Any, tmp_path: Path
) -> None:
    lines = NATIVE.read_text(encoding="utf-8").splitlines()
    changed = tmp_path / "again.jsonl"
    changed.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # one query fewer
    page.goto(f"{runs_url}/runs")
    wait_idle(page)
    upload(page, changed)
    ask = page.locator("[data-testid='stAlert']", has_text=f"A run named {NAME} was already")
    expect(ask).to_contain_text(f"stored as {NAME}-2")
    for label in (f"Overwrite {NAME}", "Keep both", "Cancel the import"):
        expect(page.get_by_role("button", name=label)).to_have_count(1)
    screenshot(page, "runs_name_clash")
    page.get_by_role("button", name=f"Overwrite {NAME}").click()
    wait_idle(page)
    page.get_by_text("Name clash settled.").wait_for()
    grid = run_list(page)
    expect(grid).to_contain_text(NAME)
    assert f"{NAME}-2" not in grid.text_content()
    # the stored run is the new import: one query fewer than the file the store began with
    queries = sum(1 for line in lines if '"query_id"' in line)
    cells = grid.locator("tr", has_text=NAME).first.locator("td").all_text_contents()
    assert cells[:3] == [NAME, "native", str(queries - 1)], cells


def test_a_trec_run_without_qrels_is_warned_about(runs_url: str, page: Any, tmp_path: Path) -> None:
    trec = tmp_path / "lonely.run"
    trec.write_text("q1 Q0 d1 1 2.5 lonely\nq1 Q0 d2 2 1.5 lonely\n", encoding="utf-8")
    page.goto(f"{runs_url}/runs")
    wait_idle(page)
    upload(page, trec)
    warning = page.locator("[data-testid='stAlert']", has_text="came without qrels")
    expect(warning).to_contain_text("no relevance and no ranking metric")

    # its qrels attached later, under Attach facts: the run list then says it has qrels
    qrels = tmp_path / "lonely.qrels"
    qrels.write_text("q1 0 d2 1\n", encoding="utf-8")
    page.get_by_text("Attach facts", exact=False).first.click()
    wait_idle(page)
    target = page.get_by_role("combobox", name="Run").last
    target.click()
    page.keyboard.type("lonely")
    page.get_by_role("option", name="lonely", exact=True).click()
    wait_idle(page)
    page.locator("[data-testid='stFileUploader']", has_text="replace the run's relevance").locator(
        "input[type='file']"
    ).set_input_files(str(qrels))
    attach = page.get_by_role("button", name="Attach qrels")
    expect(attach).to_be_enabled()
    attach.click()
    wait_idle(page)
    expect(page.locator("[data-testid='stAlert']", has_text="Qrels attached")).to_be_visible()
    text = download(page, "Download the run list (CSV)").decode("utf-8")
    row = next(r for r in csv.DictReader(io.StringIO(text)) if r["name"] == "lonely")
    assert row["qrels"] == "True" and "lonely.qrels" in row["sources"]


def test_facts_attached_later_show_in_the_run_list(runs_url: str, page: Any) -> None:
    page.goto(f"{runs_url}/runs")
    wait_idle(page)
    page.get_by_text("Attach facts", exact=False).first.click()
    wait_idle(page)
    target = page.get_by_role("combobox", name="Run").last
    target.click()
    page.get_by_role("option", name=NAME, exact=True).click()
    wait_idle(page)
    date = page.get_by_role("textbox", name="Date (created_at)")
    date.fill("2025-02-03")
    date.blur()
    tags = page.get_by_role("textbox", name="Run tags")
    tags.fill("experiment=chunking")
    tags.blur()
    wait_idle(page)
    page.get_by_role("button", name="Save facts").click()
    wait_idle(page)
    grid = run_list(page)
    expect(grid.locator("tr", has_text=NAME).first).to_contain_text("2025-02-03")
    # the run tags sit in the settings column, past the grid's right edge: the download has
    # every column whole, and a click on the row shows its long texts whole
    text = download(page, "Download the run list (CSV)").decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    at = next(i for i, r in enumerate(rows) if r["name"] == NAME)
    assert rows[at]["created"] == "2025-02-03"
    assert "'experiment': 'chunking'" in rows[at]["settings"]
    click_row(grid, at)
    wait_idle(page)
    expect(page.locator(".rageval-fulltext")).to_contain_text("'experiment': 'chunking'")
    screenshot(page, "runs_facts_saved")
