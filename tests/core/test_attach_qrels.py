"""Qrels attached to a stored run later (rageval_core.annotate.attach_qrels): the run then holds
exactly what importing it together with that file holds, and keeps what was stored with it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

import rageval
from rageval_core.annotate import attach_qrels, query_notes, set_query_note
from rageval_core.errors import InputError, ProblemLog, UsageError
from rageval_core.formats import read_inputs
from rageval_core.store import Store

REPO = Path(__file__).resolve().parents[2]
METRICS = ["P@5", "R@10", "RR", "AP", "nDCG@10"]


def _import(store: Store, *paths: Path) -> str:
    log = ProblemLog()
    result = store.import_run(read_inputs(list(paths), None, log)[0], log)
    return result.run.name


@pytest.fixture()
def trec(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A TREC run of 30 queries, its qrels (judging 4 queries the run lacks), and other qrels."""
    rnd = random.Random(7)
    run, qrels, other = tmp_path / "bm25.trec", tmp_path / "a.qrels", tmp_path / "b.qrels"
    with run.open("w") as fh:
        for q in range(30):
            for r, d in enumerate(rnd.sample(range(60), 20)):
                fh.write(f"q{q} Q0 d{d} {r + 1} {20 - r + rnd.random():.4f} bm25\n")
    for path, seed in ((qrels, 1), (other, 2)):
        rq = random.Random(seed)
        with path.open("w") as fh:
            for q in range(34):
                for d in rq.sample(range(60), 8):
                    fh.write(f"q{q} 0 d{d} {rq.choice([0, 1, 2])}\n")
    return run, qrels, other


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "store.duckdb")
    yield s
    s.close()


def test_attached_qrels_equal_importing_them_with_the_run(
    store: Store, trec: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, qrels, _ = trec
    name = _import(store, run)
    before = store.run(name)
    assert not before.has_qrels
    after = attach_qrels(store, name, qrels)
    assert after.name == name and after.has_qrels
    assert after.run_id != before.run_id  # caches keyed on the old id can never serve it
    assert [r.name for r in store.runs()] == [name]

    with Store(tmp_path / "fresh.duckdb") as fresh:
        together = fresh.run(_import(fresh, run, qrels))
        # the same content, query for query: the content hash covers every stored row
        assert after.content_hash == together.content_hash
        assert after.n_queries == together.n_queries == 34
        assert list(store.iter_queries(after.run_id)) == list(fresh.iter_queries(together.run_id))
    assert str(qrels.name) in " ".join(after.sources)


def test_attached_qrels_give_the_metrics_of_a_run_imported_with_them(
    trec: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, qrels, _ = trec
    db_a, db_b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    with Store(db_a) as a:
        name = _import(a, run)
        attach_qrels(a, name, qrels)
    with Store(db_b) as b:
        _import(b, run, qrels)
    for complete in (False, True):
        got = rageval.evaluate(name, METRICS, db=db_a, complete=complete).metrics
        want = rageval.evaluate(name, METRICS, db=db_b, complete=complete).metrics
        assert got == want
        assert all(v == v for v in got.values())  # numbers, not NaN: the labels are there


def test_replacing_qrels_keeps_scores_and_notes(store: Store, tmp_path: Path) -> None:
    native = REPO / "sample_runs" / "bm25.jsonl"
    name = _import(store, native)
    record = store.run(name)
    from rageval_core.store.scores import ensure_scored

    ensure_scored(store, record.run_id)
    first = next(iter(store.iter_queries(record.run_id)))
    set_query_note(store, name, first.query_id, "look at the tables")
    counts = store.table_counts()
    qrels = tmp_path / "new.qrels"
    qrels.write_text(f"{first.query_id} 0 {first.retrieved[0].doc_id} 2\n")  # type: ignore[index]

    after = attach_qrels(store, name, qrels)
    assert query_notes(store, name) == {first.query_id: "look at the tables"}
    now = store.table_counts()
    # scores moved over, none computed again; only the qrels rows changed
    for table in ("pair_scores", "scorings", "chunks", "evidence", "queries", "query_notes"):
        assert now[table] == counts[table], table
    queries = list(store.iter_queries(after.run_id))
    assert queries[0].relevance == {first.retrieved[0].doc_id: 2}  # type: ignore[index]
    assert all(q.relevance is None for q in queries[1:])
    assert [q.evidence for q in queries] == [q.evidence for q in store.iter_queries(after.run_id)]


def test_a_malformed_qrels_file_is_reported_and_changes_nothing(
    store: Store, trec: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, _, _ = trec
    name = _import(store, run)
    before, counts = store.run(name), store.table_counts()
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 d1 1\nq2 0 d2 lots\n")
    with pytest.raises(InputError) as e:
        attach_qrels(store, name, bad)
    assert [str(p).split("bad.qrels", 1)[1] for p in e.value.problems] == [
        ":2: rel: expected a number, got 'lots'"
    ]
    assert store.run(name) == before and store.table_counts() == counts


def test_the_same_qrels_again_change_nothing_and_a_clash_is_refused(
    store: Store, trec: tuple[Path, Path, Path]
) -> None:
    run, qrels, other = trec
    name = _import(store, run)
    once = attach_qrels(store, name, qrels)
    assert attach_qrels(store, name, qrels) == once
    # another copy of the run, given the same labels, would be the first one again
    with_other = attach_qrels(store, name, other)
    store.rename(with_other.run_id, "bm25-other")
    copy = _import(store, run)
    with pytest.raises(UsageError, match="already stored"):
        attach_qrels(store, copy, other)
    assert {r.name for r in store.runs()} == {"bm25-other", copy}


def test_rageval_attach_in_the_terminal(trec: tuple[Path, Path, Path], tmp_path: Path) -> None:
    from tests.cli import rageval

    run, qrels, _ = trec
    db = tmp_path / "cli.duckdb"
    assert rageval("import", str(run), db=db).returncode == 0
    with Store(db) as s:
        name = s.runs()[0].name
    plain = rageval("evaluate", name, "--metrics", "P@5", "--json", db=db)
    assert plain.returncode == 2 and "neither qrels nor gold" in plain.stderr

    # a bad fact is refused before the qrels are read: nothing stored
    bad = rageval("attach", name, "--qrels", str(qrels), "--date", "soon", db=db)
    assert bad.returncode == 2 and "created_at" in bad.stderr
    assert rageval("attach", name, db=db).returncode == 2  # nothing to attach

    ok = rageval("attach", name, "--qrels", str(qrels), "--tag", "team=search", db=db)
    assert ok.returncode == 0, ok.stderr
    assert "qrels attached" in ok.stdout and "facts saved" in ok.stdout
    after = json_metrics(rageval("evaluate", name, "--metrics", "P@5", "--json", db=db).stdout)
    want = rageval("evaluate", str(run), "--qrels", str(qrels), "--metrics", "P@5", "--json")
    assert after == json_metrics(want.stdout)
    again = rageval("attach", name, "--qrels", str(qrels), db=db)
    assert "already has these qrels" in again.stdout


def json_metrics(text: str) -> dict[str, float]:
    import json

    return dict(json.loads(text)["metrics"])
