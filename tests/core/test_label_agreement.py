"""Agreement of the store's relevance grades (rageval_core.evaluation.agreement), `rageval
agreement RUN`, rv.agreement and adjudication: the figures equal the references' (scikit-learn,
krippendorff), a figure that cannot be computed is withheld with its reason, untrusted names are
escaped in the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

import rageval as rv
from rageval_core.evaluation.agreement import adjudicate, agreement, agreement_json
from rageval_core.store import Store
from rageval_core.store import ground_truth as gt
from tests.cli import import_files, rageval
from tests.paths import REPO

RUN_FILE = REPO / "tests" / "data" / "judge" / "judged_run.jsonl"
ITEMS = [("q1", "d1"), ("q1", "d2"), ("q2", "d7"), ("q2", "d8"), ("q3", "d3"), ("q4", "d5")]
ALICE = [2, 0, 1, 2, 2, 0]
BOB = [2, 1, 1, 0, 2, 0]
CAROL = [None, 1, 1, 2, 1, 0]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store.duckdb"
    import_files(path, RUN_FILE)
    with Store(path) as store:
        for name, grades in (("alice", ALICE), ("bob", BOB), ("carol", CAROL)):
            gt.set_grades(
                store,
                [(q, d, g) for (q, d), g in zip(ITEMS, grades, strict=True) if g is not None],
                annotator=name,
            )
        # a query of another run, outside judged's: not one of its items
        gt.set_grade(store, "elsewhere", "dx", 2, annotator="alice")
        gt.set_grade(store, "elsewhere", "dx", 0, annotator="bob")
    return path


def graded_store(tmp_path: Path, grades: dict[str, list[tuple[str, str, int]]]) -> Path:
    """A store holding the judged run and these people's grades (annotator -> grades)."""
    path = tmp_path / "graded.duckdb"
    import_files(path, RUN_FILE)
    with Store(path) as store:
        for annotator, rows in grades.items():
            gt.set_grades(store, rows, annotator=annotator)
    return path


def _nan(xs: list[int | None]) -> list[float]:
    return [np.nan if x is None else float(x) for x in xs]


def test_agreement_equals_the_references(db: Path) -> None:
    with Store(db) as store:
        a = agreement(store, ["q1", "q2", "q3", "q4", "q5"])
    assert a.annotators == ("alice", "bob", "carol")
    assert a.n_items == 6
    ab = next(p for p in a.pairs if (p.a, p.b) == ("alice", "bob"))
    assert ab.n == 6
    assert ab.kappa == pytest.approx(cohen_kappa_score(ALICE, BOB))
    assert ab.weighted_kappa == pytest.approx(cohen_kappa_score(ALICE, BOB, weights="quadratic"))
    assert ab.grades == (0.0, 1.0, 2.0)
    assert ab.confusion == ((1, 1, 0), (0, 1, 0), (1, 0, 2))  # rows alice, columns bob
    ac = next(p for p in a.pairs if (p.a, p.b) == ("alice", "carol"))
    assert ac.n == 5
    ref = krippendorff.alpha(
        reliability_data=[_nan(ALICE), _nan(BOB), _nan(CAROL)], level_of_measurement="ordinal"
    )
    assert a.alpha == pytest.approx(ref)
    assert a.alpha_ci is not None and a.alpha_ci[0] <= a.alpha <= a.alpha_ci[1]
    assert a.reason is None
    # every item of the run someone graded differently, none of the other run's
    assert [(d.query_id, d.doc_id) for d in a.disagreements] == [
        ("q1", "d2"),
        ("q2", "d8"),
        ("q3", "d3"),
    ]
    assert a.disagreements[0].grades == {"alice": 0.0, "bob": 1.0, "carol": 1.0}


