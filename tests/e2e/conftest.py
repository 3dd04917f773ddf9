"""A real browser against `streamlit run` on a free port (Debian chromium driven by playwright).

Servers, each on its own store: the three sample runs, the hostile run of tests/data/xss, and
its two line-break runs. What the pages must show is computed with the core *before* a server opens
its store (DuckDB lets one process hold a store file at a time).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rageval_dashboard import server
from tests.servers import free_port, wait_healthy

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
HOSTILE = REPO / "tests" / "data" / "xss" / "hostile.jsonl"
#: two runs full of Markdown/HTML payloads behind every line-break form (names with CR and LF)
BREAKS = [REPO / "tests" / "data" / "xss" / f"breaks_{x}.jsonl" for x in "ab"]
#: the run the Overview/drilldown tests look at, and the sidebar's defaults they rely on
RUN, K, THRESHOLD = "bm25", 10, 0.7


def import_runs(db: Path, files: list[Path]) -> None:
    """Import with the real CLI, as a user would."""
    subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "--db", str(db), "import", *map(str, files)],
        check=True,
        capture_output=True,
        cwd=REPO,
    )


@contextmanager
def serve(db: Path, options: dict[str, Any] | None = None) -> Iterator[str]:
    """Streamlit on a free port with RAGEVAL_DB=db, started as `rageval dashboard` starts it
    (rageval_dashboard/server.py: the same options, with `options` over them); yields its URL."""
    port = free_port()
    env = {**os.environ, "RAGEVAL_DB": str(db)}
    proc = subprocess.Popen(
        server.command(port, overrides=options),
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass(frozen=True)
class Facts:
    """What the pages must show, computed with the core from the store the server will use."""

    #: threshold -> EvidenceRecall@K of RUN (every other setting at the sidebar's defaults)
    evidence_recall: dict[float, float]
    #: a failing query of RUN: some gold span is not covered in the top K, another one is
    failing_query: str
    #: the text each covering chunk of that query highlights (rank order), from the kept
    #: best-window offsets of its best-scoring span
    expected_marks: list[str]


def compute_facts(db: Path) -> Facts:
    from rageval_core.evaluation.evaluate import evaluate
    from rageval_core.evaluation.report import Settings
    from rageval_core.rundata import load_run_data
    from rageval_core.store import Store
    from rageval_core.store.scores import load_pair_rows

    with Store(db) as store:
        data = load_run_data(store, RUN)
        recall = {
            t: evaluate(
                data, [f"EvidenceRecall@{K}"], store=store, settings=Settings(k=K, threshold=t)
            ).metrics[f"EvidenceRecall@{K}"]
            for t in (THRESHOLD, 1.0, 0.0)
        }
        rows = load_pair_rows(store, RUN)  # scores every pair now, so the server need not
        texts = {q.query_id: [c.text for c in q.retrieved or ()] for q in store.iter_queries(RUN)}
    qid, marks = _failing_query(data.query_ids, data.n_spans, rows, texts)
    return Facts(recall, qid, marks)


def _failing_query(
    query_ids: Any, n_spans: Any, rows: Any, texts: dict[str, list[str | None]]
) -> tuple[str, list[str]]:
    """The first query with one covering chunk in the top K and a gold span left uncovered.

    Chosen so the expectation is unambiguous: no chunk's best score is tied between two spans
    or within 0.001 of the threshold.
    """
    t = np.float32(THRESHOLD)
    for q in range(len(query_ids)):
        sel = (rows.qidx == q) & (rows.rank <= K)
        if not sel.any():
            continue
        rank, eidx, score = rows.rank[sel], rows.eidx[sel], rows.score[sel]
        start, end = rows.start[sel], rows.end[sel]
        covered = np.zeros(int(n_spans[q]), dtype=bool)
        covered[eidx[score >= t]] = True
        if covered.all() or not covered.any() or np.any(np.abs(score - t) < 1e-3):
            continue
        marks, clear = [], True
        for r in np.unique(rank):
            at = np.flatnonzero(rank == r)
            best = score[at].max()
            clear &= int(np.count_nonzero(score[at] == best)) == 1
            j = at[np.argmax(score[at])]
            if best >= t:
                text = texts[str(query_ids[q])][int(r) - 1]
                assert text is not None
                marks.append(text[int(start[j]) : int(end[j])])
        if clear and len(marks) == 1:
            return str(query_ids[q]), marks
    raise AssertionError(f"{RUN} has no failing query with exactly one covering chunk")


@pytest.fixture(scope="session")
def e2e_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the three sample runs, imported with the real CLI."""
    db = tmp_path_factory.mktemp("e2e") / "rageval.duckdb"
    samples = sorted((REPO / "sample_runs").glob("*.jsonl"))
    assert samples, "sample_runs/ is empty: run `rageval demo`"
    import_runs(db, samples)
    return db


@pytest.fixture(scope="session")
def facts(e2e_db: Path) -> Facts:
    return compute_facts(e2e_db)


@pytest.fixture(scope="session")
def app_url(e2e_db: Path, facts: Facts) -> Iterator[str]:
    # facts first: the server then holds the store file until the session ends
    with serve(e2e_db) as url:
        yield url


@pytest.fixture(scope="session")
def hostile_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server on a store of its own holding only the hostile run."""
    db = tmp_path_factory.mktemp("xss") / "hostile.duckdb"
    import_runs(db, [HOSTILE])
    with serve(db) as url:
        yield url


@pytest.fixture(scope="session")
def breaks_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server on a store of its own holding the two line-break runs (Compare pairs them)."""
    db = tmp_path_factory.mktemp("breaks") / "breaks.duckdb"
    import_runs(db, BREAKS)
    with serve(db) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    # a missing browser is a failure, never a skip: `make test` installs Debian's chromium
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make browser`"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    p = ctx.new_page()
    p.set_default_timeout(60_000)
    yield p
    ctx.close()
