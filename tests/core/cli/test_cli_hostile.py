"""The command line against hostile runs and hostile surroundings (issue 13): terminal escapes in
user text, closed pipes, Ctrl-C inside DuckDB, corrupt and unreachable stores, exit codes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rageval_core.errors import EXIT_CODES
from rageval_core.store import Store
from rageval_core.terminal import json_text, shown, text_table
from tests.cli import rageval, rageval_subprocess
from tests.paths import REPO

INTERRUPTED = "rageval: interrupted; the step under way was rolled back (nothing of it was stored)"

#: a run name and query id that would retitle the terminal, clear it, move the cursor up, write
#: the clipboard (OSC 52) and use a C1 CSI
EVIL_NAME = "evil\x1b]0;pwned\x07\x9b2J\x1b[1A\r"
EVIL_QID = "q\x1b]52;c;ZXZpbA==\x07\x1b[2K"
#: raw control characters that must never reach a terminal
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def write_evil_run(path: Path, name: str = EVIL_NAME, shift: int = 0) -> Path:
    lines = [json.dumps({"rageval_run": {"name": name}})]
    for i in range(6):
        rank = (i + shift) % 3
        lines.append(
            json.dumps(
                {
                    "query_id": f"{EVIL_QID}{i}",
                    "query": f"question\x1b[31m {i}",
                    "retrieved": [
                        {"doc_id": f"d{j}", "text": f"chunk {j}", "score": 1.0 - j / 10}
                        for j in range(3)
                    ],
                    "relevant_ids": [f"d{rank}"],
                    "latency_ms": {"total": 10.0 + i},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_shown_escapes_every_control_character_but_tab_and_newline() -> None:
    for code in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]:
        c = chr(code)
        expected = c if c in "\t\n" else f"\\x{code:02x}"
        assert shown(f"a{c}b") == f"a{expected}b"
    assert shown("plain é ü 你好 \u2028") == "plain é ü 你好 \u2028"


def test_json_text_has_no_raw_control_character_and_the_same_value() -> None:
    value = {"name": EVIL_NAME, "ids": [EVIL_QID, "\x7f\x85\u2028"]}
    text = json_text(value)
    assert not RAW.search(text) and "\u2028" not in text
    assert json.loads(text) == value


def test_text_table_measures_escaped_cells() -> None:
    lines = text_table(["name", "n"], [["a\x1bb", 1], ["long name", 22]]).splitlines()
    assert lines[2] == "a\\x1bb     1"
    assert len({line.index(" ", 10) for line in lines if len(line) > 10}) == 1


def test_terminal_escapes_in_run_names_and_query_ids_are_printed_escaped(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(write_evil_run(tmp_path / "a.jsonl")), db=db).returncode == 0
    assert (
        rageval(
            "import",
            str(write_evil_run(tmp_path / "b.jsonl", name=EVIL_NAME + "2", shift=1)),
            db=db,
        ).returncode
        == 0
    )
    ids = {r["name"]: r["run_id"] for r in json.loads(rageval("runs", "--json", db=db).stdout)}
    assert set(ids) == {EVIL_NAME, EVIL_NAME + "2"}  # stored as given, read back exactly
    a, b = str(ids[EVIL_NAME]), str(ids[EVIL_NAME + "2"])
    outputs = {
        "runs": rageval("runs", db=db),
        "show": rageval("show", a, db=db),
        "evaluate": rageval("evaluate", a, "--per-query", db=db),
        "compare": rageval("compare", a, b, "--permutations", "200", "--bootstrap", "100", db=db),
        "gate": rageval(
            "gate",
            "--baseline",
            a,
            "--candidate",
            b,
            "--max-drop",
            "RR=0.0",
            "--permutations",
            "200",
            "--bootstrap",
            "100",
            db=db,
        ),
        "import": rageval("import", str(tmp_path / "a.jsonl"), db=db),
        "missing": rageval("show", EVIL_NAME + "x", db=db),
    }
    for command, r in outputs.items():
        assert r.returncode in (0, 1, 2), (command, r.stderr)
        for stream in (r.stdout, r.stderr):
            assert not RAW.search(stream), (command, stream)
        assert "\\x1b" in r.stdout + r.stderr, command  # shown, escaped
    # --json: no raw control character either, and the same text once parsed
    for args in (["runs"], ["show", a], ["evaluate", a, "--per-query"]):
        out = rageval(*args, "--json", db=db).stdout
        assert not RAW.search(out) and EVIL_NAME in strings(json.loads(out)), args


def strings(value: object) -> set[str]:
    """Every string in a parsed JSON value."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*map(strings, value.values()), *map(strings, value.keys()))
    if isinstance(value, list):
        return set().union(*map(strings, value))
    return set()


