"""Special files never block (issue 28, point 11): a FIFO, a device or a folder given where a
file is read is refused by name, exit 2, before the store is opened, by every command. Each
command runs in a child process with a time limit, so a regression fails rather than hangs
(`attach RUN --qrels FIFO` used to open the store, then wait on the FIFO for good holding the
store's lock)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rageval_core.store import Store
from tests.cli import rageval
from tests.core.store.test_crash import make_run, run_child
from tests.paths import REPO

LIMIT_S = 60
FIFO = "a FIFO (named pipe), not a file: reading it would wait forever"
DEVICE = "a device, not a file"
FOLDER = "a folder, not a file"


def child(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=LIMIT_S,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture()
def place(tmp_path: Path) -> dict[str, Path]:
    """A store holding run "r", its file, a FIFO and a folder."""
    run = make_run(tmp_path / "r.jsonl", 3, depth=3, evidence=False, name="r")
    db = tmp_path / "store.duckdb"
    assert rageval("import", str(run), db=db).returncode == 0
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    return {"db": db, "run": run, "fifo": tmp_path / "pipe", "folder": tmp_path / "folder"}


def counts(db: Path) -> dict[str, int]:
    with Store(db) as store:
        return store.table_counts()


def lines_for(p: dict[str, Path], special: Path) -> dict[str, list[str]]:
    """Every command line that reads a file, with special where the file goes."""
    run, s = str(p["run"]), str(special)
    return {
        "attach --qrels": ["attach", "r", "--qrels", s],
        "evaluate --qrels": ["evaluate", run, "--qrels", s],
        "evaluate companion": ["evaluate", run, s],
        "evaluate RUN": ["evaluate", s],
        "import": ["import", s],
        "compare": ["compare", s, "r"],
        "gate": ["gate", "--baseline", "r", "--candidate", s, "--max-drop", "R@10=0.1"],
        "fuse": ["fuse", s, "r"],
        "report": ["report", s, "--out", str(p["run"].parent / "report.html")],
        "judge": ["judge", s, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--dry-run"],
    }


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_every_command_refuses_a_special_file_by_name(place: dict[str, Path], kind: str) -> None:
    special = {"fifo": place["fifo"], "device": Path("/dev/zero"), "folder": place["folder"]}[kind]
    said = {"fifo": FIFO, "device": DEVICE, "folder": FOLDER}[kind]
    before = counts(place["db"])
    for command, argv in lines_for(place, special).items():
        if kind == "folder" and command in ("import", "evaluate companion"):
            continue  # a BEIR dataset's folder (test_confined_reads.py)
        done = child("--db", str(place["db"]), *argv)
        assert done.returncode == 2, (command, done.stderr)
        first = done.stderr.splitlines()[0]
        if kind == "folder" and command in (
            "evaluate RUN",
            "compare",
            "gate",
            "fuse",
            "report",
            "judge",
        ):
            said = "a folder, not a run file"  # where a stored run's name may stand
        assert first.startswith(f"{special}:0: file: {said}"), (command, done.stderr)
        assert "Traceback" not in done.stderr and done.stdout == ""
    assert counts(place["db"]) == before
    assert not (place["run"].parent / "report.html").exists()


def test_a_special_file_is_refused_before_the_store_is_opened(place: dict[str, Path]) -> None:
    """While another process holds the store, the refusal still comes at once: the command
    never waited for the store (it would wait up to RAGEVAL_BUSY_WAIT_S, then say busy)."""
    holder = run_child(
        """
        import sys, time, duckdb
        con = duckdb.connect(sys.argv[1])
        print("holding", flush=True)
        time.sleep(300)
        """,
        str(place["db"]),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        for argv in (
            ["attach", "r", "--qrels", str(place["fifo"])],
            ["attach", "r", "--qrels", "/dev/zero"],
            ["compare", "r", str(place["fifo"])],
        ):
            done = child("--db", str(place["db"]), *argv, env={"RAGEVAL_BUSY_WAIT_S": "600"})
            assert done.returncode == 2, done.stderr
            assert ":0: file: a " in done.stderr and "in use by another process" not in done.stderr
    finally:
        holder.kill()
        holder.wait()


def test_a_fifo_as_the_store_is_exit_3_not_a_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "store.duckdb"
    os.mkfifo(fifo)
    done = child("--db", str(fifo), "runs")
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == (
        f"rageval: cannot open the store {fifo}: a FIFO (named pipe), not a store file"
    )


def test_a_symlink_loop_and_a_nul_byte_are_refused_before_the_store(tmp_path: Path) -> None:
    """The other paths that name no file, for a command that reads one file into the store."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    nowhere = tmp_path / "no-such-folder" / "store.duckdb"  # exit 3 had the store been opened
    done = rageval("attach", "r", "--qrels", str(tmp_path / "a"), db=nowhere)
    assert done.returncode == 2 and done.stderr.startswith(
        f"{tmp_path / 'a'}:0: file: a symlink loop"
    )
    done = rageval("attach", "r", "--qrels", "q\x00rels", db=nowhere)
    assert done.returncode == 2 and "file: the path holds a NUL byte" in done.stderr
    assert not nowhere.parent.exists()
