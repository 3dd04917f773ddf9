"""A real browser against `streamlit run` on a free port (Debian chromium driven by playwright)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{url} did not become healthy in {timeout_s} s")


@pytest.fixture(scope="session")
def e2e_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the three sample runs, imported with the real CLI."""
    db = tmp_path_factory.mktemp("e2e") / "rageval.duckdb"
    samples = sorted(str(p) for p in (REPO / "sample_runs").glob("*.jsonl"))
    assert samples, "sample_runs/ is empty: run `rageval demo`"
    subprocess.run([sys.executable, "-m", "rageval_core.cli", "--db", str(db), "import", *samples], check=True)
    return db


@pytest.fixture(scope="session")
def app_url(e2e_db: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "RAGEVAL_DB": str(e2e_db)}
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(REPO / "dashboard" / "app.py"),
        "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    # a missing browser is a failure, never a skip: `make test` installs Debian's chromium
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make browser`"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser: object) -> Iterator[object]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    p = ctx.new_page()
    yield p
    ctx.close()
