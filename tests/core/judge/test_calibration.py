"""Judge calibration: Cohen's kappa, TPR/TNR and the threshold sweep, checked by hand and against
independent arithmetic (scipy's crosstab for the counts)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats.contingency import crosstab

from rageval_core.evaluation.calibration import (
    SWEEP,
    Calibration,
    ThresholdAgreement,
    cohen_kappa,
    confusion_matrix,
    format_calibration,
    label_rates,
)
from rageval_core.judging import JudgeConfig, run_judge
from rageval_core.store import Store, judgements
from rageval_core.evaluation.tuning import balanced_accuracy_interval
from tests.cli import rageval
from tests.core.judge.conftest import FAITHFULNESS, RUN_FILE
from tests.fakellm import FakeServer


def kappa_from_pairs(a: list[str], b: list[str]) -> float:
    """Cohen's kappa straight from its definition: P(agree) against chance from the marginals."""
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    labels = set(a) | set(b)
    p_e = sum((a.count(lab) / n) * (b.count(lab) / n) for lab in labels)
    return (p_o - p_e) / (1 - p_e)


@pytest.mark.parametrize(
    ("matrix", "expected"),
    [
        ([[20, 5], [10, 15]], 0.4),  # p_o 0.7, p_e 0.5
        ([[45, 15], [25, 15]], (0.6 - 0.54) / (1 - 0.54)),  # p_o 0.6, p_e 0.42 + 0.12
        ([[10, 0], [0, 10]], 1.0),
        ([[0, 5], [5, 0]], -1.0),
    ],
)
def test_kappa_hand_computed(matrix: list[list[int]], expected: float) -> None:
    assert cohen_kappa(np.array(matrix)) == pytest.approx(expected)


def test_kappa_is_undefined_when_both_raters_use_one_label() -> None:
    assert math.isnan(cohen_kappa(np.array([[7, 0], [0, 0]])))
    assert math.isnan(cohen_kappa(np.zeros((2, 2), dtype=np.int64)))


def test_kappa_and_matrix_match_independent_arithmetic_on_random_labels() -> None:
    rng = random.Random(16)
    labels = ["supported", "insufficient", "contradicted"]
    for _ in range(50):
        n = rng.randint(5, 60)
        a = [rng.choice(labels) for _ in range(n)]
        b = [x if rng.random() < 0.6 else rng.choice(labels) for x in a]
        ours = confusion_matrix(a, b, labels)
        (rows, cols), counts = crosstab(a, b)
        for i, ra in enumerate(rows):
            for j, cb in enumerate(cols):
                assert ours[labels.index(ra), labels.index(cb)] == counts[i, j]
        if len(set(a) | set(b)) > 1:
            assert cohen_kappa(ours) == pytest.approx(kappa_from_pairs(a, b))


def test_tpr_and_tnr_one_vs_rest() -> None:
    # people: s s s i c ; judge: s i s s c
    a = ["s", "s", "s", "i", "c"]
    b = ["s", "i", "s", "s", "c"]
    rates = {
        r.label: r for r in label_rates(confusion_matrix(a, b, ["s", "i", "c"]), ["s", "i", "c"])
    }
    assert rates["s"].support == 3 and rates["s"].tpr == pytest.approx(2 / 3)
    assert rates["s"].tnr == pytest.approx(1 / 2)  # of i and c, the judge said s for i
    assert rates["i"].tpr == 0.0 and rates["i"].tnr == pytest.approx(3 / 4)
    assert rates["c"].tpr == 1.0 and rates["c"].tnr == 1.0


def human_labels() -> dict[str, str]:
    out = {}
    for line in RUN_FILE.read_text(encoding="utf-8").splitlines()[1:]:
        q = json.loads(line)
        out[q["query_id"]] = (q["labels"]["faithfulness"], q["query"])
    return out  # type: ignore[return-value]


def calibrate_json(db: Path, *extra: str) -> dict[str, Any]:
    done = rageval("calibrate", "judged", "--json", *extra, db=db)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_calibrate_a_judge_run_against_the_files_labels(server: FakeServer, db: Path) -> None:
    with Store(db) as store:
        run_judge(store, "judged", JudgeConfig(base_url=server.base_url, model="fake"))
    out = calibrate_json(db)
    people = human_labels()
    a = [people[q][0] for q in sorted(people)]  # type: ignore[index]
    b = [FAITHFULNESS.get(people[q][1], "supported") for q in sorted(people)]  # type: ignore[index]
    assert out["n"] == len(a) == out["n_human"]
    assert [p["human"] for p in out["pairs"]] == a and [p["judge"] for p in out["pairs"]] == b
    assert out["kappa"] == pytest.approx(kappa_from_pairs(a, b))
    assert out["agreement"] == pytest.approx(
        sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    )
    assert out["judge"]["model"] == "fake"
    # the sweep compares full coverage with the judge's retrieval pass, at every threshold
    assert [t["threshold"] for t in out["thresholds"]] == pytest.approx(list(SWEEP))
    assert all(t["n"] == len(a) for t in out["thresholds"])
    assert out["threshold_basis"].startswith("judge.pass_rate")
    text = rageval("calibrate", "judged", db=db).stdout
    assert "Cohen's kappa" in text and "TPR" in text


