"""Every file a reader opens is held to the confinement in force, not only the files given
(issue 28, point 10): BEIR's corpus.jsonl and queries.jsonl found beside its qrels, a folder's
files, sidecars; symlinks resolved first. Without a confinement (the CLI) a companion that is a
FIFO, a device, a folder or a symlink loop is refused by name, never read or skipped in
silence. The app's route through the Runs page: tests/dashboard/test_runs_confinement.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rageval_core.importing import Confinement, confined, import_paths
from rageval_core.store import Store
from tests.cli import rageval
from tests.paths import REPO

MINI = REPO / "tests" / "data" / "beir" / "mini"
RESULTS = REPO / "tests" / "data" / "beir" / "results.json"
SECRET = "SECRET-TEXT-FROM-OUTSIDE"


def beir_dataset(folder: Path) -> Path:
    """folder/: results.json (a BEIR results run), corpus.jsonl, queries.jsonl, qrels/test.tsv."""
    shutil.copytree(MINI, folder)
    shutil.copy(RESULTS, folder / "results.json")
    return folder


def secret_file(folder: Path, name: str) -> Path:
    """A BEIR JSON Lines file outside the allowed folder whose texts must never be read."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    lines = [f'{{"_id": "{q}", "title": "{SECRET}", "text": "{SECRET}"}}' for q in ("q1", "d1")]
    path.write_text("\n".join(lines) + "\n")
    return path


def stored_texts(store: Store) -> str:
    """Every query and chunk text of every stored run, as one string."""
    out = []
    for run in store.runs():
        for q in store.iter_queries(run.run_id):
            out.append(q.query or "")
            out.extend(c.text or "" for c in q.retrieved or ())
    return "\n".join(out)


@pytest.fixture()
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(the allowed folder holding a BEIR dataset, a folder outside it)."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    return beir_dataset(allowed / "ds"), tmp_path / "outside"


@pytest.mark.parametrize("companion", ["queries.jsonl", "corpus.jsonl"])
def test_a_beir_companion_symlinked_outside_is_refused(
    layout: tuple[Path, Path], companion: str
) -> None:
    ds, outside = layout
    (ds / companion).unlink()
    (ds / companion).symlink_to(secret_file(outside, companion))
    policy = Confinement((ds.parent.resolve(),))
    for given in ([ds / "results.json", ds / "qrels" / "test.tsv"], [ds / "results.json", ds]):
        with Store(":memory:") as store, confined(policy):
            out = import_paths(store, given)
            assert out.failed and not out.imported and store.runs() == []
            problem = next(p for p in out.problems if p.file.endswith(companion))
            assert (problem.line, problem.field) == (0, "file")
            assert problem.problem.startswith("outside the folders imports may read from")
            assert SECRET not in stored_texts(store)


def test_a_sidecar_and_a_symlinked_folder_outside_are_refused(layout: tuple[Path, Path]) -> None:
    ds, outside = layout
    policy = Confinement((ds.parent.resolve(),))
    facts = outside / "facts.json"
    outside.mkdir()
    facts.write_text(f'{{"name": "{SECRET}"}}')
    (ds / "results.json.run.json").symlink_to(facts)
    with Store(":memory:") as store, confined(policy):
        out = import_paths(store, [ds / "results.json", ds / "qrels" / "test.tsv"])
        assert any(
            p.file.endswith("results.json.run.json") and "outside the folders" in p.problem
            for p in out.problems
        ), out.problems
        assert store.runs() == []
    (ds / "results.json.run.json").unlink()
    # the qrels split in a folder linked from outside: qrels/ itself leads out
    shutil.move(ds / "qrels", outside / "qrels")
    (ds / "qrels").symlink_to(outside / "qrels")
    with Store(":memory:") as store, confined(policy):
        out = import_paths(store, [ds])
        assert out.failed and store.runs() == []
        assert any("outside the folders" in p.problem for p in out.problems)


def test_links_that_stay_inside_and_no_confinement_read_as_before(
    layout: tuple[Path, Path],
) -> None:
    ds, _ = layout
    (ds / "queries.jsonl").rename(ds / "q.jsonl")
    (ds / "queries.jsonl").symlink_to("q.jsonl")  # a link inside the folder is fine
    with Store(":memory:") as store, confined(Confinement((ds.parent.resolve(),))):
        out = import_paths(store, [ds / "results.json", ds])
        assert not out.failed, out.problems
        (run,) = store.runs()
        texts = {q.query_id: q.query for q in store.iter_queries(run.run_id)}
        assert texts["q1"] == "What is the capital of France?"
    with Store(":memory:") as store:  # no confinement: the CLI reads where the user says
        assert not import_paths(store, [ds / "results.json", ds]).failed
    # the folder given as evaluate's companion, as docs/formats.md shows it
    done = rageval("evaluate", str(ds / "results.json"), str(ds), "--json")
    assert done.returncode == 0, done.stderr


def cli_import(db: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    """`rageval import FILES` in a child process with a time limit (a FIFO must not block)."""
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "--db", str(db), "import", *map(str, files)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


@pytest.mark.parametrize("what", ["fifo", "loop", "folder", "device"])
@pytest.mark.parametrize("companion", ["queries.jsonl", "corpus.jsonl", "results.json.run.json"])
def test_the_cli_names_a_special_companion(tmp_path: Path, companion: str, what: str) -> None:
    """A FIFO, a symlink loop, a folder or a device where a BEIR companion or a sidecar goes:
    refused by name (before: a FIFO or a loop was skipped in silence and the run imported
    without its texts, or a loop inside a folder was a traceback)."""
    ds = beir_dataset(tmp_path / "ds")
    target = ds / companion
    target.unlink(missing_ok=True)
    if what == "fifo":
        os.mkfifo(target)
    elif what == "loop":
        target.symlink_to(target.name)
    elif what == "folder":
        target.mkdir()
    else:
        target.symlink_to("/dev/zero")
    said = {
        "fifo": "a FIFO (named pipe), not a file: reading it would wait forever",
        "loop": "a symlink loop",
        "folder": "a folder, not a file",
        "device": "a device, not a file",
    }[what]
    db = tmp_path / "store.duckdb"
    for given in ([ds / "results.json", ds / "qrels" / "test.tsv"], [ds / "results.json", ds]):
        done = cli_import(db, *given)
        assert done.returncode == 2, done.stderr
        assert f"{companion}:0: file: {said}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert rageval("runs", "--json", db=db).stdout.strip() == "[]"
