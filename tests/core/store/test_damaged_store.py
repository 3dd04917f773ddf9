"""A damaged store file (issue 28, point 15): every command that opens it says the store is
corrupt and how to recover, exit 3, never DuckDB's bare message or a traceback, and changes
nothing in the file.

Damage classes: cut short at offsets from inside the file header to the last byte, a zeroed file
header, zeroed database headers, random bytes inside a data block, an empty file, a text file,
an SQLite file (DuckDB would download an extension to read it).
"""

from __future__ import annotations

import hashlib
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from rageval_core.errors import StoreCorruptError
from rageval_core.store import LeasedStore, Store
from tests.cli import rageval
from tests.paths import REPO

BM25 = REPO / "sample_runs" / "bm25.jsonl"
#: DuckDB's layout: a 4 KiB file header, two 4 KiB database headers, then 256 KiB blocks
HEADERS = 3 * 4096
BLOCK = 262_144


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("good") / "good.duckdb"
    assert rageval("import", str(BM25), db=db).returncode == 0  # imported and scored
    assert not Path(f"{db}.wal").exists()
    return db


def _first_block(db: Path, table: str, column: str | None = None) -> int:
    """The first block holding the table's (column's) data."""
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT min(block_id) FROM pragma_storage_info(?) "
            "WHERE (column_name = ? OR ? IS NULL) AND block_id >= 0",
            [table, column, column],
        ).fetchone()
    assert row is not None and row[0] is not None
    return int(row[0])


def _cut(at: Callable[[int], int]) -> Callable[[Path], None]:
    def damage(db: Path) -> None:
        with db.open("r+b") as f:
            f.truncate(at(db.stat().st_size))

    return damage


def _zero(offset: int, n: int) -> Callable[[Path], None]:
    def damage(db: Path) -> None:
        with db.open("r+b") as f:
            f.seek(offset)
            f.write(b"\0" * n)

    return damage


def _random_in_texts(db: Path) -> None:
    # the chunk texts: read by evaluate and export, not by runs or show
    at = HEADERS + _first_block(db, "chunks", "text") * BLOCK + 1000
    with db.open("r+b") as f:
        f.seek(at)
        f.write(random.Random(28).randbytes(60_000))


def _sqlite(db: Path) -> None:
    db.unlink()
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE runs (name TEXT)")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "cut_inside_the_file_header": _cut(lambda size: 100),
    "cut_after_the_file_header": _cut(lambda size: 4096),
    "cut_after_the_database_headers": _cut(lambda size: HEADERS),
    "cut_in_the_first_block": _cut(lambda size: HEADERS + 9000),
    "cut_in_the_middle": _cut(lambda size: size // 2),
    "cut_one_block_short": _cut(lambda size: size - BLOCK),
    "cut_by_one_byte": _cut(lambda size: size - 1),
    "zeroed_file_header": _zero(0, 4096),
    "zeroed_database_headers": _zero(4096, 8192),
    "random_bytes_in_the_chunk_texts": _random_in_texts,
    "empty": _cut(lambda size: 0),
    "a_text_file": lambda db: db.write_text("not a store\n" * 100),
    "an_sqlite_file": _sqlite,
}
#: the damage that DuckDB meets as it opens the file: every command fails, nothing is written
AT_OPEN = {
    "cut_inside_the_file_header",
    "cut_after_the_file_header",
    "cut_after_the_database_headers",
    "cut_in_the_first_block",
    "zeroed_file_header",
    "zeroed_database_headers",
    "empty",
    "a_text_file",
    "an_sqlite_file",
}


