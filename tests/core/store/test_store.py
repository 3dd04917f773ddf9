"""The DuckDB store: migrations, import (dedupe, names, rollback), lookup, rename, delete, locks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from rageval_core.errors import InputError, NotFoundError, ProblemLog, StoreError, UsageError
from rageval_core.importing import export_native
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.store.schema import MIGRATIONS
from rageval_core.store import ImportResult, Store
from rageval_core.store import store as store_module

INJECTION = "'; DROP TABLE runs; --"


def make_queries(n: int = 4, prefix: str = "q") -> list[Query]:
    """Small queries covering every field and both None/empty cases."""
    out = []
    for i in range(n):
        out.append(
            Query(
                query_id=f"{prefix}{i}",
                query=f"what is {i}?",
                retrieved=(
                    Chunk("d1", "first text", 0.9, {"page": 3, "source": "a.pdf"}),
                    Chunk(f"d{i + 2}", None, None),
                    Chunk("d9", "", -1.5),
                )[: 1 + i % 3],
                relevance={"d9": 1, "d1": 2} if i % 2 == 0 else None,
                evidence=("first", "second ünïcode") if i % 2 == 0 else (),
                answer=f"answer {i}" if i != 1 else None,
                latency_ms={"retrieve": 12.5, "generate": 300.0 + i} if i != 3 else {},
                tokens={"prompt": 100 + i, "completion": 20} if i != 3 else {},
                tags={"topic": "math", "lang": "en"} if i != 2 else {},
                judge={"faithfulness": 0.5} if i == 0 else {},
            )
        )
    return out


def parsed_of(
    queries: list[Query], name: str | None = "run-a", source: str = "runs/a.jsonl", **info: object
) -> ParsedRun:
    return ParsedRun(RunInfo(name=name, **info), iter(queries), "native", (source,))  # type: ignore[arg-type]


def import_queries(store: Store, queries: list[Query], **kwargs: object) -> ImportResult:
    name = kwargs.pop("info_name", "run-a")
    return store.import_run(parsed_of(queries, name=name), ProblemLog(), **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(":memory:") as s:
        yield s


def test_migrations_are_idempotent_and_data_survives_reopen(tmp_path: Path) -> None:
    db = tmp_path / "rageval.duckdb"
    with Store(db) as s:
        s.import_run(parsed_of(make_queries()), ProblemLog())
    assert db.is_file()
    with Store(db) as s:
        with s.cursor() as cur:
            versions = cur.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
            # every migration applied exactly once, in order
            assert versions == [(number,) for number, _ in MIGRATIONS]
        assert [r.name for r in s.runs()] == ["run-a"]
        assert list(s.iter_queries("run-a")) == make_queries()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "x.duckdb"
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_version VALUES (99, 'later')")
    con.close()
    with pytest.raises(StoreError, match="schema version 99"):
        Store(db)


def test_default_path_from_env_or_dot_rageval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGEVAL_DB", raising=False)
    with Store() as s:
        assert Path(s.path) == Path(".rageval") / "rageval.duckdb"
    assert (tmp_path / ".rageval" / "rageval.duckdb").is_file()
    monkeypatch.setenv("RAGEVAL_DB", str(tmp_path / "other" / "db.duckdb"))
    with pytest.raises(StoreError, match=r"its folder .*other does not exist"):
        Store()  # a path of the user's: its folder is not made behind their back
    assert not (tmp_path / "other").exists()
    (tmp_path / "other").mkdir()
    with Store() as s:
        assert s.path == str(tmp_path / "other" / "db.duckdb")
    assert (tmp_path / "other" / "db.duckdb").is_file()


def test_import_then_lookup(store: Store) -> None:
    qs = make_queries()
    parsed = parsed_of(
        qs,
        description="baseline",
        created_at="2024-05-01T10:00:00Z",
        settings={"top_k": 3, "model": "bge"},
        price_prompt_per_1k=0.5,
    )
    problems = ProblemLog()
    problems.warn("runs/a.jsonl", 2, "extra", "unknown key, ignored")
    result = store.import_run(parsed, problems)
    assert result.created
    assert [str(w) for w in result.warnings] == [
        "runs/a.jsonl:2: extra: unknown key, ignored (warning)"
    ]
    r = result.run
    assert (r.name, r.format, r.sources) == ("run-a", "native", ("runs/a.jsonl",))
    assert (r.n_queries, r.n_chunks, r.max_depth) == (4, 1 + 2 + 3 + 1, 3)
    assert r.settings == {"top_k": 3, "model": "bge"}
    assert (r.has_qrels, r.has_evidence, r.has_latency, r.has_tokens, r.has_answers) == (True,) * 5
    assert r.tag_keys == ("lang", "topic")
    assert r.info == RunInfo(
        "run-a", "2024-05-01T10:00:00Z", "baseline", {"top_k": 3, "model": "bge"}, 0.5, None
    )
    assert store.runs() == [r]
    assert store.run("run-a") == r == store.run(r.run_id) == store.run(str(r.run_id))
    assert len(r.content_hash) == 64


def test_flags_are_false_for_a_bare_run(store: Store) -> None:
    r = import_queries(store, [Query("q1", (Chunk("d1"),)), Query("q2", None)]).run
    assert (r.has_qrels, r.has_evidence, r.has_latency, r.has_tokens, r.has_answers) == (False,) * 5
    assert r.tag_keys == () and (r.n_queries, r.n_chunks, r.max_depth) == (2, 1, 1)


def test_iter_queries_gives_equal_queries_in_order_with_key_order(store: Store) -> None:
    qs = make_queries(7)
    run = import_queries(store, qs).run
    for batch_size in (1, 2, 5000):
        back = list(store.iter_queries(run.name, batch_size=batch_size))
        assert back == qs
        for a, b in zip(back, qs, strict=True):
            assert list(a.latency_ms) == list(b.latency_ms)
            assert list(a.tags) == list(b.tags)
            assert list(a.relevance or {}) == list(b.relevance or {})
            assert (a.retrieved is None) == (b.retrieved is None)


def test_none_and_empty_are_kept_apart(store: Store) -> None:
    qs = [
        Query("absent", None, relevance={"d": 1}),
        Query("empty", (), relevance={}),
        Query("noqrels", (Chunk("d", metadata={}),), relevance=None),
    ]
    back = list(store.iter_queries(import_queries(store, qs).run.run_id))
    assert back == qs
    assert back[0].retrieved is None and back[1].retrieved == ()
    assert back[1].relevance == {} and back[2].relevance is None


def test_same_content_twice_is_one_run(store: Store) -> None:
    first = store.import_run(parsed_of(make_queries(), name="a", source="x/a.jsonl"), ProblemLog())
    # Another file, another name, ints where floats were: the same content all the same.
    qs = [
        Query(
            q.query_id,
            q.retrieved,
            q.query,
            q.relevance,
            q.evidence,
            q.answer,
            q.reference_answer,
            {k: int(v) if v == int(v) else v for k, v in q.latency_ms.items()},
            q.tokens,
            q.tags,
            q.judge,
        )
        for q in make_queries()
    ]
    second = store.import_run(parsed_of(qs, name="b", source="y/b.jsonl"), ProblemLog(), name="new")
    assert first.created and not second.created
    assert second.run == first.run
    assert [r.name for r in store.runs()] == ["a"]
    assert store.table_counts()["queries"] == 4

    changed = make_queries()
    changed[2] = Query("q2", ())
    third = store.import_run(parsed_of(changed, name="a"), ProblemLog())
    assert third.created and third.run.content_hash != first.run.content_hash
    # Run facts other than the name are content too.
    fourth = store.import_run(parsed_of(make_queries(), name="a", description="x"), ProblemLog())
    assert fourth.created
    assert [r.name for r in store.runs()] == ["a", "a-2", "a-3"]


def test_names_from_info_or_file_stem_get_suffixes(store: Store) -> None:
    names = []
    for i in range(3):
        names.append(
            import_queries(store, make_queries(1, prefix=f"x{i}"), info_name="same").run.name
        )
    for i in range(2):
        parsed = parsed_of(make_queries(1, prefix=f"y{i}"), name=None, source=f"dir{i}/bm25.jsonl")
        names.append(store.import_run(parsed, ProblemLog()).run.name)
    assert names == ["same", "same-2", "same-3", "bm25", "bm25-2"]


def test_explicit_name_must_be_free(store: Store) -> None:
    import_queries(store, make_queries(1, prefix="a"), name="mine")
    before = store.table_counts()
    with pytest.raises(UsageError, match="'mine' already exists"):
        import_queries(store, make_queries(1, prefix="b"), name="mine")
    assert store.table_counts() == before
    with pytest.raises(UsageError, match="empty"):
        import_queries(store, make_queries(1, prefix="b"), name="  ")
    assert import_queries(store, make_queries(1, prefix="b"), name="run-a").run.name == "run-a"


def test_rename(store: Store) -> None:
    a = import_queries(store, make_queries(1, prefix="a"), name="a").run
    import_queries(store, make_queries(1, prefix="b"), name="b")
    renamed = store.rename("a", "alpha")
    assert renamed.name == "alpha" and renamed.run_id == a.run_id
    assert renamed.content_hash == a.content_hash
    assert store.run("alpha").run_id == a.run_id
    with pytest.raises(NotFoundError):
        store.run("a")
    with pytest.raises(UsageError, match="'b' already exists"):
        store.rename("alpha", "b")
    with pytest.raises(UsageError):
        store.rename("alpha", "")
    assert store.rename(a.run_id, "alpha").name == "alpha"  # its own name is not "taken"
    assert sorted(r.name for r in store.runs()) == ["alpha", "b"]


def test_delete_removes_every_row_of_that_run_only(store: Store) -> None:
    a = import_queries(store, make_queries(), name="a").run
    b = import_queries(store, make_queries(3, prefix="b"), name="b").run
    b_rows = store.table_rows("b")
    counts_b_only = {t: len(rows) for t, rows in b_rows.items()}
    deleted = store.delete("a")
    assert deleted == a
    counts = store.table_counts()
    assert {t: counts[t] for t in counts_b_only} == counts_b_only
    assert store.table_rows("b") == b_rows
    assert store.runs() == [b]
    with pytest.raises(NotFoundError):
        store.run(a.run_id)
    # The same content can come back (the unique hash and name are free again), with a new id.
    again = import_queries(store, make_queries(), name="a")
    assert again.created and again.run.run_id != a.run_id
    assert list(store.iter_queries("a")) == make_queries()


def test_not_found_lists_known_names(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no runs yet"):
        store.run("nope")
    import_queries(store, make_queries(1, prefix="a"), name="alpha")
    import_queries(store, make_queries(1, prefix="b"), name="beta")
    with pytest.raises(NotFoundError, match=r"no run 'gamma' .*known runs: alpha, beta"):
        store.run("gamma")
    with pytest.raises(NotFoundError):
        store.run(12345)
    with pytest.raises(NotFoundError):
        list(store.iter_queries("gamma"))
    with pytest.raises(NotFoundError):
        store.delete("gamma")


def test_digit_names_win_over_ids(store: Store) -> None:
    first = import_queries(store, make_queries(1, prefix="a"), name="first").run
    second = import_queries(store, make_queries(1, prefix="b"), name=str(first.run_id)).run
    assert store.run(str(first.run_id)) == second
    assert store.run(first.run_id) == first


def _error_midway(queries: list[Query], problems: ProblemLog, at: int) -> Iterator[Query]:
    for i, q in enumerate(queries):
        if i == at:
            problems.error("bad.jsonl", i + 1, "retrieved", "expected an array")
            continue
        yield q


def _raise_midway(queries: list[Query], at: int) -> Iterator[Query]:
    for i, q in enumerate(queries):
        if i == at:
            raise RuntimeError("disk went away")
        yield q


def test_failed_import_leaves_store_unchanged(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    existing = import_queries(store, make_queries(), name="kept").run
    before_counts = store.table_counts()
    before_rows = store.table_rows("kept")
    # Small batches, so rows from several batches were already inserted when the failure comes.
    monkeypatch.setattr(store_module, "BATCH_QUERIES", 2)
    qs = make_queries(9, prefix="new")

    log = ProblemLog()
    seen: list[int] = []
    parsed = ParsedRun(RunInfo(name="bad"), _error_midway(qs, log, at=6), "native", ("bad.jsonl",))
    with pytest.raises(InputError, match=r"bad\.jsonl:7: retrieved: expected an array"):
        store.import_run(parsed, log, progress=lambda done, _total: seen.append(done))
    assert seen == [2, 4, 6, 8]  # batches were written before the rollback
    assert store.table_counts() == before_counts
    assert store.table_rows("kept") == before_rows
    assert store.runs() == [existing]

    seen.clear()
    parsed = ParsedRun(RunInfo(name="bad"), _raise_midway(qs, at=5), "native", ("bad.jsonl",))
    with pytest.raises(RuntimeError, match="disk went away"):
        store.import_run(parsed, ProblemLog(), progress=lambda done, _total: seen.append(done))
    assert seen == [2, 4]
    assert store.table_counts() == before_counts
    assert store.table_rows("kept") == before_rows

    # The store still works after the rollbacks.
    ok = store.import_run(parsed_of(qs, name="bad"), ProblemLog())
    assert ok.created and ok.run.n_queries == 9
    assert list(store.iter_queries("bad")) == qs


def test_progress_reports_running_totals(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "BATCH_QUERIES", 3)
    seen: list[tuple[int, int | None]] = []
    import_queries(store, make_queries(7), progress=lambda done, total: seen.append((done, total)))
    assert seen == [(3, None), (6, None), (7, None)]  # a list of queries gives no estimate


def test_sql_looking_text_is_stored_verbatim(store: Store) -> None:
    q = Query(
        INJECTION,
        (Chunk(INJECTION, INJECTION, 1.0, {INJECTION: INJECTION}),),
        query=INJECTION,
        relevance={INJECTION: 1},
        evidence=(INJECTION,),
        answer=INJECTION,
        tags={INJECTION: INJECTION},
        latency_ms={INJECTION: 1.0},
    )
    run = store.import_run(
        ParsedRun(
            RunInfo(name=INJECTION, description=INJECTION), iter([q]), "native", (INJECTION,)
        ),
        ProblemLog(),
    ).run
    assert run.name == INJECTION and run.sources == (INJECTION,)
    assert store.run(INJECTION) == run
    assert list(store.iter_queries(INJECTION)) == [q]
    renamed = store.rename(INJECTION, INJECTION + " 2")
    assert store.run(INJECTION + " 2") == renamed
    assert set(store.table_counts()) >= {"runs", "queries", "chunks"}
    assert store.table_counts()["runs"] == 1


def test_closed_store_raises_store_error() -> None:
    s = Store(":memory:")
    s.close()
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.runs()


def test_duckdb_errors_become_store_errors(store: Store) -> None:
    import_queries(store, make_queries(1))
    with store.cursor() as cur:
        cur.execute("DROP TABLE tags")
    with pytest.raises(StoreError) as info:
        store.runs()
    assert isinstance(info.value.__cause__, duckdb.Error)


def test_a_store_in_use_by_another_process_is_a_readable_error(tmp_path: Path) -> None:
    db = tmp_path / "locked.duckdb"
    Store(db).close()
    holder = textwrap.dedent(
        f"""
        import sys, duckdb
        con = duckdb.connect({str(db)!r})
        print("ready", flush=True)
        sys.stdin.read()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        # a short wait injected: the default (10 s) would only be waited out
        with pytest.raises(StoreError, match=r"in use by another process \(PID \d+\)") as info:
            Store(db, wait_s=0.2)
        assert str(db) in str(info.value)
        assert isinstance(info.value.__cause__, duckdb.Error)
    finally:
        proc.communicate(input="", timeout=30)
    with Store(db) as s:  # released once the other process is gone
        assert s.runs() == []


def test_export_native_writes_header_and_queries(store: Store, tmp_path: Path) -> None:
    import json

    run = store.import_run(
        parsed_of(make_queries(), settings={"top_k": 3}, price_prompt_per_1k=0.25), ProblemLog()
    ).run
    out = tmp_path / "out.jsonl"
    assert export_native(store, "run-a", out) == 4
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == {
        "rageval_run": {
            "name": "run-a",
            "settings": {"top_k": 3},
            "prices_per_1k": {"prompt": 0.25},
        }
    }
    assert [obj["query_id"] for obj in lines[1:]] == ["q0", "q1", "q2", "q3"]
    assert lines[1]["latency_ms"] == {"retrieve": 12.5, "generate": 300.0}
    assert list(lines[1]["latency_ms"]) == ["retrieve", "generate"]
    assert run.n_queries == 4
    assert not (tmp_path / "out.jsonl.partial").exists()
