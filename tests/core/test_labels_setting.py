"""The `labels` setting (issue 31): which relevance labels the ranking metrics read.

Grades given in rageval (ground_truth.set_grades) and resolved by --labels give exactly the
metrics of the same labels written as a TREC qrels file and attached to the run, and
pytrec_eval's on the merged qrels; the resolution's rules hold on hand-made cases."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytrec_eval

from rageval_core import api
from rageval_core.annotate import attach_qrels
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.labels import resolve
from rageval_core.evaluation.report import Settings
from rageval_core.formats import read_inputs
from rageval_core.settings.label_sources import parse_labels
from rageval_core.store import Store
from rageval_core.store.ground_truth import GradeRow, grades_signature, set_grade, set_grades
from tests.cli import rageval
from tests.trec_files import write_run_and_qrels

METRICS = ["P@5", "R@10", "RR", "AP", "nDCG@10", "Judged@10", "Bpref", "Rprec"]
#: rageval's names -> pytrec_eval's measures
TREC_NAMES = {"P@5": "P_5", "R@10": "recall_10", "RR": "recip_rank", "AP": "map"}
TREC_NAMES |= {"nDCG@10": "ndcg_cut_10", "Bpref": "bpref", "Rprec": "Rprec"}


def _row(q: str, d: str, source: str, who: str, grade: float, at: str = "t") -> GradeRow:
    return GradeRow(q, d, source, who, grade, at)


# --- the resolution, by hand ------------------------------------------------------------------


def test_the_first_source_with_a_label_wins() -> None:
    imported = {("q1", "a"): 1.0, ("q1", "b"): 0.0}
    rows = [_row("q1", "b", "people", "ann", 2), _row("q1", "c", "people", "ann", 1)]
    first_people = resolve(("people", "imported"), imported, rows)
    assert first_people.grades == {("q1", "b"): 2, ("q1", "c"): 1, ("q1", "a"): 1}
    assert first_people.counts(("people", "imported")) == {"people": 2, "imported": 1}
    first_imported = resolve(("imported", "people"), imported, rows)
    assert first_imported.grades == {("q1", "a"): 1, ("q1", "b"): 0, ("q1", "c"): 1}
    assert first_imported.source[("q1", "b")] == "imported"
    assert resolve(("imported",), imported, rows).grades == imported
    assert resolve(("people",), imported, rows).grades == {("q1", "b"): 2, ("q1", "c"): 1}


def test_people_give_the_grade_most_gave_and_ties_go_to_the_lower() -> None:
    rows = [
        _row("q", "a", "people", "x", 2),
        _row("q", "a", "people", "y", 2),
        _row("q", "a", "people", "z", 0),
        _row("q", "b", "people", "x", 2),
        _row("q", "b", "people", "y", 1),
        _row("q", "c", "people", "x", 0),
        _row("q", "c", "people", "y", 2),
        _row("q", "c", "people", "z", 1),
    ]
    assert resolve(("people",), {}, rows).grades == {("q", "a"): 2, ("q", "b"): 1, ("q", "c"): 0}


def test_adjudication_wins_over_the_people_it_settles_and_the_latest_counts() -> None:
    rows = [
        _row("q", "a", "people", "x", 0),
        _row("q", "a", "people", "y", 0),
        _row("q", "a", "adjudicated", "boss", 1, "2026-01-01"),
        _row("q", "a", "adjudicated", "chief", 2, "2026-02-01"),
    ]
    assert resolve(("adjudicated", "people"), {}, rows).grades == {("q", "a"): 2}
    assert resolve(("people", "adjudicated"), {}, rows).grades == {("q", "a"): 0}


def test_llm_reads_every_model_by_majority_and_llm_model_one() -> None:
    rows = [
        _row("q", "a", "llm:m1", "judge", 3),
        _row("q", "a", "llm:m2", "judge", 1),
        _row("q", "b", "llm:m2", "judge", 2),
        _row("q", "b", "people", "x", 0),
    ]
    assert resolve(("llm",), {}, rows).grades == {("q", "a"): 1, ("q", "b"): 2}
    assert resolve(("llm:m1",), {}, rows).grades == {("q", "a"): 3}
    assert resolve(("people", "llm:m2"), {}, rows).grades == {("q", "b"): 0, ("q", "a"): 1}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("people,,imported", "an empty part"),
        ("imported,peple", "unknown source 'peple'"),
        ("people,imported,people", "'people' is given twice"),
        ("llm:", "unknown source 'llm:'"),
        ("", "expected a comma-separated list"),
    ],
)
def test_a_bad_labels_value_names_its_bad_part(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        Settings(labels=text).check()


def test_good_labels_values_parse_in_order() -> None:
    assert parse_labels("people, imported") == ("people", "imported")
    assert parse_labels("llm:gpt-4o,llm,imported") == ("llm:gpt-4o", "llm", "imported")


# --- against qrels files and pytrec_eval -----------------------------------------------------


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A TREC run of 20 queries (q0..q19) and qrels for q0..q11 only."""
    return write_run_and_qrels(
        tmp_path, seed=31, queries=20, judged=12, docs=40, depth=12, per_query=8
    )


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "store.duckdb") as s:
        yield s


