"""Each metric's direction, declared once, read the same way by compare's text, JSON, markdown and
LaTeX tables and by the gate; compare's means are over the pairs its diff is computed on.

The sample runs hold the issue's case: hybrid_rerank against bm25 is a significant regression on
ContextRelevance (higher is better: -0.0107) and a significant improvement on BestRank (lower is
better: -0.5144), and BestRank is scored on different queries in the two runs (254 and 252 of the
360, 243 in both). The expected numbers are computed here from `rageval evaluate --per-query
--json`, not from compare.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from rageval_core.metrics import latency_cost as ops
from rageval_core.compare import higher_is_better as compare_direction
from rageval_core.errors import UsageError
from rageval_core.metrics import registry
from rageval_core.metrics.generation import GENERATION_METRICS
from rageval_core.settings.presets import PRESETS
from tests.cli import rageval, rageval_subprocess
from tests.paths import REPO

SAMPLES = [REPO / "sample_runs" / f"{n}.jsonl" for n in ("bm25", "hybrid_rerank")]
METRICS = "BestRank ContextRelevance PerQueryCoverage@10 HallucinationRate"
FAST = ("--permutations", "2000", "--bootstrap", "200")
#: the directions, written out by hand (not read from rageval)
LOWER = {"BestRank", "HallucinationRate"}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("direction") / "s.duckdb"
    done = rageval("import", *map(str, SAMPLES), db=path)
    assert done.returncode == 0, done.stderr
    return path


def per_query(db: Path, run: str) -> dict[str, dict[str, float | None]]:
    done = rageval("evaluate", run, "--metrics", METRICS, "--per-query", "--json", db=db)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["per_query"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def expected(db: Path) -> dict[str, dict[str, Any]]:
    """Per metric, by hand: the pairs (queries both runs score), both means over them, and each
    run's count of scored shared queries."""
    base, cand = per_query(db, "bm25"), per_query(db, "hybrid_rerank")
    out = {}
    for m in METRICS.split():
        shared = [q for q in base if q in cand]
        b = [base[q][m] for q in shared]
        c = [cand[q][m] for q in shared]
        pairs = [(x, y) for x, y in zip(b, c, strict=True) if x is not None and y is not None]
        mean_b = math.fsum(x for x, _ in pairs) / len(pairs)
        mean_c = math.fsum(y for _, y in pairs) / len(pairs)
        out[m] = {
            "n": len(pairs),
            "baseline_mean": mean_b,
            "candidate_mean": mean_c,
            "n_baseline_scored": sum(x is not None for x in b),
            "n_candidate_scored": sum(y is not None for y in c),
            "better": (mean_c < mean_b) if m in LOWER else (mean_c > mean_b),
        }
    return out


def test_one_declaration_answers_for_every_name() -> None:
    assert compare_direction is registry.higher_is_better  # compare reads the registry's
    for name in ("nDCG@10", "RR", "R@5", "PerQueryCoverage@10", "ContextRelevance", "judge.x"):
        assert registry.higher_is_better(name), name
    for name in ("BestRank", "BestRank@10", "HallucinationRate", "judge.faithfulness.contradicted"):
        assert not registry.higher_is_better(name), name
    for name in ("latency.total.p95", "latency.retrieval.mean", "cost.per_query", "cost.total"):
        assert not registry.higher_is_better(name), name
    assert not registry.higher_is_better("tokens.completion")
    assert not registry.higher_is_better("latency_ms") and not registry.higher_is_better("cost_usd")
    # a preset's own names, which the registry cannot parse
    assert not registry.higher_is_better("best_match_position")
    assert registry.higher_is_better("mrr_score") and registry.higher_is_better("hit_rate_top_1")
    assert all(
        isinstance(registry.higher_is_better(m), bool) for p in PRESETS.values() for m in p.metrics
    )
    # the answer metrics' table is their one declaration (the registry used to spell it again)
    for name, metric in GENERATION_METRICS.items():
        assert registry.higher_is_better(name) == metric.higher_is_better == (name not in LOWER)
    with pytest.raises(UsageError):
        registry.higher_is_better("NoSuchMetric")


def test_verdict_reads_each_change_in_its_direction() -> None:
    v = registry.verdict
    assert v("ContextRelevance", -0.0107, True) == registry.REGRESSED
    assert v("ContextRelevance", +0.0107, True) == registry.IMPROVED
    assert v("BestRank", -0.5144, True) == registry.IMPROVED
    assert v("latency.total.p95", +48.5, True) == registry.REGRESSED
    assert v("cost.per_query", -0.001, True) == registry.IMPROVED
    # not significant, no change, or nothing to compare: no verdict
    assert v("BestRank", -0.5144, False) == v("RR", 0.0, True) == v("RR", math.nan, True) == ""