def _first_bytes_then_close(args: list[str], n: int) -> subprocess.CompletedProcess[str]:
    """Run rageval with stdout read for n bytes and then closed, as `| head -c n` does."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rageval_core.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    head = proc.stdout.read(n)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, head.decode(), err.decode())


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`rageval evaluate ... --json --per-query | head -c 10`: no BrokenPipeError traceback."""
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(REPO / "sample_runs" / "bm25.jsonl"), db=db).returncode == 0
    for args in (
        ["evaluate", "bm25", "--json", "--per-query"],
        ["evaluate", "bm25", "--per-query"],
    ):
        done = _first_bytes_then_close(["--db", str(db), *args], 10)
        assert len(done.stdout) == 10
        assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
        assert done.returncode == 141


@pytest.mark.slow
def test_ctrl_c_inside_duckdb_exits_130_with_nothing_stored(tmp_path: Path) -> None:
    """SIGINT at moments spread over an import (inside DuckDB's statements too): exit 130, a
    one-line message, no traceback, and never half a run."""
    from bench.large_run import write_native_run

    big = tmp_path / "big.jsonl"
    write_native_run(big, 6_000, n_chunks=10, text_chars=200)
    outcomes = []
    for i, delay in enumerate((0.0, 0.2, 0.5, 0.9, 1.4)):  # 0.0: while the schema is written
        db = tmp_path / f"s{i}.duckdb"
        proc = subprocess.Popen(
            [sys.executable, "-m", "rageval_core.cli", "--db", str(db), "import", str(big)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        # the clock starts once the command has opened its store: a Ctrl-C while Python itself
        # is still starting (a loaded machine takes a while) is Python's, not rageval's, to report
        started = time.monotonic()
        while not db.exists() and proc.poll() is None and time.monotonic() - started < 60:
            time.sleep(0.005)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err, err
        assert proc.returncode in (0, 130), (proc.returncode, err)
        if proc.returncode == 130:
            assert err.rstrip().endswith(INTERRUPTED)  # (after what the progress bars leave)
        outcomes.append(proc.returncode)
        if db.exists():
            with Store(db) as store:
                runs = store.runs()
            # interrupted while scoring evidence, the run itself is already whole (scored on
            # first use); before that, nothing; never part of it
            stored = [r.n_queries for r in runs]
            assert stored == [6_000] if proc.returncode == 0 else stored in ([], [6_000]), (
                delay,
                err,
            )
    assert 130 in outcomes


@pytest.mark.parametrize("seen_by", ["python", "duckdb"])
def test_ctrl_c_while_the_schema_is_written_exits_130_and_leaves_no_half_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seen_by: str
) -> None:
    """Ctrl-C inside a migration's statement: DuckDB ends the transaction itself, so the rollback
    that follows fails; that failure must neither hide the interruption (exit 130, not "cannot
    update the schema", exit 3) nor leave part of a migration behind. Python's handler may have
    run (KeyboardInterrupt) or not yet (DuckDB's own InterruptException, wrapped by the store)."""
    import duckdb

    from rageval_core.store import schema

    db = tmp_path / "s.duckdb"
    real_execute = duckdb.DuckDBPyConnection.execute
    seen = {"n": 0}

    class Interrupting:
        """The connection, except that its third migration statement is cut short by SIGINT."""

        def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
            self.con = con

        def __getattr__(self, name: str) -> object:
            return getattr(self.con, name)

        def execute(self, sql: str, *args: object) -> object:
            seen["n"] += 1
            if seen["n"] == 4:
                self.con.rollback()  # what DuckDB does to a transaction a signal cut short
                if seen_by == "duckdb":
                    raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")
                signal.raise_signal(signal.SIGINT)
            return real_execute(self.con, sql, *args)

    real_migrate = schema.migrate
    monkeypatch.setattr(
        "rageval_core.store.store.migrate", lambda con, path: real_migrate(Interrupting(con), path)
    )
    r = rageval("import", str(REPO / "sample_runs" / "bm25.jsonl"), db=db)
    assert (r.returncode, r.stderr.strip()) == (130, INTERRUPTED)
    monkeypatch.undo()
    with Store(db) as store:  # opened again, the store migrates from where it stood
        assert store.runs() == []
    assert rageval("import", str(REPO / "sample_runs" / "bm25.jsonl"), db=db).returncode == 0


def test_a_corrupt_store_says_corrupt_never_in_use(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(REPO / "sample_runs" / "bm25.jsonl"), db=db).returncode == 0
    with db.open("r+b") as f:  # a block of the file overwritten
        f.seek(12_288)
        f.write(os.urandom(4096))
    r = rageval("runs", db=db)
    assert r.returncode == 3
    assert f"the store {db} is corrupt" in r.stderr and "in use" not in r.stderr
    assert "mv " in r.stderr and "rageval export" in r.stderr  # how to recover
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_bytes(b"block lock " * 1000)  # words that once read as "in use"
    r = rageval("runs", db=garbage)
    assert r.returncode == 3 and "is corrupt" in r.stderr and "in use" not in r.stderr


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("under_a_file", "is not a folder"),
        ("missing_folder", "does not exist"),
        ("a_folder", "it is a folder, not a store file"),
        ("unwritable", "cannot open the store"),
        ("nul_in_name", "cannot open the store"),
    ],
)
def test_db_in_a_place_it_cannot_be_is_exit_3(where: str, says: str, tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    db = {
        "under_a_file": tmp_path / "file.txt" / "s.duckdb",
        "missing_folder": tmp_path / "no" / "such" / "s.duckdb",
        "a_folder": tmp_path,
        "unwritable": Path("/proc/rageval-test.duckdb"),  # root may write anywhere else
        "nul_in_name": tmp_path / "a\x00b.duckdb",
    }[where]
    before = sorted(tmp_path.rglob("*"))
    r = rageval("runs", db=db)
    assert r.returncode == 3 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert sorted(tmp_path.rglob("*")) == before  # no folder made on the way


def test_the_default_store_folder_is_made(tmp_path: Path) -> None:
    r = rageval("runs", cwd=tmp_path, env={"RAGEVAL_DB": None})
    assert r.returncode == 0 and (tmp_path / ".rageval" / "rageval.duckdb").is_file()


def test_a_busy_store_is_exit_3(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    Store(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, sys; c = duckdb.connect({str(db)!r}); "
            "print('ready', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        r = rageval("runs", db=db, env={"RAGEVAL_BUSY_WAIT_S": "0.2"})
    finally:
        holder.communicate("", timeout=30)
    assert r.returncode == 3 and "in use by another process" in r.stderr


def test_exit_codes_are_in_the_help_and_the_readme() -> None:
    r = rageval_subprocess("--help")
    assert r.returncode == 0
    assert " ".join(EXIT_CODES.split()) in " ".join(r.stdout.split())
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for code, meaning in (
        ("0", "ok"),
        ("1", "gate rule failed"),
        ("2", "bad input or usage"),
        ("3", "store unavailable"),
        ("130", "interrupted"),
    ):
        assert re.search(rf"\*\*{code}\*\*[^\n]*{meaning}", readme), (code, meaning)
