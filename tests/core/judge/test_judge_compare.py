"""Judge scores in compare (paired deltas, same statistics) and as gate rules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rageval_core.judging import JudgeConfig, run_judge
from rageval_core.metrics import registry
from rageval_core.store import Store
from tests.cli import rageval
from tests.core.judge.conftest import RUN_FILE
from tests.fakellm import FakeServer

FAST = ("--permutations", "2000", "--bootstrap", "500")
QUESTIONS = [json.loads(line)["query"] for line in RUN_FILE.read_text().splitlines()[1:]]


@pytest.fixture
def two_runs(server: FakeServer, db: Path, tmp_path: Path) -> Path:
    """judged (baseline: 3 of 5 supported) and candidate (1 of 5), each judged once."""
    lines = RUN_FILE.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["rageval_run"].update(name="candidate", description="the same queries, judged harsher")
    cand = tmp_path / "candidate.jsonl"
    cand.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    assert rageval("import", str(cand), db=db).returncode == 0
    with Store(db) as store:
        run_judge(
            store,
            "judged",
            JudgeConfig(base_url=server.base_url, model="a", metrics=("faithfulness",)),
        )
        server.state.faithfulness = {q: "contradicted" for q in QUESTIONS[1:]}
        server.state.faithfulness[QUESTIONS[1]] = "supported"
        run_judge(
            store,
            "candidate",
            JudgeConfig(base_url=server.base_url, model="b", metrics=("faithfulness",)),
        )
    return db


def test_compare_pairs_judge_scores_like_other_metrics(two_runs: Path) -> None:
    name = "judge.faithfulness.supported"
    done = rageval(
        "compare",
        "judged",
        "candidate",
        "--metrics",
        f"{name},judge.faithfulness.contradicted",
        "--json",
        *FAST,
        db=two_runs,
    )
    assert done.returncode == 0, done.stderr
    out = {m["metric"]: m for m in json.loads(done.stdout)["metrics"]}
    base = np.array([1, 0, 1, 1, 0], dtype=float)  # the fake judge's defaults (conftest)
    cand = np.array([1, 1, 0, 0, 0], dtype=float)
    assert out[name]["means"] == {
        "judged": pytest.approx(base.mean()),
        "candidate": pytest.approx(cand.mean()),
    }
    vs = out[name]["vs_baseline"]["candidate"]
    assert vs["diff"] == pytest.approx((cand - base).mean())
    assert out["judge.faithfulness.contradicted"]["higher_is_better"] is False
    assert out[name]["higher_is_better"] is True


def test_compare_by_default_includes_the_judge_scores_both_runs_have(two_runs: Path) -> None:
    done = rageval("compare", "judged", "candidate", "--json", *FAST, db=two_runs)
    names = [m["metric"] for m in json.loads(done.stdout)["metrics"]]
    assert "judge.faithfulness.supported" in names and "judge.ragas_faithfulness" in names


def test_gate_rules_on_judge_scores(two_runs: Path) -> None:
    args = ("gate", "--baseline", "judged", "--candidate", "candidate", *FAST)
    failed = rageval(*args, "--max-drop", "judge.faithfulness.supported=0.02", db=two_runs)
    assert failed.returncode == 1, failed.stderr
    passed = rageval(*args, "--max-drop", "judge.faithfulness.supported=0.5", db=two_runs)
    assert passed.returncode == 0, passed.stderr
    unknown = rageval(*args, "--max-drop", "judge.nothing=0.1", db=two_runs)
    assert unknown.returncode == 2 and "judge.nothing" in unknown.stderr


def test_every_metric_has_a_kind_and_a_definition() -> None:
    kinds = {"ranking", "evidence", "lexical answer", "semantic", "judge"}
    for name, spec in registry.REGISTRY.items():
        assert spec.kind in kinds, name
        assert spec.description.strip(), name
    assert registry.describe("AnswerRelevance")[0] == "lexical answer"
    assert registry.describe("HallucinationRate")[0] == "lexical answer"
    assert registry.describe("judge.faithfulness.supported")[0] == "judge"
    assert registry.describe("nDCG@10")[0] == "ranking"
    # answer metrics by meaning share the answer family's inputs, not its kind
    for name in ("AnswerSimilarity", "ContextRelevance", "BestContextRelevance"):
        assert registry.describe(name)[0] == "semantic", name


def test_a_label_one_run_never_got_is_a_share_of_zero(db: Path) -> None:
    # the imported labels of judged_run.jsonl: supported and contradicted, never insufficient
    done = rageval(
        "evaluate", "judged", "--judge", "none", "--json", "--per-query",
        "--metrics", "judge.faithfulness.insufficient,judge.faithfulness.supported", db=db,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    given = [json.loads(line).get("judge", {}) for line in RUN_FILE.read_text().splitlines()[1:]]
    judged = ["faithfulness" in j for j in given]
    assert out["metrics"]["judge.faithfulness.insufficient"] == 0.0
    column = [q["judge.faithfulness.insufficient"] for q in out["per_query"].values()]
    assert column == [0.0 if j else None for j in judged]