def test_the_sweep_follows_the_judge_as_coverage_changes(server: FakeServer, db: Path) -> None:
    # the judge fails the retrieval of q2 only: at thresholds where q2's span is no longer
    # covered, coverage and judge agree on every query
    server.state.retrieval = {"Who audits charities?": 0.1}
    with Store(db) as store:
        run_judge(store, "judged", JudgeConfig(base_url=server.base_url, model="fake"))
        from rageval_core.rundata import load_run_data
        from rageval_core.evaluation.evaluate import evaluate

        data = load_run_data(store, "judged")
        covered = {
            t: evaluate(data, ["FullCoverageRate@10"], store=store, threshold=t).per_query[
                "FullCoverageRate@10"
            ]
            for t in (0.5, 1.0)
        }
    out = calibrate_json(db)
    verdict = np.array([0.0 if q == "q2" else 1.0 for q in ("q1", "q2", "q3", "q4", "q5")])
    for row in out["thresholds"]:
        if row["threshold"] in covered:
            expected = float(np.mean(covered[row["threshold"]] == verdict))
            assert row["agreement"] == pytest.approx(expected)


def test_no_threshold_advice_at_chance(server: FakeServer, db: Path) -> None:
    """The judge fails q2's retrieval, but every gold span is quoted verbatim, so coverage says
    yes for all five queries at every threshold: kappa 0, a constant verdict. No threshold is
    advised (the sweep used to call 0.50 the best agreement)."""
    server.state.retrieval = {"Who audits charities?": 0.1}
    with Store(db) as store:
        run_judge(store, "judged", JudgeConfig(base_url=server.base_url, model="fake"))
    out = calibrate_json(db)
    assert out["thresholds"] and out["best_threshold"] is None
    for row in out["thresholds"]:
        # TPR 4/4, TNR 0/1 in every resample: balanced accuracy 1/2 exactly
        assert row["kappa"] == 0.0 and row["balanced_accuracy_interval"] == [0.5, 0.5]
    text = rageval("calibrate", "judged", db=db).stdout
    assert "no threshold agrees with the judge better than chance with confidence" in text
    assert "best agreement with the judge at threshold" not in text


def calibration_with(rows: list[ThresholdAgreement]) -> Calibration:
    nan = math.nan
    return Calibration(
        "r", "faithfulness", None, [], [], 0, 0, nan, nan, [], [], [], [], rows, "judge.pass_rate"
    )


def test_best_threshold_needs_an_interval_above_chance() -> None:
    shaky = ThresholdAgreement(0.6, 20, 0.7, 0.3, (0.45, 0.9))
    sure = ThresholdAgreement(0.7, 20, 0.65, 0.25, (0.55, 0.8))
    # the highest kappa is shaky: no advice (not a fallback to a lower kappa)
    c = calibration_with([shaky, sure])
    assert c.best_agreeing == shaky and c.best_threshold is None
    assert c.to_json()["best_threshold"] is None
    assert "no threshold agrees with the judge better than chance" in format_calibration(c)
    c = calibration_with([sure])
    assert c.best_threshold == sure and c.to_json()["best_threshold"] == 0.7
    assert "best agreement with the judge at threshold 0.70" in format_calibration(c)
    # the counts' interval: a constant verdict is exactly chance; full agreement is 1
    assert balanced_accuracy_interval(4, 0, 0, 1) == (0.5, 0.5)
    assert balanced_accuracy_interval(4, 0, 1, 0) == (1.0, 1.0)


def test_labels_given_later_override_the_files(db: Path) -> None:
    with Store(db) as store:
        judgements.set_human_label(store, "judged", 3, "faithfulness", "supported")
        labels = judgements.human_labels(store, "judged")
        assert labels[3]["faithfulness"] == "supported"
        judgements.set_human_label(store, "judged", 3, "faithfulness", None)
        assert judgements.human_labels(store, "judged")[3]["faithfulness"] == "insufficient"
    # the imported judge labels are calibrated when no judge ran
    out = calibrate_json(db)
    assert out["judge"] is None and out["n"] == 2


def test_calibrate_without_labels_or_judge_exits_2(tmp_path: Path) -> None:
    bare = tmp_path / "bare.jsonl"
    lines = RUN_FILE.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines[1:]]
    for row in rows:
        row.pop("labels")
    bare.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(bare), db=db).returncode == 0
    done = rageval("calibrate", "bare", db=db)
    assert done.returncode == 2 and "labels" in done.stderr


def test_labels_round_trip_through_the_store_and_export(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert rageval("export", "judged", "--to", str(out), db=db).returncode == 0
    exported = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    given = [json.loads(line) for line in RUN_FILE.read_text(encoding="utf-8").splitlines()[1:]]
    assert [q.get("labels") for q in exported] == [q.get("labels") for q in given]
    assert [q.get("judge") for q in exported] == [q.get("judge") for q in given]