def _import(store: Store, *paths: Path) -> str:
    log = ProblemLog()
    return store.import_run(read_inputs(list(paths), None, log)[0], log).run.name


def _people(store: Store, run: Path) -> dict[tuple[str, str], int]:
    """Two annotators' grades: over retrieved and unretrieved documents, queries with and
    without imported qrels (q12..q19 have none); returns the grade each (query, doc) resolves to."""
    rnd = random.Random(5)
    retrieved: dict[str, list[str]] = {}
    for line in run.read_text().splitlines():
        q, _, d, *_ = line.split()
        retrieved.setdefault(q, []).append(d)
    wanted: dict[tuple[str, str], int] = {}
    ann_a, ann_b = [], []
    for q in (0, 1, 2, 13, 15, 17):
        docs = [*retrieved[f"q{q}"][:6], f"d{40 + q}"]  # and one never retrieved
        for d in docs:
            a, b = rnd.choice([0, 1, 2]), rnd.choice([0, 1, 2])
            ann_a.append((f"q{q}", d, a))
            ann_b.append((f"q{q}", d, b))
            wanted[(f"q{q}", d)] = min(a, b)  # one vote each: a tie, to the lower grade
    set_grades(store, ann_a, annotator="ann")
    set_grades(store, ann_b, annotator="bob")
    return wanted


