"""A process SIGKILLed inside an import or a scoring leaves the store readable, without half a
run, and the next start says what happened.

Every kill is real: a child process is killed with SIGKILL while its transaction has rows
inserted but not committed. Deterministic kills stop the child at a known point (it prints a
line and pauses inside its progress callback, after a batch went in); the slow test kills the
real `rageval import` at moments spread over its run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from rageval_core.formats.native import write_native
from rageval_core.model import Chunk, Query, RunInfo
from rageval_core.store import Store
from rageval_core.store import journal as journal_mod
from tests.paths import REPO

#: kills done by this module's tests (docs/reliability.md quotes the total)
KILLS: list[str] = []


def make_run(
    path: Path,
    n_queries: int,
    depth: int = 5,
    evidence: bool = True,
    name: str | None = None,
    seed: int = 0,
) -> Path:
    """A native run of n_queries x depth chunks (texts long enough to make scoring take time)."""
    words = ["tax", "rate", "return", "filing", "deadline", "vat", "charity", "premium", "audit"]

    def text(q: int, r: int) -> str:
        return " ".join(words[(q * 7 + r * 3 + i + seed) % len(words)] for i in range(40))

    queries = (
        Query(
            query_id=f"q{q}",
            query=f"question {q}",
            retrieved=tuple(Chunk(f"d{q}-{r}", text(q, r), float(depth - r)) for r in range(depth)),
            relevance={f"d{q}-0": 1},
            evidence=(text(q, 0)[:60], text(q, 2)[10:90]) if evidence else (),
        )
        for q in range(n_queries)
    )
    write_native(RunInfo(name=name or path.stem), queries, path)
    return path


def run_child(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_line(proc: subprocess.Popen[str], prefix: str, timeout_s: float = 120.0) -> str:
    """The first line of the child's stdout starting with prefix (failing if it exits first)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(prefix):
            return line.strip()
        if not line and proc.poll() is not None:
            raise AssertionError(
                f"child exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}"
            )
    raise AssertionError(f"no {prefix!r} line within {timeout_s} s")


def kill(proc: subprocess.Popen[str], what: str) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)  # reaped: the pid is gone, as after a real crash
    assert proc.returncode == -signal.SIGKILL
    KILLS.append(what)


def snapshot(db: Path) -> dict[str, Any]:
    """Row counts of every table plus each run's facts (what "nothing changed" compares)."""
    with Store(db) as store:
        return {
            "counts": store.table_counts(),
            "runs": [(r.name, r.n_queries, r.n_chunks, r.content_hash) for r in store.runs()],
        }


def assert_consistent(db: Path) -> None:
    """No orphan rows: every per-query and score row belongs to a stored run, counts agree."""
    with Store(db) as store, store._cursor() as cur:
        known = {r[0] for r in cur.execute("SELECT run_id FROM runs").fetchall()}
        for table in ("queries", "chunks", "evidence", "qrels", "pair_scores", "scorings"):
            ids = {r[0] for r in cur.execute(f"SELECT DISTINCT run_id FROM {table}").fetchall()}
            assert ids <= known, f"{table} holds rows of a run that is not stored: {ids - known}"
        for run_id, n_queries, n_chunks in cur.execute(
            "SELECT run_id, n_queries, n_chunks FROM runs"
        ).fetchall():
            got = cur.execute("SELECT count(*) FROM queries WHERE run_id = ?", [run_id]).fetchall()
            assert got[0][0] == n_queries
            got = cur.execute("SELECT count(*) FROM chunks WHERE run_id = ?", [run_id]).fetchall()
            assert got[0][0] == n_chunks
        for run_id, scorer, norm, n_pairs in cur.execute(
            "SELECT run_id, scorer, norm, n_pairs FROM scorings"
        ).fetchall():
            got = cur.execute(
                "SELECT count(*) FROM pair_scores WHERE run_id = ? AND scorer = ? AND norm = ?",
                [run_id, scorer, norm],
            ).fetchall()
            assert got[0][0] == n_pairs, "a scoring is recorded but its scores are not all kept"


