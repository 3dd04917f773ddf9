"""SQL, HTML and Markdown in every user field is stored verbatim and never executed; path
imports in the app stay inside their folders; uploads are capped.

The browser half (nothing runs on any page) is tests/e2e/test_hardening.py and test_security.py.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from rageval_dashboard.jobs import imports
from rageval_core.errors import NotFoundError, ProblemLog, UsageError
from rageval_core.formats import read_inputs
from rageval_core.store import Store
from tests.cli import Result, rageval
from tests.core.store.test_crash import make_run
from tests.paths import REPO

#: hostile strings tried in every field (docs/reliability.md counts them)
INJECTIONS = [
    "'; DROP TABLE runs; --",
    "x'); DELETE FROM chunks; --",
    '" OR "1"="1',
    "' OR '1'='1",
    "1; ATTACH '/tmp/evil.duckdb' AS evil; --",
    "'); COPY runs TO '/tmp/leak.csv'; --",
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=1">',
    '<a href="javascript:window.__xss=1">click me</a>',
    "[x](javascript:alert(1))",
    "**bold** $x^2$ :red[red] <b>b</b>",
    '<iframe src="javascript:alert(1)"></iframe>',
    "{{7*7}} ${7*7} %s %(x)s",
    "\\x00 \u202e \u0000",
]
FIELDS = (
    "run name",
    "description",
    "query_id",
    "query",
    "doc_id",
    "chunk text",
    "evidence",
    "answer",
    "tag key",
    "tag value",
    "latency stage",
    "renamed name",
)


def hostile_run(path: Path) -> Path:
    """A native run carrying every injection in every text field."""
    lines = [
        json.dumps(
            {
                "rageval_run": {
                    "name": INJECTIONS[0],
                    "description": " ".join(INJECTIONS),
                    "settings": {"retriever": INJECTIONS[1]},
                }
            }
        )
    ]
    for i, text in enumerate(INJECTIONS):
        lines.append(
            json.dumps(
                {
                    "query_id": text,
                    "query": text,
                    "retrieved": [
                        {
                            "doc_id": f"{text}#{i}",
                            "text": f"{text} premium 500 dollars",
                            "score": 1.0,
                        }
                    ],
                    "relevance": {f"{text}#{i}": 1},
                    "evidence": [f"{text} premium"],
                    "answer": text,
                    "latency_ms": {text: 1.0, "total": 2.0},
                    "tags": {text: text, "kind": text},
                },
                ensure_ascii=False,
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cli(db: Path, *args: str) -> Result:
    return rageval(*args, db=db)


def store_state(db: Path) -> dict[str, Any]:
    """Every table of the file (DuckDB's catalog) with its row count, and every run's rows."""
    with Store(db) as store, store._cursor() as cur:
        tables = sorted(
            r[0]
            for r in cur.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()
        )
        counts = {
            t: cur.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]
            for t in tables
            if t != "journal"
        }
        databases = sorted(
            r[0] for r in cur.execute("SELECT database_name FROM duckdb_databases()").fetchall()
        )
    with Store(db) as store:
        rows = {r.name: store.table_rows(r.run_id) for r in store.runs()}
    return {"tables": tables, "counts": counts, "databases": databases, "rows": rows}


def test_sql_in_every_field_is_stored_verbatim_and_nothing_else_changes(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    bystander = make_run(tmp_path / "bystander.jsonl", 30)
    assert cli(db, "import", str(bystander)).returncode == 0
    before = store_state(db)

    hostile = hostile_run(tmp_path / "hostile.jsonl")
    done = cli(db, "import", str(hostile))
    assert done.returncode == 0, done.stderr
    after = store_state(db)
    # the bystander run is untouched, no table was dropped or added, nothing was attached
    assert after["rows"]["bystander"] == before["rows"]["bystander"]
    assert after["tables"] == before["tables"] and after["databases"] == before["databases"]
    assert not Path("/tmp/evil.duckdb").exists() and not Path("/tmp/leak.csv").exists()

    # every string comes back exactly as written, in every field
    log = ProblemLog()
    expected = [q for parsed in read_inputs([hostile], None, log) for q in parsed.queries]
    with Store(db) as store:
        run = store.run(INJECTIONS[0])
        assert run.name == INJECTIONS[0] and run.description == " ".join(INJECTIONS)
        assert list(store.iter_queries(run)) == expected
        assert [q.query_id for q in expected] == INJECTIONS
        # lookups by a hostile name find that run or nothing, never "every run"
        for text in INJECTIONS[1:6]:
            with pytest.raises(NotFoundError):
                store.run(text)
        renamed = store.rename(run, INJECTIONS[1])
        assert store.run(INJECTIONS[1]).run_id == renamed.run_id
    assert store_state(db)["rows"]["bystander"] == before["rows"]["bystander"]

    # the CLI prints them as text, and evaluates and exports the run
    shown = cli(db, "show", INJECTIONS[1], "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["name"] == INJECTIONS[1]
    out = tmp_path / "export.jsonl"
    assert cli(db, "export", INJECTIONS[1], "--to", str(out)).returncode == 0
    assert cli(db, "evaluate", INJECTIONS[1], "--json").returncode == 0
    assert cli(db, "delete", INJECTIONS[1]).returncode == 0
    final = store_state(db)
    assert list(final["rows"]) == ["bystander"] and final["rows"] == before["rows"]
    assert final["tables"] == before["tables"]


def test_a_hostile_name_given_on_the_command_line(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    run = make_run(tmp_path / "r.jsonl", 5, evidence=False)
    for i, name in enumerate(INJECTIONS[:6]):
        copy = make_run(tmp_path / f"r{i}.jsonl", 5 + i, evidence=False)
        done = cli(db, "import", str(copy), "--name", name)
        assert done.returncode == 0, done.stderr
    del run
    with Store(db) as store:
        assert sorted(r.name for r in store.runs()) == sorted(INJECTIONS[:6])
        assert store.table_counts()["queries"] == sum(5 + i for i in range(6))


# --- the app's path imports ---------------------------------------------------------------------


@pytest.fixture()
def allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    monkeypatch.setenv(imports.IMPORT_DIRS_ENV, str(folder))
    return folder


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "/etc/shadow",
        "/proc/self/environ",
        "~/.ssh/id_rsa",
        "/",
        "../../../../etc/passwd",
    ],
)
def test_paths_outside_the_folders_are_refused(
    allowed: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(allowed)
    with pytest.raises(UsageError, match="outside the folders imports may read from"):
        imports.check_import_path(path)


def test_tricks_that_lead_out_are_refused(
    allowed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(allowed)
    (allowed / "passwd.jsonl").symlink_to("/etc/passwd")
    (allowed / "outside").symlink_to(tmp_path)
    secret = tmp_path / "secret.jsonl"
    secret.write_text("{}")
    for text in (
        "passwd.jsonl",
        f"{allowed}/passwd.jsonl",
        "outside/secret.jsonl",
        f"{allowed}/../secret.jsonl",
        f"{allowed}/./../secret.jsonl",
    ):
        with pytest.raises(UsageError, match="outside the folders"):
            imports.check_import_path(text)
    for hidden in (".env", ".git/config", ".rageval/rageval.duckdb"):
        target = allowed / hidden
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("SECRET=1")
        with pytest.raises(UsageError, match="hidden file or folder"):
            imports.check_import_path(str(target))
    os.mkfifo(allowed / "pipe.jsonl")  # reading a FIFO would block the server for good
    with pytest.raises(UsageError, match="not a file"):
        imports.check_import_path("pipe.jsonl")
    with pytest.raises(UsageError, match="no such file"):
        imports.check_import_path("missing.jsonl")
    good = make_run(allowed / "good.jsonl", 2, evidence=False)
    assert imports.check_import_path("good.jsonl") == good.resolve()


def test_the_default_folders_never_include_the_root_or_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(imports.IMPORT_DIRS_ENV, raising=False)
    for cwd in ("/", str(Path.home())):
        monkeypatch.chdir(cwd)
        dirs = imports.import_dirs()
        assert Path("/") not in dirs and Path.home().resolve() not in dirs
        with pytest.raises(UsageError, match="outside the folders"):
            imports.check_import_path("/etc/passwd")


def test_uploads_are_capped_in_the_project_config() -> None:
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    cap = config["server"]["maxUploadSize"]
    assert isinstance(cap, int) and 1 <= cap <= 200