def test_cli_json_contract_and_adjudication(db: Path) -> None:
    r = rageval("agreement", "judged", "--json", "--resamples", "200", db=db)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {"pairs", "alpha", "alpha_ci", "disagreements"} <= set(out)
    assert {"a", "b", "n", "kappa", "weighted_kappa"} <= set(out["pairs"][0])
    assert len(out["alpha_ci"]) == 2
    assert out["disagreements"][0]["adjudicated"] is None
    r = rageval(
        "agreement",
        "judged",
        "--json",
        "--adjudicate",
        "q1",
        "d2",
        "1",
        "--annotator",
        "dan",
        db=db,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["disagreements"][0]["adjudicated"] == 1.0
    with Store(db) as store:
        rows = gt.grade_rows(store, ["q1"], [gt.ADJUDICATED])
        assert [(x.doc_id, x.annotator, x.grade) for x in rows] == [("d2", "dan", 1.0)]
        # the annotators' own grades are untouched; adjudication is no annotator of agreement
        assert agreement(store, ["q1", "q2", "q3", "q4"]).annotators == ("alice", "bob", "carol")
        adjudicate(store, "q1", "d2", None, annotator="dan")
        assert gt.grade_rows(store, ["q1"], [gt.ADJUDICATED]) == []
    bad = rageval("agreement", "judged", "--adjudicate", "q1", "d2", "1", db=db)
    assert bad.returncode == 2 and "--annotator" in bad.stderr


def test_one_annotator_is_withheld_with_its_reason_and_exit_1(tmp_path: Path) -> None:
    path = graded_store(tmp_path, {"alice": [("q1", "d1", 2), ("q1", "d2", 0)]})
    r = rageval("agreement", "judged", "--json", db=path)
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert out["pairs"] == [] and out["alpha"] is None and out["alpha_ci"] is None
    assert "fewer than two annotators" in out["reason"]
    text = rageval("agreement", "judged", db=path)
    assert text.returncode == 1 and "withheld: fewer than two annotators" in text.stdout


def test_one_grade_only_withholds_kappa_not_zero(tmp_path: Path) -> None:
    same = [("q1", "d1", 2), ("q1", "d2", 2)]
    with Store(graded_store(tmp_path, {"alice": same, "bob": same})) as store:
        a = agreement(store, ["q1"])
    assert a.pairs[0].kappa is None and a.pairs[0].weighted_kappa is None
    assert "one category only" in (a.pairs[0].reason or "")
    assert a.alpha is None and "one category only" in (a.reason or "")
    assert a.disagreements == ()


def test_llm_against_a_person_by_name_and_python_api(db: Path) -> None:
    with Store(db) as store:
        gt.set_grades(
            store,
            [("q1", "d1", 3), ("q1", "d2", 0), ("q2", "d7", 1)],
            annotator="m1",
            source="llm:m1",
        )
    a = rv.agreement("judged", db=db, raters=["alice", "llm:m1"], resamples=100)
    assert a.annotators == ("alice", "llm:m1")
    assert a.pairs[0].n == 3 and a.pairs[0].grades == (0.0, 1.0, 2.0, 3.0)
    assert a.pairs[0].kappa == pytest.approx(cohen_kappa_score([2, 0, 1], [3, 0, 1]))
    r = rageval("agreement", "judged", "--raters", "alice,nobody", db=db)
    assert r.returncode == 2 and "nobody" in r.stderr


def test_hostile_names_are_escaped_in_the_terminal(tmp_path: Path) -> None:
    path = graded_store(
        tmp_path,
        {
            "a\x1b]8;;": [("q1", "d1\x1b[31m", 2), ("q1", "d2", 0)],
            "b": [("q1", "d1\x1b[31m", 0), ("q1", "d2", 0)],
        },
    )
    r = rageval("agreement", "judged", db=path)
    assert "\x1b" not in r.stdout
    assert "d1\\x1b[31m" in r.stdout and "a\\x1b]8;;" in r.stdout


def test_agreement_json_is_strict_json(db: Path) -> None:
    with Store(db) as store:
        out = agreement_json(agreement(store, ["q1"], resamples=50))
    json.dumps(out, allow_nan=False)


def test_metrics_side_by_side_under_people_filled_and_llm_labels(tmp_path: Path) -> None:
    from rageval_core.evaluation.agreement import calibrate_labels, metrics_by_labels
    from rageval_core.evaluation.report import Settings
    from rageval_core.rundata import load_run_data

    path = graded_store(tmp_path, {"alice": [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d7", 0)]})
    with Store(path) as store:
        llm = [("q1", "d1", 3), ("q1", "d2", 1), ("q2", "d7", 1), ("q2", "d8", 2), ("q3", "d3", 2)]
        gt.set_grades(store, llm, annotator="m", source="llm:m")
        side = metrics_by_labels(
            load_run_data(store, "judged"), store, Settings(), ["P@2", "Judged@2"]
        )
        cal = calibrate_labels(store, None, "llm:m")
    # by hand: people only judge q1 (d1 2, d2 0) and q2 (d7 0); the LLM fills d8 and q3's d3;
    # the LLM alone calls every top-2 document relevant
    assert side == [
        ("people only", {"P@2": pytest.approx(0.25), "Judged@2": pytest.approx(0.75)}),
        ("people, the LLM filling the holes", {"P@2": 0.5, "Judged@2": 1.0}),
        ("LLM only", {"P@2": pytest.approx(5 / 6), "Judged@2": 1.0}),
    ]
    # calibration: the three documents both graded; people 2,0,0 against the LLM 3,1,1
    assert cal.pair.n == 3 and cal.n_llm == 5 and cal.n_people == 3
    assert cal.pair.kappa == pytest.approx(cohen_kappa_score([2, 0, 0], [3, 1, 1]))
    assert cal.pair.weighted_kappa == pytest.approx(
        cohen_kappa_score([2, 0, 0], [3, 1, 1], weights="quadratic", labels=[0, 1, 2, 3])
    )
    assert [(g.grade, g.n, g.precision) for g in cal.precision] == [(1.0, 2, 0.0), (3.0, 1, 0.0)]


def test_text_output_shows_the_figures_and_withholds_nothing_it_has(db: Path) -> None:
    r = rageval("agreement", "judged", "--resamples", "300", db=db)
    assert r.returncode == 0, r.stderr
    assert "Krippendorff's alpha (ordinal) " in r.stdout and "95% bootstrap interval" in r.stdout
    assert "withheld:" not in r.stdout  # (the table's "why withheld" column stays empty)
    assert "3 items graded differently" in r.stdout