IMPORT_AND_PAUSE = """
    import sys, time
    from pathlib import Path
    from rageval_core.importing import import_paths
    from rageval_core.store import Store

    def progress(stage, label, done, total):
        # rows of this batch are inserted, not committed: say so, then wait to be killed
        print(f"{stage} {done}", flush=True)
        time.sleep(600)

    with Store(sys.argv[1]) as store:
        import_paths(store, [Path(sys.argv[2])], progress=progress)
"""

SCORE_AND_PAUSE = """
    import sys, time
    from pathlib import Path
    from rageval_core.importing import import_paths
    from rageval_core.store import Store, scores

    scores.BLOCK_QUERIES = 100  # many blocks, so the kill lands between two of them
    with Store(sys.argv[1]) as store:
        out = import_paths(store, [Path(sys.argv[2])], score=False)
        print("imported", out.imported[0].name, flush=True)

        def progress(done, total):
            print(f"scored {done}", flush=True)
            if done >= 300:
                time.sleep(600)

        scores.ensure_scored(store, out.imported[0].run_id, progress=progress)
"""


def test_kill_inside_an_import_stores_nothing_and_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    base = make_run(tmp_path / "base.jsonl", 20, evidence=False)
    big = make_run(tmp_path / "big.jsonl", 12_000, evidence=False)
    with Store(db) as store:
        from rageval_core.importing import import_paths

        import_paths(store, [base])
    before = snapshot(db)

    proc = run_child(IMPORT_AND_PAUSE, str(db), str(big))
    first = wait_line(proc, "import ")
    assert int(first.split()[1]) < 12_000  # killed with part of the run inserted
    kill(proc, "import, after its first batch")

    assert snapshot(db) == before, "the store changed: half a run was kept"
    assert_consistent(db)
    with Store(db) as store:
        found = store.interrupted()
        assert [(e.kind, e.pid) for e in found] == [("import", proc.pid)]
        assert "big.jsonl" in found[0].source
        assert (
            "was interrupted" in found[0].message and "nothing of it was stored" in found[0].message
        )
        store.acknowledge_interrupted(found)
    with Store(db) as store:
        assert store.interrupted() == []  # said once
        # the same file imports fine afterwards
        from rageval_core.importing import import_paths

        out = import_paths(store, [big])
        assert [r.n_queries for r in out.imported] == [12_000]
    assert_consistent(db)


