"""`rageval compare` and `rageval gate` (in-process, tests/cli.py): output, JSON, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from tests.cli import rageval, rageval_subprocess
from tests.paths import REPO

FAST = ("--permutations", "2000", "--bootstrap", "500")


def write_run(path: Path, ranks: Mapping[str, int | None], latency_ms: float = 100.0) -> Path:
    """A native run: query q's relevant document at rank ranks[q] (None: not retrieved)."""
    lines = [
        json.dumps(
            {
                "rageval_run": {
                    "name": path.stem,
                    "prices_per_1k": {"prompt": 0.001, "completion": 0.002},
                }
            }
        )
    ]
    for i, (qid, rank) in enumerate(ranks.items()):
        relevant = f"{qid}-d{rank}" if rank else f"{qid}-elsewhere"
        lines.append(
            json.dumps(
                {
                    "query_id": qid,
                    "query": f"question {qid}",
                    "retrieved": [
                        {"doc_id": f"{qid}-d{r}", "text": f"chunk {r}"} for r in (1, 2, 3)
                    ],
                    "relevant_ids": [relevant],
                    "latency_ms": {"total": latency_ms + i, "retrieval": 10.0 + i % 3},
                    "tokens": {"prompt": 1000, "completion": 50},
                    "tags": {"kind": "even" if i % 2 == 0 else "odd"},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture()
def runs(tmp_path: Path) -> dict[str, Path]:
    queries = [f"q{i}" for i in range(20)]
    return {
        "base": write_run(tmp_path / "base.jsonl", {q: 2 for q in queries}),
        "better": write_run(tmp_path / "better.jsonl", {q: 1 for q in queries}),
        "worse": write_run(tmp_path / "worse.jsonl", {q: 3 for q in queries}, latency_ms=150.0),
        "one": write_run(tmp_path / "one.jsonl", {"q0": 1}),
        "other": write_run(tmp_path / "other.jsonl", {"z1": 1, "z2": 1}),
    }


def test_gate_passes_with_exit_0(runs: dict[str, Path], tmp_path: Path) -> None:
    r = rageval(
        "gate",
        "--baseline",
        str(runs["base"]),
        "--candidate",
        str(runs["better"]),
        "--max-drop",
        "RR=0.01,P@1=5%",
        "--max-increase",
        "latency.total.p95=10%",
        *FAST,
        db=tmp_path / "s.duckdb",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "gate passed" in r.stdout and r.stdout.count("PASS") == 3
    assert not (tmp_path / "s.duckdb").exists()  # files only: the store is never opened


def test_gate_fails_with_exit_1_naming_each_rule(runs: dict[str, Path], tmp_path: Path) -> None:
    r = rageval(
        "gate",
        "--baseline",
        str(runs["base"]),
        "--candidate",
        str(runs["worse"]),
        "--max-drop",
        "RR=0.01,R@3=0",
        "--max-increase",
        "latency.total.p95=10%,latency.retrieval.mean=1ms,cost.per_query=5%",
        *FAST,
        db=tmp_path / "s.duckdb",
    )
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    # RR 1/2 -> 1/3; latency +50 ms on ~110 ms; retrieval and cost unchanged; R@3 unchanged
    assert "FAIL  RR max drop 0.01: baseline 0.5000, candidate 0.3333, change -0.1667" in out
    assert "FAIL  latency.total.p95 max increase 10%: baseline" in out and "(+4" in out
    assert (
        "PASS  R@3" in out
        and "PASS  latency.retrieval.mean" in out
        and "PASS  cost.per_query" in out
    )
    assert "gate failed: 2 of 5 rules broken (RR=0.01, latency.total.p95=10%)" in out
    j = rageval(
        "gate",
        "--baseline",
        str(runs["base"]),
        "--candidate",
        str(runs["worse"]),
        "--max-drop",
        "RR=0.01",
        "--json",
        *FAST,
        db=tmp_path / "s.duckdb",
    )
    assert j.returncode == 1
    body = json.loads(j.stdout)  # exactly one JSON object
    assert body["passed"] is False and body["failed"] == ["RR=0.01"]
    rule = body["rules"][0]
    assert rule["baseline"] == pytest.approx(0.5) and rule["candidate"] == pytest.approx(1 / 3)
    assert rule["significant"] is True and rule["allowed"] == pytest.approx(0.01)


def test_gate_significant_only(runs: dict[str, Path], tmp_path: Path) -> None:
    # one shared query: the drop is over the limit but cannot be significant
    args = (
        "gate",
        "--baseline",
        str(runs["one"]),
        "--candidate",
        str(runs["base"]),
        "--max-drop",
        "RR=0.1",
        *FAST,
    )
    assert rageval(*args, db=tmp_path / "s.duckdb").returncode == 1
    r = rageval(*args, "--significant-only", db=tmp_path / "s.duckdb")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "over the limit but not significant" in r.stdout and "n < 2" in r.stdout
    # twenty consistent losses are significant: still a failure
    r = rageval(
        "gate",
        "--baseline",
        str(runs["base"]),
        "--candidate",
        str(runs["worse"]),
        "--max-drop",
        "RR=0.01",
        "--significant-only",
        *FAST,
        db=tmp_path / "s.duckdb",
    )
    assert r.returncode == 1 and "p(Holm)" in r.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--max-drop", "NoSuch@10=0.1"), "unknown measure"),
        (("--max-increase", "latency.rerank.p95=10%"), "no latency stage 'rerank'"),
        (("--max-increase", "latency.total.p97=10%"), "unknown latency statistic"),
        (("--max-drop", "RR=-1"), ">= 0"),
        (("--max-drop", "RR"), "TARGET=LIMIT"),
        ((), "no rule"),
        (("--max-drop", "RR=0.1", "--alpha", "2"), "alpha"),
    ],
)
def test_gate_bad_arguments_exit_2(
    runs: dict[str, Path], tmp_path: Path, extra: tuple[str, ...], message: str
) -> None:
    r = rageval(
        "gate",
        "--baseline",
        str(runs["base"]),
        "--candidate",
        str(runs["better"]),
        *extra,
        *FAST,
        db=tmp_path / "s.duckdb",
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


def test_gate_bad_input_exit_2(runs: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    disjoint = rageval(
        "gate",
        "--baseline",
        str(runs["base"]),
        "--candidate",
        str(runs["other"]),
        "--max-drop",
        "RR=0.1",
        db=db,
    )
    assert disjoint.returncode == 2 and "share no query_id" in disjoint.stderr
    missing = rageval(
        "gate",
        "--baseline",
        str(tmp_path / "nope.jsonl"),
        "--candidate",
        str(runs["base"]),
        "--max-drop",
        "RR=0.1",
        db=db,
    )
    assert missing.returncode == 2 and "nope.jsonl: no such file" in missing.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"query_id": "q0", "retrieved": []}\n{not json\n')
    bad = rageval(
        "gate",
        "--baseline",
        str(broken),
        "--candidate",
        str(runs["base"]),
        "--max-drop",
        "RR=0.1",
        db=db,
    )
    assert bad.returncode == 2 and "broken.jsonl:2:" in bad.stderr and "Traceback" not in bad.stderr
    no_arg = rageval("gate", "--baseline", str(runs["base"]), db=db)
    assert no_arg.returncode == 2 and "--candidate" in no_arg.stderr


def test_compare_table_and_json(runs: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    files = [str(runs[k]) for k in ("base", "better", "worse", "one")]
    r = rageval("compare", *files, "--metrics", "RR P@1", "--by", "kind", *FAST, db=db)
    assert r.returncode == 0, r.stderr
    assert "baseline base; candidates better, worse, one" in r.stdout
    # each candidate on its own pair: "one" holds 1 of base's 20 queries, the others all 20
    assert "  better: 20 shared; not shared: none" in r.stdout
    assert "  one: 1 shared; not shared: base 19" in r.stdout
    assert "by kind" in r.stdout and "latency (ms" in r.stdout
    j = rageval(
        "compare",
        str(runs["base"]),
        str(runs["better"]),
        str(runs["worse"]),
        "--metrics",
        "RR",
        "--json",
        *FAST,
        db=db,
    )
    body = json.loads(j.stdout)
    assert body["baseline"] == "base" and body["alignment"]["n_shared"] == 20
    rr = body["metrics"][0]
    assert rr["means"] == {"base": 0.5, "better": 1.0, "worse": pytest.approx(1 / 3)}
    assert rr["vs_baseline"]["better"]["wins"] == 20
    assert body["statistics"]["holm_tests"] == 2
    one = rageval("compare", str(runs["base"]), db=db)
    assert one.returncode == 2 and "2 to 5 runs" in one.stderr
    apart = rageval("compare", str(runs["base"]), str(runs["other"]), db=db)
    assert apart.returncode == 2 and "share no query_id" in apart.stderr
    # a candidate sharing nothing beside one that shares: compared without it, named
    mixed = rageval(
        "compare", str(runs["base"]), str(runs["other"]), str(runs["better"]), "--json", *FAST
    )
    assert mixed.returncode == 0, mixed.stderr
    body = json.loads(mixed.stdout)
    assert body["candidates"] == ["better"]
    assert body["alignment"]["left_out"] == {"other": "shares no query_id with the baseline"}
    assert body["alignment"]["pairs"]["better"]["n_shared"] == 20


# --- the sample runs, stored by name -----------------------------------------------------


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("samples") / "s.duckdb"
    files = [str(REPO / "sample_runs" / f"{n}.jsonl") for n in ("bm25", "hybrid_rerank")]
    r = rageval("import", "--no-score", *files, db=db)
    assert r.returncode == 0, r.stderr
    return db


def test_sample_runs_hybrid_beats_bm25(sample_db: Path) -> None:
    values = {}
    for name in ("bm25", "hybrid_rerank"):
        r = rageval("evaluate", name, "--metrics", "nDCG@10", "--json", db=sample_db)
        values[name] = json.loads(r.stdout)["metrics"]["nDCG@10"]
    r = rageval(
        "compare", "bm25", "hybrid_rerank", "--metrics", "nDCG@10", "--json", *FAST, db=sample_db
    )
    test = json.loads(r.stdout)["metrics"][0]["vs_baseline"]["hybrid_rerank"]
    assert test["diff"] == pytest.approx(values["hybrid_rerank"] - values["bm25"])
    assert test["diff"] > 0 and test["significant"] is True and test["ci"][0] > 0
    ok = rageval(
        "gate",
        "--baseline",
        "bm25",
        "--candidate",
        "hybrid_rerank",
        "--max-drop",
        "nDCG@10=0.01",
        *FAST,
        db=sample_db,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = rageval(
        "gate",
        "--baseline",
        "hybrid_rerank",
        "--candidate",
        "bm25",
        "--max-drop",
        "nDCG@10=0.01",
        *FAST,
        db=sample_db,
    )
    assert bad.returncode == 1 and "FAIL  nDCG@10" in bad.stdout
    unknown = rageval(
        "gate",
        "--baseline",
        "bm25",
        "--candidate",
        "no_such_run",
        "--max-drop",
        "nDCG@10=0.01",
        db=sample_db,
    )
    assert unknown.returncode == 2 and "known runs: bm25, hybrid_rerank" in unknown.stderr


def write_pipeline_run(path: Path, rerank_ms: float | None) -> Path:
    """A native run whose queries log embed/search[/rerank]/generate and no total."""
    lines = [json.dumps({"rageval_run": {"name": path.stem}})]
    for i in range(20):
        latency = {"embed": 5.0 + i % 2, "search": 20.0 + i}
        if rerank_ms is not None:
            latency["rerank"] = rerank_ms + i % 3
        latency["generate"] = 300.0 + 10 * (i % 4)
        lines.append(
            json.dumps(
                {
                    "query_id": f"q{i}",
                    "retrieved": [{"doc_id": "d1", "text": "x"}],
                    "relevant_ids": ["d1"],
                    "latency_ms": latency,
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_gate_on_a_derived_total_and_an_added_stage(tmp_path: Path) -> None:
    # Runs without a total: the gate reads the derived total (the sum of the stages), and a
    # reranker only the candidate has is compared as added, at its full cost (real processes).
    base = str(write_pipeline_run(tmp_path / "base.jsonl", None))
    same = str(write_pipeline_run(tmp_path / "same.jsonl", None))
    rerank = str(write_pipeline_run(tmp_path / "rerank.jsonl", 100.0))

    def gate(candidate: str, rule: str) -> subprocess.CompletedProcess[str]:
        return rageval_subprocess(
            "gate",
            "--baseline",
            base,
            "--candidate",
            candidate,
            "--max-increase",
            rule,
            *FAST,
            db=tmp_path / "s.duckdb",
        )

    ok = gate(same, "latency.total.p95=10%")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # p95 of the totals 5+i%2 + 20+i + 300+10(i%4), by hand from numpy's linear percentile
    totals = [5.0 + i % 2 + 20.0 + i + 300.0 + 10 * (i % 4) for i in range(20)]
    p95 = float(np.percentile(totals, 95))
    assert f"baseline {p95:.1f} ms, candidate {p95:.1f} ms" in ok.stdout
    slower = gate(rerank, "latency.total.p95=10%")
    assert slower.returncode == 1, slower.stdout + slower.stderr
    with_rerank = [t + 100.0 + i % 3 for i, t in enumerate(totals)]
    assert f"candidate {float(np.percentile(with_rerank, 95)):.1f} ms" in slower.stdout
    # the reranker itself: 0 ms in the baseline, so its mean is the change (and is not free)
    added = gate(rerank, "latency.rerank.mean=50")
    assert added.returncode == 1, added.stdout + added.stderr
    mean = sum(100.0 + i % 3 for i in range(20)) / 20
    assert f"baseline 0.0 ms, candidate {mean:.1f} ms" in added.stdout
    within = gate(rerank, "latency.rerank.mean=150")
    assert within.returncode == 0, within.stdout + within.stderr
    # a stage neither run records is still a usage error
    unknown = gate(rerank, "latency.llm.p95=10%")
    assert unknown.returncode == 2 and "no latency stage 'llm'" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_compare_shows_stages_in_pipeline_order_with_added_ones(tmp_path: Path) -> None:
    base = str(write_pipeline_run(tmp_path / "base.jsonl", None))
    rerank = str(write_pipeline_run(tmp_path / "rerank.jsonl", 100.0))
    db = tmp_path / "s.duckdb"
    out = rageval("compare", base, rerank, "--json", *FAST, db=db)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    latency = doc["latency_ms"]["rerank"]
    # the file's order (not alphabetical), the candidate's reranker where its pipeline has it
    assert list(latency) == ["embed", "search", "rerank", "generate", "total"]
    assert doc["latency_stages"] == {
        "base": ["embed", "search", "generate", "total"],
        "rerank": ["embed", "search", "rerank", "generate", "total"],
    }
    assert latency["rerank"]["status"] == "added" and latency["total"]["status"] == "both"
    assert latency["rerank"]["mean"]["baseline"] == 0.0
    assert latency["rerank"]["mean"]["change"] == pytest.approx(
        sum(i % 3 for i in range(20)) / 20 + 100
    )
    assert latency["total"]["mean"]["change"] == pytest.approx(latency["rerank"]["mean"]["change"])
    # the other way round the stage is removed, and saves its cost
    back = json.loads(rageval("compare", rerank, base, "--json", *FAST, db=db).stdout)
    removed = back["latency_ms"]["base"]["rerank"]
    assert removed["status"] == "removed" and removed["mean"]["candidate"] == 0.0
    text = rageval("compare", base, rerank, *FAST, db=db).stdout
    stages = [line.split()[0] for line in text.splitlines() if line[:1].isalpha()]
    assert [s for s in stages if s in latency] == ["embed", "search", "rerank", "generate", "total"]
    assert "(added)" in text