def rows_of(text: str, header: str) -> dict[str, list[str]]:
    """The metric table's rows by metric (columns split on runs of two spaces)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(header))
    out = {}
    for ln in lines[start + 2 :]:
        if not ln.strip():
            break
        cells = [c.strip() for c in ln.split("  ") if c.strip()]
        out[cells[0].split(" ")[0]] = cells
    return out


def test_compare_text_shows_the_paired_means_and_the_verdict(
    db: Path, expected: dict[str, dict[str, Any]]
) -> None:
    done = rageval("compare", "bm25", "hybrid_rerank", "--metrics", METRICS, *FAST, db=db)
    assert done.returncode == 0, done.stderr
    rows = rows_of(done.stdout, "metric ")
    head = next(c for c in done.stdout.splitlines() if c.startswith("metric ")).split()
    assert head[:7] == ["metric", "candidate", "n", "bm25", "mean", "mean", "diff"]
    for m, e in expected.items():
        cells = rows[m]
        n, mean_b, mean_c, diff = cells[2:6]
        assert int(n) == e["n"], m
        assert float(mean_b) == pytest.approx(e["baseline_mean"], abs=5e-5), m
        assert float(mean_c) == pytest.approx(e["candidate_mean"], abs=5e-5), m
        # the diff shown is the difference of the means shown
        assert float(diff.rstrip("*")) == pytest.approx(float(mean_c) - float(mean_b), abs=2e-4)
    # the rows: the significant regression and the significant improvement, in words
    assert rows["ContextRelevance"][6] == "regressed" and rows["ContextRelevance"][5].endswith("*")
    assert rows["BestRank"][6] == "improved" and rows["BestRank"][0].endswith("(lower=better)")
    # not significant: no verdict, whichever way it moved. PerQueryCoverage@10 is significant
    # with the numbers guard on (the default: +0.081*, improved) and not without it (-0.0015)
    assert rows["PerQueryCoverage@10"][6] == "improved"
    off = rageval(
        "compare", "bm25", "hybrid_rerank", "--metrics", METRICS, *FAST,
        "--no-numbers-must-match", db=db,
    )  # fmt: skip
    unguarded = rows_of(off.stdout, "metric ")["PerQueryCoverage@10"]
    assert not unguarded[5].endswith("*")
    assert unguarded[6].startswith("[")  # the CI follows: the verdict is empty
    # the unpaired counts, said apart
    b = expected["BestRank"]
    assert b["n"] < min(b["n_baseline_scored"], b["n_candidate_scored"])  # the case is real
    assert (
        f"BestRank, hybrid_rerank: bm25 scores {b['n_baseline_scored']} of the shared queries, "
        f"hybrid_rerank {b['n_candidate_scored']}; the {b['n']} both score are compared"
    ) in done.stdout
    assert "ContextRelevance, hybrid_rerank" not in done.stdout  # scored on all 360 by both


def test_compare_json_says_the_pairs_the_unpaired_counts_and_the_verdict(
    db: Path, expected: dict[str, dict[str, Any]]
) -> None:
    done = rageval("compare", "bm25", "hybrid_rerank", "--metrics", METRICS, "--json", *FAST, db=db)
    assert done.returncode == 0, done.stderr
    for m in json.loads(done.stdout)["metrics"]:
        e = expected[m["metric"]]
        vs = m["vs_baseline"]["hybrid_rerank"]
        assert m["higher_is_better"] is (m["metric"] not in LOWER)
        assert vs["n"] == e["n"]
        assert vs["baseline_mean"] == pytest.approx(e["baseline_mean"], rel=1e-12)
        assert vs["candidate_mean"] == pytest.approx(e["candidate_mean"], rel=1e-12)
        assert vs["diff"] == pytest.approx(vs["candidate_mean"] - vs["baseline_mean"], rel=1e-12)
        assert vs["n_scored"] == {
            "baseline": e["n_baseline_scored"],
            "candidate": e["n_candidate_scored"],
        }
        want = ("improved" if e["better"] else "regressed") if vs["significant"] else None
        assert vs["verdict"] == want, m["metric"]
    verdicts = {
        m["metric"]: m["vs_baseline"]["hybrid_rerank"]["verdict"]
        for m in json.loads(done.stdout)["metrics"]
    }
    assert verdicts["ContextRelevance"] == "regressed" and verdicts["BestRank"] == "improved"


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_tables_of_a_preset_read_its_lower_is_better_name(db: Path, fmt: str) -> None:
    done = rageval(
        "compare", "bm25", "hybrid_rerank", "--preset", "eggai", "--table", fmt, *FAST, db=db
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(
        rageval(
            "compare", "bm25", "hybrid_rerank", "--preset", "eggai", "--json", *FAST, db=db
        ).stdout
    )
    rank = next(m for m in data["metrics"] if m["metric"] == "best_match_position")
    assert rank["higher_is_better"] is False
    base, cand = rank["means"]["bm25"], rank["means"]["hybrid_rerank"]
    assert base != cand
    arrow = (
        "best\\_match\\_position ↓" if fmt == "markdown" else r"best\_match\_position $\downarrow$"
    )
    assert arrow in done.stdout
    low = f"{min(base, cand):.4f}"
    bold = f"**{low}**" if fmt == "markdown" else rf"\textbf{{{low}}}"
    assert bold in done.stdout  # the lower value is the best one
    assert (
        f"{max(base, cand):.4f}" in done.stdout and f"**{max(base, cand):.4f}**" not in done.stdout
    )


def gate(db: Path, baseline: str, candidate: str, *rules: str) -> tuple[int, dict[str, str]]:
    """`rageval gate` in a real process: its exit code and its rule lines by target."""
    done = rageval_subprocess(
        "gate", "--baseline", baseline, "--candidate", candidate, *rules, *FAST, db=db
    )
    assert done.returncode in (0, 1), done.stderr
    lines = [ln for ln in done.stdout.splitlines() if ln[:4] in ("PASS", "FAIL")]
    return done.returncode, {ln.split()[1]: ln for ln in lines}


def test_gate_words_follow_the_direction(db: Path) -> None:
    rules = ("--max-drop", "BestRank=0.1,ContextRelevance=0.001")
    code, lines = gate(db, "hybrid_rerank", "bm25", *rules)
    assert code == 1
    # BestRank rose by 0.51: worse, a rise past the allowed rise
    assert lines["BestRank"].startswith("FAIL  BestRank max rise 0.1: ")
    assert "%, worse), allowed rise 0.1000" in lines["BestRank"]
    assert lines["ContextRelevance"].startswith("PASS  ContextRelevance max drop 0.001: ")
    assert "%, better), allowed drop 0.0010" in lines["ContextRelevance"]
    # the other way round: BestRank fell (better, passes), ContextRelevance dropped (fails)
    code, lines = gate(db, "bm25", "hybrid_rerank", *rules)
    assert code == 1
    assert lines["BestRank"].startswith("PASS") and "%, better)" in lines["BestRank"]
    assert lines["ContextRelevance"].startswith("FAIL") and "%, worse)" in lines["ContextRelevance"]
    code, lines = gate(
        db,
        "bm25",
        "hybrid_rerank",
        "--max-drop",
        "BestRank=0.1",
        "--max-increase",
        "cost.per_query=50%",
    )
    assert code == 0
    assert lines["cost.per_query"].startswith("PASS  cost.per_query max increase 50%: ")
    assert "%, better), allowed increase" in lines["cost.per_query"]


def test_segments_say_each_significant_change_in_its_direction(db: Path) -> None:
    args = ("compare", "bm25", "hybrid_rerank", "--metrics", METRICS, "--by", "query_type", *FAST)
    text = rageval(*args, db=db)
    data = rageval(*args, "--json", db=db)
    assert text.returncode == data.returncode == 0, text.stderr + data.stderr
    groups = json.loads(data.stdout)["by"]["query_type"]
    lines = text.stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("by query_type"))
    header = lines[start + 1]
    words = []
    for group, seg in groups.items():
        row = next(ln for ln in lines[start + 3 :] if ln.split()[:1] == [group])
        for m in METRICS.split():
            vs = seg["metrics"][m]["hybrid_rerank"]
            at = header.index(f"{m} diff")
            cell = row[at:].split("  ")[0].strip()
            if vs["diff"] is None:  # no pair in the group (BestRank where nothing covers)
                assert cell == "-" and vs["n"] == 0, (group, m, cell)
                continue
            better = vs["diff"] < 0 if m in LOWER else vs["diff"] > 0
            want = ("improved" if better else "regressed") if vs["significant"] else ""
            assert cell.endswith(f"* {want}" if want else f"{vs['diff']:+.4f}"), (group, m, cell)
            words.append(want)
    assert "regressed" in words and "improved" in words  # both directions occur


def test_latency_and_cost_read_lower_as_better(db: Path) -> None:
    """hybrid_rerank's retrieval is significantly slower (worse) and its cost significantly
    lower (better); its total p95 moved inside its interval (no word). Checked against the
    intervals in JSON, the direction by hand (lower is better for both)."""
    args = ("compare", "bm25", "hybrid_rerank", "--metrics", "RR", *FAST)
    text = rageval(*args, db=db)
    data = json.loads(rageval(*args, "--json", db=db).stdout)
    assert text.returncode == 0, text.stderr
    retrieval = data["latency_ms"]["hybrid_rerank"]["retrieval"]["p95"]
    total = data["latency_ms"]["hybrid_rerank"]["total"]["p95"]
    cost = data["cost_usd"]["hybrid_rerank"]["per_query"]
    assert retrieval["ci"][0] > 0 and retrieval["verdict"] == "regressed"
    assert cost["ci"][1] < 0 and cost["verdict"] == "improved"
    assert total["ci"][0] < 0 < total["ci"][1] and total["verdict"] is None
    rows = {ln.split()[0]: ln for ln in text.stdout.splitlines() if ln.strip()}
    slower = next(ln for ln in text.stdout.splitlines() if ln.startswith("retrieval"))
    slower = text.stdout.splitlines()[text.stdout.splitlines().index(slower) + 1]
    # the latency at about 3 significant digits (ops.format_ms: 2.54 ms, not 2.5)
    shown = ops.format_ms(retrieval["candidate"])
    assert f"{shown} ({retrieval['change_pct']:+.1f}%*, worse)" in slower
    cheaper = rows["hybrid_rerank"]  # the cost table's row (the last row named so)
    assert f"({cost['change_pct']:+.1f}%*, better)" in cheaper
    assert "better" not in slower and "worse" not in cheaper
