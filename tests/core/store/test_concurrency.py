"""A reading process and `rageval import` share one store file: they take turns, nothing is lost.

DuckDB lets one process hold a file. The dashboard's LeasedStore holds it only while it works;
the CLI (and the lease) wait with backoff while the other side holds it, and say so; a wait
that runs out is a clear message, never a traceback. Every test uses two real processes.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rageval_core.errors import RagevalError
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from rageval_core.store.lease import LeasedStore
from rageval_core.store.locking import StoreBusyError
from tests.core.store.test_crash import assert_consistent, make_run
from tests.paths import REPO

#: operations run while another process wrote (docs/reliability.md quotes the totals)
OPERATIONS: dict[str, int] = {}

HOLDER = """
    import sys, time
    from rageval_core.store import Store
    store = Store(sys.argv[1])
    print("holding", flush=True)
    hold = float(sys.argv[2])
    if hold < 0:
        sys.stdin.read()
    else:
        time.sleep(hold)
    store.close()
"""


def hold(db: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding the store for seconds (< 0: until its stdin closes)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(db), str(seconds)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    return proc


def cli(db: Path, *args: str, wait_s: float | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if wait_s is not None:
        env["RAGEVAL_BUSY_WAIT_S"] = str(wait_s)
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "--db", str(db), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_an_import_waits_while_another_process_holds_the_store(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    run = make_run(tmp_path / "r.jsonl", 5, evidence=False)
    holder = hold(db, 2.0)
    done = cli(db, "import", str(run))
    holder.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert "is in use by another process" in done.stderr and "waiting up to" in done.stderr
    assert "imported: r (5 queries" in done.stdout
    assert "Traceback" not in done.stderr


def test_a_store_that_stays_busy_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    run = make_run(tmp_path / "r.jsonl", 5, evidence=False)
    Store(db).close()
    holder = hold(db, -1)
    try:
        started = time.monotonic()
        done = cli(db, "import", str(run), wait_s=1.5)
        waited = time.monotonic() - started
    finally:
        holder.communicate("", timeout=30)
    assert done.returncode == 3  # store unavailable
    assert (
        f"the store {db} is busy: it is in use by another process (PID {holder.pid})" in done.stderr
    )
    assert "Nothing was changed" in done.stderr and "RAGEVAL_BUSY_WAIT_S" in done.stderr
    assert "Traceback" not in done.stderr
    assert waited >= 1.5
    with Store(db) as store:
        assert store.runs() == []


def test_a_leased_store_lets_go_of_the_file_when_idle(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    leased = LeasedStore(db, idle_s=0.2)
    try:
        with leased.hold():
            # while it works, another process cannot open the file ...
            assert cli(db, "runs", wait_s=0).returncode == 3
        time.sleep(0.6)
        assert not leased.is_open
        # ... once idle, it can; and while that one holds it, the lease waits for it
        assert cli(db, "runs", wait_s=0).returncode == 0
        holder = hold(db, 1.0)
        started = time.monotonic()
        assert leased.runs() == []
        assert time.monotonic() - started > 0.3
        holder.wait(timeout=30)
        holder = hold(db, -1)
        try:
            with pytest.raises(StoreBusyError, match="is busy"), leased.hold(wait_s=0.5):
                pass
        finally:
            holder.communicate("", timeout=30)
    finally:
        leased.close()


@pytest.mark.slow
def test_readers_and_imports_in_another_process_take_turns(tmp_path: Path) -> None:
    """Two reader threads (two dashboard sessions) work while 6 CLI imports write."""
    db = tmp_path / "store.duckdb"
    first = make_run(tmp_path / "first.jsonl", 200, depth=5)
    assert cli(db, "import", str(first)).returncode == 0
    files = [make_run(tmp_path / f"run{i}.jsonl", 800, depth=5, seed=i) for i in range(6)]
    leased = LeasedStore(db)
    stop = threading.Event()
    ops = {"reads": 0, "evaluations": 0}
    errors: list[BaseException] = []
    seen_counts: list[int] = []

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                runs = leased.runs()
                seen_counts.append(len(runs))
                ops["reads"] += 1
                run = rng.choice(runs)
                data = load_run_data(leased, run.run_id)
                report = evaluate(
                    data, ["R@5", "EvidenceRecall@5"], store=leased, settings=Settings(k=5)
                )
                assert 0.0 <= report.metrics["R@5"] <= 1.0
                ops["evaluations"] += 1
                time.sleep(rng.uniform(0.0, 0.2))  # a person clicking, at random
        except BaseException as e:  # every error, a lock error included, fails the test
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    try:
        imports = [cli(db, "import", str(f), wait_s=60) for f in files]
    finally:
        time.sleep(1.0)  # the readers see the last import
        stop.set()
        for t in threads:
            t.join(timeout=120)
    leased.close()
    assert errors == [], errors
    for done in imports:
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
    assert ops["evaluations"] >= 10
    assert seen_counts[-1] == 7 and max(seen_counts) == 7
    assert seen_counts == sorted(seen_counts) or len(set(seen_counts)) > 1
    with Store(db) as store:
        runs = {r.name: r for r in store.runs()}
        assert sorted(runs) == sorted(["first", *(f.stem for f in files)])
        assert all(runs[f.stem].n_queries == 800 and runs[f.stem].n_chunks == 4000 for f in files)
        # scored at import, whole (the readers may have scored a run first: same rows)
        assert store.table_counts()["pair_scores"] == (200 + 6 * 800) * 5 * 2
    assert_consistent(db)
    OPERATIONS["lease readers (reads + evaluations)"] = ops["reads"] + ops["evaluations"]
    OPERATIONS["CLI imports while reading"] = len(imports)
    print(f"\nconcurrency (core): {ops}, imports {len(imports)}, lease opens {leased.opens}")


def test_a_store_held_for_good_locks_imports_out(tmp_path: Path) -> None:
    """Why the lease exists: a Store kept open (the old dashboard) makes every import fail."""
    db = tmp_path / "store.duckdb"
    run = make_run(tmp_path / "r.jsonl", 5, evidence=False)
    with Store(db):
        done = cli(db, "import", str(run), wait_s=1)
    assert done.returncode == 3 and "is busy" in done.stderr
    with LeasedStore(db, idle_s=0.1) as leased:
        leased.runs()
        time.sleep(0.5)
        done = cli(db, "import", str(run), wait_s=5)
        assert done.returncode == 0, done.stderr
        assert [r.name for r in leased.runs()] == ["r"]


def test_a_lingering_lease_keeps_its_connection_but_lets_an_import_in(tmp_path: Path) -> None:
    """linger_s (the dashboard's): an idle connection is reused by the next call, yet let go
    within a poll once another process waits for the file."""
    db = tmp_path / "store.duckdb"
    run = make_run(tmp_path / "r.jsonl", 5, evidence=False)
    with LeasedStore(db, idle_s=0.1, linger_s=60) as leased:
        leased.runs()
        time.sleep(0.5)  # five idle periods: a plain lease would have closed the file
        assert leased.is_open
        leased.runs()
        assert leased.opens == 1
        done = cli(db, "import", str(run), wait_s=5)  # far less than the linger
        assert done.returncode == 0, done.stderr
        assert [r.name for r in leased.runs()] == ["r"]
        assert leased.opens == 2


def test_store_errors_stay_rageval_errors() -> None:
    assert issubclass(StoreBusyError, RagevalError)