def _damaged(good: Path, folder: Path, kind: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "store.duckdb"
    shutil.copy(good, db)
    DAMAGE[kind](db)
    return db


def _digest(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest()


def _assert_says_corrupt_and_how_to_recover(text: str, db: Path, kind: str) -> None:
    assert f"the store {db} is corrupt (damaged)" in text, text
    assert "Traceback" not in text and "Could not read enough bytes" not in text.split(":")[0]
    assert "To recover:" in text and f"mv {db} {db}.corrupt" in text, text
    assert "import" in text and "crash journal" in text
    if kind == "empty":
        assert "it is empty (0 bytes)" in text
    if kind in ("a_text_file", "an_sqlite_file"):
        assert "it is not a DuckDB database file" in text
        assert "extension" not in text.lower()  # DuckDB tried to download one for SQLite


COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "runs": lambda db, out: ["runs"],
    "show": lambda db, out: ["show", "bm25"],
    "evaluate": lambda db, out: ["evaluate", "bm25"],
    "import": lambda db, out: ["import", str(BM25), "--name", "again"],
    "export": lambda db, out: ["export", "bm25", "--to", "jsonl", "--out", str(out)],
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_every_command_on_a_damaged_store_says_how_to_recover(
    kind: str, good: Path, tmp_path: Path
) -> None:
    failed = []
    for name, args in COMMANDS.items():
        db = _damaged(good, tmp_path / name, kind)
        before = _digest(db)
        out = tmp_path / f"{name}.jsonl"
        r = rageval(*args(db, out), db=db)
        if r.returncode == 0:
            # a damage the open does not meet lets through a command that reads no damaged
            # block; evaluate and export read the whole run
            assert kind not in AT_OPEN and name in ("runs", "show", "import"), (name, r.stderr)
            continue
        failed.append(name)
        assert r.returncode == 3, (name, r.returncode, r.stderr)
        _assert_says_corrupt_and_how_to_recover(r.stderr, db, kind)
        assert not out.exists()  # no half-written export
        if kind in AT_OPEN or name != "import":  # (an import's journal row may be kept)
            assert _digest(db) == before, name  # the store file is as it was
    assert {"evaluate", "export"} <= set(failed)
    if kind in AT_OPEN:
        assert set(failed) == set(COMMANDS)


def test_a_partly_readable_store_says_what_can_still_be_saved(good: Path, tmp_path: Path) -> None:
    # the block of the stored pair scores damaged: evaluate fails and says how to save the run;
    # the run itself still exports whole, and the export imports and evaluates in a new store
    db = tmp_path / "store.duckdb"
    shutil.copy(good, db)
    at = HEADERS + _first_block(db, "pair_scores") * BLOCK + 100
    with db.open("r+b") as f:
        f.seek(at)
        f.write(random.Random(15).randbytes(20_000))
    r = rageval("evaluate", "bm25", db=db)
    assert r.returncode == 3
    assert "Nothing of this command was stored" in r.stderr
    assert f"`rageval --db {db} export RUN --to RUN.jsonl`" in r.stderr  # save what reads
    saved = tmp_path / "bm25.jsonl"
    assert rageval("export", "bm25", "--to", str(saved), db=db).returncode == 0
    fresh = tmp_path / "fresh.duckdb"
    assert rageval("import", str(saved), db=fresh).returncode == 0
    assert rageval("evaluate", "bm25", db=fresh).returncode == 0


def test_an_import_into_a_damaged_store_is_not_reported_as_done(good: Path, tmp_path: Path) -> None:
    # DuckDB cannot write the import into a file with a bad block; it kept it in the
    # write-ahead log and said nothing (exit 0). The command now says so, and how to recover.
    db = _damaged(good, tmp_path, "random_bytes_in_the_chunk_texts")
    tfidf = REPO / "sample_runs" / "tfidf_char.jsonl"
    r = rageval("import", str(tfidf), db=db)
    assert r.returncode == 3, r.stderr
    assert f"the store {db} is corrupt (damaged)" in r.stderr
    assert f"write-ahead log {db}.wal" in r.stderr and "Nothing was changed" not in r.stderr
    # the log must move with the file, or a new store at the same path would replay it
    assert f"mv {db}.wal {db}.corrupt.wal" in r.stderr
    # the store still lists its runs, so what reads can be exported
    assert rageval("runs", db=db).returncode == 0


@pytest.mark.parametrize("kind", ["cut_in_the_first_block", "zeroed_file_header", "an_sqlite_file"])
def test_the_dashboards_store_says_corrupt(kind: str, good: Path, tmp_path: Path) -> None:
    # the dashboard opens the store through a LeasedStore (rageval_dashboard/state); the sidebar shows
    # the error's text
    db = _damaged(good, tmp_path, kind)
    with pytest.raises(StoreCorruptError, match=r"corrupt \(damaged\)(.|\n)*To recover:"):
        LeasedStore(db)


def test_the_dashboards_store_names_a_bad_block_as_corrupt(good: Path, tmp_path: Path) -> None:
    db = _damaged(good, tmp_path, "random_bytes_in_the_chunk_texts")
    store = LeasedStore(db)
    try:
        assert [r.name for r in store.runs()] == ["bm25"]
        with pytest.raises(StoreCorruptError, match="save what still reads"):
            list(store.iter_queries("bm25"))
    finally:
        store.close()


def test_a_store_being_created_is_not_taken_for_a_foreign_file(tmp_path: Path) -> None:
    # fewer than 12 bytes (another process creating the file) are DuckDB's to judge; a new
    # store still opens where nothing is
    with Store(tmp_path / "new.duckdb") as store:
        assert store.runs() == []
