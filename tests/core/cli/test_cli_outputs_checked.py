"""Every output path is checked before the command works, and written whole or not at all
(issue 28, point 9): `fuse --out`, `report --out`, `export --to jsonl|parquet --out`,
`export RUN --to FILE` and `demo --out`. A bad one is exit 2 and one line naming the path and
the problem; nothing is left at the output's name, or beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rageval_core.formats.native import write_native
from rageval_core.model import Chunk, Query, RunInfo
from tests.cli import rageval
from tests.core.store.test_crash import make_run
from tests.paths import REPO

#: a folder no process may create a file in, root included (sysfs)
UNWRITABLE = Path("/sys")


def tree(folder: Path) -> list[str]:
    """Every name under folder, hidden ones too (a temporary file left behind shows here)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the store holding run "r", the run file, the folder outputs go to)."""
    work = tmp_path / "work"
    work.mkdir()
    run = make_run(tmp_path / "r.jsonl", 3, depth=3, evidence=False, name="r")
    db = tmp_path / "store.duckdb"
    done = rageval("import", str(run), db=db)
    assert done.returncode == 0, done.stderr
    return db, run, work


def commands(run: Path, out: str) -> dict[str, list[str]]:
    return {
        "fuse": ["fuse", str(run), "r", "--out", out],
        "report": ["report", "r", "--out", out],
        "export jsonl": ["export", "r", "--to", "jsonl", "--out", out],
        "export parquet": ["export", "r", "--to", "parquet", "--out", out],
        "export FILE": ["export", "r", "--to", out],
    }


def bad_outputs(work: Path) -> dict[str, tuple[str, str]]:
    """name -> (the output path, what the message must say of it)."""
    (work / "folder").mkdir()
    (work / "plain.txt").write_text("a file, not a folder")
    long_name = "n" * 256 + ".out"
    return {
        "missing folder": (
            str(work / "missing" / "out.x"),
            f"its folder {work / 'missing'} does not exist",
        ),
        "a folder": (str(work / "folder"), "a folder; give the name of a file inside it"),
        "under a file": (str(work / "plain.txt" / "out.x"), "plain.txt is a file, not a folder"),
        "name too long": (str(work / long_name), "longer than the 255 bytes a file name may have"),
        "unwritable folder": (
            str(UNWRITABLE / "rageval-out.x"),
            f"cannot create a file in {UNWRITABLE}",
        ),
    }


@pytest.mark.parametrize(
    "command", ["fuse", "report", "export jsonl", "export parquet", "export FILE"]
)
def test_a_bad_output_is_one_line_and_exit_2_with_nothing_written(
    setup: tuple[Path, Path, Path], command: str
) -> None:
    db, run, work = setup
    for case, (out, said) in bad_outputs(work).items():
        before = tree(work)
        done = rageval(*commands(run, out)[command], db=db)
        flag = "--to" if command == "export FILE" else "--out"
        assert done.returncode == 2, (case, done.stderr)
        lines = done.stderr.splitlines()
        assert len(lines) == 1, (case, done.stderr)
        assert lines[0].startswith(f"rageval: {flag} {out}: "), (case, lines)
        assert said in lines[0], (case, lines)
        assert tree(work) == before, case  # nothing made, no temporary file left
        assert done.stdout == ""


def test_the_output_is_checked_before_the_store_is_opened(
    setup: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """--out is refused (exit 2) before --db is even looked at: a store in a folder that does
    not exist would be exit 3 had it been opened first, and it is not created."""
    _, run, work = setup
    nowhere = tmp_path / "no-such-folder" / "store.duckdb"
    for command, argv in commands(run, str(work / "missing" / "out.x")).items():
        done = rageval(*argv, db=nowhere)
        assert done.returncode == 2, (command, done.stderr)
        assert "does not exist (create it first)" in done.stderr
        assert "the store" not in done.stderr
    assert not nowhere.parent.exists()


def test_demo_out_is_checked_and_a_failed_run_leaves_no_folder(tmp_path: Path) -> None:
    (tmp_path / "plain.txt").write_text("x")
    for out, said in (
        (tmp_path / "plain.txt", "a file, not a folder"),
        (tmp_path / "plain.txt" / "sub", "plain.txt is a file, not a folder"),
        (UNWRITABLE / "rageval-demo", f"cannot create a file in {UNWRITABLE}"),
        (tmp_path / ("d" * 300), "longer than the 255 bytes"),
    ):
        done = rageval("demo", "--out", str(out), "--queries", "3")
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith(f"rageval: --out {out}: ") and said in done.stderr
    assert tree(tmp_path) == ["plain.txt"]


def run_with_a_bad_id(path: Path) -> Path:
    """A run whose second query's document id holds a space: TREC lines cannot say it, so
    writing it as TREC fails after the first query's lines."""
    queries = [
        Query(query_id="q1", retrieved=(Chunk("d1", "one", 2.0), Chunk("d2", "two", 1.0))),
        Query(query_id="q2", retrieved=(Chunk("d 3", "three", 2.0),)),
    ]
    write_native(RunInfo(name=path.stem), queries, path)
    return path


def test_a_write_that_fails_half_way_leaves_nothing_and_keeps_the_old_file(
    tmp_path: Path,
) -> None:
    a = run_with_a_bad_id(tmp_path / "a.jsonl")
    b = run_with_a_bad_id(tmp_path / "b.jsonl")
    out = tmp_path / "out" / "fused.trec"
    out.parent.mkdir()
    done = rageval("fuse", str(a), str(b), "--out", str(out))
    assert done.returncode == 2 and "TREC ids cannot hold whitespace" in done.stderr
    assert tree(out.parent) == []  # no half a run (the first query's lines) at fused.trec
    out.write_text("the previous fusion\n")
    done = rageval("fuse", str(a), str(b), "--out", str(out))
    assert done.returncode == 2
    assert out.read_text() == "the previous fusion\n" and tree(out.parent) == ["fused.trec"]


def test_a_name_that_fits_is_written_whole(setup: tuple[Path, Path, Path]) -> None:
    """A 250-byte name fits the file system: it is written (a temporary NAME.partial beside it
    would not have fitted), and through a symlink the file it names is replaced."""
    db, _, work = setup
    out = work / ("x" * 244 + ".jsonl")
    done = rageval("export", "r", "--to", "jsonl", "--out", str(out), db=db)
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["rageval_run"]["name"] == "r"
    target = work / "real.html"
    (work / "link.html").symlink_to(target.name)
    done = rageval("report", "r", "--out", str(work / "link.html"), db=db)
    assert done.returncode == 0, done.stderr
    assert (work / "link.html").is_symlink() and target.read_text().startswith("<!DOCTYPE html>")
    assert tree(work) == sorted(["link.html", "real.html", out.name])


def test_a_fifo_as_the_output_is_refused_without_blocking(
    setup: tuple[Path, Path, Path],
) -> None:
    """Opening a FIFO to write waits for a reader: refused by name instead (a child process
    with a time limit, so a regression fails rather than hangs)."""
    db, run, work = setup
    fifo = work / "pipe"
    os.mkfifo(fifo)
    for command, argv in commands(run, str(fifo)).items():
        done = subprocess.run(
            [sys.executable, "-m", "rageval_core.cli", "--db", str(db), *argv],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.strip().endswith(f"{fifo}: a FIFO (named pipe), not a file to write")
        assert tree(work) == ["pipe"]