def test_the_cli_says_what_happened_at_the_next_start(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    big = make_run(tmp_path / "big.jsonl", 12_000, evidence=False)
    proc = run_child(IMPORT_AND_PAUSE, str(db), str(big))
    wait_line(proc, "import ")
    kill(proc, "import (then the CLI starts)")

    cli = [sys.executable, "-m", "rageval_core.cli", "--db", str(db), "runs"]
    first = subprocess.run(cli, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "rageval: note: an import of" in first.stderr and "big.jsonl" in first.stderr
    assert "was interrupted before it finished; nothing of it was stored" in first.stderr
    assert "Traceback" not in first.stderr
    assert "no runs yet" in first.stdout
    second = subprocess.run(cli, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "interrupted" not in second.stderr  # acknowledged: said once


def test_kill_inside_a_scoring_keeps_no_scores_and_is_reported(tmp_path: Path) -> None:
    from rageval_core.store.scores import ensure_scored, load_pair_rows

    db = tmp_path / "store.duckdb"
    run = make_run(tmp_path / "ev.jsonl", 600, depth=3)
    proc = run_child(SCORE_AND_PAUSE, str(db), str(run))
    wait_line(proc, "imported")
    wait_line(proc, "scored 300")
    kill(proc, "scoring, after 3 of 6 blocks")

    assert_consistent(db)
    with Store(db) as store:
        assert [r.name for r in store.runs()] == ["ev"]  # the import had committed
        assert store.table_counts()["pair_scores"] == 0 and store.table_counts()["scorings"] == 0
        found = store.interrupted()
        assert [e.kind for e in found] == ["scoring"] and "'ev'" in found[0].source
        assert "none of its scores were kept" in found[0].message
        store.acknowledge_interrupted(found)
        done = ensure_scored(store, "ev")  # scored again, whole
        assert not done.cached and done.n_pairs == 600 * 3 * 2
        assert load_pair_rows(store, "ev").score.size == 600 * 3 * 2
        assert store.interrupted() == []
    assert_consistent(db)


def test_a_kill_after_the_commit_is_not_reported_as_lost(tmp_path: Path) -> None:
    """A process killed between an import's commit and its journal update stored the run."""
    db = tmp_path / "store.duckdb"
    run = make_run(tmp_path / "small.jsonl", 10, evidence=False)
    code = """
        import os, signal, sys
        from pathlib import Path
        from rageval_core.importing import import_paths
        from rageval_core.store import Store, journal

        journal.finish = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        store = Store(sys.argv[1])
        import_paths(store, [Path(sys.argv[2])], score=False)
    """
    proc = run_child(code, str(db), str(run))
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    KILLS.append("import, between commit and journal update")
    with Store(db) as store:
        assert [r.name for r in store.runs()] == ["small"]
        assert store.interrupted() == []
        assert [row[3] for row in journal_mod.entries(store)] == ["done"]


@pytest.mark.slow
def test_killing_the_real_cli_at_any_moment_never_leaves_half_a_run(tmp_path: Path) -> None:
    """`rageval import` (import + scoring) killed at 8 moments: all-or-nothing every time."""
    db = tmp_path / "store.duckdb"
    run = make_run(tmp_path / "cli.jsonl", 3_000, depth=4)
    cli = [sys.executable, "-m", "rageval_core.cli", "--db", str(db), "import", str(run)]
    started = time.monotonic()
    done = subprocess.run(cli, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    full_s = time.monotonic() - started
    with Store(db) as store:
        expected = store.table_rows("cli")
        full_scores = store.table_counts()["pair_scores"]
        store.delete("cli")

    outcomes = []
    for i in range(8):
        delay = full_s * (i + 0.5) / 8  # spread over start-up, reading, inserting, scoring
        with Store(db) as store:
            seen_rows = len(journal_mod.entries(store))
        proc = subprocess.Popen(cli, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            KILLS.append(f"real CLI at {delay:.2f} s")
        assert_consistent(db)
        with Store(db) as store:
            told = {e.kind for e in store.interrupted()}
            store.acknowledge_interrupted(store.interrupted())
            # the kinds of work this attempt had started (journaled) before it died or ended
            started_kinds = {row[1] for row in journal_mod.entries(store)[seen_rows:]}
            names = [r.name for r in store.runs()]
            if names:
                # all of it, exactly as a clean import stores it
                assert names == ["cli"] and store.table_rows("cli") == expected
                assert "import" not in told
                n_scores = store.table_counts()["pair_scores"]
                assert n_scores in (0, full_scores)
                assert ("scoring" in told) == (n_scores == 0 and "scoring" in started_kinds)
                outcomes.append("stored" if n_scores else "stored, scoring lost")
                store.delete("cli")
            else:
                assert ("import" in told) == ("import" in started_kinds)
                outcomes.append("nothing")
    assert_consistent(db)
    print(f"\nreal CLI kills: {outcomes}")
    # the schedule hit the middle of the work at least once
    assert "nothing" in outcomes, outcomes


def test_the_journal_row_is_committed_before_the_work(tmp_path: Path) -> None:
    """While an import runs, its "running" row is already visible from another connection."""
    seen: list[Any] = []
    db = tmp_path / "store.duckdb"
    run = make_run(tmp_path / "one.jsonl", 3, evidence=False)
    with Store(db) as store:
        from rageval_core.importing import import_paths

        def progress(stage: str, label: str, done: int, total: int | None) -> None:
            with store._cursor() as cur:  # another cursor: sees only committed rows
                seen.extend(cur.execute("SELECT kind, status FROM journal").fetchall())

        import_paths(store, [run], progress=progress, score=False)
        assert seen and seen[0] == ("import", "running")
        assert [row[3] for row in journal_mod.entries(store)] == ["done"]