def _write_qrels(path: Path, labels: dict[tuple[str, str], float]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {int(g)}\n" for (q, d), g in sorted(labels.items())))
    return path


def _imported(qrels: Path) -> dict[tuple[str, str], int]:
    out = {}
    for line in qrels.read_text().splitlines():
        q, _, d, g = line.split()
        out[(q, d)] = int(g)
    return out


def _metrics(store: Store, name: str, labels: str = "imported", **kw: object) -> dict[str, float]:
    with api.load(name, store=store) as run:
        report = api.evaluate(run, METRICS, labels=labels, relevance="ids", **kw)
    return report.metrics


def _equal(a: dict[str, float], b: dict[str, float]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=1e-12), k


@pytest.mark.parametrize("judged_only", [False, True])
def test_people_labels_equal_the_same_labels_attached_as_qrels(
    store: Store, files: tuple[Path, Path], tmp_path: Path, judged_only: bool
) -> None:
    run, qrels = files
    name = _import(store, run, qrels)
    wanted = _people(store, run)
    merged = {**_imported(qrels), **wanted}
    with Store(tmp_path / "other.duckdb") as other:
        people_only = attach_qrels(other, _import(other, run), _write_qrels(tmp_path / "p", wanted))
        expect_people = _metrics(other, people_only.name, judged_only=judged_only)
        both = attach_qrels(other, _import(other, run), _write_qrels(tmp_path / "m", merged))
        expect_merged = _metrics(other, both.name, judged_only=judged_only)
    _equal(_metrics(store, name, "people", judged_only=judged_only), expect_people)
    _equal(_metrics(store, name, "people,imported", judged_only=judged_only), expect_merged)
    # the run's own qrels win where both labelled: the imported grade counts there
    first_imported = {**wanted, **_imported(qrels)}
    with Store(tmp_path / "third.duckdb") as third:
        ref = attach_qrels(third, _import(third, run), _write_qrels(tmp_path / "i", first_imported))
        _equal(
            _metrics(store, name, "imported,people", judged_only=judged_only),
            _metrics(third, ref.name, judged_only=judged_only),
        )
    assert _metrics(store, name, "imported") != _metrics(store, name, "people,imported")


def test_people_labels_equal_pytrec_eval_on_the_merged_qrels(
    store: Store, files: tuple[Path, Path]
) -> None:
    run, qrels = files
    name = _import(store, run, qrels)
    merged = {**_imported(qrels), **_people(store, run)}
    trec_qrels: dict[str, dict[str, int]] = {}
    for (q, d), g in merged.items():
        trec_qrels.setdefault(q, {})[d] = int(g)
    trec_run: dict[str, dict[str, float]] = {}
    for line in run.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        trec_run.setdefault(q, {})[d] = float(score)
    got = _metrics(store, name, "people,imported")
    per_query = pytrec_eval.RelevanceEvaluator(trec_qrels, set(TREC_NAMES.values())).evaluate(
        trec_run
    )
    for ours, theirs in TREC_NAMES.items():
        mean = sum(v[theirs] for v in per_query.values()) / len(per_query)
        assert got[ours] == pytest.approx(mean, abs=1e-12), ours
    assert len(per_query) == 15  # q0..q11 imported, q13, q15, q17 by people only


def test_a_query_without_imported_qrels_becomes_judged_by_people(
    store: Store, files: tuple[Path, Path]
) -> None:
    run, _ = files
    name = _import(store, run)  # no qrels at all
    with pytest.raises(UsageError, match="has no qrels"):
        _metrics(store, name)
    with pytest.raises(UsageError, match=r"has no qrels \(relevant ids\) under --labels people"):
        _metrics(store, name, "people")  # nobody labelled anything yet: said so
    set_grade(store, "q3", "nowhere", 1, annotator="ann")  # a document the run never retrieved
    first = _metrics(store, name, "people")
    assert first["R@10"] == 0 and first["Judged@10"] == 0
    retrieved = next(
        line.split()[2] for line in run.read_text().splitlines() if line.startswith("q3 ")
    )
    set_grade(store, "q3", retrieved, 2, annotator="ann")
    second = _metrics(store, name, "people")  # the cached labels follow the new grade
    assert second["RR"] == 1 and second["Judged@10"] == pytest.approx(0.1)


def test_a_grade_changes_the_signature_and_the_next_evaluation(
    store: Store, files: tuple[Path, Path]
) -> None:
    run, qrels = files
    name = _import(store, run, qrels)
    d = next(line.split()[2] for line in run.read_text().splitlines() if line.startswith("q0 "))
    with api.load(name, store=store) as loaded:
        before = api.evaluate(loaded, ["RR"], labels="people,imported").per_query["RR"][0]
        sig = grades_signature(store)
        set_grade(store, "q0", d, 2, annotator="ann")
        assert grades_signature(store) != sig
        after = api.evaluate(loaded, ["RR"], labels="people,imported").per_query["RR"][0]
        set_grade(store, "q0", d, None, annotator="ann")  # taken back
        back = api.evaluate(loaded, ["RR"], labels="people,imported").per_query["RR"][0]
    assert after == 1 and back == before and not math.isnan(before)


def test_the_report_says_which_labels_it_used_and_how_many_counted(
    store: Store, files: tuple[Path, Path], tmp_path: Path
) -> None:
    run, qrels = files
    name = _import(store, run, qrels)
    wanted = _people(store, run)
    imported = _imported(qrels)
    db = tmp_path / "store.duckdb"
    store.close()
    out = rageval("evaluate", name, "--labels", "people,imported", "--json", db=db)
    assert out.returncode == 0, out.stderr
    settings = json.loads(out.stdout)["settings"]
    assert settings["labels"] == "people,imported"
    from_imported = sum(1 for key in imported if key not in wanted)
    assert settings["label_counts"] == {"people": len(wanted), "imported": from_imported}
    text = rageval("evaluate", name, "--labels", "people,imported", db=db)
    counted = f"labels=people,imported (people {len(wanted)}, imported {from_imported})"
    assert counted in text.stdout.splitlines()[0]
    # the header does not call the people's grades "the run's qrels"
    assert "(the run's qrels)" not in text.stdout.splitlines()[0]
    assert "relevance=ids (relevant ids from the labels= sources)" in text.stdout.splitlines()[0]
    plain = json.loads(rageval("evaluate", name, "--json", db=db).stdout)["settings"]
    assert plain["labels"] == "imported" and "label_counts" not in plain
    first = rageval("evaluate", name, db=db).stdout.splitlines()[0]
    assert "relevance=ids (the run's qrels)" in first


def test_a_bad_labels_flag_is_a_usage_error(files: tuple[Path, Path], tmp_path: Path) -> None:
    run, qrels = files
    out = rageval("evaluate", str(run), "--qrels", str(qrels), "--labels", "imported,peeple")
    assert out.returncode == 2
    assert "unknown source 'peeple'" in out.stderr and "Traceback" not in out.stderr


def test_a_run_file_reads_the_grades_of_the_store(files: tuple[Path, Path], tmp_path: Path) -> None:
    """`rageval evaluate FILE --qrels Q --labels people,imported` reads --db's grades (the
    store route: the direct route reads files only), and equals the stored run's numbers."""
    run, qrels = files
    db = tmp_path / "store.duckdb"
    with Store(db) as store:
        name = _import(store, run, qrels)
        _people(store, run)
    args = ["--metrics", ",".join(METRICS), "--labels", "people,imported", "--json"]
    from_file = rageval("evaluate", str(run), "--qrels", str(qrels), *args, db=db)
    stored = rageval("evaluate", name, *args, db=db)
    assert from_file.returncode == stored.returncode == 0, from_file.stderr + stored.stderr
    assert json.loads(from_file.stdout)["metrics"] == json.loads(stored.stdout)["metrics"]
    plain = rageval("evaluate", str(run), "--qrels", str(qrels), "--json", db=db)
    assert json.loads(plain.stdout)["metrics"] != json.loads(from_file.stdout)["metrics"]


def test_compare_and_the_html_report_say_which_labels_counted(
    store: Store, files: tuple[Path, Path], tmp_path: Path
) -> None:
    run, qrels = files
    name = _import(store, run, qrels)
    other = tmp_path / "other.trec"  # the same run, its lists reversed
    lines = run.read_text().splitlines()
    other.write_text("".join(line.replace("bm25", "rev") + "\n" for line in reversed(lines)))
    second = _import(store, other, qrels)
    wanted = _people(store, run)
    db = tmp_path / "store.duckdb"
    store.close()
    both = ("--labels", "people,imported")
    text = rageval("compare", name, second, *both, "--metrics", "P@5,Judged@10", db=db)
    assert text.returncode == 0, text.stderr
    assert "labels=people,imported" in text.stdout
    assert f"labels counted in {name}: people {len(wanted)}, imported " in text.stdout
    plain = rageval("compare", name, second, "--metrics", "P@5", db=db).stdout
    assert "labels=imported" in plain and "labels counted" not in plain
    html = tmp_path / "r.html"
    done = rageval("report", name, second, "--out", str(html), *both, db=db)
    assert done.returncode == 0, done.stderr
    page = html.read_text()
    assert "label_counts" in page and f"{name}: people {len(wanted)}, imported" in page
