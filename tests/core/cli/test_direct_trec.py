"""`rageval evaluate RUN --qrels QRELS` on a TREC run takes the direct route (files -> arrays ->
metrics, no store) and prints exactly the report the store route gives, key for key."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rageval_core import api
from rageval_core.evaluation.direct import trec_report
from rageval_core.evaluation.report import Settings
from tests.cli import rageval
from tests.paths import ORACLE, REPO

METRICS = ["P@5", "R@100", "RR", "AP", "nDCG@10", "Hit@3", "Rprec", "NumRelRet", "SetF"]


def store_route(run: Path, qrels: Path, metrics: list[str] | None, s: Settings) -> dict[str, Any]:
    with api.load([run, qrels]) as loaded:
        report = api.evaluate(loaded, metrics, settings=s)
    return json.loads(json.dumps(report.to_json(per_query=True), allow_nan=True))


def direct_route(run: Path, qrels: Path, metrics: list[str] | None, s: Settings) -> dict[str, Any]:
    report = trec_report([run, qrels], None, metrics, s, None)
    assert report is not None, "the direct route refused a clean pair of files"
    return json.loads(json.dumps(report.to_json(per_query=True), allow_nan=True))


def write_pair(tmp: Path, seed: int) -> tuple[Path, Path]:
    """A run with ties, a query without qrels, and judged queries missing from the run."""
    rnd = random.Random(seed)
    run_lines, qrels_lines = [], []
    for q in range(30):
        qid = f"q{rnd.randint(0, 999):03d}x{q}"
        docs = [f"d{rnd.randint(0, 60)}" for _ in range(rnd.randint(1, 25))]
        for rank, doc in enumerate(dict.fromkeys(docs), start=1):
            run_lines.append(f"{qid} Q0 {doc} {rank} {rnd.choice([1.5, 2.0, 2.0, 3.25])} tagX")
        if q % 7 != 3:  # q % 7 == 3: no qrels (skipped)
            for doc in {f"d{rnd.randint(0, 60)}" for _ in range(rnd.randint(1, 8))}:
                qrels_lines.append(f"{qid} 0 {doc} {rnd.choice([0, 1, 1, 2, 3])}")
    for q in range(3):  # judged, never retrieved
        qrels_lines.append(f"judged_only_{q} 0 d1 1")
    run, qrels = tmp / f"r{seed}.trec", tmp / f"r{seed}.qrels"
    run.write_text("\n".join(run_lines) + "\n", encoding="utf-8")
    qrels.write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    return run, qrels


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    ("metrics", "settings"),
    [
        (None, Settings()),
        (METRICS, Settings(k=5)),
        (METRICS, Settings(rel_level=2)),
        (METRICS, Settings(complete=True)),
        (["P@10", "AP"], Settings(relevance="ids", complete=True, rel_level=3)),
    ],
)
def test_direct_equals_the_store_route(
    tmp_path: Path, seed: int, metrics: list[str] | None, settings: Settings
) -> None:
    run, qrels = write_pair(tmp_path, seed)
    direct = direct_route(run, qrels, metrics, settings)
    assert direct == store_route(run, qrels, metrics, settings)
    assert direct["counts"]["missing_from_run"] == 3 and direct["counts"]["skipped_no_qrels"] > 0


@pytest.mark.oracle
def test_the_cli_equals_the_store_route_on_trec_evals_own_files() -> None:
    """trec_eval's run is tab-separated with padded scores: whichever route the CLI takes (the
    bulk reader refuses padding and falls back), the report is the store route's."""
    run, qrels = ORACLE / "results.test", ORACLE / "qrels.test"
    for flags, s in (([], Settings()), (["--complete"], Settings(complete=True))):
        done = rageval(
            "evaluate", str(run), "--qrels", str(qrels), "--json", "--per-query",
            "--metrics", " ".join(METRICS), *flags,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == store_route(run, qrels, METRICS, s)


def test_what_the_direct_route_leaves_to_the_store_route(tmp_path: Path) -> None:
    run, qrels = write_pair(tmp_path, 0)
    s = Settings()
    assert trec_report([run, qrels], None, ["P@5"], s, "some_tag") is None  # a breakdown
    assert trec_report([run, qrels], None, ["P@5"], Settings(score_threshold=2.0), None) is None
    assert trec_report([run, qrels], None, ["EvidenceRecall@5"], s, None) is None
    assert trec_report([run, qrels], "native", ["P@5"], s, None) is None
    assert trec_report([run, run], None, ["P@5"], s, None) is None  # no qrels among them
    # a line the line reader reports: the store route says file:line: field: problem
    bad = tmp_path / "bad.trec"
    bad.write_text(run.read_text(encoding="utf-8") + "qX Q0 dY 1 notanumber tagX\n", "utf-8")
    assert trec_report([bad, qrels], None, ["P@5"], s, None) is None
    done = rageval("evaluate", str(bad), "--qrels", str(qrels), "--json")
    assert done.returncode == 2 and "bad.trec:" in done.stderr and "score" in done.stderr
    # run facts beside the run (its name): the store route reads them
    (tmp_path / (run.name + ".run.json")).write_text('{"name": "named"}', encoding="utf-8")
    assert trec_report([run, qrels], None, ["P@5"], s, None) is None


def test_the_cli_prints_the_direct_report(tmp_path: Path) -> None:
    run, qrels = write_pair(tmp_path, 1)
    done = rageval("evaluate", str(run), "--qrels", str(qrels), "--json", "--per-query", "--k", "5")
    assert done.returncode == 0, done.stderr
    expected = direct_route(run, qrels, None, Settings(k=5))
    assert json.loads(done.stdout) == expected
    assert expected["run"] == "tagX"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_the_direct_route_starts_no_blas_threads(tmp_path: Path) -> None:
    """numpy is loaded with one OpenBLAS thread on the direct route (it multiplies no matrices),
    and the environment is left as it was."""
    run, qrels = write_pair(tmp_path, 1)
    script = (
        "import contextlib, io, os, sys\n"
        "from rageval_core.cli.dispatch import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['evaluate', sys.argv[1], '--qrels', sys.argv[2], '--json'])\n"
        "print(code, len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(run), str(qrels)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=True,
    )
    assert done.stdout.split() == ["0", "1", "None"]
